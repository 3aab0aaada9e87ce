// Package tokenexchange trades a caller's own token for one minted for a
// single upstream, at an authorization server (OAuth 2.0 Token Exchange,
// RFC 8693), so that the upstream sees who calls and never the caller's
// token itself. It is apart from the upstream client because it is a job
// of its own: the exchange request, a bounded cache of exchanged tokens
// per caller token, one exchange in flight per caller token, and errors
// that name the authorization server's answer and never a token.
//
// The request is a form POST of a few fields (RFC 8693 section 2.1), done
// here rather than with an OpenID library: the one that has a client for
// it would link a second JOSE stack into the hub for those few fields.
package tokenexchange

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/singleflight"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/identity"
	"github.com/purko-io/mcp-hub/internal/oauth"
	"github.com/purko-io/mcp-hub/internal/secrets"
)

// GrantType is the grant_type of a token exchange (RFC 8693 section 2.1).
const GrantType = "urn:ietf:params:oauth:grant-type:token-exchange"

// DefaultCacheSize is how many exchanged tokens one upstream keeps: one per
// caller token in use. Past it the least recently used is exchanged again
// when next needed, so a flood of callers costs exchanges, not memory.
const DefaultCacheSize = 4096

// maxEarly is the most a token is replaced before it expires; a short-lived
// token is replaced at four fifths of its life.
const maxEarly = 30 * time.Second

// fallbackLifetime is how long a token is kept when neither the answer
// (expires_in) nor the token (exp) nor the caller's token says.
const fallbackLifetime = 60 * time.Second

// sweepEvery is how often an exchange sweeps the cache of tokens past
// their use.
const sweepEvery = time.Minute

// maxAnswer bounds what is read of the token endpoint's answer.
const maxAnswer = 64 << 10

// Options configure an Exchanger.
type Options struct {
	// Server names the upstream in errors.
	Server string
	// Exchange is the server's setting, client secret resolved.
	Exchange config.TokenExchange
	// HTTPClient reaches the token endpoint; it must bound each request
	// (Timeout), refuse redirects to another origin and repeat an exchange
	// on a kept-alive connection the token service closed
	// (oauthclient.TokenClient does all three).
	HTTPClient *http.Client
	// TokenURL finds the token endpoint when Exchange has none (the
	// issuer's metadata); nil: Exchange.TokenURL.
	TokenURL func(context.Context) (string, error)
	// CacheSize bounds the cache (0: DefaultCacheSize).
	CacheSize int
	// Now is the clock (nil: time.Now); tests move it.
	Now func() time.Time
}

// Exchanger exchanges callers' tokens for one upstream.
type Exchanger struct {
	opts     Options
	cache    *lru.Cache[[sha256.Size]byte, *entry]
	flight   singleflight.Group
	tokenURL func(context.Context) (string, error)

	exchanges atomic.Uint64 // answered exchanges, for metrics and tests
	failures  atomic.Uint64
	hits      atomic.Uint64

	mu    sync.Mutex
	swept time.Time // the last dropStale sweep
}

// entry is one exchanged token.
type entry struct {
	token     string
	seen      identity.Seen
	refreshAt time.Time // exchanged again from here on
}

// Token is an exchanged token and who the upstream will see with it.
type Token struct {
	AccessToken string
	Seen        identity.Seen
}

// New returns an Exchanger.
func New(opts Options) *Exchanger {
	if opts.CacheSize <= 0 {
		opts.CacheSize = DefaultCacheSize
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	x := &Exchanger{opts: opts, tokenURL: opts.TokenURL}
	if x.tokenURL == nil {
		u := opts.Exchange.TokenURL
		x.tokenURL = func(context.Context) (string, error) { return u, nil }
	}
	x.cache, _ = lru.New[[sha256.Size]byte, *entry](opts.CacheSize)
	return x
}

// Accepts says whether the exchange takes subj at all, and if not why, in
// words for the caller: a hub token or an anonymous caller has nothing to
// exchange, and a caller's OAuth token goes only to its own issuer when the
// setting names one.
func (x *Exchanger) Accepts(subj identity.Subject) error {
	want := x.opts.Exchange.Subjects()
	switch {
	case subj.Kind() == identity.None:
		return fmt.Errorf("upstream %s is reached with each caller's own identity (token exchange), and this caller has no token to exchange: call with %s", x.opts.Server, exchangeable(want))
	case subj.Kind() == identity.OAuth && want == config.SubjectServiceAccount:
		return fmt.Errorf("upstream %s exchanges only ServiceAccount tokens (tokenExchange.subjectToken: serviceAccount), and this caller called with an OAuth access token", x.opts.Server)
	case subj.Kind() == identity.ServiceAccount && want == config.SubjectOAuth:
		return fmt.Errorf("upstream %s exchanges only OAuth access tokens (tokenExchange.subjectToken: oauth), and this caller called with a ServiceAccount token", x.opts.Server)
	case subj.Kind() == identity.OAuth && x.opts.Exchange.Issuer != "" && subj.Issuer() != x.opts.Exchange.Issuer:
		return fmt.Errorf("upstream %s exchanges tokens of %s, and this caller's token was issued by %s: it is not sent to another issuer", x.opts.Server, x.opts.Exchange.Issuer, subj.Issuer())
	}
	return nil
}

// exchangeable names the tokens a setting exchanges, for a caller.
func exchangeable(k config.SubjectTokenKind) string {
	switch k {
	case config.SubjectServiceAccount:
		return "a ServiceAccount token"
	case config.SubjectAny:
		return "an OAuth access token or a ServiceAccount token"
	}
	return "an OAuth access token"
}

// Token returns a token for the upstream on behalf of subj: the cached one
// while it is fresh, else a new exchange. Concurrent calls with the same
// caller token wait for one exchange. The error is an *Error when the
// authorization server refused or could not be reached.
func (x *Exchanger) Token(ctx context.Context, subj identity.Subject) (Token, error) {
	if err := x.Accepts(subj); err != nil {
		return Token{}, err
	}
	key := cacheKey(subj)
	now := x.opts.Now()
	if e, ok := x.cache.Get(key); ok && now.Before(e.refreshAt) {
		x.hits.Add(1)
		return Token{AccessToken: e.token, Seen: e.seen}, nil
	}
	if exp := expires(subj); !exp.IsZero() && !now.Before(exp) {
		x.cache.Remove(key)
		return Token{}, &Error{Server: x.opts.Server, Code: "invalid_grant", Description: "the caller's token has expired"}
	}
	// One exchange per caller token, whoever waits for it; it runs to its
	// own end (the client's timeout) so that one caller going away does not
	// fail the others waiting.
	ch := x.flight.DoChan(string(key[:]), func() (any, error) {
		// A flight that ended between the lookup above and this one has
		// cached what this one would ask for.
		if e, ok := x.cache.Get(key); ok && x.opts.Now().Before(e.refreshAt) {
			return e, nil
		}
		return x.exchange(context.WithoutCancel(ctx), key, subj)
	})
	select {
	case <-ctx.Done():
		return Token{}, ctx.Err()
	case r := <-ch:
		if r.Err != nil {
			return Token{}, r.Err
		}
		e := r.Val.(*entry)
		return Token{AccessToken: e.token, Seen: e.seen}, nil
	}
}

// Forget drops the token the upstream refused (401), so that the next call
// exchanges again, unless a newer one already replaced it.
func (x *Exchanger) Forget(subj identity.Subject, token string) {
	key := cacheKey(subj)
	if e, ok := x.cache.Peek(key); ok && e.token == token {
		x.cache.Remove(key)
	}
}

// cacheKey is the cache's key of a caller token: its hash, so that the
// cache holds no caller token.
func cacheKey(subj identity.Subject) [sha256.Size]byte {
	return sha256.Sum256([]byte(subj.RevealToken()))
}

// Stats are the exchanger's counts: exchanges answered with a token,
// exchanges that failed, and calls served from the cache.
func (x *Exchanger) Stats() (exchanges, failures, hits uint64) {
	return x.exchanges.Load(), x.failures.Load(), x.hits.Load()
}

// exchange asks the authorization server and caches its answer.
func (x *Exchanger) exchange(ctx context.Context, key [sha256.Size]byte, subj identity.Subject) (*entry, error) {
	e, err := x.request(ctx, subj)
	if err != nil {
		x.failures.Add(1)
		return nil, err
	}
	x.exchanges.Add(1)
	x.cache.Add(key, e)
	x.dropStale()
	return e, nil
}

// dropStale removes the tokens past their use, at most once a minute and
// only on an exchange: a caller that went away (its token expired) leaves
// nothing behind for long, and no goroutine sweeps.
func (x *Exchanger) dropStale() {
	now := x.opts.Now()
	x.mu.Lock()
	due := now.Sub(x.swept) >= sweepEvery
	if due {
		x.swept = now
	}
	x.mu.Unlock()
	if !due {
		return
	}
	for _, k := range x.cache.Keys() {
		if e, ok := x.cache.Peek(k); ok && !now.Before(e.refreshAt) {
			x.cache.Remove(k)
		}
	}
}

// answer is the token endpoint's answer (RFC 8693 section 2.2, RFC 6749
// section 5.2 for errors).
type answer struct {
	AccessToken      string      `json:"access_token"`
	TokenType        string      `json:"token_type"`
	ExpiresIn        json.Number `json:"expires_in"`
	Error            string      `json:"error"`
	ErrorDescription string      `json:"error_description"`
}

// request sends one exchange.
func (x *Exchanger) request(ctx context.Context, subj identity.Subject) (*entry, error) {
	xc := x.opts.Exchange
	tokenURL, err := x.tokenURL(ctx)
	if err != nil {
		return nil, &Error{Server: x.opts.Server, Reason: err.Error()}
	}
	form := url.Values{
		"grant_type":           {GrantType},
		"subject_token":        {subj.RevealToken()},
		"subject_token_type":   {tokenType(subj)},
		"requested_token_type": {TypeAccessToken},
	}
	if xc.Audience != "" {
		form.Set("audience", xc.Audience)
	}
	if xc.Resource != "" {
		form.Set("resource", xc.Resource)
	}
	if len(xc.Scopes) > 0 {
		form.Set("scope", strings.Join(xc.Scopes, " "))
	}
	secret := xc.ClientSecretValue.Reveal()
	if xc.AuthStyle == config.OAuthAuthPost {
		form.Set("client_id", xc.ClientID)
		form.Set("client_secret", secret)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, tokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, &Error{Server: x.opts.Server, TokenURL: secrets.URLForMessage(tokenURL), Reason: "build the request: " + err.Error()}
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if xc.AuthStyle != config.OAuthAuthPost {
		// RFC 6749 section 2.3.1: both parts form-encoded first.
		req.SetBasicAuth(url.QueryEscape(xc.ClientID), url.QueryEscape(secret))
	}
	where := secrets.URLForMessage(tokenURL)
	redact := secrets.NewRedactor(subj.RevealToken(), secret)
	resp, err := x.opts.HTTPClient.Do(req)
	if err != nil {
		return nil, &Error{Server: x.opts.Server, TokenURL: where, Reason: redact.String(unwrapURLError(err).Error())}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return nil, &Error{Server: x.opts.Server, TokenURL: where, Status: resp.StatusCode, Reason: "read the answer: " + redact.String(err.Error())}
	}
	var a answer
	decodeErr := json.Unmarshal(body, &a)
	if resp.StatusCode != http.StatusOK || a.Error != "" {
		e := &Error{Server: x.opts.Server, TokenURL: where, Status: resp.StatusCode,
			Code: redact.String(short(a.Error, 100)), Description: redact.String(short(a.ErrorDescription, 300))}
		if e.Code == "" {
			e.Reason = fmt.Sprintf("HTTP %s", resp.Status)
		}
		return nil, e
	}
	switch {
	case len(body) > maxAnswer:
		return nil, &Error{Server: x.opts.Server, TokenURL: where, Status: resp.StatusCode, Reason: "the answer is larger than 64 KiB"}
	case decodeErr != nil:
		return nil, &Error{Server: x.opts.Server, TokenURL: where, Status: resp.StatusCode, Reason: "the answer is not a token response: " + redact.String(decodeErr.Error())}
	case a.AccessToken == "":
		return nil, &Error{Server: x.opts.Server, TokenURL: where, Status: resp.StatusCode, Reason: "the answer holds no access_token"}
	case a.TokenType != "" && !strings.EqualFold(a.TokenType, "bearer") && !strings.EqualFold(a.TokenType, "N_A"):
		return nil, &Error{Server: x.opts.Server, TokenURL: where, Status: resp.StatusCode, Reason: fmt.Sprintf("the token is of type %q, not Bearer", short(a.TokenType, 40))}
	case a.AccessToken == subj.RevealToken():
		// An authorization server that hands the caller's token back
		// would make the hub pass it through.
		return nil, &Error{Server: x.opts.Server, TokenURL: where, Status: resp.StatusCode, Reason: "the answer is the caller's own token"}
	}
	return x.entryOf(a, subj), nil
}

// entryOf makes the cache entry of an answer: who the upstream sees, and
// until when the token is used. It lives as long as the answer or the
// token says, never past the caller's own token, and is replaced shortly
// before it ends.
func (x *Exchanger) entryOf(a answer, subj identity.Subject) *entry {
	now := x.opts.Now()
	c := claimsOf(a.AccessToken)
	seen := identity.Seen{Subject: c.Sub, Actor: c.actor()}
	if seen.Subject == "" {
		seen.Subject = claimsOf(subj.RevealToken()).Sub // an opaque token: the caller's own subject
	}
	exp := c.expiry()
	if n, err := a.ExpiresIn.Int64(); err == nil && n > 0 {
		exp = now.Add(time.Duration(n) * time.Second)
	}
	if exp.IsZero() {
		exp = now.Add(fallbackLifetime)
	}
	if own := expires(subj); !own.IsZero() && own.Before(exp) {
		exp = own
	}
	early := min(maxEarly, exp.Sub(now)/5)
	return &entry{token: a.AccessToken, seen: seen, refreshAt: exp.Add(-early)}
}

// Error is a failed exchange. Its text names the upstream, the token
// endpoint and the authorization server's answer (status, OAuth error
// code and description), never a token or the client secret.
type Error struct {
	Server      string
	TokenURL    string
	Status      int
	Code        string // the OAuth error code: invalid_grant, invalid_scope, invalid_target, ...
	Description string
	Reason      string // when there is no error code: what went wrong
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "token exchange for upstream %s", e.Server)
	if e.TokenURL != "" {
		fmt.Fprintf(&b, " at %s", e.TokenURL)
	}
	b.WriteString(" failed: ")
	if e.Status != 0 && e.Code != "" {
		fmt.Fprintf(&b, "%d ", e.Status)
	}
	switch {
	case e.Code != "":
		b.WriteString(e.Code)
		if e.Description != "" {
			b.WriteString(": " + e.Description)
		}
	default:
		b.WriteString(e.Reason)
	}
	return b.String()
}

func short(s string, n int) string {
	s = strings.ToValidUTF8(strings.TrimSpace(s), "\uFFFD")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// unwrapURLError drops net/http's "Post <url>:" prefix: the message names
// the endpoint once, redacted.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// Endpoint returns the token endpoint finder of a setting that names an
// issuer and no token URL: the issuer's metadata is read on first use and
// kept once read; a failed read is tried again on the next use.
func Endpoint(client *http.Client, issuer string) func(context.Context) (string, error) {
	var (
		mu    sync.Mutex
		found string
	)
	return func(ctx context.Context) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		if found != "" {
			return found, nil
		}
		u, err := oauth.TokenEndpoint(ctx, client, issuer)
		if err != nil {
			return "", fmt.Errorf("find the token endpoint: %w", err)
		}
		// It gets callers' tokens: as the setting's own URLs, only over
		// TLS or on loopback.
		if p, err := url.Parse(u); err != nil || p.Host == "" || p.User != nil ||
			p.Scheme != "https" && !(p.Scheme == "http" && isLoopback(p.Hostname())) {
			return "", fmt.Errorf("find the token endpoint: issuer %s names %q, not an https URL (http only on loopback)", issuer, secrets.URLForMessage(u))
		}
		found = u
		return u, nil
	}
}

func isLoopback(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || ip != nil && ip.IsLoopback()
}
