package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/oauth"
	"github.com/purko-io/mcp-hub/internal/ratelimit"
)

// HeaderAutonomyLevel lets a caller ask for a lower level than its ceiling
// (Purko's executor sends its AUTONOMY_LEVEL this way).
const HeaderAutonomyLevel = "X-Autonomy-Level"

// Caller is who makes a request and what it may do.
type Caller struct {
	// Name identifies the caller in audit lines (never a token).
	Name string
	// Ceiling is the most the caller may do; Level is what this request
	// does (the lower of the ceiling and what it asked for).
	Ceiling, Level autonomy.Level
	// Allow, when not nil, limits the tools the caller may see and run.
	Allow *autonomy.Allowlist
	// Agent, Workflow and Step are the trusted context api tools may bind
	// into requests: the agent from the caller's identity (or the
	// X-Purko-Agent header), workflow and step from the executor's headers.
	Agent, Workflow, Step string
	// verifiedAgent is the Agent proven by the caller's identity (never a
	// header): only it unlocks an agent's own api tools.
	verifiedAgent string
	// limits, when set, replace Options.PerCaller for this caller.
	limits *ratelimit.Limits
	// anonymousAt is an anonymous caller's remote address, whose budgets,
	// sessions and calls are its own (limitKey).
	anonymousAt string
	// Admin may change the hub's state through its REST API (approve
	// changed tool definitions): a token with admin: true, the local
	// user of a hub without auth on loopback, and stdio.
	Admin bool
	// face names the face the call came through in its audit line, when
	// it is not an MCP one ("rest"); empty keeps the MCP faces' lines as
	// they were.
	face string
}

// auditFace adds the caller's face to an audit line that has one.
func (c Caller) auditFace(ev *zerolog.Event) {
	if c.face != "" {
		ev.Str("face", c.face)
	}
}

// limitKey is what the caller's budgets count under (rate and in-flight
// limits, sessions, event streams), what its sessions are bound to
// (sessionid.go) and which calls of the console's feed are its own: its
// name, or for an anonymous caller its address, so that one anonymous
// address cannot spend another's budget nor see or use what is another's.
func (c Caller) limitKey() string {
	if c.anonymousAt != "" {
		return anonymousKey(c.anonymousAt)
	}
	return c.Name
}

// appendLimitKey appends limitKey to dst without allocating.
func (c Caller) appendLimitKey(dst []byte) []byte {
	if c.anonymousAt != "" {
		return appendAnonymousKey(dst, c.anonymousAt)
	}
	return append(dst, c.Name...)
}

// Headers a Purko executor sets to tell the hub which run a call belongs to.
const (
	HeaderAgent    = "X-Purko-Agent"
	HeaderWorkflow = "X-Purko-Workflow"
	HeaderStep     = "X-Purko-Step"
)

// bindings are the values api tools may map into their requests.
func (c Caller) bindings() map[string]string {
	return map[string]string{"caller": c.Name, "agent": c.Agent, "workflow": c.Workflow, "step": c.Step}
}

type callerKey struct{}

// withCaller attaches the caller to a request's context.
func withCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// callerFrom returns the request's caller. A context without one (which the
// HTTP faces never produce) gets no tools at all: fail closed.
func callerFrom(ctx context.Context) Caller {
	if c, ok := ctx.Value(callerKey{}).(Caller); ok {
		return c
	}
	return Caller{Name: "unauthenticated", Ceiling: autonomy.Manual, Level: autonomy.Manual}
}

// TokenCaller is one configured inbound token.
type TokenCaller struct {
	Name    string
	Token   string
	Ceiling autonomy.Level
	Tools   []string
	// Limits, when set, replace Options.PerCaller for this caller.
	Limits *ratelimit.Limits
	// Admin may approve changed tool definitions (POST /api/mcp/pins/approve).
	Admin bool
}

// ClusterIdentity is what the cluster says about a ServiceAccount token.
type ClusterIdentity struct {
	Caller string
	Agent  string // namespace/name of the Agent
	Level  string // the Agent's spec.autonomyLevel, unparsed
	Tools  []string
	// Admin: the pod's ServiceAccount is granted the REST API's writes
	// (auth.serviceAccounts.admins).
	Admin bool
}

// TokenReviewer checks ServiceAccount tokens with the API server.
type TokenReviewer interface {
	Review(ctx context.Context, token string) (ClusterIdentity, error)
}

// ReviewError says how a refused review answers the caller: 401 for a token
// that proves nothing, 403 for a valid token of something that is not an
// agent, 503 when the hub could not ask.
type ReviewError struct {
	Status int
	Err    error
}

func (e *ReviewError) Error() string { return e.Err.Error() }
func (e *ReviewError) Unwrap() error { return e.Err }

// Auth decides who a request comes from.
type Auth struct {
	tokens    []tokenEntry
	anonymous *Caller
	reviewer  TokenReviewer
	oauth     *oauth.Verifier
}

type tokenEntry struct {
	hash   [sha256.Size]byte
	caller Caller
}

// NewAuth builds the authenticator. anonymous, when not nil, is the ceiling
// of callers without credentials; reviewer may be nil.
func NewAuth(tokens []TokenCaller, anonymous *autonomy.Level, reviewer TokenReviewer) *Auth {
	a := &Auth{reviewer: reviewer}
	for _, t := range tokens {
		a.tokens = append(a.tokens, tokenEntry{
			hash:   sha256.Sum256([]byte(t.Token)),
			caller: Caller{Name: t.Name, Ceiling: t.Ceiling, Allow: allowlist(t.Tools), limits: t.Limits, Admin: t.Admin},
		})
	}
	if anonymous != nil {
		a.anonymous = &Caller{Name: "anonymous", Ceiling: *anonymous}
	}
	return a
}

// limitsCallers reports whether any token caller has limits of its own.
func (a *Auth) limitsCallers() bool {
	for _, e := range a.tokens {
		if e.caller.limits != nil {
			return true
		}
	}
	return false
}

// AnonymousOnly admits everyone up to ceiling: the hub on a laptop, and
// the stdio face (whoever can start the process is the local user).
func AnonymousOnly(ceiling autonomy.Level) *Auth { return NewAuth(nil, &ceiling, nil) }

// LocalUserIsAdmin makes anonymous callers admins: only for the hub that
// has no auth configured and listens on loopback, where the anonymous
// caller is the user who started it. Explicit auth.anonymous access is
// never admin.
func (a *Auth) LocalUserIsAdmin() *Auth {
	if a.anonymous != nil {
		a.anonymous.Admin = true
	}
	return a
}

// WithOAuth accepts the JWT access tokens v verifies (remote IDE clients,
// MCP authorization) beside the other callers, and makes refusals name
// where to get such a token.
func (a *Auth) WithOAuth(v *oauth.Verifier) *Auth {
	a.oauth = v
	return a
}

// OAuth returns the verifier of access tokens, nil when not configured.
func (a *Auth) OAuth() *oauth.Verifier { return a.oauth }

func allowlist(tools []string) *autonomy.Allowlist {
	if len(tools) == 0 {
		return nil
	}
	return autonomy.NewAllowlist(tools)
}

// authError is a refused request: status and a message for the caller.
type authError struct {
	status int
	msg    string
	// token is why an OAuth access token was refused, for the challenge.
	token *oauth.Error
}

// authenticate finds the caller of r and its effective level.
func (a *Auth) authenticate(r *http.Request) (Caller, *authError) {
	var c Caller
	token, hasToken := bearer(r.Header.Get("Authorization"))
	switch {
	case hasToken:
		var found bool
		c, found = a.lookupToken(token)
		// A ServiceAccount token is a JWT too: the issuer tells them apart.
		// Without a reviewer every JWT goes to the verifier, which names
		// an issuer it does not trust; other strings are hub tokens.
		if !found && a.oauth != nil && (a.oauth.Trusts(token) || a.reviewer == nil && oauth.IsJWT(token)) {
			g, err := a.oauth.Verify(r.Context(), token)
			if err != nil {
				oe := &oauth.Error{Status: http.StatusUnauthorized, Code: "invalid_token", Reason: err.Error()}
				errors.As(err, &oe)
				return Caller{}, &authError{oe.Status, "bearer token refused: " + oe.Reason, oe}
			}
			c, found = Caller{Name: g.Caller, Ceiling: g.Ceiling, Allow: allowlist(g.Tools), Admin: g.Admin}, true
		}
		if !found && a.reviewer != nil {
			id, err := a.reviewer.Review(r.Context(), token)
			if err != nil {
				status := http.StatusUnauthorized
				var re *ReviewError
				if errors.As(err, &re) {
					status = re.Status
				}
				return Caller{}, &authError{status: status, msg: "bearer token refused: " + err.Error()}
			}
			ceiling, err := autonomy.ParseLevel(id.Level)
			if err != nil {
				return Caller{}, &authError{status: http.StatusForbidden, msg: fmt.Sprintf("%s: the Agent's autonomyLevel: %v", id.Caller, err)}
			}
			c, found = Caller{Name: id.Caller, Agent: id.Agent, verifiedAgent: id.Agent, Ceiling: ceiling, Allow: allowlist(id.Tools), Admin: id.Admin}, true
		}
		if !found {
			return Caller{}, &authError{status: http.StatusUnauthorized, msg: "bearer token refused: not a token of this hub",
				token: &oauth.Error{Status: http.StatusUnauthorized, Code: "invalid_token", Reason: "not a token of this hub"}}
		}
	case a.anonymous != nil:
		c = *a.anonymous
		c.anonymousAt = r.RemoteAddr
	default:
		return Caller{}, &authError{status: http.StatusUnauthorized, msg: a.credentialsRequired()}
	}
	c.Level = c.Ceiling
	if c.Agent == "" {
		c.Agent = r.Header.Get(HeaderAgent)
	}
	c.Workflow, c.Step = r.Header.Get(HeaderWorkflow), r.Header.Get(HeaderStep)
	if asked := strings.TrimSpace(r.Header.Get(HeaderAutonomyLevel)); asked != "" {
		lvl, err := autonomy.ParseLevel(asked)
		if err != nil {
			return Caller{}, &authError{status: http.StatusBadRequest, msg: HeaderAutonomyLevel + ": " + err.Error()}
		}
		if lvl > c.Ceiling {
			return Caller{}, &authError{status: http.StatusForbidden, msg: fmt.Sprintf("%s: %s may use at most %s autonomy, asked for %s", HeaderAutonomyLevel, c.Name, c.Ceiling, lvl)}
		}
		c.Level = lvl
	}
	return c, nil
}

func (a *Auth) credentialsRequired() string {
	if a.oauth != nil {
		return "credentials required: send Authorization: Bearer <token>; an OAuth client finds where to get one at " + a.oauth.MetadataURL()
	}
	return "credentials required: send Authorization: Bearer <token>"
}

// challenge is the WWW-Authenticate value of a refusal, "" for none: a
// 401, and with OAuth also a 403 for a token without MCP scopes.
func (a *Auth) challenge(err *authError) string {
	switch {
	case a.oauth != nil && (err.status == http.StatusUnauthorized || err.token != nil && err.token.Code == "insufficient_scope"):
		return a.oauth.Challenge(err.token)
	case err.status == http.StatusUnauthorized:
		return `Bearer realm="mcp-hub"`
	}
	return ""
}

// lookupToken compares in constant time against every configured token.
func (a *Auth) lookupToken(token string) (Caller, bool) {
	h := sha256.Sum256([]byte(token))
	var found Caller
	ok := 0
	for _, e := range a.tokens {
		if subtle.ConstantTimeCompare(h[:], e.hash[:]) == 1 {
			found, ok = e.caller, 1
		}
	}
	return found, ok == 1
}

func bearer(header string) (string, bool) {
	const prefix = "bearer "
	if len(header) > len(prefix) && strings.EqualFold(header[:len(prefix)], prefix) {
		return strings.TrimSpace(header[len(prefix):]), true
	}
	return "", false
}

// requireCaller authenticates every request of an MCP face and refuses the
// ones without a valid caller before any MCP processing.
func (s *Server) requireCaller(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = s.peerClient(r)
		c, err := s.auth.authenticate(r)
		if err != nil {
			s.log.Warn().Str("audit", "auth").Str("path", r.URL.Path).Str("remote", r.RemoteAddr).
				Int("status", err.status).Str("reason", err.msg).Msg("request refused")
			if ch := s.auth.challenge(err); ch != "" {
				w.Header().Set("WWW-Authenticate", ch)
			}
			refuse(w, err.status, codeAuthRequired, err.msg)
			return
		}
		next.ServeHTTP(w, r.WithContext(withCaller(r.Context(), c)))
	})
}

// peerClient is r as its client sent it. A client's answer that a peer
// passed on (peers.go) comes from the peer's address; when it does come
// from a peer, it counts as from the address of the client the peer names,
// so that an anonymous caller's answer reaches its own session on this
// replica too. Anyone else's header is ignored.
func (s *Server) peerClient(r *http.Request) *http.Request {
	client := r.Header.Get(forwardedForHeader)
	if client == "" || r.Method != http.MethodPost || r.Header.Get(forwardedHeader) == "" ||
		s.peers == nil || !s.peers.isPeer(r.Context(), r.RemoteAddr) {
		return r
	}
	r = r.WithContext(r.Context())
	r.RemoteAddr = client
	return r
}
