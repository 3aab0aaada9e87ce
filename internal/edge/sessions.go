package edge

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
)

// Session caps, for every caller, anonymous included.
//
// A session costs memory while mcp-go has it registered: a Streamable HTTP
// initialize registers one (and it stays until DELETE or the idle sweep,
// which clients that vanish never send: think of 40,000 abandoned
// initialize calls), as do a GET /mcp stream for a session not registered
// here, a GET /sse stream and a WebSocket connection. Those are counted,
// per caller and in total, from the moment a request that may register one
// starts (so concurrent initialize calls cannot overshoot) until mcp-go
// unregisters the session. Requests on a session that is not registered
// here (Streamable HTTP ids are valid on every replica, sessionids.go) hold
// nothing past the request and are not counted.

// sessionLimits counts the live sessions of each caller, by its limit key
// (callers.Caller.Key): anonymous callers by address, so that one address at
// its cap leaves the others theirs.
type sessionLimits struct {
	maxTotal, maxPerCaller int
	idle                   time.Duration // http.sessionIdleTimeout, for refusals

	mu        sync.Mutex
	total     int
	perCaller map[string]int
	owners    map[string]string // registered session id -> caller's limit key
}

func newSessionLimits(maxTotal, maxPerCaller int, idle time.Duration) *sessionLimits {
	return &sessionLimits{maxTotal: maxTotal, maxPerCaller: maxPerCaller, idle: idle,
		perCaller: map[string]int{}, owners: map[string]string{}}
}

// admission is one request's claim on a session slot. A slot it holds
// passes to the session the request registers (registered), or is given
// back when the request ends without one (release).
type admission struct {
	caller string // limit key
	held   bool   // guarded by sessionLimits.mu
}

type admissionKey struct{}

// limitError is a refused admission: the HTTP status and what to say.
type limitError struct {
	status int
	msg    string
}

// reserve takes a slot for a session a's request may register.
func (l *sessionLimits) reserve(a *admission) *limitError {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.total >= l.maxTotal {
		return &limitError{http.StatusServiceUnavailable, fmt.Sprintf(
			"the hub holds %d live MCP sessions, its limit (http.maxSessions): try again later", l.total)}
	}
	if n := l.perCaller[a.caller]; n >= l.maxPerCaller {
		return &limitError{http.StatusTooManyRequests, fmt.Sprintf(
			"caller %q holds %d live MCP sessions, its limit (http.maxSessionsPerCaller): reuse a session, end unused ones (DELETE /mcp with their Mcp-Session-Id), or wait for idle ones to expire (after %s)",
			a.caller, n, l.idle)}
	}
	l.total++
	l.perCaller[a.caller]++
	a.held = true
	return nil
}

// release gives back a's slot if no session took it.
func (l *sessionLimits) release(a *admission) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if a.held {
		a.held = false
		l.drop(a.caller)
	}
}

func (l *sessionLimits) drop(caller string) {
	l.total--
	if l.perCaller[caller]--; l.perCaller[caller] <= 0 {
		delete(l.perCaller, caller)
	}
}

// registered is mcp-go's OnRegisterSession hook: the session takes the slot
// its request reserved. A session registered by a request that reserved
// none (stdio, or a GET stream for a session unregistered meanwhile) is
// counted all the same, so counts always match mcp-go's.
func (l *sessionLimits) registered(ctx context.Context, cs server.ClientSession) {
	id := cs.SessionID()
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, dup := l.owners[id]; dup {
		return
	}
	if a, _ := ctx.Value(admissionKey{}).(*admission); a != nil && a.held {
		a.held = false
		l.owners[id] = a.caller
		return
	}
	caller := callers.From(ctx).Key()
	l.owners[id] = caller
	l.total++
	l.perCaller[caller]++
}

// unregistered is mcp-go's OnUnregisterSession hook: DELETE, the idle
// sweep, a closed SSE stream or WebSocket connection.
func (l *sessionLimits) unregistered(_ context.Context, cs server.ClientSession) {
	id := cs.SessionID()
	l.mu.Lock()
	defer l.mu.Unlock()
	if caller, ok := l.owners[id]; ok {
		delete(l.owners, id)
		l.drop(caller)
	}
}

// live reports whether session id is registered here.
func (l *sessionLimits) live(id string) bool {
	_, ok := l.owner(id)
	return ok
}

// owner is the limit key of the caller whose session id is registered here.
func (l *sessionLimits) owner(id string) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	key, ok := l.owners[id]
	return key, ok
}

// count returns the live sessions in total and of the caller whose limit
// key is caller, reservations included.
func (l *sessionLimits) count(caller string) (total, mine int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total, l.perCaller[caller]
}

// SessionFace says how a face's requests create sessions.
type SessionFace int

const (
	// FaceStreamable: POST initialize and GET of a session not registered
	// here (or without one) register a session.
	FaceStreamable SessionFace = iota
	// FaceStream: every GET (/sse, /ws) is a session for as long as it lasts.
	FaceStream
)

// LimitSessions admits a request that may register a session only when
// its caller, and the hub, are under their session caps. It runs after
// the face has its caller (callers.From), whom it counts against.
func (e *Edge) LimitSessions(face SessionFace, next http.Handler) http.Handler {
	l := e.sessions
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A POST initialize reserves its slot in the face (ReserveSession),
		// which reads the body once for everything.
		var id json.RawMessage
		switch {
		case r.Method == http.MethodGet && face == FaceStream:
		case r.Method == http.MethodGet && face == FaceStreamable:
			if sid := r.Header.Get("Mcp-Session-Id"); sid != "" && l.live(sid) {
				next.ServeHTTP(w, r) // its slot is counted already
				return
			}
		default:
			next.ServeHTTP(w, r)
			return
		}
		r, release, ok := e.ReserveSession(w, r, id)
		if !ok {
			return
		}
		defer release()
		next.ServeHTTP(w, r)
	})
}

// ReserveSession takes a session slot for r's caller, to be handed to the
// session r may register, and returns r carrying it and the func that
// gives it back if no session took it (call it when r is done). When the
// caller or the hub is at its cap it answers r (id is the JSON-RPC id to
// answer with) and reports false.
func (e *Edge) ReserveSession(w http.ResponseWriter, r *http.Request, id json.RawMessage) (*http.Request, func(), bool) {
	l := e.sessions
	a := &admission{caller: callers.From(r.Context()).Key()}
	if err := l.reserve(a); err != nil {
		e.log.Warn().Str("audit", "limit").Str("caller", a.caller).Str("path", r.URL.Path).
			Int("status", err.status).Msg(err.msg)
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int(l.idle/2/time.Second))))
		jsonrpc.Refuse(w, err.status, jsonrpc.CodeServerBusy, id, err.msg)
		return r, nil, false
	}
	return r.WithContext(context.WithValue(r.Context(), admissionKey{}, a)), func() { l.release(a) }, true
}

// InstallHooks counts the sessions mcp-go registers and unregisters
// against their callers' caps (sessionLimits.registered, unregistered).
func (e *Edge) InstallHooks(hooks *server.Hooks) {
	hooks.AddOnRegisterSession(e.sessions.registered)
	hooks.AddOnUnregisterSession(e.sessions.unregistered)
}

// SessionOwner is the limit key (callers.Caller.Key) of the caller whose
// session id is registered here: a legacy SSE session's messages must come
// from the caller that opened it.
func (e *Edge) SessionOwner(id string) (string, bool) { return e.sessions.owner(id) }

// SessionCount returns the live sessions in total and of the caller whose
// limit key is caller, reservations included.
func (e *Edge) SessionCount(caller string) (total, mine int) { return e.sessions.count(caller) }
