package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/hubtest"
)

// apiCall sends one request to the hub's REST API and returns the status
// and body.
func apiCall(t *testing.T, method, url, token, contentType, origin, body string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// mcpToolNames is what tools/list over the hub's MCP endpoint returns.
func mcpToolNames(ctx context.Context, h *hubtest.Hub, token string) ([]string, error) {
	c, err := client.NewStreamableHttpClient(h.MCPURL(), transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "test", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		return nil, err
	}
	res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names, nil
}

// serversCLI runs `mcp-hub servers args...` with token in MCP_HUB_TOKEN.
func serversCLI(t *testing.T, token string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(hubBin, append([]string{"servers"}, args...)...)
	cmd.Env = append(os.Environ(), "MCP_HUB_TOKEN="+token)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), exitCode(err)
}

// TestServersAPIOnALaptopHub registers a real upstream by URL through
// POST /api/mcp/server, sees its tool over MCP, checks who may write and
// what a bad entry gets, restarts the hub (the registration is still
// there, the user's config untouched) and deletes it.
func TestServersAPIOnALaptopHub(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "hub.yaml")
	userConfig := `servers:
- {name: declared, url: "http://127.0.0.1:1/mcp"}
auth:
  tokens:
  - {name: ops, token: {env: OPS_TOKEN}, maxLevel: full, admin: true}
  - {name: bot, token: {env: BOT_TOKEN}, maxLevel: full}
registrations: {credentialRefs: [UP_TOKEN]}
`
	if err := os.WriteFile(cfg, []byte(userConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"MCP_HUB_STATE_DIR=" + dir, "OPS_TOKEN=ops-secret", "BOT_TOKEN=bot-secret", "UP_TOKEN=up-secret"}
	up, _ := startUpstream(t)
	h := startHub(t, env, "--config", cfg)
	post := func(token, ct, origin, body string) (int, string) {
		return apiCall(t, "POST", h.Base+"/api/mcp/server", token, ct, origin, body)
	}
	good := `{"name":"added","url":"` + up + `","auth":"bearer","secretRef":"UP_TOKEN","category":"demo","icon":"T"}`

	for _, tc := range []struct {
		name, token, ct, origin, body string
		status                        int
		want                          string
	}{
		{"no credentials", "", "application/json", "", good, 401, "credentials required"},
		{"not an admin", "bot-secret", "application/json", "", good, 403, "needs an admin caller: bot is not one"},
		{"foreign origin", "ops-secret", "application/json", "http://evil.example", good, 403, "Origin"},
		{"text/plain", "ops-secret", "text/plain", "", good, 415, "Content-Type"},
		{"no name", "ops-secret", "application/json", "", `{"url":"` + up + `"}`, 400, `"name: is required`},
		{"bad name", "ops-secret", "application/json", "", `{"name":"a b","url":"` + up + `"}`, 400, `"name: `},
		{"no url", "ops-secret", "application/json", "", `{"name":"x"}`, 400, `"url: one of url`},
		{"bad url", "ops-secret", "application/json", "", `{"name":"x","url":"ftp://h/mcp"}`, 400, `"url: `},
		{"bad auth", "ops-secret", "application/json", "", `{"name":"x","url":"` + up + `","auth":"basic"}`, 400, `"auth: \"basic\"`},
		{"bearer without secretRef", "ops-secret", "application/json", "", `{"name":"x","url":"` + up + `","auth":"bearer"}`, 400, `"secretRef: is required`},
		{"unknown field", "ops-secret", "application/json", "", `{"name":"x","url":"` + up + `","token":"t"}`, 400, `unknown field \"token\"`},
		{"image on a laptop", "ops-secret", "application/json", "", `{"name":"x","image":"ghcr.io/a/b","port":8000}`, 400, `"error": "image: deploying a container image needs Kubernetes`},
		{"config file's server", "ops-secret", "application/json", "", `{"name":"declared","url":"` + up + `"}`, 409, "edit the file"},
		{"registered", "ops-secret", "application/json", "", good, 200, `"status": "connected"`},
		{"upserted", "ops-secret", "application/json", "", good, 200, `"name": "added"`},
	} {
		status, body := post(tc.token, tc.ct, tc.origin, tc.body)
		if status != tc.status || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d %s, want %d with %q", tc.name, status, body, tc.status, tc.want)
		}
		if strings.Contains(body, "up-secret") {
			t.Errorf("%s: the token is in the answer: %s", tc.name, body)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hubtest.Eventually(t, 15*time.Second, 50*time.Millisecond, "added's echo in tools/list", func() error {
		names, err := mcpToolNames(ctx, h, "ops-secret")
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(names, func(n string) bool { return strings.HasSuffix(n, "echo") }) {
			return errors.New(strings.Join(names, ","))
		}
		return nil
	})
	waitStatus(t, h, "added", "connected")

	// The CLI lists it (table, JSON, YAML); any caller may list. The
	// hub's old flag --url still works, with a deprecation notice.
	out, errOut, code := serversCLI(t, "bot-secret", "list", "--url", h.Base)
	if code != 0 || !strings.Contains(out, "NAME") || !regexpLine(out, "added", "connected", "streamable-http", "1", "registered (api)") ||
		!regexpLine(out, "declared", "file") || !strings.Contains(errOut, "--url has been deprecated, use --hub") {
		t.Fatalf("servers list: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := serversCLI(t, "bot-secret", "list", "-o", "wide", "--hub", h.Base); code != 0 || !regexpLine(out, "added", "connected", up) {
		t.Fatalf("servers list -o wide: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := serversCLI(t, "bot-secret", "list", "-o", "yaml", "--hub", h.Base); code != 0 || !strings.Contains(out, "servers:\n- ") || !strings.Contains(out, "    name: added\n") {
		t.Fatalf("servers list -o yaml: exit %d\n%s%s", code, out, errOut)
	}
	out, _, code = serversCLI(t, "bot-secret", "list", "--hub", h.Base, "-o", "json")
	var listed struct {
		Servers []struct {
			Metadata   struct{ Name string }
			Registered bool
		}
	}
	if err := json.Unmarshal([]byte(out), &listed); code != 0 || err != nil {
		t.Fatalf("servers list -o json: exit %d, %v\n%s", code, err, out)
	}
	registered := map[string]bool{}
	for _, s := range listed.Servers {
		registered[s.Metadata.Name] = s.Registered
	}
	if r, ok := registered["declared"]; !registered["added"] || !ok || r {
		t.Fatalf("servers list -o json: registered %v\n%s", registered, out)
	}

	terminate(t, h)
	if b, _ := os.ReadFile(cfg); string(b) != userConfig {
		t.Fatalf("the user's config was rewritten:\n%s", b)
	}
	reg, err := os.ReadFile(filepath.Join(dir, "registered.yaml"))
	if err != nil || !strings.Contains(string(reg), "added") || strings.Contains(string(reg), "up-secret") {
		t.Fatalf("registrations file: %v\n%s", err, reg)
	}
	h = startHub(t, env, "--config", cfg)
	waitStatus(t, h, "added", "connected")

	del := func(token, name string) (int, string) {
		return apiCall(t, "DELETE", h.Base+"/api/mcp/server/"+name, token, "", "", "")
	}
	for _, tc := range []struct {
		name, token, server string
		status              int
		want                string
	}{
		{"not an admin", "bot-secret", "added", 403, "needs an admin caller"},
		{"unknown", "ops-secret", "nosuch", 404, "not found"},
		{"config file's server", "ops-secret", "declared", 409, "edit the file"},
		{"deleted", "ops-secret", "added", 200, `"status": "deleted"`},
		{"deleted twice", "ops-secret", "added", 404, "not found"},
	} {
		if status, body := del(tc.token, tc.server); status != tc.status || !strings.Contains(body, tc.want) {
			t.Errorf("DELETE %s: %d %s, want %d with %q", tc.name, status, body, tc.status, tc.want)
		}
	}
	hubtest.Eventually(t, 15*time.Second, 50*time.Millisecond, "added gone", func() error {
		l, err := h.Listing("")
		if err != nil {
			return err
		}
		if _, ok := l.Server("added"); ok {
			return errors.New(l.Summary())
		}
		return nil
	})

	// The CLI adds and removes as an admin, and says why it may not.
	if _, errOut, code := serversCLI(t, "bot-secret", "add", "cli", "--url", up, "--hub", h.Base); code != 1 || !strings.Contains(errOut, "403") {
		t.Fatalf("servers add as bot: exit %d, %s", code, errOut)
	}
	if out, errOut, code := serversCLI(t, "ops-secret", "add", "cli", "--url", up, "--hub", h.Base); code != 0 || !strings.Contains(out, "cli connected") || strings.Contains(errOut, "deprecated") {
		t.Fatalf("servers add: exit %d, %s%s", code, out, errOut)
	}
	waitStatus(t, h, "cli", "connected")
	// A server nothing listens for: add waits for the first connection,
	// says it failed and why, and exits 1.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/mcp"
	ln.Close()
	if out, errOut, code := serversCLI(t, "ops-secret", "add", "down", "--url", closed, "--hub", h.Base); code != 1 || !strings.Contains(out, "down error: ") {
		t.Fatalf("servers add with nothing listening: exit %d, %s%s", code, out, errOut)
	}
	if _, errOut, code := serversCLI(t, "ops-secret", "add", "bad", "--url", "nope", "--hub", h.Base); code != 1 || !strings.Contains(errOut, "400") || !strings.Contains(errOut, "url: ") {
		t.Fatalf("servers add with a bad url: exit %d, %s", code, errOut)
	}
	if out, errOut, code := serversCLI(t, "ops-secret", "rm", "cli", "--hub", h.Base); code != 0 || !strings.Contains(out, "cli deleted") {
		t.Fatalf("servers rm: exit %d, %s%s", code, out, errOut)
	}
	if _, errOut, code := serversCLI(t, "ops-secret", "rm", "cli", "--hub", h.Base); code != 1 || !strings.Contains(errOut, "404") {
		t.Fatalf("servers rm twice: exit %d, %s", code, errOut)
	}
}

// regexpLine reports whether some line of out holds every field, in order,
// separated by blanks.
func regexpLine(out string, fields ...string) bool {
	for line := range strings.SplitSeq(out, "\n") {
		rest, ok := line, true
		for _, f := range fields {
			i := strings.Index(rest, f)
			if i < 0 {
				ok = false
				break
			}
			rest = rest[i+len(f):]
		}
		if ok {
			return true
		}
	}
	return false
}
