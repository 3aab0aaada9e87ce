package callers

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/identity"
	"github.com/purko-io/mcp-hub/internal/oauth"
	"github.com/purko-io/mcp-hub/internal/ratelimit"
	"github.com/purko-io/mcp-hub/internal/toolspec"
)

// TokenCaller is one configured inbound token.
type TokenCaller struct {
	Name    string
	Token   string
	Ceiling autonomy.Level
	Tools   []string
	// Limits, when set, replace the hub's per-caller limits for this caller.
	Limits *ratelimit.Limits
	// Admin may approve changed tool definitions (POST /api/mcp/pins/approve).
	Admin bool
	// Guardrails, when set, hold the caller's calls (auth.tokens[].guardrails).
	Guardrails *toolspec.Guardrails
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
	// Guardrails are the Agent's spec.guardrails, validated; nil for none.
	Guardrails *toolspec.Guardrails
	// PodUID is the UID of the pod the token is bound to, "" for a token
	// bound to none: the caller's run, which no session or traceparent
	// it sends can change (identity.Subject.Pod).
	PodUID string
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
			caller: Caller{Name: t.Name, Ceiling: t.Ceiling, Allow: allowlist(t.Tools), limits: t.Limits, Admin: t.Admin, Guardrails: t.Guardrails},
		})
	}
	if anonymous != nil {
		a.anonymous = &Caller{Name: "anonymous", Ceiling: *anonymous}
	}
	return a
}

// HasOwnLimits reports whether any token caller has limits of its own, so
// the hub sets up per-caller limiters even when its default is none.
func (a *Auth) HasOwnLimits() bool {
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

// Bearer says what a client must know about the hub's bearer tokens to
// reach it, for the MCP Registry API's remotes: whether the hub takes any
// at all, and whether a request without one is refused (no anonymous
// access).
func (a *Auth) Bearer() (accepted, required bool) {
	accepted = len(a.tokens) > 0 || a.reviewer != nil || a.oauth != nil
	return accepted, a.anonymous == nil
}

// OAuth returns the verifier of access tokens, nil when not configured.
func (a *Auth) OAuth() *oauth.Verifier { return a.oauth }

func allowlist(tools []string) *autonomy.Allowlist {
	if len(tools) == 0 {
		return nil
	}
	return autonomy.NewAllowlist(tools)
}

// Refusal is a request refused before it was served: the HTTP status and
// a message for the caller (never a token).
type Refusal struct {
	Status int
	Msg    string
	// token is why an OAuth access token was refused, for the challenge.
	token *oauth.Error
}

func (r *Refusal) Error() string { return r.Msg }

// Authenticate finds the caller of r and its effective level.
func (a *Auth) Authenticate(r *http.Request) (Caller, *Refusal) {
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
				return Caller{}, &Refusal{oe.Status, "bearer token refused: " + oe.Reason, oe}
			}
			c, found = Caller{Name: g.Caller, Ceiling: g.Ceiling, Allow: allowlist(g.Tools), Admin: g.Admin, Approver: g.Approver, Guardrails: g.Guardrails,
				Subject: identity.OAuthSubject(token, g.Issuer, g.Expiry)}, true
		}
		if !found && a.reviewer != nil {
			id, err := a.reviewer.Review(r.Context(), token)
			if err != nil {
				status := http.StatusUnauthorized
				var re *ReviewError
				if errors.As(err, &re) {
					status = re.Status
				}
				return Caller{}, &Refusal{Status: status, Msg: "bearer token refused: " + err.Error()}
			}
			ceiling, err := autonomy.ParseLevel(id.Level)
			if err != nil {
				return Caller{}, &Refusal{Status: http.StatusForbidden, Msg: fmt.Sprintf("%s: the Agent's autonomyLevel: %v", id.Caller, err)}
			}
			c, found = Caller{Name: id.Caller, Agent: id.Agent, verifiedAgent: id.Agent, Ceiling: ceiling, Allow: allowlist(id.Tools), Admin: id.Admin, Guardrails: id.Guardrails,
				Subject: identity.ServiceAccountSubject(token).BoundToPod(id.PodUID)}, true
		}
		if !found {
			return Caller{}, &Refusal{Status: http.StatusUnauthorized, Msg: "bearer token refused: not a token of this hub",
				token: &oauth.Error{Status: http.StatusUnauthorized, Code: "invalid_token", Reason: "not a token of this hub"}}
		}
	case a.anonymous != nil:
		c = *a.anonymous
		c.anonymousAt = r.RemoteAddr
	default:
		return Caller{}, &Refusal{Status: http.StatusUnauthorized, Msg: a.credentialsRequired()}
	}
	c.Level = c.Ceiling
	if c.Agent == "" {
		c.Agent = r.Header.Get(HeaderAgent)
	}
	c.Workflow, c.Step = r.Header.Get(HeaderWorkflow), r.Header.Get(HeaderStep)
	if !c.Guardrails.Empty() {
		c.Traceparent = r.Header.Get("Traceparent")
	}
	if asked := strings.TrimSpace(r.Header.Get(HeaderAutonomyLevel)); asked != "" {
		lvl, err := autonomy.ParseLevel(asked)
		if err != nil {
			return Caller{}, &Refusal{Status: http.StatusBadRequest, Msg: HeaderAutonomyLevel + ": " + err.Error()}
		}
		if lvl > c.Ceiling {
			return Caller{}, &Refusal{Status: http.StatusForbidden, Msg: fmt.Sprintf("%s: %s may use at most %s autonomy, asked for %s", HeaderAutonomyLevel, c.Name, c.Ceiling, lvl)}
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

// Challenge is the WWW-Authenticate value of a refusal, "" for none: a
// 401, and with OAuth also a 403 for a token without MCP scopes.
func (a *Auth) Challenge(err *Refusal) string {
	switch {
	case a.oauth != nil && (err.Status == http.StatusUnauthorized || err.token != nil && err.token.Code == "insufficient_scope"):
		return a.oauth.Challenge(err.token)
	case err.Status == http.StatusUnauthorized:
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
