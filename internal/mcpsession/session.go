package mcpsession

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/purko-io/mcp-hub/internal/clientreq"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
)

// notificationBuffer is how many notifications wait for a session's stream.
// An attached stream drains them at once; a session without one keeps the
// first ones for the stream its client may still open (or resume), and
// declines the rest (Initialized). Broadcast lists changes and resource
// updates are all a session's channel receives (progress and log messages
// go on the reply stream of the request they belong to), so a few suffice.
const notificationBuffer = 32

// ErrEnded is the error of a server request whose session ended before the
// client answered.
var ErrEnded = errors.New("the session ended")

// Session is one Streamable HTTP session as mcp-go sees it (registered
// with the MCP server): notifications and server requests (sampling, roots,
// elicitation) for it wait here, recorded in the event store, until its
// GET stream writes them. It holds no goroutine: the GET request that
// attaches a stream writes on its own.
type Session struct {
	clientreq.Requests // sampling, roots, elicitation over call

	id    string
	owner *Sessions
	notes chan mcp.JSONRPCNotification

	mu      sync.Mutex
	stream  *attachment // the GET stream writing the session's messages; nil: none
	backlog []event     // recorded, not written yet: no stream, or it was superseded
	pending map[string]chan answer
	ended   bool
	done    chan struct{} // closed when the session ends (mcp-go unregistered it)
}

// event is a message recorded in the event store, with its event id.
type event struct {
	id   string
	data []byte
}

// attachment is one GET stream attached to a session; gone closes when a
// newer stream supersedes it or the session ends. wake tells it the backlog
// grew.
type attachment struct {
	gone chan struct{}
	wake chan struct{}
}

// answer is a client's answer to a server request.
type answer struct {
	result json.RawMessage
	err    json.RawMessage
}

var (
	_ server.ClientSession          = (*Session)(nil)
	_ server.SessionWithSampling    = (*Session)(nil)
	_ server.SessionWithRoots       = (*Session)(nil)
	_ server.SessionWithElicitation = (*Session)(nil)
)

func newSession(id string, owner *Sessions) *Session {
	s := &Session{id: id, owner: owner, notes: make(chan mcp.JSONRPCNotification, notificationBuffer), done: make(chan struct{})}
	s.Requests = clientreq.Requests{Call: s.call}
	return s
}

// SessionID implements server.ClientSession.
func (s *Session) SessionID() string { return s.id }

// NotificationChannel implements server.ClientSession: mcp-go's
// notifications to the session wait here for its stream.
func (s *Session) NotificationChannel() chan<- mcp.JSONRPCNotification { return s.notes }

// Initialize implements server.ClientSession; the session was made by a
// successful initialize, or by a GET stream of an id the hub minted.
func (s *Session) Initialize() {}

// Initialized implements server.ClientSession: mcp-go sends notifications
// only to initialized sessions. A session whose channel is full (no stream
// drained it) declines them: mcp-go would otherwise report each one it
// could not send to its error hooks on a goroutine of its own, which for a
// broadcast to many sessions whose clients never open a stream is many.
func (s *Session) Initialized() bool { return len(s.notes) < cap(s.notes) }

// call sends a server request on the session's stream (now, or when one
// attaches) and decodes the client's answer into out. Its id is a string
// (Options.RequestIDPrefix and a number): mcp-go numbers the requests it sends on reply
// streams, and an answer must reach the one that waits for it.
func (s *Session) call(ctx context.Context, method mcp.MCPMethod, params, out any) error {
	id := s.owner.idPrefix + strconv.FormatInt(s.owner.requestIDs.Add(1), 10)
	data, err := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		ID      string `json:"id"`
		Method  string `json:"method"`
		Params  any    `json:"params,omitempty"`
	}{mcp.JSONRPC_VERSION, id, string(method), params})
	if err != nil {
		return fmt.Errorf("encode %s request: %w", method, err)
	}
	ch := make(chan answer, 1)
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return fmt.Errorf("send %s request: %w", method, ErrEnded)
	}
	if s.pending == nil {
		s.pending = map[string]chan answer{}
	}
	s.pending[id] = ch
	ev := event{id: s.owner.record(ctx, s.id, data), data: data}
	s.backlog = append(s.backlog, ev)
	s.wakeLocked()
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.pending, id)
		// Not sent yet: nobody waits for it any more.
		s.backlog = slices.DeleteFunc(s.backlog, func(e event) bool { return &e.data[0] == &ev.data[0] })
		s.mu.Unlock()
	}()
	select {
	case a := <-ch:
		if len(a.err) > 0 && string(a.err) != "null" {
			var details mcp.JSONRPCErrorDetails
			if err := json.Unmarshal(a.err, &details); err != nil {
				details = mcp.NewJSONRPCErrorDetails(mcp.INTERNAL_ERROR, "malformed error in client response", nil)
			}
			return fmt.Errorf("%s request failed: %w", method, details.AsError())
		}
		if err := json.Unmarshal(a.result, out); err != nil {
			return fmt.Errorf("decode %s result: %w", method, err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for %s result: %w", method, ctx.Err())
	case <-s.done:
		return fmt.Errorf("wait for %s result: %w", method, ErrEnded)
	}
}

// deliver hands a client's answer to the server request waiting for it and
// reports whether one was.
func (s *Session) deliver(msg *jsonrpc.Message) bool {
	var id string
	if json.Unmarshal(msg.ID, &id) != nil {
		return false // not an id the hub's sessions issue
	}
	s.mu.Lock()
	ch, ok := s.pending[id]
	delete(s.pending, id)
	s.mu.Unlock()
	if ok {
		// The body msg was read from may be reused once the POST is
		// answered; the waiting call reads the answer later.
		ch <- answer{result: bytes.Clone(msg.Result), err: bytes.Clone(msg.Error)} // buffered, used once
	}
	return ok
}

// wakeLocked tells the attached stream the backlog grew. Callers hold mu.
func (s *Session) wakeLocked() {
	if s.stream == nil || len(s.backlog) == 0 {
		return
	}
	select {
	case s.stream.wake <- struct{}{}:
	default: // already told
	}
}

// end marks the session ended: its stream closes, its server requests fail.
func (s *Session) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	s.ended = true
	if s.stream != nil {
		close(s.stream.gone)
		s.stream = nil
	}
	s.backlog = nil
	close(s.done)
}
