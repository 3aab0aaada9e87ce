package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/mcpws"
)

const testClientSecret = "cl1ent-s3cret-value"

// authServer is a test authorization server on loopback: it issues
// access-token-0001, -0002, … to the client hub:testClientSecret.
type authServer struct {
	t         *testing.T
	URL       string
	expiresIn atomic.Int64 // seconds
	fail      atomic.Bool  // answer 401 invalid_client, echoing the secret
	issued    atomic.Int64

	mu    sync.Mutex
	forms []requestSeen
}

type requestSeen struct {
	basicUser, basicPass string
	form                 map[string]string
}

func newAuthServer(t *testing.T) *authServer {
	a := &authServer{t: t}
	a.expiresIn.Store(3600)
	a.URL = serve(t, http.HandlerFunc(a.serveToken)).URL + "/oauth2/token"
	return a
}

func (a *authServer) serveToken(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	seen := requestSeen{form: map[string]string{}}
	seen.basicUser, seen.basicPass, _ = r.BasicAuth()
	for k := range r.PostForm {
		seen.form[k] = r.PostForm.Get(k)
	}
	a.mu.Lock()
	a.forms = append(a.forms, seen)
	a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	secret := seen.basicPass
	if secret == "" {
		secret = seen.form["client_secret"]
	}
	if a.fail.Load() || secret != testClientSecret || r.PostForm.Get("grant_type") != "client_credentials" {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":"invalid_client","error_description":"client secret %s is wrong"}`, secret)
		return
	}
	n := a.issued.Add(1)
	fmt.Fprintf(w, `{"access_token":%q,"token_type":"bearer","expires_in":%d}`, accessToken(n), a.expiresIn.Load())
}

func (a *authServer) requests() []requestSeen {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]requestSeen(nil), a.forms...)
}

func accessToken(n int64) string { return fmt.Sprintf("access-token-%04d", n) }

// guardedMCP is an MCP server that takes only the tokens it is told are
// good and records the Authorization of every request it gets.
type guardedMCP struct {
	mu      sync.Mutex
	refused map[string]bool // tokens answered with 401
	seen    []string        // Authorization headers, in order
	calls   map[string]int  // tools/call POSTs per Authorization
}

func newGuardedMCP() *guardedMCP {
	return &guardedMCP{refused: map[string]bool{}, calls: map[string]int{}}
}

func (g *guardedMCP) refuse(tok string) {
	g.mu.Lock()
	g.refused["Bearer "+tok] = true
	g.mu.Unlock()
}

func (g *guardedMCP) wrap(inner http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		var body []byte
		if r.Body != nil {
			body, _ = io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		g.mu.Lock()
		g.seen = append(g.seen, auth)
		if bytes.Contains(body, []byte(`"tools/call"`)) {
			g.calls[auth]++
		}
		refused := g.refused[auth] || !strings.HasPrefix(auth, "Bearer access-token-")
		g.mu.Unlock()
		if refused {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, "token refused: "+auth)
			return
		}
		inner.ServeHTTP(w, r)
	})
}

func (g *guardedMCP) authorizations() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.seen...)
}

func (g *guardedMCP) callsWith(tok string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.calls["Bearer "+tok]
}

func oauthSpec(name, rawURL string, tr config.Transport, a *authServer, style config.OAuthAuthStyle) config.ServerSpec {
	return config.ServerSpec{
		Name: name, URL: rawURL, Transport: tr,
		OAuth: &config.OAuthClient{
			TokenURL: a.URL, ClientID: "hub", ClientSecretValue: testClientSecret,
			Scopes: []string{"mcp:full", "read"}, Audience: "https://mcp.example.com", AuthStyle: style,
		},
	}
}

// Every request to the upstream, on every HTTP transport, carries the
// hub's token, fetched once with the configured client credentials and
// reused while it is valid.
func TestOAuthTokenSentAndReused(t *testing.T) {
	cases := []struct {
		name  string
		tr    config.Transport
		path  string
		style config.OAuthAuthStyle
		h     func() http.Handler
	}{
		{"streamable HTTP, basic", config.TransportStreamableHTTP, "/mcp", "", func() http.Handler {
			return mcpserver.NewStreamableHTTPServer(testServer("up", nil))
		}},
		{"SSE, post", config.TransportSSE, "/sse", config.OAuthAuthPost, func() http.Handler {
			return mcpserver.NewSSEServer(testServer("up", nil))
		}},
		{"WebSocket, basic", config.TransportWebSocket, "/ws", config.OAuthAuthBasic, func() http.Handler {
			return mcpws.NewHandler(testServer("up", nil))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			auth := newAuthServer(t)
			up := newGuardedMCP()
			u := serve(t, up.wrap(tc.h())).URL + tc.path
			if tc.tr == config.TransportWebSocket {
				u = "ws" + strings.TrimPrefix(u, "http")
			}
			c := startClient(t, oauthSpec("remote", u, tc.tr, auth, tc.style), Options{})
			for i := range 3 {
				got, err := callTool(context.Background(), c, "echo", fmt.Sprint(i))
				if err != nil || got != fmt.Sprintf("up:%d", i) {
					t.Fatalf("call %d: %q, %v", i, got, err)
				}
			}
			if n := auth.issued.Load(); n != 1 {
				t.Errorf("%d tokens fetched, want 1 reused", n)
			}
			seen := up.authorizations()
			if len(seen) == 0 {
				t.Fatal("upstream got no request")
			}
			for _, a := range seen {
				if a != "Bearer "+accessToken(1) {
					t.Fatalf("upstream got Authorization %q, want the hub's token; all: %q", a, seen)
				}
			}
			reqs := auth.requests()
			if len(reqs) != 1 {
				t.Fatalf("%d token requests, want 1", len(reqs))
			}
			r := reqs[0]
			want := map[string]string{"grant_type": "client_credentials", "scope": "mcp:full read", "audience": "https://mcp.example.com", "resource": u}
			if tc.style == config.OAuthAuthPost {
				want["client_id"], want["client_secret"] = "hub", testClientSecret
				if r.basicUser != "" {
					t.Errorf("authStyle post sent Basic auth too")
				}
			} else if r.basicUser != "hub" || r.basicPass != testClientSecret {
				t.Errorf("Basic auth %q:%q, want hub and the secret", r.basicUser, r.basicPass)
			}
			for k, v := range want {
				if r.form[k] != v {
					t.Errorf("token request %s = %q, want %q (form %v)", k, r.form[k], v, r.form)
				}
			}
			if len(r.form) != len(want) {
				t.Errorf("token request form %v, want exactly %v", r.form, want)
			}
		})
	}
}

// A token is replaced once it is (about to be) expired.
func TestOAuthTokenRefreshedAfterExpiry(t *testing.T) {
	auth := newAuthServer(t)
	auth.expiresIn.Store(1)
	up := newGuardedMCP()
	u := serve(t, up.wrap(mcpserver.NewStreamableHTTPServer(testServer("up", nil)))).URL + "/mcp"
	c := startClient(t, oauthSpec("remote", u, config.TransportStreamableHTTP, auth, ""), Options{tokenEarlyExpiry: time.Nanosecond})
	first := auth.issued.Load()
	time.Sleep(1100 * time.Millisecond)
	if got, err := callTool(context.Background(), c, "echo", "late"); err != nil || got != "up:late" {
		t.Fatalf("call after expiry: %q, %v", got, err)
	}
	n := auth.issued.Load()
	if n <= first {
		t.Fatalf("no new token after expiry (%d fetched)", n)
	}
	seen := up.authorizations()
	if last := seen[len(seen)-1]; last != "Bearer "+accessToken(n) {
		t.Errorf("last request carried %q, want the newest token %s", last, accessToken(n))
	}
}

// A 401 from the upstream drops the token: a refused handshake is tried
// once more at once with a new token, and a refused tools/call fails
// without being sent again, while the next requests get a new token.
func TestOAuthUnauthorizedGetsNewToken(t *testing.T) {
	auth := newAuthServer(t)
	up := newGuardedMCP()
	up.refuse(accessToken(1)) // revoked before the hub even connects
	u := serve(t, up.wrap(mcpserver.NewStreamableHTTPServer(testServer("up", nil)))).URL + "/mcp"
	// A backoff of an hour: connecting at all proves the immediate retry.
	c := New(oauthSpec("remote", u, config.TransportStreamableHTTP, auth, ""),
		Options{ConnectTimeout: 5 * time.Second, Timeout: 5 * time.Second, BackoffMin: time.Hour, BackoffMax: time.Hour, BreakerFailures: 5, BreakerOpenFor: 50 * time.Millisecond}, zerolog.Nop(), func() {})
	c.Start(context.Background())
	t.Cleanup(c.Stop)
	waitState(t, c, StateConnected)
	if n := auth.issued.Load(); n != 2 {
		t.Fatalf("%d tokens fetched, want 2 (refused, then the one that worked)", n)
	}
	if got, err := callTool(context.Background(), c, "echo", "a"); err != nil || got != "up:a" {
		t.Fatalf("call: %q, %v", got, err)
	}

	up.refuse(accessToken(2))
	_, err := callTool(context.Background(), c, "echo", "b")
	if err == nil {
		t.Fatal("call with a refused token succeeded")
	}
	assertNoAccessToken(t, "call error", err.Error())
	if n := up.callsWith(accessToken(2)); n != 2 {
		t.Errorf("%d tools/call with token 2, want 2 (one good, one refused, no retry)", n)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		got, err := callTool(context.Background(), c, "echo", "c")
		if err == nil && got == "up:c" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no call works after the refused token: %v (status %+v)", err, c.Status())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := up.callsWith(accessToken(3)); n < 1 {
		t.Errorf("token 3 carried %d calls, want the next calls", n)
	}
}

// A failing token endpoint is the upstream's status, saying what failed,
// without the client secret the endpoint echoed.
func TestOAuthTokenEndpointFailureInStatus(t *testing.T) {
	auth := newAuthServer(t)
	auth.fail.Store(true)
	up := newGuardedMCP()
	u := serve(t, up.wrap(mcpserver.NewStreamableHTTPServer(testServer("up", nil)))).URL + "/mcp"
	var logs lockedBuffer
	c := New(oauthSpec("remote", u, config.TransportStreamableHTTP, auth, ""),
		Options{ConnectTimeout: time.Second, BackoffMin: time.Hour, BackoffMax: time.Hour}, zerolog.New(&logs).Level(zerolog.DebugLevel), func() {})
	c.Start(context.Background())
	t.Cleanup(c.Stop)
	st := waitState(t, c, StateError)
	// The authorization server's description is its text: for admins.
	want := "get OAuth token for upstream remote from " + auth.URL + ": 401 invalid_client"
	if st.Error != want || st.Detail != "401 invalid_client: client secret [redacted] is wrong" {
		t.Errorf("status error\n  %s\n  detail %s\nwant\n  %s", st.Error, st.Detail, want)
	}
	if n := len(up.authorizations()); n != 0 {
		t.Errorf("upstream got %d requests without a token", n)
	}
	for what, text := range map[string]string{"status": st.Error, "detail": st.Detail, "unavailable": c.Unavailable().Error(), "log": logs.String()} {
		if strings.Contains(text, testClientSecret) {
			t.Errorf("%s leaks the client secret: %s", what, text)
		}
	}
	if !strings.Contains(logs.String(), "get OAuth token for upstream remote") {
		t.Errorf("log does not say the token request failed: %s", logs.String())
	}
}

// The access token is fetched at run time, yet redacted like a static
// credential wherever the upstream echoes it.
func TestOAuthAccessTokenRedacted(t *testing.T) {
	auth := newAuthServer(t)
	inner := mcpserver.NewStreamableHTTPServer(testServer("up", nil))
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"tools/call"`)) {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":"bad token `+r.Header.Get("Authorization")+`"}`)
			return
		}
		inner.ServeHTTP(w, r)
	})
	u := serve(t, h).URL + "/mcp"
	c := startClient(t, oauthSpec("remote", u, config.TransportStreamableHTTP, auth, ""), Options{})
	_, err := callTool(context.Background(), c, "echo", "x")
	if err == nil {
		t.Fatal("call succeeded")
	}
	assertNoAccessToken(t, "call error", err.Error())
	if !strings.Contains(err.Error(), "bad token Bearer [redacted]") {
		t.Errorf("call error %q does not show the redacted echo", err)
	}
	if got := c.cred.Text("x " + accessToken(1) + " y"); got != "x [redacted] y" {
		t.Errorf("redactText = %q", got)
	}
	js := c.cred.JSON(map[string]string{"t": accessToken(1)})
	assertNoAccessToken(t, "redacted JSON", string(js))
	var v map[string]string
	if err := json.Unmarshal(js, &v); err != nil {
		t.Errorf("redacted JSON %s: %v", js, err)
	}
}

func assertNoAccessToken(t *testing.T, what, text string) {
	t.Helper()
	if strings.Contains(text, "access-token-") {
		t.Errorf("%s leaks an access token: %s", what, text)
	}
}

// The token endpoint gets the client secret, so a redirect of it to
// another origin is refused, and a hanging one does not hold Stop up.
func TestOAuthTokenEndpointRedirectAndHang(t *testing.T) {
	elsewhere := newAuthServer(t)
	redirect := serve(t, http.RedirectHandler(elsewhere.URL, http.StatusTemporaryRedirect)).URL + "/token"
	hang := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Read first: the server notices the client leave only then.
		_, _ = io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	})).URL + "/token"
	up := newGuardedMCP()
	u := serve(t, up.wrap(mcpserver.NewStreamableHTTPServer(testServer("up", nil)))).URL + "/mcp"

	spec := oauthSpec("remote", u, config.TransportStreamableHTTP, elsewhere, "")
	spec.OAuth.TokenURL = redirect
	c := New(spec, Options{ConnectTimeout: 5 * time.Second, BackoffMin: time.Hour, BackoffMax: time.Hour}, zerolog.Nop(), func() {})
	c.Start(context.Background())
	st := waitState(t, c, StateError)
	c.Stop()
	if !strings.Contains(st.Error, "get OAuth token for upstream remote from "+redirect) || !strings.Contains(st.Error, "redirect to another origin refused") {
		t.Errorf("status error %q does not say the redirect was refused", st.Error)
	}
	if n := len(elsewhere.requests()); n != 0 {
		t.Errorf("the other origin got %d token requests", n)
	}

	spec.OAuth.TokenURL = hang
	c = New(spec, Options{ConnectTimeout: time.Minute, BackoffMin: time.Hour, BackoffMax: time.Hour}, zerolog.Nop(), func() {})
	c.Start(context.Background())
	time.Sleep(100 * time.Millisecond)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		c.Stop()
	}()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("Stop waits for a hanging token endpoint")
	}
}
