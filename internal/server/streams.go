package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/purko-io/mcp-hub/internal/edge"
	"github.com/purko-io/mcp-hub/internal/peers"
)

// mcp-go sends sampling/createMessage and roots/list to a Streamable HTTP
// client only on the session's standalone GET stream (elicitation goes on
// the call's own stream). Behind a balancer with no affinity that stream
// may be held by another replica. The relay therefore sends such a request
// itself when this replica holds the stream, and otherwise asks the peers
// (internal/peers): the replica holding it sends the request and returns
// the answer.

// streams tracks the sessions whose GET stream this replica holds, and
// mcp-go's session objects by id. When a session's last GET stream closes,
// mcp-go keeps the session's state for the client to resume (the event
// store); after streamGrace without a new stream the hub lets it go, so
// clients that vanish do not hold memory until the idle sweep.
type streams struct {
	mu       sync.Mutex
	open     map[string]int
	sessions map[string]server.ClientSession
	release  map[string]*time.Timer // pending releases of closed streams
	grace    time.Duration
	forget   func(id string) // drops mcp-go's state of a session
	stopped  bool

	// mcp sends a peer's server request on a stream held here; peers
	// asks the replica holding a stream not held here (nil: no peers).
	mcp   *server.MCPServer
	peers *peers.Peers
	// holderWait bounds the search for the replica holding a session's
	// GET stream (viaStream).
	holderWait time.Duration
}

// streamGrace is how long a session's state outlives its last GET stream.
const streamGrace = 2 * time.Minute

func newStreams() *streams {
	return &streams{open: map[string]int{}, sessions: map[string]server.ClientSession{},
		release: map[string]*time.Timer{}, grace: streamGrace, holderWait: streamWait}
}

// hold marks session's GET stream open until the returned func is called.
func (st *streams) hold(id string) func() {
	st.mu.Lock()
	st.open[id]++
	if t := st.release[id]; t != nil {
		t.Stop()
		delete(st.release, id)
	}
	st.mu.Unlock()
	return func() {
		st.mu.Lock()
		defer st.mu.Unlock()
		if st.open[id]--; st.open[id] > 0 {
			return
		}
		delete(st.open, id)
		if st.forget == nil || st.stopped {
			return
		}
		var t *time.Timer
		t = time.AfterFunc(st.grace, func() {
			st.mu.Lock()
			if st.release[id] != t || st.open[id] > 0 || st.stopped {
				st.mu.Unlock()
				return // a stream came back, or a newer release is due
			}
			delete(st.release, id)
			st.mu.Unlock()
			st.forget(id)
		})
		st.release[id] = t
	}
}

// stop cancels the pending releases (the server is shutting down).
func (st *streams) stop() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.stopped = true
	for id, t := range st.release {
		t.Stop()
		delete(st.release, id)
	}
}

// isOpen reports whether a GET stream of session id is open here.
func (st *streams) isOpen(id string) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.open[id] > 0
}

// session returns mcp-go's session object when this replica holds the
// session's GET stream.
func (st *streams) session(id string) (server.ClientSession, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.open[id] == 0 {
		return nil, false
	}
	cs, ok := st.sessions[id]
	return cs, ok
}

func (st *streams) registered(cs server.ClientSession) {
	st.mu.Lock()
	st.sessions[cs.SessionID()] = cs
	st.mu.Unlock()
}

func (st *streams) unregistered(id string) {
	st.mu.Lock()
	delete(st.sessions, id)
	st.mu.Unlock()
}

// viaStream sends a sampling or roots request to the session of ctx: on
// this replica when it holds the session's GET stream, else through the
// peer that does. handled is false when the request should be sent the
// ordinary way (not a Streamable HTTP session, or no peers).
func (st *streams) viaStream(ctx context.Context, method mcp.MCPMethod, params any, out any) (handled bool, err error) {
	id := sessionID(ctx)
	if id == "" || st.peers == nil {
		return false, nil
	}
	if _, ok := edge.ParseSessionID(id); !ok {
		return false, nil // not a Streamable HTTP session of the hub
	}
	// A client opens its GET stream beside its first requests, so the
	// stream may not be open anywhere yet: wait for it, as a hub without
	// peers waits (its session keeps the request until the stream opens).
	wait := streamPoll
	for waited := time.Duration(0); ; {
		if _, local := st.session(id); local {
			return false, nil
		}
		err = st.peers.Ask(ctx, id, string(method), params, out)
		if !errors.Is(err, peers.ErrNoHolder) || waited >= st.holderWait {
			return true, err
		}
		select {
		case <-ctx.Done():
			return true, err
		case <-time.After(wait):
		}
		waited += wait
		wait = min(2*wait, time.Second)
	}
}

// streamPoll is the first pause, doubling, between two searches for the
// replica holding a session's GET stream; streamWait bounds the search
// (a client that opens no stream waits that long for its error).
const (
	streamPoll = 25 * time.Millisecond
	streamWait = 5 * time.Second
)

// sendForPeer sends a peer's server request to a session whose GET stream
// this replica holds, and returns the client's answer (peers.Sender).
func (st *streams) sendForPeer(ctx context.Context, session, method string, params json.RawMessage) (any, error) {
	cs, ok := st.session(session)
	if !ok {
		return nil, peers.ErrNoStream
	}
	ctx = st.mcp.WithContext(ctx, cs)
	switch mcp.MCPMethod(method) {
	case mcp.MethodSamplingCreateMessage:
		var req mcp.CreateMessageRequest
		if err := json.Unmarshal(params, &req.CreateMessageParams); err != nil {
			return nil, err
		}
		return st.mcp.RequestSampling(ctx, req)
	case mcp.MethodListRoots:
		return st.mcp.RequestRoots(ctx, mcp.ListRootsRequest{})
	}
	return nil, errors.New("unsupported method " + method)
}

// ownStream reports whether the hub serves r, a GET of a session's stream,
// itself (mcpsession.Sessions.ServeStream). What mcp-go refuses (a
// protocol version it does not know or that has no GET stream, a host its
// DNS rebinding protection turns away) it refuses.
func ownStream(r *http.Request) bool {
	v := r.Header.Get(mcp.HeaderProtocolVersion)
	return (v == "" || mcp.IsValidProtocolVersion(v) && !mcp.IsModernProtocol(v)) && edge.HostAllowed(r)
}
