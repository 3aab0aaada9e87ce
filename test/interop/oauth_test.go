package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/purko-io/mcp-hub/internal/hubtest"
	"github.com/purko-io/mcp-hub/internal/hubtest/hydra"
)

// The MCP authorization spec, end to end, with real parts on both sides of
// the hub: Ory Hydra as the authorization server (internal/hubtest/hydra)
// and the official TypeScript SDK's OAuth client (oauth_client.mjs).

// oauthUpstream serves a read-only tool and a write tool, and records the
// Authorization header the hub sends it.
func oauthUpstream(t *testing.T) *hubtest.Upstream {
	read := mcp.NewTool("read_note", mcp.WithDescription("read a note"), mcp.WithReadOnlyHintAnnotation(true), mcp.WithString("id"))
	write := mcp.NewTool("write_note", mcp.WithDescription("write a note"), mcp.WithReadOnlyHintAnnotation(false), mcp.WithString("id"))
	return hubtest.StartUpstream(t, "notes",
		server.ServerTool{Tool: read, Handler: func(_ context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("note " + r.GetString("id", "") + ": buy milk"), nil
		}},
		server.ServerTool{Tool: write, Handler: func(_ context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("written"), nil
		}},
	)
}

// upstreamSecret is the hub's own credential for the upstream.
const upstreamSecret = "notes-upstream-secret-4711"

// startOAuthHub runs the hub as a resource server of the issuers, on a
// port chosen first: the resource URL in its config names it.
func startOAuthHub(t *testing.T, up *hubtest.Upstream, extra string, issuers ...string) (*hubtest.Hub, string) {
	t.Helper()
	listen := fmt.Sprintf("127.0.0.1:%d", hubtest.FreePort(t))
	resource := "http://" + listen + "/mcp"
	var iss strings.Builder
	for _, is := range issuers {
		fmt.Fprintf(&iss, "      - issuer: %q\n", is)
	}
	cfg := fmt.Sprintf(`servers:
  - name: notes
    url: %q
    token: {env: NOTES_TOKEN}
    trustAnnotations: true
auth:
  oauth:
    resource: %q
%s    issuers:
%s`, up.URL, resource, extra, iss.String())
	hub := hubtest.StartHub(t, hubtest.HubOptions{Listen: listen, Config: cfg, Wait: hubtest.Connected,
		Env: []string{"NOTES_TOKEN=" + upstreamSecret}})
	return hub, resource
}

// TestOAuthIDEClient is a remote IDE client's first connection: the SDK
// gets the 401, reads the hub's metadata, finds Hydra, registers itself,
// runs authorization code with PKCE (the test plays the browser), and
// calls a tool with the token it got.
func TestOAuthIDEClient(t *testing.T) {
	hy := hydra.Start(t, hydra.Options{DynamicClientRegistration: true, ResourceAudience: true})
	up := oauthUpstream(t)
	hub, resource := startOAuthHub(t, up, "", hy.Issuer())

	redirect := fmt.Sprintf("http://127.0.0.1:%d/callback", hubtest.FreePort(t))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := hubtest.Command(ctx, "node", "oauth_client.mjs", resource, redirect, "read_note", `{"id":"7"}`)
	cmd.Dir = testDir
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := hubtest.StartProcess(t, "oauth_client.mjs", cmd)
	line, err := p.WaitLine(ctx, func(l string) bool { return strings.HasPrefix(l, `{"authorize"`) || strings.HasPrefix(l, `{"error"`) })
	if err != nil {
		t.Fatalf("the SDK did not start an authorization: %v\n%s\nhub:\n%s", err, p.Output(), hub.Output())
	}
	var started struct {
		Authorize string `json:"authorize"`
	}
	_ = json.Unmarshal([]byte(line), &started)
	if started.Authorize == "" {
		t.Fatalf("oauth_client.mjs: %s", line)
	}
	if !strings.HasPrefix(started.Authorize, hy.AuthURL()) {
		t.Fatalf("the SDK went to %s, not to the hub's authorization server %s", started.Authorize, hy.AuthURL())
	}
	code := hy.FollowAuthorization(t, started.Authorize, redirect)
	if _, err := fmt.Fprintln(stdin, code); err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	if err := p.Err(); err != nil {
		t.Fatalf("oauth_client.mjs: %v\n%s\nhub:\n%s", err, p.Output(), hub.Output())
	}
	lines := strings.Split(strings.TrimSpace(p.Stdout()), "\n")
	var done struct {
		Tools       []string   `json:"tools"`
		Result      callResult `json:"result"`
		ClientID    string     `json:"client_id"`
		AccessToken string     `json:"access_token"`
		Error       string     `json:"error"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &done); err != nil || done.Error != "" {
		t.Fatalf("oauth_client.mjs: %v %s", err, p.Output())
	}
	if done.ClientID == "" {
		t.Fatal("the SDK did not register itself (dynamic client registration)")
	}
	// The SDK asks for every scope the metadata lists; Hydra grants them.
	if !slices.Contains(done.Tools, "read_note") || !slices.Contains(done.Tools, "write_note") {
		t.Fatalf("tools/list = %v", done.Tools)
	}
	if len(done.Result.Content) != 1 || done.Result.Content[0].Text != "note 7: buy milk" || done.Result.IsError {
		t.Fatalf("tools/call = %+v", done.Result)
	}
	_, claims, err := hydra.Decode(done.AccessToken)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(hydra.ClaimStrings(claims["aud"]), resource) || claims["iss"] != hy.Issuer() {
		t.Fatalf("the token's aud %v, iss %v: not for %s from %s", claims["aud"], claims["iss"], resource, hy.Issuer())
	}
	// No token passthrough: the upstream gets the hub's own credential.
	if got := up.Authorization(); got != "Bearer "+upstreamSecret {
		t.Fatalf("the upstream got Authorization %q, not the hub's own token", got)
	}
	if strings.Contains(hub.Output(), done.AccessToken) {
		t.Fatal("the hub logged the caller's access token")
	}
	if !strings.Contains(hub.Output(), hydra.DefaultSubject) {
		t.Fatalf("no log line names the OAuth caller %s:\n%s", hydra.DefaultSubject, hub.Output())
	}
}

// TestOAuthTokensRefused: tokens from Hydra that the hub must refuse, and
// a key rotation it must follow.
func TestOAuthTokensRefused(t *testing.T) {
	hy := hydra.Start(t, hydra.Options{})
	stranger := hydra.Start(t, hydra.Options{})
	up := oauthUpstream(t)
	hub, resource := startOAuthHub(t, up, "    clockSkew: 0s\n    jwksRefresh: 1s\n", hy.Issuer())

	scopes := []string{"mcp:restricted", "mcp:full"}
	mk := func(h *hydra.Server, id string, audience []string, lifespan time.Duration) hydra.Client {
		return h.CreateClient(t, hydra.Client{ID: id, Secret: "secret-of-" + id, GrantTypes: []string{"client_credentials"},
			Scopes: scopes, Audience: audience, AccessTokenLifespan: lifespan})
	}
	agent := mk(hy, "agent", []string{resource, "https://other.example.com/mcp"}, 0)
	shortLived := mk(hy, "short-lived", []string{resource}, time.Second)
	foreign := mk(stranger, "agent", []string{resource}, 0)
	token := func(h *hydra.Server, c hydra.Client, scope, aud string) string {
		return h.ClientCredentialsToken(t, c.ID, c.Secret, scope, []string{aud})
	}

	run := func(tok, tool string) (int, string, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", hub.Base+"/api/mcp/tools/"+tool+"/run", strings.NewReader(`{"id":"1"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), readAll(resp)
	}

	expired := token(hy, shortLived, "mcp:full", resource)
	old := token(hy, agent, "mcp:full", resource)
	cases := []struct {
		name, token, tool string
		status            int
		has               string // in the challenge, or the body when there is none
	}{
		{"full scope runs a write tool", old, "write_note", 200, "written"},
		{"restricted scope runs a read tool", token(hy, agent, "mcp:restricted", resource), "read_note", 200, "buy milk"},
		{"restricted scope may not write", token(hy, agent, "mcp:restricted", resource), "write_note", 403, "BLOCKED"},
		{"wrong audience", token(hy, agent, "mcp:full", "https://other.example.com/mcp"), "read_note", 401, "does not name this hub"},
		{"unknown issuer", token(stranger, foreign, "mcp:full", resource), "read_note", 401, "is not trusted by this hub"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, challenge, body := run(tc.token, tc.tool)
			where := body
			if status == 401 {
				where = challenge
				if !strings.HasPrefix(challenge, `Bearer resource_metadata="http://`) {
					t.Fatalf("401 without the metadata in WWW-Authenticate: %q", challenge)
				}
			}
			if status != tc.status || !strings.Contains(where, tc.has) {
				t.Fatalf("HTTP %d, WWW-Authenticate %q, body %s; want %d with %q", status, challenge, body, tc.status, tc.has)
			}
		})
	}

	t.Run("expired", func(t *testing.T) {
		time.Sleep(time.Until(expiryOf(t, expired).Add(time.Second)))
		if status, challenge, _ := run(expired, "read_note"); status != 401 || !strings.Contains(challenge, "the token expired at") {
			t.Fatalf("an expired token: HTTP %d %q", status, challenge)
		}
	})

	t.Run("rotated key", func(t *testing.T) {
		header, _, err := hydra.Decode(old)
		if err != nil {
			t.Fatal(err)
		}
		oldKid, _ := header["kid"].(string)
		newKid := hy.RotateKey(t)
		fresh := token(hy, agent, "mcp:full", resource)
		if status, ch, body := run(fresh, "read_note"); status != 200 {
			t.Fatalf("a token of the new key %s: HTTP %d %q %s", newKid, status, ch, body)
		}
		hy.DeleteKey(t, oldKid)
		deadline := time.Now().Add(15 * time.Second)
		for {
			status, ch, _ := run(old, "read_note")
			if status == 401 {
				if !strings.Contains(ch, "does not publish") {
					t.Fatalf("a token of the withdrawn key: %q", ch)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("a token of the withdrawn key %s still works 15s later (HTTP %d)", oldKid, status)
			}
			time.Sleep(250 * time.Millisecond)
		}
		if status, _, _ := run(fresh, "read_note"); status != 200 {
			t.Fatalf("the new key's token after the withdrawal: HTTP %d", status)
		}
	})
	if strings.Contains(hub.Output(), old) {
		t.Fatal("the hub logged an access token")
	}
}

func expiryOf(t *testing.T, tok string) time.Time {
	_, claims, err := hydra.Decode(tok)
	if err != nil {
		t.Fatal(err)
	}
	exp, _ := claims["exp"].(float64)
	return time.Unix(int64(exp), 0)
}

func readAll(resp *http.Response) string {
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestOAuthUpstream: the hub as an OAuth client. Its upstream is a second
// hub that takes only Hydra's tokens for itself; the first hub gets one
// with the client credentials grant and calls through it. The caller of
// the first hub (anonymous here) has no token to pass on, so what reaches
// the second hub can only be the first hub's own.
func TestOAuthUpstream(t *testing.T) {
	hy := hydra.Start(t, hydra.Options{})
	up := oauthUpstream(t)
	remote, remoteResource := startOAuthHub(t, up, "", hy.Issuer())
	client := hy.CreateClient(t, hydra.Client{ID: "front-hub", Secret: "front-hub-secret-0815",
		GrantTypes: []string{"client_credentials"}, Scopes: []string{"mcp:restricted"}, Audience: []string{remoteResource}})
	front := hubtest.StartHub(t, hubtest.HubOptions{Wait: hubtest.Connected, Env: []string{"FRONT_SECRET=" + client.Secret},
		Config: fmt.Sprintf(`servers:
  - name: remote
    url: %q
    oauth:
      tokenURL: %q
      clientID: front-hub
      clientSecret: {env: FRONT_SECRET}
      scopes: [mcp:restricted]
      audience: %q
`, remoteResource, hy.TokenURL(), remoteResource)})

	run := func(tool string) (int, string) {
		resp, err := http.Post(front.Base+"/api/mcp/tools/"+tool+"/run", "application/json", strings.NewReader(`{"id":"3"}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return resp.StatusCode, readAll(resp)
	}
	if status, body := run("read_note"); status != 200 || !strings.Contains(body, "note 3: buy milk") {
		t.Fatalf("read_note through both hubs: HTTP %d %s\nfront:\n%s\nremote:\n%s", status, body, front.Output(), remote.Output())
	}
	// The token's scope is the first hub's ceiling at the second: the
	// second hub does not even list the write tool to it.
	if status, body := run("write_note"); status != 404 {
		t.Fatalf("write_note with a mcp:restricted token: HTTP %d %s", status, body)
	}
	if !strings.Contains(remote.Output(), "/front-hub") {
		t.Fatalf("the second hub's log does not name the first hub as its caller:\n%s", remote.Output())
	}
	if strings.Contains(front.Output(), client.Secret) || strings.Contains(remote.Output(), client.Secret) {
		t.Fatal("a hub logged the client secret")
	}
}
