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

// Session caps, for every caller, anonymous included (budgets.go says who
// is counted against what).
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

// sessionLimits counts the live sessions of each caller, by its budget
// key (budgetOf: anonymous callers by network, so that one network at its
// cap leaves the others theirs), and of each class of caller: anonymous
// callers together hold at most their share of the total
// (http.anonymousShare), so a few anonymous networks cannot fill the hub
// for the callers that authenticate; and admins may go adminReserve past
// the total, so an operator always gets in.
type sessionLimits struct {
	maxTotal, maxPerCaller int
	maxAnonymous, share    int           // share% of maxTotal (rounded up), share
	idle                   time.Duration // http.sessionIdleTimeout, for refusals

	mu        sync.Mutex
	total     int
	perCaller map[string]int    // by budget key
	owners    map[string]holder // registered session id -> who holds it
	byClass   [callers.Classes]int
	refused   [reasons]uint64
}

// adminReserve is how many sessions admins may hold past http.maxSessions,
// so that the operators get in however full the others made the hub (as
// the event streams keep 16 for the operators' consoles).
const adminReserve = 16

// holder is who holds a registered session: the caller's key, to
// which the session stays bound (SessionOwner), and what it is counted
// against.
type holder struct {
	owner string
	budget
}

func newSessionLimits(maxTotal, maxPerCaller, share int, idle time.Duration) *sessionLimits {
	return &sessionLimits{maxTotal: maxTotal, maxPerCaller: maxPerCaller, idle: idle,
		share: share, maxAnonymous: (maxTotal*share + 99) / 100,
		perCaller: map[string]int{}, owners: map[string]holder{}}
}

// admission is one request's claim on a session slot. A slot it holds
// passes to the session the request registers (registered), or is given
// back when the request ends without one (release).
type admission struct {
	holder
	held bool // guarded by sessionLimits.mu
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
	if err := l.refusal(a.budget); err != nil {
		return err
	}
	l.take(a.budget)
	a.held = true
	return nil
}

// refusal is why a session for b cannot be had now, nil if it can; the
// refusal is counted.
func (l *sessionLimits) refusal(b budget) *limitError {
	total := l.maxTotal
	if b.class == callers.ClassAdmin {
		total += adminReserve
	}
	switch {
	case l.total >= total:
		l.refused[refusedTotal]++
		if b.class == callers.ClassAdmin {
			return &limitError{http.StatusServiceUnavailable, fmt.Sprintf(
				"the hub holds %d live MCP sessions, its limit (http.maxSessions) and the %d kept for admins: try again later", l.total, adminReserve)}
		}
		return &limitError{http.StatusServiceUnavailable, fmt.Sprintf(
			"the hub holds %d live MCP sessions, its limit (http.maxSessions): try again later", l.total)}
	case l.perCaller[b.key] >= l.maxPerCaller:
		l.refused[refusedPerCaller]++
		return &limitError{http.StatusTooManyRequests, fmt.Sprintf(
			"caller %q holds %d live MCP sessions, its limit (http.maxSessionsPerCaller): reuse a session, end unused ones (DELETE /mcp with their Mcp-Session-Id), or wait for idle ones to expire (after %s)",
			b.key, l.perCaller[b.key], l.idle)}
	case b.class == callers.ClassAnonymous && l.byClass[callers.ClassAnonymous] >= l.maxAnonymous:
		l.refused[refusedAnonymousShare]++
		return &limitError{http.StatusServiceUnavailable, fmt.Sprintf(
			"anonymous callers hold %d of their %d sessions (http.anonymousShare %d%% of http.maxSessions): authenticate, or try again later",
			l.byClass[callers.ClassAnonymous], l.maxAnonymous, l.share)}
	}
	return nil
}

func (l *sessionLimits) take(b budget) {
	l.total++
	l.perCaller[b.key]++
	l.byClass[b.class]++
}

// release gives back a's slot if no session took it.
func (l *sessionLimits) release(a *admission) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if a.held {
		a.held = false
		l.drop(a.budget)
	}
}

func (l *sessionLimits) drop(b budget) {
	l.total--
	l.byClass[b.class]--
	if l.perCaller[b.key]--; l.perCaller[b.key] <= 0 {
		delete(l.perCaller, b.key)
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
		l.owners[id] = a.holder
		return
	}
	h := holderOf(callers.From(ctx))
	l.owners[id] = h
	l.take(h.budget)
}

func holderOf(c callers.Caller) holder { return holder{owner: c.Key(), budget: budgetOf(c)} }

// unregistered is mcp-go's OnUnregisterSession hook: DELETE, the idle
// sweep, a closed SSE stream or WebSocket connection.
func (l *sessionLimits) unregistered(_ context.Context, cs server.ClientSession) {
	id := cs.SessionID()
	l.mu.Lock()
	defer l.mu.Unlock()
	if h, ok := l.owners[id]; ok {
		delete(l.owners, id)
		l.drop(h.budget)
	}
}

// live reports whether session id is registered here.
func (l *sessionLimits) live(id string) bool {
	_, ok := l.owner(id)
	return ok
}

// owner is the key (callers.Caller.Key) of the caller whose session id is
// registered here.
func (l *sessionLimits) owner(id string) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	h, ok := l.owners[id]
	return h.owner, ok
}

// count returns the live sessions in total and of the budget of the
// caller whose key is caller (callers.BudgetKeyOf), reservations included.
func (l *sessionLimits) count(caller string) (total, mine int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total, l.perCaller[callers.BudgetKeyOf(caller)]
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
	a := &admission{holder: holderOf(callers.From(r.Context()))}
	if err := l.reserve(a); err != nil {
		e.log.Warn().Str("audit", "limit").Str("caller", a.owner).Str("path", r.URL.Path).
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

// SessionOwner is the key (callers.Caller.Key) of the caller whose
// session id is registered here: a legacy SSE session's messages must come
// from the caller that opened it.
func (e *Edge) SessionOwner(id string) (string, bool) { return e.sessions.owner(id) }

// SessionCount returns the live sessions in total and of the budget of the
// caller whose key is caller (an anonymous IPv4 caller's /24, callers.BudgetKeyOf),
// reservations included.
func (e *Edge) SessionCount(caller string) (total, mine int) { return e.sessions.count(caller) }
