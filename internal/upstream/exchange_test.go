package upstream

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/identity"
	"github.com/purko-io/mcp-hub/internal/upstream/tokenexchange"
)

// exchangeIdP is a test token service: the client credentials grant gives
// the hub access-token-N, a token exchange gives xchg-<subject>-N.
type exchangeIdP struct {
	URL       string
	exchanges atomic.Int64
	refuse    atomic.Bool // answer exchanges 400 invalid_grant
}

func newExchangeIdP(t *testing.T) *exchangeIdP {
	x := &exchangeIdP{}
	var n atomic.Int64
	x.URL = serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		w.Header().Set("Content-Type", "application/json")
		switch r.PostForm.Get("grant_type") {
		case "client_credentials":
			fmt.Fprintf(w, `{"access_token":%q,"token_type":"bearer","expires_in":3600}`, accessToken(n.Add(1)))
		case tokenexchange.GrantType:
			if x.refuse.Load() {
				w.WriteHeader(http.StatusBadRequest)
				io.WriteString(w, `{"error":"invalid_grant","error_description":"subject token revoked"}`)
				return
			}
			x.exchanges.Add(1)
			fmt.Fprintf(w, `{"access_token":"xchg-%s-%d","token_type":"Bearer","expires_in":3600,"issued_token_type":%q}`,
				r.PostForm.Get("subject_token"), n.Add(1), tokenexchange.TypeAccessToken)
		default:
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":"unsupported_grant_type"}`)
		}
	})).URL + "/token"
	return x
}

// seenByMethod records the Authorization of each JSON-RPC method an
// upstream got, and refuses the tokens it is told to.
type seenByMethod struct {
	mu      sync.Mutex
	auth    map[string][]string // method -> Authorization headers
	refused map[string]bool
}

func (s *seenByMethod) wrap(inner http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		method := "GET"
		if i := bytes.Index(body, []byte(`"method":"`)); i >= 0 {
			rest := body[i+len(`"method":"`):]
			method = string(rest[:bytes.IndexByte(rest, '"')])
		}
		auth := r.Header.Get("Authorization")
		s.mu.Lock()
		s.auth[method] = append(s.auth[method], auth)
		refused := s.refused[auth]
		s.mu.Unlock()
		if refused {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		inner.ServeHTTP(w, r)
	})
}

func (s *seenByMethod) of(method string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.auth[method]...)
}

// TestTokenExchangeCalls: each call reaches the server with the token
// exchanged for its caller, the hub's own requests with the hub's token; a
// call without a caller token, or whose exchange fails, never reaches the
// server; a refused exchanged token is exchanged again; a result quoting
// the exchanged token does not hand it to the caller.
func TestTokenExchangeCalls(t *testing.T) {
	idp := newExchangeIdP(t)
	seen := &seenByMethod{auth: map[string][]string{}, refused: map[string]bool{}}
	u := serve(t, seen.wrap(mcpserver.NewStreamableHTTPServer(testServer("up", nil)))).URL + "/mcp"
	spec := config.ServerSpec{Name: "notes", URL: u, Transport: config.TransportStreamableHTTP,
		TokenExchange: &config.TokenExchange{OAuthClient: config.OAuthClient{TokenURL: idp.URL, ClientID: "hub",
			ClientSecretValue: testClientSecret, Audience: "notes"}}}
	c := startClient(t, spec, Options{})

	alice := identity.OAuthSubject("alice-token", "https://idp", time.Now().Add(time.Hour))
	bob := identity.OAuthSubject("bob-token", "https://idp", time.Now().Add(time.Hour))
	for range 3 {
		ctx, who := identity.WithSeen(identity.WithSubject(context.Background(), alice))
		if got, err := callTool(ctx, c, "echo", "a"); err != nil || got != "up:a" {
			t.Fatalf("alice's call: %q %v", got, err)
		}
		if who.Subject != "" {
			t.Errorf("an opaque token of an opaque caller token names subject %q", who.Subject)
		}
	}
	if got, err := callTool(identity.WithSubject(context.Background(), bob), c, "echo", "b"); err != nil || got != "up:b" {
		t.Fatalf("bob's call: %q %v", got, err)
	}
	calls := seen.of("tools/call")
	want := []string{"Bearer xchg-alice-token-2", "Bearer xchg-alice-token-2", "Bearer xchg-alice-token-2", "Bearer xchg-bob-token-3"}
	if strings.Join(calls, ",") != strings.Join(want, ",") {
		t.Fatalf("tools/call Authorization: %q, want %q", calls, want)
	}
	for _, m := range []string{"initialize", "tools/list"} {
		for _, a := range seen.of(m) {
			if a != "Bearer "+accessToken(1) {
				t.Fatalf("%s carried %q, want the hub's own token", m, a)
			}
		}
	}
	if n := idp.exchanges.Load(); n != 2 {
		t.Errorf("%d exchanges for 4 calls of 2 callers, want 2", n)
	}

	// No caller token: refused before the server, not sent as the hub.
	_, err := callTool(context.Background(), c, "echo", "anon")
	if err == nil || !strings.Contains(err.Error(), "upstream notes is reached with each caller's own identity (token exchange), and this caller has no token to exchange") {
		t.Fatalf("call without a caller token: %v", err)
	}
	// The authorization server refuses: the call fails with its code.
	idp.refuse.Store(true)
	carol := identity.OAuthSubject("carol-token", "https://idp", time.Now().Add(time.Hour))
	_, err = callTool(identity.WithSubject(context.Background(), carol), c, "echo", "c")
	if err == nil || !strings.Contains(err.Error(), "token exchange for upstream notes at ") || !strings.Contains(err.Error(), "400 invalid_grant: subject token revoked") {
		t.Fatalf("refused exchange: %v", err)
	}
	if strings.Contains(err.Error(), "carol-token") {
		t.Fatalf("the error names the caller's token: %v", err)
	}
	if got := seen.of("tools/call"); len(got) != 4 {
		t.Fatalf("calls that had no exchanged token reached the server: %q", got[4:])
	}
	idp.refuse.Store(false)

	// The server refuses alice's exchanged token: the call fails, the next
	// one is exchanged anew.
	seen.mu.Lock()
	seen.refused["Bearer xchg-alice-token-2"] = true
	seen.mu.Unlock()
	actx := identity.WithSubject(context.Background(), alice)
	if _, err := callTool(actx, c, "echo", "refused"); err == nil || !strings.HasSuffix(err.Error(), "upstream notes refused the token exchanged for this caller (HTTP 401); the next call gets a new one") {
		t.Fatalf("a call the server refused with 401: %v", err)
	}
	if got, err := callTool(actx, c, "echo", "again"); err != nil || got != "up:again" {
		t.Fatalf("the call after a refused token: %q %v", got, err)
	}
	calls = seen.of("tools/call")
	if last := calls[len(calls)-1]; last == "Bearer xchg-alice-token-2" || !strings.HasPrefix(last, "Bearer xchg-alice-token-") {
		t.Fatalf("after the 401 the call carried %q, want a new exchanged token", last)
	}

	// A server that quotes the token it got: the caller never sees it.
	exchanged := strings.TrimPrefix(calls[len(calls)-1], "Bearer ")
	if got, err := callTool(actx, c, "echo", "you sent "+exchanged); err != nil || strings.Contains(got, exchanged) || !strings.Contains(got, "[redacted]") {
		t.Fatalf("a result quoting the exchanged token: %q %v", got, err)
	}
}
