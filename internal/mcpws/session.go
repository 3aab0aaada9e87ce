package mcpws

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/purko-io/mcp-hub/internal/clientreq"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
)

// sessionNotificationBuffer is how many notifications may wait for the
// socket. mcp-go drops notifications (and reports them to OnError hooks)
// rather than block when a session's channel is full, so this only needs to
// absorb bursts.
const sessionNotificationBuffer = 256

// session is the mcp-go view of one WebSocket connection: the connection is
// the session, the way stdio's single stream is. Besides the basic
// ClientSession it keeps client info, log level and protocol version, and it
// can send server-to-client requests (sampling, roots, elicitation) because
// WebSocket is bidirectional.
type session struct {
	clientreq.Requests // sampling, roots, elicitation over call

	id            string
	conn          *wsConn
	notifications chan mcp.JSONRPCNotification

	initialized     atomic.Bool
	logLevel        atomic.Value // mcp.LoggingLevel
	clientInfo      atomic.Value // mcp.Implementation
	clientCaps      atomic.Value // mcp.ClientCapabilities
	protocolVersion atomic.Value // string

	nextID    atomic.Int64
	pendingMu sync.Mutex
	pending   map[int64]chan callReply // server-to-client requests awaiting an answer
}

// callReply is the client's answer to a server-to-client request.
type callReply struct {
	result json.RawMessage
	err    *mcp.JSONRPCErrorDetails
}

var (
	_ server.ClientSession              = (*session)(nil)
	_ server.SessionWithLogging         = (*session)(nil)
	_ server.SessionWithClientInfo      = (*session)(nil)
	_ server.SessionWithProtocolVersion = (*session)(nil)
	_ server.SessionWithSampling        = (*session)(nil)
	_ server.SessionWithRoots           = (*session)(nil)
	_ server.SessionWithElicitation     = (*session)(nil)
)

// newSession returns the session for conn with a fresh random id; ids must
// be unique per MCPServer, which RegisterSession enforces.
func newSession(conn *wsConn) *session {
	s := &session{
		id:            "ws-" + rand.Text(),
		conn:          conn,
		notifications: make(chan mcp.JSONRPCNotification, sessionNotificationBuffer),
		pending:       make(map[int64]chan callReply),
	}
	s.Requests = clientreq.Requests{Call: s.call}
	return s
}

// SessionID implements server.ClientSession.
func (s *session) SessionID() string { return s.id }

// NotificationChannel implements server.ClientSession; the connection
// forwards what arrives here to the socket.
func (s *session) NotificationChannel() chan<- mcp.JSONRPCNotification { return s.notifications }

// Initialize implements server.ClientSession. mcp-go calls it on initialize,
// and on the first request of a 2026-07-28 (handshake-less) client.
func (s *session) Initialize() { s.initialized.Store(true) }

// Initialized implements server.ClientSession; mcp-go broadcasts only to
// initialized sessions.
func (s *session) Initialized() bool { return s.initialized.Load() }

// SetLogLevel implements server.SessionWithLogging (logging/setLevel).
func (s *session) SetLogLevel(level mcp.LoggingLevel) { s.logLevel.Store(level) }

// GetLogLevel implements server.SessionWithLogging. Until the client sets a
// level only errors are sent, as on mcp-go's stdio transport.
func (s *session) GetLogLevel() mcp.LoggingLevel {
	if level, ok := s.logLevel.Load().(mcp.LoggingLevel); ok {
		return level
	}
	return mcp.LoggingLevelError
}

// GetClientInfo implements server.SessionWithClientInfo.
func (s *session) GetClientInfo() mcp.Implementation {
	info, _ := s.clientInfo.Load().(mcp.Implementation)
	return info
}

// SetClientInfo implements server.SessionWithClientInfo.
func (s *session) SetClientInfo(info mcp.Implementation) { s.clientInfo.Store(info) }

// GetClientCapabilities implements server.SessionWithClientInfo.
func (s *session) GetClientCapabilities() mcp.ClientCapabilities {
	caps, _ := s.clientCaps.Load().(mcp.ClientCapabilities)
	return caps
}

// SetClientCapabilities implements server.SessionWithClientInfo.
func (s *session) SetClientCapabilities(caps mcp.ClientCapabilities) { s.clientCaps.Store(caps) }

// ProtocolVersion implements server.SessionWithProtocolVersion: the version
// negotiated by initialize, "" before that or for handshake-less clients.
func (s *session) ProtocolVersion() string {
	v, _ := s.protocolVersion.Load().(string)
	return v
}

// SetProtocolVersion records the version negotiated by initialize; mcp-go
// finds it through an unexported interface.
func (s *session) SetProtocolVersion(version string) { s.protocolVersion.Store(version) }

// call sends a server-to-client request and decodes the answer into out. It
// gives up when ctx ends or the connection ends.
func (s *session) call(ctx context.Context, method mcp.MCPMethod, params, out any) error {
	id := s.nextID.Add(1)
	ch := make(chan callReply, 1)
	s.pendingMu.Lock()
	s.pending[id] = ch
	s.pendingMu.Unlock()
	defer func() {
		s.pendingMu.Lock()
		delete(s.pending, id)
		s.pendingMu.Unlock()
	}()

	request := struct {
		JSONRPC string `json:"jsonrpc"`
		ID      int64  `json:"id"`
		Method  string `json:"method"`
		Params  any    `json:"params,omitempty"`
	}{mcp.JSONRPC_VERSION, id, string(method), params}
	if err := s.conn.send(ctx, request); err != nil {
		return fmt.Errorf("send %s request: %w", method, err)
	}

	select {
	case reply := <-ch:
		if reply.err != nil {
			return fmt.Errorf("%s request failed: %w", method, reply.err.AsError())
		}
		if err := json.Unmarshal(reply.result, out); err != nil {
			return fmt.Errorf("decode %s result: %w", method, err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for %s result: %w", method, ctx.Err())
	case <-s.conn.done:
		return fmt.Errorf("wait for %s result: %w", method, s.conn.endErr())
	}
}

// deliver hands a response from the client to the call waiting for it and
// reports whether one was.
func (s *session) deliver(env *jsonrpc.Message) bool {
	var id int64
	if err := json.Unmarshal(env.ID, &id); err != nil {
		return false // not an id this session issued
	}
	s.pendingMu.Lock()
	ch, ok := s.pending[id]
	delete(s.pending, id)
	s.pendingMu.Unlock()
	if !ok {
		return false
	}

	var reply callReply
	if env.Error != nil && string(env.Error) != "null" {
		var details mcp.JSONRPCErrorDetails
		if err := json.Unmarshal(env.Error, &details); err != nil {
			details = mcp.NewJSONRPCErrorDetails(mcp.INTERNAL_ERROR, "malformed error in client response", nil)
		}
		reply.err = &details
	} else {
		reply.result = env.Result
	}
	ch <- reply // buffered and used once, never blocks
	return true
}
