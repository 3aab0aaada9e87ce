package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/purko-io/mcp-hub/internal/clientreq"
	"github.com/purko-io/mcp-hub/internal/dispatch"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
)

// A reply stream is the answer to a /mcp request that takes progress, log
// messages or server requests: what the upstream sends during the request
// goes to the client as events on the POST's own response, then the
// answer, and the stream ends. The hub writes it: the request is served by
// the dispatcher with the stream as its session (server.ClientSession),
// so the relay (relay.go) reaches it as it reaches a WebSocket
// connection. A request whose upstream sent nothing is answered with one
// JSON reply when the client accepts one, as mcp-go answered it.
//
// Server requests on a reply stream (elicitation; sampling and roots go on
// the session's GET stream, streams.go) wait for the client's answer,
// which it POSTs on its session (deliverAnswer). A reply stream is not
// resumable: a client whose stream broke has lost that request's answer,
// as on a connection that broke.

// replyNotes bounds the notifications waiting for a reply stream's writer;
// mcp-go drops one that finds the channel full rather than block the
// upstream's reader.
const replyNotes = 256

// replyStream is one reply stream, the session of its request.
type replyStream struct {
	clientreq.Requests // elicitation (and sampling, roots) over call

	s     *Server
	sid   string
	w     http.ResponseWriter
	notes chan mcp.JSONRPCNotification
	next  atomic.Int64 // ids of the server requests sent on it

	mu     sync.Mutex
	open   bool  // the event stream's head is written
	broken error // the first write that failed: the client is gone
}

var (
	_ server.ClientSession          = (*replyStream)(nil)
	_ server.SessionWithElicitation = (*replyStream)(nil)
)

// SessionID is the request's session, "" for a 2026-07-28 request.
func (rs *replyStream) SessionID() string { return rs.sid }

// NotificationChannel is where mcp-go puts what the relay sends to the
// session of the request.
func (rs *replyStream) NotificationChannel() chan<- mcp.JSONRPCNotification { return rs.notes }

// Initialize does nothing: the session was initialized on its own request.
func (rs *replyStream) Initialize() {}

// Initialized is true: the stream exists only for a request of a session.
func (rs *replyStream) Initialized() bool { return true }

// replyStream serves req on a reply stream of w: events while it runs,
// then the answer.
func (s *Server) replyStream(w http.ResponseWriter, r *http.Request, req *dispatch.Request) {
	rs := &replyStream{s: s, sid: req.Session, w: w, notes: make(chan mcp.JSONRPCNotification, replyNotes)}
	rs.Requests = clientreq.Requests{Call: rs.call}
	if !acceptsJSON(r.Header.Get("Accept")) {
		rs.start() // the client takes nothing but a stream
	}
	done := make(chan struct{})
	var pump sync.WaitGroup
	pump.Go(func() {
		for {
			select {
			case n := <-rs.notes:
				rs.send(n)
			case <-done:
				return
			}
		}
	})
	reply := s.calls.Serve(s.mcp.WithContext(r.Context(), rs), req)
	close(done)
	pump.Wait()
	for drained := false; !drained; {
		select {
		case n := <-rs.notes:
			rs.send(n)
		default:
			drained = true
		}
	}
	rs.finish(reply)
}

// startLocked writes the event stream's head, once.
func (rs *replyStream) startLocked() {
	if rs.open {
		return
	}
	rs.open = true
	h := rs.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	rs.w.WriteHeader(http.StatusOK)
}

func (rs *replyStream) start() {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.startLocked()
	rs.flushLocked()
}

// event writes one message as an event, opening the stream first.
func (rs *replyStream) event(data []byte) error {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.broken != nil {
		return rs.broken
	}
	rs.startLocked()
	if _, err := fmt.Fprintf(rs.w, "event: message\ndata: %s\n\n", strings.TrimRight(string(data), "\n")); err != nil {
		rs.broken = fmt.Errorf("write to the reply stream: %w", err)
		return rs.broken
	}
	rs.flushLocked()
	return nil
}

func (rs *replyStream) flushLocked() {
	if err := http.NewResponseController(rs.w).Flush(); err != nil && rs.broken == nil {
		rs.broken = fmt.Errorf("flush the reply stream: %w", err)
	}
}

// send writes a notification the relay sent.
func (rs *replyStream) send(n mcp.JSONRPCNotification) {
	data, err := json.Marshal(n)
	if err == nil {
		err = rs.event(data)
	}
	if err != nil {
		rs.s.log.Debug().Err(err).Str("method", n.Method).Msg("reply stream: notification not sent")
	}
}

// finish writes the answer: the last event of a stream, or the one JSON
// reply of a request nothing was streamed for.
func (rs *replyStream) finish(reply []byte) {
	rs.mu.Lock()
	open := rs.open
	rs.mu.Unlock()
	if open {
		_ = rs.event(reply)
		return
	}
	rs.w.Header().Set("Content-Type", "application/json")
	_, _ = rs.w.Write(reply)
}

// call sends a server request on the stream and waits for the client's
// answer (clientreq.Requests.Call).
func (rs *replyStream) call(ctx context.Context, method mcp.MCPMethod, params, out any) error {
	id := strconv.Quote(rs.s.peers.Tag("mcp-hub-") + strconv.FormatInt(rs.next.Add(1), 10))
	answer, forget := rs.s.waits.expect(rs.sid, id)
	defer forget()
	msg, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  mcp.MCPMethod   `json:"method"`
		Params  any             `json:"params,omitempty"`
	}{jsonrpc.Version, json.RawMessage(id), method, params})
	if err != nil {
		return fmt.Errorf("encode %s: %w", method, err)
	}
	if err := rs.event(msg); err != nil {
		return err
	}
	select {
	case a := <-answer:
		if len(a.Error) > 0 {
			var e jsonrpc.Error
			if json.Unmarshal(a.Error, &e) != nil {
				return fmt.Errorf("the client refused %s", method)
			}
			return &e
		}
		if out == nil {
			return nil
		}
		if err := json.Unmarshal(a.Result, out); err != nil {
			return fmt.Errorf("read the client's answer to %s: %w", method, err)
		}
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// replyWaits are the server requests sent on reply streams that wait for
// their answers, by session and id.
type replyWaits struct {
	mu    sync.Mutex
	waits map[replyWait]chan *jsonrpc.Message
}

type replyWait struct{ session, id string }

// expect registers the request id of session; forget drops it.
func (rw *replyWaits) expect(session, id string) (<-chan *jsonrpc.Message, func()) {
	ch := make(chan *jsonrpc.Message, 1)
	k := replyWait{session, id}
	rw.mu.Lock()
	if rw.waits == nil {
		rw.waits = map[replyWait]chan *jsonrpc.Message{}
	}
	rw.waits[k] = ch
	rw.mu.Unlock()
	return ch, func() {
		rw.mu.Lock()
		delete(rw.waits, k)
		rw.mu.Unlock()
	}
}

// deliver hands msg, a client's answer on session, to the request that
// waits for it; false when none here does.
func (rw *replyWaits) deliver(session string, msg *jsonrpc.Message) bool {
	rw.mu.Lock()
	ch, ok := rw.waits[replyWait{session, string(msg.ID)}]
	delete(rw.waits, replyWait{session, string(msg.ID)})
	rw.mu.Unlock()
	if ok {
		ch <- msg
	}
	return ok
}
