package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/purko-io/mcp-hub/internal/hubtest"
	"github.com/purko-io/mcp-hub/internal/hubtest/hydra"
	"github.com/purko-io/mcp-hub/internal/hubtest/idp"
	"github.com/purko-io/mcp-hub/internal/kubetest"
)

// TestUserOAuthAcrossReplicas is issue 39 on three replicas: a server
// reached as each caller's own account (userOAuth) behind Ory Hydra
// (access tokens of 3 s, refresh tokens rotated and their reuse punished),
// the grants sealed in one Secret of the namespace that the replicas share
// under the chart's RBAC. A caller without a grant gets a sign-in link, as
// -32042 when it takes URL elicitation and as a BLOCKED text when it does
// not; the link's sign-in lands on one replica and every replica serves
// the caller with its own token from then on; 1,000 calls of two callers
// spread over the replicas and across several token expiries all succeed,
// each seen upstream as its own caller (which the audit lines say too); a
// revocation through the API ends the grant on every replica.
func TestUserOAuthAcrossReplicas(t *testing.T) {
	cluster := kubetest.Shared(t)
	admin := cluster.AdminConfig()
	kc := kubernetes.NewForConfigOrDie(admin)
	ns := freshNamespace(t, kc, "grants")
	saName := applyChartAccess(t, admin, ns, "--set", "userGrants.enabled=true", "--set", "userGrants.keySecret.name=grants-key")
	// The hub's own namespace (the grants Secret's) is its kubeconfig's.
	kubeconfig := kubetest.KubeconfigFor(t, cluster.ServiceAccountConfig(ns, saName))
	if raw, err := os.ReadFile(kubeconfig); err != nil {
		t.Fatal(err)
	} else if err := os.WriteFile(kubeconfig, []byte(strings.Replace(string(raw), "namespace: default", "namespace: "+ns, 1)), 0o600); err != nil {
		t.Fatal(err)
	}

	const resource = "https://notes.example.test/mcp"
	h := hydra.Start(t, hydra.Options{ResourceAudience: true})
	notes := idp.StartUpstream(t, h, resource)
	peers := make([]string, 3)
	for i := range peers {
		peers[i] = fmt.Sprintf("127.0.0.1:%d", hubtest.FreePort(t))
	}
	public := "http://" + peers[0]
	users := h.CreateClient(t, hydra.Client{
		GrantTypes: []string{"authorization_code", "refresh_token"}, Scopes: []string{"openid", "offline_access"},
		Audience: []string{resource}, RedirectURIs: []string{public + "/oauth/callback"},
		TokenEndpointAuthMethod: "none", AccessTokenLifespan: 3 * time.Second,
	})
	// The hub's own requests (handshake, lists, pings) carry its service
	// credential, a client credentials token of its own.
	service := h.CreateClient(t, hydra.Client{Audience: []string{resource}})
	cfg := fmt.Sprintf(`naming: {prefix: always}
builtins: {staticAnalysis: {enabled: false}, triggerWorkflow: {enabled: false}}
replicas: {peers: %q}
auth:
  tokens:
    - {name: alice, token: {env: ALICE_TOKEN}, maxLevel: full}
    - {name: bob, token: {env: BOB_TOKEN}, maxLevel: full}
    - {name: ops, token: {env: OPS_TOKEN}, maxLevel: full, admin: true}
userGrants:
  key: {env: MCP_HUB_GRANTS_KEY}
  publicURL: %s
servers:
  - name: notes
    url: %q
    oauth: {tokenURL: %q, clientID: %q, clientSecret: {env: SERVICE_SECRET}, audience: %q}
    userOAuth: {issuer: %q, clientID: %q, scopes: [openid, offline_access], resource: %q}
`, strings.Join(peers, ","), public, notes.URL, h.TokenURL(), service.ID, resource, h.Issuer(), users.ID, resource)
	env := []string{"ALICE_TOKEN=alice-token", "BOB_TOKEN=bob-token", "OPS_TOKEN=ops-token", "SERVICE_SECRET=" + service.Secret,
		"MCP_HUB_GRANTS_KEY=q3p9Lx2d7a0kz1VJ4vWm6hR8sT5uY0bC3eF6gH9jK2M="}
	bin := hubtest.HubBinary(t)
	hubs := make([]*hubtest.Hub, len(peers))
	for i := range peers {
		hubs[i] = hubtest.StartHub(t, hubtest.HubOptions{Bin: bin, Listen: peers[i], LogLevel: "info", Wait: hubtest.Connected, Timeout: 60 * time.Second,
			Config: cfg, Env: env, Args: []string{"--kubeconfig", kubeconfig, "--namespaces", ns}})
	}

	// Alice takes URL elicitation: her first call is -32042 with a link.
	alice := func(i int) *client.Client {
		return dialGrants(t, hubs[i].Base, "alice-token", &mcp.ElicitationCapability{URL: &struct{}{}})
	}
	link := signInLinkOf(t, callWhoami(alice(1)))
	// Bob does not: his is a BLOCKED text with the link in it.
	bob := func(i int) *client.Client { return dialGrants(t, hubs[i].Base, "bob-token", nil) }
	res, err := bob(2).CallTool(context.Background(), whoamiRequest())
	if err != nil || !res.IsError || !strings.Contains(resultText(res), "BLOCKED: ") {
		t.Fatalf("bob's first call: %v %+v", err, res)
	}
	bobLink := regexp.MustCompile(`http://\S+/oauth/connect/\S+`).FindString(resultText(res))

	signIn := func(who, link string) {
		t.Helper()
		h.SetUser(who+"@example.test", nil)
		back := h.AuthorizationRedirect(t, link, public+"/oauth/callback")
		resp, err := http.Get(back.String())
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "as "+who+"@example.test") {
			t.Fatalf("%s's sign-in: %s %s", who, resp.Status, body)
		}
	}
	// The grants' first tokens date from the sign-ins: refreshes are
	// counted from there (setting up the sessions below takes seconds on a
	// loaded machine, and the hub's own listing refreshes meanwhile).
	issued := time.Now()
	signIn("alice", link)
	signIn("bob", bobLink)
	if sec, err := kc.CoreV1().Secrets(ns).Get(context.Background(), "mcp-hub-grants", metav1.GetOptions{}); err != nil {
		t.Fatalf("the grants Secret: %v", err)
	} else if raw, _ := json.Marshal(sec.Data); strings.Contains(string(raw), "alice") || grantRecords(sec.Data) != 2 {
		t.Fatalf("the grants Secret holds %d records, or names a caller", len(sec.Data))
	}

	// 1,000 calls, two callers, four at a time, round-robin over the
	// replicas, over several expiries of 3 s tokens.
	const calls = 1000
	clients := map[string][]*client.Client{}
	for i := range hubs {
		clients["alice"] = append(clients["alice"], alice(i))
		clients["bob"] = append(clients["bob"], bob(i))
	}
	var next, failed atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for n := next.Add(1); n <= calls; n = next.Add(1) {
				who := []string{"alice", "bob"}[n%2]
				c := clients[who][n%int64(len(hubs))]
				res, err := c.CallTool(context.Background(), whoamiRequest())
				if err != nil || res.IsError || !strings.HasPrefix(resultText(res), "subject="+who+"@example.test ") {
					if failed.Add(1) <= 5 {
						t.Errorf("call %d of %s: %v %s", n, who, err, resultText(res))
					}
				}
				time.Sleep(35 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	refused := 0
	for _, s := range notes.Seen() {
		if s.Method == "tools/call" && s.Status == http.StatusUnauthorized {
			refused++
		}
	}
	t.Logf("%d calls over %s (%.1f expiries of the 3 s tokens): %d failed, %d refused upstream", calls, elapsed.Round(time.Millisecond), elapsed.Seconds()/3, failed.Load(), refused)
	if elapsed < 6*time.Second {
		t.Errorf("the calls took %s: fewer than two token expiries", elapsed)
	}
	if refused > 0 {
		t.Errorf("the upstream refused %d calls' tokens (expired or revoked)", refused)
	}
	// Once per grant across the fleet: at most one refresh per caller per
	// 2.4 s (four fifths of a token's life), and a refresh token spent
	// twice would have made Hydra revoke the grant (and failed calls).
	// The token endpoint also answered the two sign-ins' code exchanges
	// and each replica's own client credentials token (an hour long).
	refreshes := tokenRequests(t, h.LogPath()) - 2 - len(hubs)
	lived := time.Since(issued)
	if most := 2 * (int(lived/(2400*time.Millisecond)) + 2); refreshes > most {
		t.Errorf("%d refreshes for 2 grants over the %s since the sign-ins: more than %d, not one per grant across the fleet", refreshes, lived.Round(time.Millisecond), most)
	}
	t.Logf("%d refreshes at Hydra for 2 grants over the %s since the sign-ins", refreshes, lived.Round(time.Millisecond))
	var audited bool
	for _, hub := range hubs {
		audited = audited || strings.Contains(hub.Output(), `"upstream_subject":"bob@example.test"`)
	}
	if !audited {
		t.Error("no audit line names the upstream subject bob@example.test")
	}

	// Alice lists her connections and revokes hers on one replica; bob
	// may not revoke hers, the admin may revoke bob's.
	var list struct {
		Connections []struct{ Server, Subject string } `json:"connections"`
	}
	if code := apiJSON(t, http.MethodGet, hubs[2].Base+"/api/mcp/connections", "alice-token", &list); code != 200 || len(list.Connections) != 1 || list.Connections[0].Subject != "alice@example.test" {
		t.Fatalf("alice's connections: %d %+v", code, list)
	}
	if code := apiJSON(t, http.MethodDelete, hubs[1].Base+"/api/mcp/connections/notes?user=alice", "bob-token", nil); code != http.StatusForbidden {
		t.Errorf("bob revoking alice's grant: %d, want 403", code)
	}
	var revoked struct {
		RevokedAtServer bool `json:"revokedAtServer"`
	}
	if code := apiJSON(t, http.MethodDelete, hubs[2].Base+"/api/mcp/connections/notes", "alice-token", &revoked); code != 200 || !revoked.RevokedAtServer {
		t.Fatalf("alice's revocation: %d %+v", code, revoked)
	}
	if code := apiJSON(t, http.MethodDelete, hubs[0].Base+"/api/mcp/connections/notes?user=bob", "ops-token", nil); code != 200 {
		t.Fatalf("the admin's revocation of bob's grant: %d", code)
	}
	// Within the replicas' cache of a grant (5 s), every one asks again.
	hubtest.Eventually(t, 10*time.Second, 200*time.Millisecond, "every replica asks alice to sign in again", func() error {
		for i := range hubs {
			if _, err := clients["alice"][i].CallTool(context.Background(), whoamiRequest()); !isSignIn(err) {
				return fmt.Errorf("replica %d: %v", i, err)
			}
		}
		return nil
	})
}

// dialGrants opens a 2025-11-25 session as the caller of token, declaring
// elicitation when not nil.
func dialGrants(t *testing.T, base, token string, elicitation *mcp.ElicitationCapability) *client.Client {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(base+"/mcp", transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, client.WithProtocolVersion("2025-11-25"), client.WithClientCapabilities(mcp.ClientCapabilities{Elicitation: elicitation}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func whoamiRequest() mcp.CallToolRequest {
	req := mcp.CallToolRequest{}
	req.Params.Name = "notes__whoami"
	return req
}

func callWhoami(c *client.Client) error {
	_, err := c.CallTool(context.Background(), whoamiRequest())
	return err
}

func resultText(res *mcp.CallToolResult) string {
	if res == nil || len(res.Content) == 0 {
		return ""
	}
	tc, _ := res.Content[0].(mcp.TextContent)
	return tc.Text
}

// isSignIn says err is a URL elicitation required error.
func isSignIn(err error) bool {
	var e mcp.URLElicitationRequiredError
	return errors.As(err, &e)
}

// signInLinkOf is the sign-in link of a -32042 error.
func signInLinkOf(t *testing.T, err error) string {
	t.Helper()
	var e mcp.URLElicitationRequiredError
	if !errors.As(err, &e) || len(e.Elicitations) != 1 || !strings.Contains(e.Elicitations[0].URL, "/oauth/connect/") {
		t.Fatalf("want a sign-in link (-32042), got %v", err)
	}
	return e.Elicitations[0].URL
}

// apiJSON calls the hub's REST API as the caller of token, decoding the
// answer into out when set, and returns the status.
func apiJSON(t *testing.T, method, u, token string, out any) int {
	t.Helper()
	req, _ := http.NewRequest(method, u, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil && resp.StatusCode == 200 {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode
}

// grantRecords counts the grant records of the grants Secret's data.
func grantRecords(data map[string][]byte) int {
	n := 0
	for k := range data {
		if strings.HasPrefix(k, "g-") {
			n++
		}
	}
	return n
}

// tokenRequests counts the requests Hydra's token endpoint answered.
func tokenRequests(t *testing.T, logPath string) int {
	t.Helper()
	raw, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.Contains(line, `"path":"/oauth2/token"`) && strings.Contains(line, "completed handling request") {
			n++
		}
	}
	return n
}
