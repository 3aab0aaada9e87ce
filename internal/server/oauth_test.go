package server

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/oauth"
	"github.com/purko-io/mcp-hub/internal/oauth/oauthtest"
)

// TestOAuthCallers: the hub as an OAuth resource server beside its own
// tokens: metadata, challenges that name it, and access tokens whose
// scopes are the caller's ceiling.
func TestOAuthCallers(t *testing.T) {
	up := newFakeUpstream(t, "a")
	is := oauthtest.New(t, "", "/.well-known/oauth-authorization-server")
	is.AddKey("k1", false)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	// The resource is where clients reach the hub (behind an ingress, say),
	// not the address the test hub listens on.
	const resource = "https://hub.example.com/mcp"
	v, err := oauth.New(ctx, oauth.Options{Resource: resource, Issuers: []oauth.Issuer{{Issuer: is.URL()}}})
	if err != nil {
		t.Fatal(err)
	}
	auth := callers.NewAuth([]callers.TokenCaller{{Name: "ci", Token: "hub-token-1234", Ceiling: autonomy.Full}}, nil, nil).WithOAuth(v)
	audit := &lockedBuffer{}
	h := newTestHubLog(t, []config.ServerSpec{up.spec()}, hubOpts{Auth: auth}, audit)
	h.waitConnected("a")

	t.Run("metadata", func(t *testing.T) {
		for _, p := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"} {
			resp, body := h.send(t, "GET", p, nil)
			var md oauth.ProtectedResource
			if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &md) != nil {
				t.Fatalf("GET %s: %s %s", p, resp.Status, body)
			}
			if md.Resource != resource || !slices.Equal(md.AuthorizationServers, []string{is.URL()}) || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
				t.Fatalf("GET %s: %+v, ACAO %q", p, md, resp.Header.Get("Access-Control-Allow-Origin"))
			}
		}
	})

	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	claims := func(extra map[string]any) map[string]any {
		c := map[string]any{"sub": "alice", "aud": resource}
		for k, v := range extra {
			c[k] = v
		}
		return c
	}
	challenge := `Bearer resource_metadata="https://hub.example.com/.well-known/oauth-protected-resource/mcp"`
	for _, tc := range []struct {
		name, token string
		status      int
		header      string // the WWW-Authenticate it must start with
		has         string // and hold
	}{
		{"no token", "", 401, challenge, ""},
		{"wrong audience", is.Sign("k1", claims(map[string]any{"aud": "https://other.example.com/mcp", "scope": "mcp:full"})), 401, challenge + `, error="invalid_token"`, "does not name this hub"},
		{"no MCP scope", is.Sign("k1", claims(map[string]any{"scope": "openid"})), 403, challenge + `, error="insufficient_scope"`, `scope="mcp:restricted mcp:supervised mcp:full"`},
		{"not a hub token", "wrong-token-5678", 401, challenge + `, error="invalid_token"`, "not a token of this hub"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hdr := []string{}
			if tc.token != "" {
				hdr = append(hdr, "Authorization", "Bearer "+tc.token)
			}
			resp, body := h.send(t, "POST", "/mcp", strings.NewReader(initialize), hdr...)
			got := resp.Header.Get("WWW-Authenticate")
			if resp.StatusCode != tc.status || !strings.HasPrefix(got, tc.header) || !strings.Contains(got, tc.has) {
				t.Fatalf("status %d, WWW-Authenticate %q, body %s", resp.StatusCode, got, body)
			}
			if tc.token != "" && (strings.Contains(got, tc.token) || strings.Contains(body, tc.token)) {
				t.Fatal("the refusal holds the token")
			}
		})
	}

	list := func(token string) []string {
		tr, err := transport.NewStreamableHTTP(h.url("/mcp"), transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
		if err != nil {
			t.Fatal(err)
		}
		c, _ := dialFace(t, tr)
		defer c.Close()
		names := toolNames(t, c)
		if slices.Contains(names, "echo") {
			if text, isErr := call(t, c, "echo", map[string]any{"text": "hi"}); isErr || text != "a:hi" {
				t.Fatalf("echo as %s: %q %v", token[:8], text, isErr)
			}
		}
		return names
	}
	if names := list(is.Sign("k1", claims(map[string]any{"scope": "mcp:full"}))); !slices.Contains(names, "echo") {
		t.Fatalf("a mcp:full token lists %v, without the write tool echo", names)
	}
	if names := list(is.Sign("k1", claims(map[string]any{"scope": "mcp:restricted", "sub": "bob"}))); slices.Contains(names, "echo") {
		t.Fatalf("a mcp:restricted token lists the write tool echo: %v", names)
	}
	if names := list("hub-token-1234"); !slices.Contains(names, "echo") {
		t.Fatalf("the hub's own token lists %v beside OAuth", names)
	}
	caller := strings.TrimPrefix(is.URL(), "http://") + "/alice"
	found := false
	for _, l := range audit.auditLines(t) {
		found = found || l["caller"] == caller && l["tool"] == "echo"
	}
	if !found {
		t.Fatalf("no tools/call audit line names the OAuth caller %s: %v", caller, audit.auditLines(t))
	}
}
