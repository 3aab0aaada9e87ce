// Package oauthclient gets the hub's own access token for an upstream
// behind an authorization server (config's spec.OAuth), by the client
// credentials grant, and puts it on every HTTP request to that upstream.
// It is apart from the upstream client because it is a job of its own: a
// token cache with its own HTTP client, expiry, invalidation on 401, and a
// redactor that changes with the token.
package oauthclient

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/secrets"
)

// An upstream behind an authorization server (spec.OAuth) gets the hub's
// own access token, from the client credentials grant, on every HTTP
// request: Wrap puts it in the upstream client's HTTPClient, so streamable
// HTTP, legacy SSE and the direct POSTs all carry it; a WebSocket gets it
// in its dial headers (Source.Token). The token is cached until shortly before it expires
// (oauth2.ReuseTokenSourceWithExpiry), and dropped when the upstream
// answers 401, so the next request asks for a new one. The caller's token
// is never involved: it was issued for the hub.
//
// The access token changes at run time, so the upstream client's static
// redactor cannot know it: a Source keeps a redactor of the static
// credentials plus the current and the previous access token
// (Source.Redactor), and the client redacts with it.

// defaultTokenTimeout bounds a token request when Options set no connect
// timeout: oauth2's TokenSource has no context of its own to end it.
const defaultTokenTimeout = 15 * time.Second

// Source gets, caches and invalidates one upstream's access token.
type Source struct {
	server   string
	tokenURL string // redacted, for messages
	cfg      *clientcredentials.Config
	// fetchCtx carries the token endpoint's HTTP client (oauth2.HTTPClient)
	// for every fetch. TokenSource.Token has no context of its own: the
	// client's timeout bounds a fetch, and Close ends one in flight.
	fetchCtx context.Context
	close    context.CancelFunc
	early    time.Duration // how long before expiry a token is replaced (0: oauth2's 10s)
	static   []string      // the upstream's static credentials, for the redactor
	// endpoint finds the token endpoint on each fetch when the settings
	// name an issuer instead (token exchange's issuer); nil: cfg.TokenURL.
	endpoint func(context.Context) (string, error)

	mu      sync.Mutex
	cache   oauth2.TokenSource // a ReuseTokenSource over fetcher
	current string             // the access token cache last fetched
	prev    string             // the one before it: it may still be quoted

	redactor   atomic.Pointer[secrets.Redactor]
	rejections atomic.Uint64 // 401s that dropped the cached token
	fetches    atomic.Uint64 // token requests sent, for tests and logs
}

// New returns the token source of spec, or nil when the hub gets no token
// of its own for it (spec.ClientCredentials). base is the transport token
// requests go through (the shared pool); timeout bounds each of them;
// early is how long before its expiry a token is replaced (0: oauth2's
// 10s); static are the upstream's static credentials, which the redactor
// removes too. endpoint, when not nil, finds the token endpoint (the
// settings name an issuer, not a token URL).
func New(spec config.ServerSpec, base http.RoundTripper, timeout, early time.Duration, static []string, endpoint func(context.Context) (string, error)) *Source {
	o := spec.ClientCredentials()
	if o == nil {
		return nil
	}
	params := url.Values{}
	if o.Audience != "" {
		params.Set("audience", o.Audience)
	}
	if r := o.ResourceOrURL(spec.URL); r != "" {
		params.Set("resource", r)
	}
	style := oauth2.AuthStyleInHeader
	if o.AuthStyle == config.OAuthAuthPost {
		style = oauth2.AuthStyleInParams
	}
	if timeout <= 0 {
		timeout = defaultTokenTimeout
	}
	hc := TokenClient(base, timeout)
	ctx, cancel := context.WithCancel(context.Background())
	s := &Source{
		server:   spec.Name,
		tokenURL: secrets.URLForMessage(cmp.Or(o.TokenURL, issuerOf(spec))),
		cfg: &clientcredentials.Config{
			ClientID:       o.ClientID,
			ClientSecret:   o.ClientSecretValue.Reveal(),
			TokenURL:       o.TokenURL,
			Scopes:         o.Scopes,
			EndpointParams: params,
			AuthStyle:      style,
		},
		fetchCtx: context.WithValue(ctx, oauth2.HTTPClient, hc),
		close:    cancel,
		early:    early,
		static:   static,
		endpoint: endpoint,
	}
	s.cache = oauth2.ReuseTokenSourceWithExpiry(nil, fetcher{s}, s.early)
	s.redactor.Store(secrets.NewRedactor(static...))
	return s
}

// issuerOf is the issuer a token exchange finds its endpoint at, for
// messages when the settings name no token URL.
func issuerOf(spec config.ServerSpec) string {
	if spec.TokenExchange != nil {
		return spec.TokenExchange.Issuer
	}
	return ""
}

// Token returns a valid access token, fetching one when the cached one is
// missing or about to expire. The error (a *TokenError) says what failed,
// redacted.
func (s *Source) Token() (*oauth2.Token, error) {
	s.mu.Lock()
	ts := s.cache
	s.mu.Unlock()
	return ts.Token()
}

// reject drops the cached token after the upstream refused tok, unless a
// newer one already replaced it (concurrent requests all see the 401).
func (s *Source) reject(tok string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if tok == "" || tok != s.current {
		return
	}
	s.cache = oauth2.ReuseTokenSourceWithExpiry(nil, fetcher{s}, s.early)
	s.current = ""
	s.rejections.Add(1)
}

// Redactor redacts the static credentials and the access tokens.
func (s *Source) Redactor() *secrets.Redactor { return s.redactor.Load() }

// Rejections counts the 401s that dropped the cached token: a connect
// that failed while it grew may succeed with a new token.
func (s *Source) Rejections() uint64 { return s.rejections.Load() }

// Close ends a token request in flight: it must not hold the upstream
// client's Stop up.
func (s *Source) Close() { s.close() }

// fetcher asks the authorization server for a new token; the
// ReuseTokenSource in front of it decides when.
type fetcher struct{ s *Source }

func (f fetcher) Token() (*oauth2.Token, error) {
	s := f.s
	s.fetches.Add(1)
	cfg := s.cfg
	if s.endpoint != nil {
		u, err := s.endpoint(s.fetchCtx)
		if err != nil {
			return nil, &TokenError{Server: s.server, TokenURL: s.tokenURL, Reason: err.Error(), err: err}
		}
		c := *cfg
		c.TokenURL = u
		cfg = &c
	}
	tok, err := cfg.Token(s.fetchCtx)
	if err != nil {
		return nil, &TokenError{Server: s.server, TokenURL: s.tokenURL, Reason: s.redactor.Load().String(tokenFailure(err)), err: err}
	}
	s.mu.Lock()
	if tok.AccessToken != s.current {
		s.prev, s.current = s.current, tok.AccessToken
		s.redactor.Store(secrets.NewRedactor(append([]string{s.current, s.prev}, s.static...)...))
	}
	s.mu.Unlock()
	return tok, nil
}

// TokenError is a failed token request for an upstream. Its text names the
// upstream, the token endpoint and the authorization server's answer
// (status and OAuth error code), never the client secret or a token.
type TokenError struct {
	Server   string
	TokenURL string
	Reason   string
	err      error
}

func (e *TokenError) Error() string {
	return fmt.Sprintf("get OAuth token for upstream %s from %s: %s", e.Server, e.TokenURL, e.Reason)
}

// Unwrap returns the oauth2 or transport error, for errors.As.
func (e *TokenError) Unwrap() error { return e.err }

// tokenFailure says in a few words what the token endpoint answered:
// "401 invalid_client: bad secret", or the transport error.
func tokenFailure(err error) string {
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) {
		return err.Error()
	}
	var b strings.Builder
	if re.Response != nil {
		fmt.Fprintf(&b, "%d", re.Response.StatusCode)
	}
	switch {
	case re.ErrorCode != "":
		b.WriteString(" " + re.ErrorCode)
		if re.ErrorDescription != "" {
			b.WriteString(": " + re.ErrorDescription)
		}
	case re.Response != nil:
		b.Reset()
		b.WriteString(re.Response.Status)
		if body := strings.TrimSpace(strings.ToValidUTF8(string(re.Body), "\uFFFD")); body != "" {
			if r := []rune(body); len(r) > 200 {
				body = string(r[:200]) + "…"
			}
			b.WriteString(": " + body)
		}
	}
	return strings.TrimSpace(b.String())
}

// oauthTransport sets the upstream's access token on every request and
// drops it when the upstream answers 401.
type oauthTransport struct {
	src  *Source
	next http.RoundTripper
}

func (t oauthTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if ct, _ := req.Context().Value(callTokenKey{}).(*callToken); ct != nil {
		r := req.Clone(req.Context())
		r.Header.Set("Authorization", "Bearer "+ct.token)
		resp, err := t.next.RoundTrip(r)
		if err == nil && resp.StatusCode == http.StatusUnauthorized && ct.refused != nil {
			ct.refused()
		}
		return resp, err
	}
	tok, err := t.src.Token()
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	// A RoundTripper must not change the request it was given.
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	resp, err := t.next.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusUnauthorized {
		t.src.reject(tok.AccessToken)
	}
	return resp, err
}

// Wrap returns a copy of hc whose requests carry src's token.
func Wrap(hc *http.Client, src *Source) *http.Client {
	c := *hc
	next := c.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	c.Transport = oauthTransport{src: src, next: next}
	return &c
}

// WrapCallTokens returns a copy of hc whose requests made under a call's
// context carry the call's token (WithCallToken), and the others hub(ctx)
// when it has one: a server reached with each caller's own grant and no
// credential of the hub's (user OAuth).
func WrapCallTokens(hc *http.Client, hub func(context.Context) string) *http.Client {
	c := *hc
	next := c.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	c.Transport = callTransport{hub: hub, next: next}
	return &c
}

type callTransport struct {
	hub  func(context.Context) string
	next http.RoundTripper
}

func (t callTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ct, _ := req.Context().Value(callTokenKey{}).(*callToken)
	tok := ""
	switch {
	case ct != nil:
		tok = ct.token
	case t.hub != nil:
		tok = t.hub(req.Context())
	}
	if tok == "" {
		return t.next.RoundTrip(req)
	}
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+tok)
	resp, err := t.next.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusUnauthorized && ct != nil && ct.refused != nil {
		ct.refused()
	}
	return resp, err
}

// A call made on a caller's behalf (token exchange) carries a token of its
// own: the requests made under its context send it in place of the hub's,
// and a 401 drops it, not the hub's.
type callToken struct {
	token   string
	refused func()
}

type callTokenKey struct{}

// WithCallToken makes the requests sent under ctx carry token instead of
// the hub's own; refused, when not nil, runs when the upstream answers one
// of them 401.
func WithCallToken(ctx context.Context, token string, refused func()) context.Context {
	return context.WithValue(ctx, callTokenKey{}, &callToken{token: token, refused: refused})
}

// WithoutCallToken undoes WithCallToken for the requests sent under the
// returned context: the hub's own requests made while a call is under way
// (a client set up for it and kept for others) carry the hub's token.
func WithoutCallToken(ctx context.Context) context.Context {
	if ctx.Value(callTokenKey{}) == nil {
		return ctx
	}
	return context.WithValue(ctx, callTokenKey{}, (*callToken)(nil))
}

// TokenClient is the HTTP client of a token endpoint, for the hub's own
// tokens and for token exchanges. The endpoint gets the client secret (and
// callers' tokens): a redirect to another origin is refused. A token
// request is safe to send twice (each answer is a fresh token, nothing adds
// up on the token service), so it is marked replayable: net/http then
// repeats it on a new connection when the token service closed a
// kept-alive one under it (a restart, an idle timeout) instead of failing
// the caller's call with EOF.
func TokenClient(base http.RoundTripper, timeout time.Duration) *http.Client {
	if base == nil {
		base = http.DefaultTransport
	}
	return &http.Client{Transport: replayable{base}, Timeout: timeout, CheckRedirect: secrets.RefuseCrossOrigin}
}

// replayable marks every request as safe to repeat.
type replayable struct{ next http.RoundTripper }

func (t replayable) RoundTrip(req *http.Request) (*http.Response, error) {
	if _, ok := req.Header["Idempotency-Key"]; !ok {
		req = req.Clone(req.Context())
		// The key with no value marks the request and is not sent.
		req.Header["Idempotency-Key"] = nil
	}
	return t.next.RoundTrip(req)
}
