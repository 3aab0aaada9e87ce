// Package oauth makes the hub an OAuth 2.1 resource server, as the MCP
// authorization spec asks of a remote MCP server: it publishes protected
// resource metadata (RFC 9728) naming the authorization servers it trusts,
// and it accepts their JWT access tokens only when they were issued for the
// hub (audience, RFC 8707), are signed by a key the issuer publishes, and
// are inside their lifetime.
//
// Issuers are found by OAuth (RFC 8414) or OpenID Connect discovery; their
// key sets are cached, refreshed on a fixed interval (a key the issuer
// withdrew stops being accepted within it) and at once, at most every few
// seconds, when a token names a key the cache does not hold (a rotation).
// Nothing here calls the network on the request path except that refresh.
//
// A token grants autonomy by its scopes (mcp:restricted, mcp:supervised,
// mcp:full) and by claim rules an operator writes for an issuer (a group
// to a level and a tool allowlist); the highest grant wins. A valid token
// that grants nothing is refused with insufficient_scope: fail closed.
//
// It imports nothing of the hub but autonomy, and never logs or returns a
// token.
package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
	"github.com/lestrrat-go/httprc/v3"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
	"github.com/lestrrat-go/jwx/v3/jwt"
	"golang.org/x/time/rate"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/toolspec"
)

// Issuer is one trusted authorization server.
type Issuer struct {
	// Issuer is the issuer identifier, exactly as its tokens' iss claim
	// and its metadata's issuer field write it.
	Issuer string
	// Audiences a token must name one of; empty means the resource.
	Audiences []string
	// JWKSURL, when set, is used instead of the discovered jwks_uri.
	JWKSURL string
	// NameClaim is the claim that names the caller in audit lines
	// (default sub).
	NameClaim string
	// Rules grant levels by claims beside the scopes.
	Rules []Rule
	// Guardrails hold every caller of this issuer; a matching rule's add
	// to them.
	Guardrails *toolspec.Guardrails
}

// Rule grants MaxLevel (and Tools, Admin) to a token whose Claim holds
// Value: equal to a string claim, or an item of an array claim. Claim may
// be a dotted path into nested objects (realm_access.roles).
type Rule struct {
	Claim, Value string
	MaxLevel     autonomy.Level
	// Tools, when not empty, are the only tools this grant reaches.
	Tools []string
	// Admin lets the caller use the REST API's writes.
	Admin bool
	// Approver lets the caller decide calls held for a person.
	Approver bool
	// Guardrails, when set, hold the tokens this rule matches.
	Guardrails *toolspec.Guardrails
}

// Options configure a Verifier.
type Options struct {
	// Resource is the hub's MCP endpoint URL, the audience of its tokens.
	Resource string
	Issuers  []Issuer
	// ClockSkew is allowed on exp and nbf.
	ClockSkew time.Duration
	// JWKSRefresh is how often key sets are fetched again (default 5m).
	JWKSRefresh time.Duration
	// HTTPClient fetches metadata and key sets (default: 10s timeout).
	HTTPClient *http.Client
	// OnError, when set, hears background failures: a discovery (with its
	// issuer) or a periodic key set refresh (issuer empty).
	OnError func(issuer string, err error)
	// Now replaces the clock in tests.
	Now func() time.Time
}

// scopeLevels are the scopes that grant a level, lowest first.
var scopeLevels = []struct {
	scope string
	level autonomy.Level
}{
	{"mcp:restricted", autonomy.Restricted},
	{"mcp:supervised", autonomy.Supervised},
	{"mcp:full", autonomy.Full},
}

// Scopes returns the scopes the hub understands, lowest grant first, as
// its metadata lists them.
func Scopes() []string {
	out := make([]string, len(scopeLevels))
	for i, s := range scopeLevels {
		out[i] = s.scope
	}
	return out
}

// Grant is what a verified token allows.
type Grant struct {
	// Caller names the token's holder: the issuer's host and the value of
	// its name claim, e.g. "login.example.com/alice".
	Caller  string
	Issuer  string
	Ceiling autonomy.Level
	// Tools, when not nil, are the only tools the caller may use.
	Tools []string
	Admin bool
	// Approver: a matching rule lets the caller decide held calls.
	Approver bool
	// Guardrails are the issuer's and every matching rule's, added up.
	Guardrails *toolspec.Guardrails
	// Expiry is the token's exp.
	Expiry time.Time
}

// Error is a refused token: the HTTP status, the OAuth error code for the
// WWW-Authenticate header and a reason the caller can act on. It never
// holds the token.
type Error struct {
	Status int
	// Code is invalid_token, insufficient_scope or temporarily_unavailable.
	Code   string
	Reason string
}

func (e *Error) Error() string { return e.Reason }

func invalid(format string, args ...any) *Error {
	return &Error{Status: http.StatusUnauthorized, Code: "invalid_token", Reason: fmt.Sprintf(format, args...)}
}

// Verifier checks access tokens. It is safe for concurrent use.
type Verifier struct {
	opts    Options
	cache   *jwk.Cache
	issuers map[string]*issuer
	// verified holds the grants of tokens checked before, by the SHA-256
	// of the token: a signature check costs about 0.1 ms, a hit a
	// microsecond. A hit still checks the expiry and that the issuer
	// still publishes the token's key.
	verified *expirable.LRU[[sha256.Size]byte, verifiedToken]
}

type verifiedToken struct {
	grant Grant
	iss   string
	kid   string
}

// Bounds of the cache of verified tokens.
const (
	verifiedSize = 4096
	verifiedTTL  = 5 * time.Minute
)

type issuer struct {
	Issuer
	label     string
	audiences []string
	keys      atomic.Pointer[httprc.ResourceBase[jwk.Set]]
	refresh   *rate.Limiter // refreshes asked for by an unknown kid
	mu        sync.Mutex    // one discovery at a time
	lastErr   error
	lastTry   time.Time
}

// retryDiscovery bounds how often a request retries a failed discovery.
const retryDiscovery = 5 * time.Second

// Refreshes of a key set asked for by tokens with an unknown kid: at most
// one per refreshEvery, and a request waits up to refreshWait for its
// turn. A rotation is then always followed, and tokens with made-up kids
// cost the issuer one request a second at most.
const (
	refreshEvery = time.Second
	refreshWait  = 2 * time.Second
)

// New returns a Verifier and starts discovering its issuers in the
// background; ctx owns that work and the key set refreshes.
func New(ctx context.Context, opts Options) (*Verifier, error) {
	if opts.Resource == "" {
		return nil, errors.New("oauth: resource is required")
	}
	if opts.JWKSRefresh <= 0 {
		opts.JWKSRefresh = 5 * time.Minute
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	cache, err := jwk.NewCache(ctx, httprc.NewClient(httprc.WithErrorSink(sinkFunc(opts.OnError))))
	if err != nil {
		return nil, fmt.Errorf("oauth: start the key set cache: %w", err)
	}
	v := &Verifier{opts: opts, cache: cache, issuers: map[string]*issuer{},
		verified: expirable.NewLRU[[sha256.Size]byte, verifiedToken](verifiedSize, nil, verifiedTTL)}
	for _, is := range opts.Issuers {
		u, err := url.Parse(is.Issuer)
		if err != nil {
			return nil, fmt.Errorf("oauth: issuer %q: %w", is.Issuer, err)
		}
		in := &issuer{Issuer: is, label: u.Host + strings.TrimSuffix(u.Path, "/"), audiences: is.Audiences,
			refresh: rate.NewLimiter(rate.Every(refreshEvery), 1)}
		if len(in.audiences) == 0 {
			in.audiences = []string{opts.Resource}
		}
		if in.NameClaim == "" {
			in.NameClaim = "sub"
		}
		v.issuers[is.Issuer] = in
	}
	for _, in := range v.issuers {
		go v.discoverUntilDone(ctx, in)
	}
	return v, nil
}

// discoverUntilDone discovers in's key set, retrying with backoff until it
// works or ctx ends, so the first caller of a hub that started while its
// issuer was down does not wait for it.
func (v *Verifier) discoverUntilDone(ctx context.Context, in *issuer) {
	wait := time.Second
	for {
		if err := v.ensure(ctx, in); err == nil {
			return
		} else if v.opts.OnError != nil {
			v.opts.OnError(in.Issuer.Issuer, err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(wait*2, time.Minute)
	}
}

// Ready reports whether every issuer's key set has been fetched.
func (v *Verifier) Ready() bool {
	for _, in := range v.issuers {
		if in.keys.Load() == nil {
			return false
		}
	}
	return true
}

// ensure discovers in's key set once; a failure is remembered for
// retryDiscovery so a burst of requests does not hammer a down issuer.
func (v *Verifier) ensure(ctx context.Context, in *issuer) error {
	if in.keys.Load() != nil {
		return nil
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.keys.Load() != nil {
		return nil
	}
	if !in.lastTry.IsZero() && time.Since(in.lastTry) < retryDiscovery {
		return in.lastErr
	}
	in.lastTry = time.Now()
	in.lastErr = v.discover(ctx, in)
	return in.lastErr
}

func (v *Verifier) discover(ctx context.Context, in *issuer) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	jwks := in.JWKSURL
	if jwks == "" {
		md, err := discoverMetadata(ctx, v.opts.HTTPClient, in.Issuer.Issuer)
		if err != nil {
			return err
		}
		if md.JWKSURI == "" {
			return fmt.Errorf("issuer %s: its metadata has no jwks_uri (set auth.oauth.issuers[].jwksURL)", in.Issuer.Issuer)
		}
		jwks = md.JWKSURI
	}
	if !v.cache.IsRegistered(ctx, jwks) {
		err := v.cache.Register(ctx, jwks,
			jwk.WithHTTPClient(v.opts.HTTPClient),
			jwk.WithConstantInterval(v.opts.JWKSRefresh),
			jwk.WithMaxFetchBodySize(1<<20),
			jwk.WithWaitReady(false))
		if err != nil {
			return fmt.Errorf("issuer %s: watch key set %s: %w", in.Issuer.Issuer, jwks, err)
		}
	}
	res, err := v.cache.LookupResource(ctx, jwks)
	if err != nil {
		return fmt.Errorf("issuer %s: key set %s: %w", in.Issuer.Issuer, jwks, err)
	}
	if err := res.Ready(ctx); err != nil {
		return fmt.Errorf("issuer %s: fetch key set %s: %w", in.Issuer.Issuer, jwks, err)
	}
	in.keys.Store(res)
	return nil
}

// Trusts reports whether token is shaped as a JWT whose iss is one of the
// configured issuers, so the caller knows to verify it here rather than as
// another kind of token (a ServiceAccount token is a JWT too). It verifies
// nothing.
func (v *Verifier) Trusts(token string) bool {
	iss, _, ok := peek(token)
	return ok && v.issuers[iss] != nil
}

// peek reads the unverified iss claim and kid header of a compact JWS.
func peek(token string) (iss, kid string, ok bool) {
	head, rest, ok1 := strings.Cut(token, ".")
	payload, _, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || len(payload) > 64<<10 {
		return "", "", false
	}
	var h struct {
		Kid string `json:"kid"`
	}
	var p struct {
		Iss string `json:"iss"`
	}
	hb, err1 := base64.RawURLEncoding.DecodeString(head)
	pb, err2 := base64.RawURLEncoding.DecodeString(payload)
	if err1 != nil || err2 != nil || json.Unmarshal(hb, &h) != nil || json.Unmarshal(pb, &p) != nil || p.Iss == "" {
		return "", "", false
	}
	return p.Iss, h.Kid, true
}

// IsJWT reports whether token has the shape of a JWT with an iss claim,
// whoever issued it.
func IsJWT(token string) bool {
	_, _, ok := peek(token)
	return ok
}

// Verify checks token and returns what it grants, or an *Error.
func (v *Verifier) Verify(ctx context.Context, token string) (Grant, error) {
	iss, kid, ok := peek(token)
	if !ok {
		return Grant{}, invalid("the bearer token is not a JWT access token")
	}
	in := v.issuers[iss]
	if in == nil {
		return Grant{}, invalid("the token's issuer %q is not trusted by this hub (auth.oauth.issuers)", iss)
	}
	if err := v.ensure(ctx, in); err != nil {
		return Grant{}, &Error{Status: http.StatusServiceUnavailable, Code: "temporarily_unavailable",
			Reason: fmt.Sprintf("cannot check tokens of %s now: %v", iss, err)}
	}
	res := in.keys.Load()
	set := res.Resource()
	sum := sha256.Sum256([]byte(token))
	if hit, ok := v.verified.Get(sum); ok && hit.iss == iss && v.opts.Now().Before(hit.grant.Expiry.Add(v.opts.ClockSkew)) {
		if _, published := set.LookupKeyID(hit.kid); published || hit.kid == "" {
			return hit.grant, nil
		}
	}
	if kid != "" {
		if _, found := set.LookupKeyID(kid); !found && v.mayRefresh(ctx, in) {
			// A key the cache does not know: the issuer may have rotated.
			if fresh, err := v.cache.Refresh(ctx, res.URL()); err == nil {
				set = fresh
			} else if v.opts.OnError != nil {
				v.opts.OnError(iss, fmt.Errorf("refresh key set for key %q: %w", kid, err))
			}
		}
		if _, found := set.LookupKeyID(kid); !found {
			return Grant{}, invalid("the token is signed with key %q, which %s does not publish", kid, iss)
		}
	}
	tok, err := v.parse(token, iss, kid, set)
	if err != nil && isSignatureError(err) && v.mayRefresh(ctx, in) {
		// The key under that kid may have been replaced (a server that
		// reuses kids when it rotates): once more with a fresh set.
		if fresh, rerr := v.cache.Refresh(ctx, res.URL()); rerr == nil {
			tok, err = v.parse(token, iss, kid, fresh)
		}
	}
	if err != nil {
		return Grant{}, v.explain(err, token)
	}
	aud, _ := tok.Audience()
	if !anyOf(aud, in.audiences) {
		return Grant{}, invalid("the token's audience %q does not name this hub (%s); ask %s for a token with resource=%s",
			aud, strings.Join(in.audiences, ", "), iss, v.opts.Resource)
	}
	g, err := v.grant(in, tok)
	if err == nil {
		v.verified.Add(sum, verifiedToken{grant: g, iss: iss, kid: kid})
	}
	return g, err
}

// parse verifies token's signature with set and its claims.
func (v *Verifier) parse(token, iss, kid string, set jwk.Set) (jwt.Token, error) {
	return jwt.Parse([]byte(token),
		jwt.WithKeySet(set, jws.WithInferAlgorithmFromKey(true), jws.WithRequireKid(kid != "")),
		jwt.WithValidate(true),
		jwt.WithIssuer(iss),
		jwt.WithRequiredClaim("exp"),
		jwt.WithAcceptableSkew(v.opts.ClockSkew),
		jwt.WithClock(jwt.ClockFunc(v.opts.Now)),
	)
}

// isSignatureError reports whether err is a failed signature check rather
// than a claim jwx refused (exp, nbf, iss, a missing claim).
func isSignatureError(err error) bool {
	for _, claim := range []error{jwt.TokenExpiredError(), jwt.TokenNotYetValidError(), jwt.MissingRequiredClaimError(), jwt.InvalidIssuerError(), jwt.ValidateError()} {
		if errors.Is(err, claim) {
			return false
		}
	}
	return true
}

// mayRefresh waits for in's next allowed key set refresh, false when it
// does not come within refreshWait.
func (v *Verifier) mayRefresh(ctx context.Context, in *issuer) bool {
	ctx, cancel := context.WithTimeout(ctx, refreshWait)
	defer cancel()
	return in.refresh.Wait(ctx) == nil
}

// explain turns a jwx error into a reason the caller can act on.
func (v *Verifier) explain(err error, token string) *Error {
	exp := func() string {
		t, perr := jwt.ParseInsecure([]byte(token))
		if perr != nil {
			return ""
		}
		e, ok := t.Expiration()
		if !ok {
			return ""
		}
		return fmt.Sprintf(" at %s (%s ago)", e.UTC().Format(time.RFC3339), v.opts.Now().Sub(e).Round(time.Second))
	}
	switch {
	case errors.Is(err, jwt.TokenExpiredError()):
		return invalid("the token expired%s; get a new one", exp())
	case errors.Is(err, jwt.TokenNotYetValidError()):
		return invalid("the token is not valid yet (nbf is in the future)")
	case errors.Is(err, jwt.MissingRequiredClaimError()):
		return invalid("the token has no exp claim; access tokens must expire")
	case errors.Is(err, jwt.InvalidIssuerError()):
		return invalid("the token's issuer does not match")
	}
	return invalid("the token's signature does not verify: %v", err)
}

func anyOf(have, want []string) bool {
	for _, h := range have {
		for _, w := range want {
			if h == w {
				return true
			}
		}
	}
	return false
}

// sinkFunc passes the key set cache's background failures to OnError; the
// cache does not say whose set it was, so the issuer is empty.
type sinkFunc func(string, error)

func (f sinkFunc) Put(_ context.Context, err error) {
	if f != nil && err != nil {
		f("", fmt.Errorf("refresh a key set: %w", err))
	}
}
