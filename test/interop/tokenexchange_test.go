package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/purko-io/mcp-hub/internal/hubtest"
	"github.com/purko-io/mcp-hub/internal/hubtest/idp"
)

// Token exchange (RFC 8693) end to end, with a real token service
// (zitadel/oidc's OpenID provider, internal/hubtest/idp) and upstreams that
// accept only JWTs it minted for them: each caller reaches the upstream as
// itself, never with its own token, at most one exchange per caller token
// and lifetime, and every failure fails the call, closed.
func TestTokenExchangeThroughHub(t *testing.T) {
	listen := fmt.Sprintf("127.0.0.1:%d", hubtest.FreePort(t))
	resource := "http://" + listen + "/mcp"
	const hubSecret = "hub-client-secret-at-the-idp"
	agentScopes := []string{"mcp:full", "mcp:restricted"}
	svc := idp.Start(t, idp.Options{Clients: []idp.Client{
		{ID: "mcp-hub", Secret: hubSecret, Exchange: true, Audiences: []string{"notes-api"}, Scopes: []string{"notes:read"}},
		{ID: "agent-a", Secret: "secret-a", Scopes: agentScopes},
		{ID: "agent-b", Secret: "secret-b", Scopes: agentScopes},
		{ID: "agent-c", Secret: "secret-c", Scopes: agentScopes},
	}})
	notes := idp.StartUpstream(t, svc, "notes-api")
	scoped := idp.StartUpstream(t, svc, "scoped-api")
	plain := hubtest.StartUpstream(t, "plain", server.ServerTool{
		Tool: mcp.NewTool("ping_plain", mcp.WithReadOnlyHintAnnotation(true)),
		Handler: func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("pong"), nil
		}})

	cfg := fmt.Sprintf(`naming:
  prefix: always
servers:
  - name: notes
    url: %q
    auth: tokenExchange
    trustAnnotations: true
    tokenExchange:
      issuer: %q
      clientID: mcp-hub
      clientSecret: {env: IDP_CLIENT_SECRET}
      audience: notes-api
      scopes: [notes:read]
  - name: scoped
    url: %q
    trustAnnotations: true
    tokenExchange:
      tokenURL: %q
      clientID: mcp-hub
      clientSecret: {env: IDP_CLIENT_SECRET}
      audience: scoped-api
  - name: plain
    url: %q
    trustAnnotations: true
auth:
  tokens:
    - name: ops
      token: {env: OPS_TOKEN}
      maxLevel: full
  oauth:
    resource: %q
    issuers:
      - issuer: %q
`, notes.URL, svc.Issuer(), scoped.URL, svc.TokenURL(), plain.URL, resource, svc.Issuer())
	const opsToken = "ops-hub-token-0123456789"
	hub := hubtest.StartHub(t, hubtest.HubOptions{Listen: listen, Config: cfg, Wait: hubtest.Connected,
		Env: []string{"IDP_CLIENT_SECRET=" + hubSecret, "OPS_TOKEN=" + opsToken}})

	tokenA := svc.ClientToken(t, "agent-a", "secret-a", resource, "mcp:full")
	tokenB := svc.ClientToken(t, "agent-b", "secret-b", resource, "mcp:full")
	run := func(tok, tool string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", hub.Base+"/api/mcp/tools/"+tool+"/run", strings.NewReader(`{}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return resp.StatusCode, readAll(resp)
	}

	// Each caller as itself, 100 calls each.
	const calls = 100
	for _, c := range []struct{ name, token string }{{"agent-a", tokenA}, {"agent-b", tokenB}} {
		for i := range calls {
			status, body := run(c.token, "notes__whoami")
			if status != 200 || !strings.Contains(body, "subject="+c.name+" actor=mcp-hub") {
				t.Fatalf("%s call %d: HTTP %d %s\nhub:\n%s", c.name, i, status, body, hub.Output())
			}
		}
	}
	exchanges, _ := svc.Stats(t)
	t.Logf("token exchanges: %d for %d calls of 2 callers (%.3f per call)", exchanges, 2*calls, float64(exchanges)/float64(2*calls))
	if exchanges > 2 {
		t.Errorf("%d exchanges for 2 callers' %d calls: want one per caller token (<= 1 per 100 calls)", exchanges, 2*calls)
	}

	// What the upstream saw: the hub's own token for the hub's requests,
	// the callers' exchanged tokens for their calls, never a caller's own.
	var callsA, callsB, own int
	for _, s := range notes.Seen() {
		if s.Token == tokenA || s.Token == tokenB {
			t.Fatalf("the upstream got a caller's own token (%s %s)", s.HTTPMethod, s.Method)
		}
		if s.Status == 401 {
			t.Fatalf("the upstream refused a request of the hub: %+v", s.Method)
		}
		switch {
		case s.Method == "tools/call" && s.Subject == "agent-a" && s.Actor == "mcp-hub":
			callsA++
		case s.Method == "tools/call" && s.Subject == "agent-b" && s.Actor == "mcp-hub":
			callsB++
		case s.Method == "tools/call":
			t.Fatalf("a tools/call as subject %q actor %q", s.Subject, s.Actor)
		case s.Subject == "mcp-hub":
			own++
		default:
			t.Fatalf("a %s %s as %q", s.HTTPMethod, s.Method, s.Subject)
		}
		if !contains(s.Audience, "notes-api") {
			t.Fatalf("a token for audience %q", s.Audience)
		}
	}
	if callsA != calls || callsB != calls || own == 0 {
		t.Fatalf("the upstream saw %d calls as agent-a, %d as agent-b, %d requests as the hub", callsA, callsB, own)
	}

	// The MCP face, as an IDE client sends it: same answer.
	c := guardClient(t, hub, "streamable", tokenA, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "notes__whoami"}})
	if err != nil || res.IsError || resultText(res) != "subject=agent-a actor=mcp-hub" {
		t.Fatalf("whoami over /mcp: %v %+v", err, res)
	}

	// A caller is shown what it may run: a hub token has no token to
	// exchange, so the servers reached as each caller are not in its list.
	names := func(tok string) string {
		c := guardClient(t, hub, "streamable", tok, nil)
		res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tool := range res.Tools {
			out = append(out, tool.Name)
		}
		return strings.Join(out, ",")
	}
	if got := names(opsToken); strings.Contains(got, "notes__") || !strings.Contains(got, "plain__ping_plain") {
		t.Fatalf("the hub-token caller lists %s", got)
	}
	if got := names(tokenA); !strings.Contains(got, "notes__whoami") {
		t.Fatalf("agent-a lists %s", got)
	}

	// Fail closed: a hub token has nothing to exchange; the exchange for
	// an audience the hub's client may not ask for is refused (the hub's
	// own client credentials for it are not: the server is connected); the
	// token service is down. Each is a tool error naming the
	// server and why, and nothing reaches the upstream as the hub.
	before := len(notes.Seen())
	status, body := run(opsToken, "notes__whoami")
	if status != http.StatusForbidden || !strings.Contains(body, "BLOCKED: tool 'notes__whoami': upstream notes is reached with each caller's own identity (token exchange), and this caller has no token to exchange") {
		t.Fatalf("a hub-token caller: HTTP %d %s", status, body)
	}
	if len(notes.Seen()) != before {
		t.Fatalf("a call without a caller token reached the upstream: %+v", notes.Seen()[before:])
	}
	status, body = run(tokenA, "scoped__whoami")
	if !strings.Contains(body, "token exchange for upstream scoped at "+svc.TokenURL()+" failed: 400 invalid_target") {
		t.Fatalf("a refused audience: HTTP %d %s", status, body)
	}
	for _, s := range scoped.Seen() {
		if s.Method == "tools/call" {
			t.Fatalf("a call whose exchange failed reached the upstream: %+v", s)
		}
	}

	tokenC := svc.ClientToken(t, "agent-c", "secret-c", resource, "mcp:full") // not exchanged yet
	svc.Stop()
	status, body = run(tokenC, "notes__whoami")
	if !strings.Contains(body, "token exchange for upstream notes at ") || !strings.Contains(body, "connection refused") {
		t.Fatalf("the token service down: HTTP %d %s", status, body)
	}
	if status, body := run(tokenC, "plain__ping_plain"); status != 200 || !strings.Contains(body, "pong") {
		t.Fatalf("another server while the token service is down: HTTP %d %s", status, body)
	}
	// A caller whose token was exchanged before goes on until it expires.
	if status, body := run(tokenA, "notes__whoami"); status != 200 || !strings.Contains(body, "subject=agent-a") {
		t.Fatalf("a cached exchange while the token service is down: HTTP %d %s", status, body)
	}

	// Seen where people look: the audit line names who the upstream saw,
	// /api/mcp/servers the auth mode; no token anywhere.
	out := hub.Output()
	if !strings.Contains(out, `"upstream_subject":"agent-b"`) || !strings.Contains(out, `"upstream_actor":"mcp-hub"`) {
		t.Fatalf("no audit line names the upstream's subject:\n%s", lastLines(out, 20))
	}
	for _, secret := range []string{tokenA, tokenB, tokenC, hubSecret, opsToken} {
		if strings.Contains(out, secret) {
			t.Fatal("the hub logged a token or the client secret")
		}
	}
	req, _ := http.NewRequest("GET", hub.Base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+opsToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	metrics := readAll(resp)
	for _, m := range []string{
		`mcphub_token_exchanges_total{result="exchanged",server="notes"} 2`,
		`mcphub_token_exchanges_total{result="failed",server="notes"} 1`,
		`mcphub_token_exchanges_total{result="failed",server="scoped"} 1`,
	} {
		if !strings.Contains(metrics, m) {
			t.Errorf("/metrics lacks %s:\n%s", m, grepLines(metrics, "mcphub_token_exchanges_total"))
		}
	}
	resp, err = http.Get(hub.Base + "/api/mcp/servers")
	if err != nil {
		t.Fatal(err)
	}
	var servers struct {
		Servers []struct {
			Metadata struct{ Name string }
			Spec     struct{ Auth string }
		}
	}
	err = json.NewDecoder(resp.Body).Decode(&servers)
	resp.Body.Close()
	modes := map[string]string{}
	for _, s := range servers.Servers {
		modes[s.Metadata.Name] = s.Spec.Auth
	}
	if err != nil || modes["notes"] != "tokenExchange" || modes["scoped"] != "tokenExchange" || modes["plain"] != "none" {
		t.Fatalf("/api/mcp/servers auth modes: %v %v", modes, err)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
