// Package mcpsession keeps the hub's Streamable HTTP sessions, in place of
// mcp-go's own, so that an idle session costs little and no goroutine.
//
// mcp-go registers a session of its own on initialize (channels for
// notifications and three kinds of server requests, about 8 KiB) and
// serves its GET stream with two goroutines besides the request's: a pump
// that outlives the stream until the session ends, and a heartbeat. The
// hub registers a Session of this package instead (right after initialize,
// before mcp-go would, or when a GET stream names a session not registered
// here), and serves the session's GET stream on the GET request's own
// goroutine (ServeStream): notifications, server requests and pings are
// written by the request that waits for them. A session with no stream
// open holds its small channel and nothing else.
//
// Requests a session's client POSTs are mcp-go's as before; they run on
// a session of the request's own (as for a session registered on another
// replica), so what belongs to one request (progress, log messages,
// elicitation) goes on its reply stream, and only what belongs to the
// session (list changes, resource updates, sampling and roots requests)
// waits here for the GET stream.
//
// What a GET stream carries is recorded in the event store (the one
// mcp-go records reply streams in), so a client whose stream broke resumes
// it with Last-Event-ID. Sessions are also the idle sweep: a session
// nothing happened on for the idle TTL, with no stream open, is forgotten.
package mcpsession

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/edge"
	"github.com/purko-io/mcp-hub/internal/eventstore"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
)

// Options configure Sessions.
type Options struct {
	// MCP is the server the sessions are registered with.
	MCP *server.MCPServer
	// Events records what a GET stream carries; mcp-go records its reply
	// streams in the same store (server.WithEventStore).
	Events *eventstore.Store
	// Heartbeat is how often an open stream is pinged, which keeps it
	// through proxies that close quiet connections; 0 sends no pings.
	Heartbeat time.Duration
	// IdleTTL: a session nothing was sent to or received from for this
	// long, with no stream open (Busy), is forgotten (Forget) by the sweep
	// (Sweep), which runs every IdleTTL/2; 0 sweeps nothing.
	IdleTTL time.Duration
	// Busy reports whether a session has a stream open on this replica
	// (whoever serves it); such a session is never idle.
	Busy func(id string) bool
	// Forget ends a session the sweep found idle: what a client's DELETE
	// does, which a client that vanished never sends.
	Forget func(id string)
	// RequestIDPrefix begins the id of each server request and ping
	// ("hub-" when empty): with peers it names this replica
	// (peers.Tag), so a client's answer that lands on another replica is
	// passed on to this one alone.
	RequestIDPrefix string
	Log             zerolog.Logger
}

// Sessions are the hub's Streamable HTTP sessions registered with mcp-go on
// this replica, and the last activity of every session id mcp-go may hold
// state for.
type Sessions struct {
	opts       Options
	idPrefix   string       // begins the ids of server requests and pings
	requestIDs atomic.Int64 // ids of server requests and pings

	mu   sync.RWMutex
	byID map[string]*Session

	// active: session id -> *atomic.Int64, unix nanoseconds of its last
	// request or registration.
	active sync.Map

	runMu   sync.Mutex
	running context.Context // while Run runs: the streams taken over end with it
	streams sync.WaitGroup  // the goroutines of the streams taken over
}

// New returns no sessions yet.
func New(opts Options) *Sessions {
	prefix := opts.RequestIDPrefix
	if prefix == "" {
		prefix = "hub-"
	}
	return &Sessions{opts: opts, idPrefix: prefix, byID: map[string]*Session{}}
}

// Get returns the session id registered here, nil when there is none (or
// mcp-go registered one of its own).
func (ss *Sessions) Get(id string) *Session {
	ss.mu.RLock()
	defer ss.mu.RUnlock()
	return ss.byID[id]
}

// Open returns session id, registering it with mcp-go when it is not
// registered here. It fails when mcp-go registered a session of its own
// under id (server.ErrSessionExists): that one's GET stream is mcp-go's to
// serve. ctx is the request's: the session caps' hooks count it against
// the request's caller.
func (ss *Sessions) Open(ctx context.Context, id string) (*Session, error) {
	ss.mu.Lock()
	if s := ss.byID[id]; s != nil {
		ss.mu.Unlock()
		return s, nil
	}
	s := newSession(id, ss)
	ss.byID[id] = s
	ss.mu.Unlock()
	if err := ss.opts.MCP.RegisterSession(ctx, s); err != nil {
		ss.mu.Lock()
		if ss.byID[id] == s {
			delete(ss.byID, id)
		}
		ss.mu.Unlock()
		return nil, err
	}
	ss.Track(id)
	return s, nil
}

// InstallHooks has the hub keep the Streamable HTTP sessions: one is
// registered as soon as an initialize succeeds, before mcp-go would
// register its own; the idle sweep tracks every Streamable HTTP session
// registered, the hub's or mcp-go's; a session that ends is let go
// (Unregistered). Sessions of other transports (SSE, WebSocket, stdio) are
// not the hub's to keep.
func (ss *Sessions) InstallHooks(hooks *server.Hooks) {
	hooks.AddAfterInitialize(func(ctx context.Context, _ any, _ *mcp.InitializeRequest, _ *mcp.InitializeResult) {
		if cs := server.ClientSessionFromContext(ctx); cs != nil && streamable(cs.SessionID()) {
			if _, err := ss.Open(ctx, cs.SessionID()); err != nil {
				ss.opts.Log.Debug().Err(err).Msg("register the session of an initialize")
			}
		}
	})
	hooks.AddOnRegisterSession(func(_ context.Context, cs server.ClientSession) {
		if streamable(cs.SessionID()) {
			ss.Track(cs.SessionID())
		}
	})
	hooks.AddOnUnregisterSession(ss.Unregistered)
}

// streamable reports whether id names a Streamable HTTP session (the hub
// mints their ids, edge.SessionIDs).
func streamable(id string) bool {
	_, ok := edge.ParseSessionID(id)
	return ok
}

// Unregistered is mcp-go's OnUnregisterSession hook: a session that ends
// (DELETE, the sweep, shutdown) closes its stream and fails the server
// requests still waiting for an answer.
func (ss *Sessions) Unregistered(_ context.Context, cs server.ClientSession) {
	s, ok := cs.(*Session)
	if !ok || s.owner != ss {
		return
	}
	ss.mu.Lock()
	if ss.byID[s.id] == s {
		delete(ss.byID, s.id)
	}
	ss.mu.Unlock()
	s.end()
}

// Deliver hands a client's answer to a server request (msg, POSTed on
// session id) to the request waiting for it here, and reports whether one
// was.
func (ss *Sessions) Deliver(id string, msg *jsonrpc.Message) bool {
	s := ss.Get(id)
	return s != nil && s.deliver(msg)
}

// WithSession is ctx with session id's Session as its mcp-go client
// session, when it is registered here: a server request made under the
// returned context goes on the session's GET stream.
func (ss *Sessions) WithSession(ctx context.Context, id string) context.Context {
	if s := ss.Get(id); s != nil {
		return ss.opts.MCP.WithContext(ctx, s)
	}
	return ctx
}

// record keeps a message of session id's stream in the event store and
// returns its event id.
func (ss *Sessions) record(ctx context.Context, id string, data []byte) string {
	eid, err := ss.opts.Events.StoreEvent(context.WithoutCancel(ctx), id, streamID, data)
	if err != nil {
		ss.opts.Log.Warn().Err(err).Msg("record a stream event")
	}
	return eid
}
