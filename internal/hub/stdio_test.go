package hub

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/hubtest"
)

// A stdio child that says why it stops and exits: /api/mcp/tools (which
// the console shows), /api/mcp/servers (which `mcp-hub servers list`
// shows) and the log line all carry its exit status and its last lines of
// stderr, with the secret of its environment redacted.
func TestStdioChildFailureShownEverywhere(t *testing.T) {
	const secret = "ghp_Child-Secret-0123456789"
	cfg := filepath.Join(t.TempDir(), "hub.yaml")
	body := `
servers:
  - name: gh
    command: sh
    args: ["-c", "echo 'npm WARN deprecated x@1' >&2; echo \"FATAL: GITHUB_TOKEN is not set (have $API_KEY)\" >&2; exit 1"]
    env: {API_KEY: ` + secret + `}
`
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	h := serveConfig(t, cfg)
	const want = "stdio child exited with status 1 before initialize; last stderr: npm WARN deprecated x@1 | FATAL: GITHUB_TOKEN is not set (have [redacted])"
	sv := waitServer(t, h, "gh", "in error", func(s hubtest.ListedServer) bool { return s.Status == "error" })
	if sv.Error != want {
		t.Errorf("/api/mcp/tools error %q, want %q", sv.Error, want)
	}

	resp, err := http.Get(h.Base + "/api/mcp/servers")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var servers struct {
		Servers []struct {
			Metadata struct{ Name string }
			Status   struct{ Message string }
		}
	}
	if err := json.Unmarshal(raw, &servers); err != nil {
		t.Fatalf("/api/mcp/servers = %s: %v", raw, err)
	}
	found := false
	for _, s := range servers.Servers {
		if s.Metadata.Name == "gh" {
			found = true
			if s.Status.Message != want {
				t.Errorf("/api/mcp/servers message %q, want %q", s.Status.Message, want)
			}
		}
	}
	if !found {
		t.Errorf("/api/mcp/servers = %s: no gh", raw)
	}

	hubtest.Eventually(t, 10*time.Second, 20*time.Millisecond, "the log line", func() error {
		if !strings.Contains(h.Log.String(), `"error":"`+want+`"`) {
			return io.EOF
		}
		return nil
	})
	for what, text := range map[string]string{"/api/mcp/tools": sv.Error, "/api/mcp/servers": string(raw), "log": h.Log.String()} {
		if strings.Contains(text, secret) {
			t.Errorf("%s holds the child's secret", what)
		}
	}
}

// MCP_SERVERS in the form Purko documents, a token and no auth: the token
// reaches the server as a bearer token. A token that cannot be used stops
// start-up with an error naming the entry, never the token.
func TestMCPServersTokenWithoutAuth(t *testing.T) {
	const tok = "purko-token-0123456789"
	up := hubtest.StartUpstream(t, "up", echoTool())
	cfg := filepath.Join(t.TempDir(), "hub.yaml")
	if err := os.WriteFile(cfg, []byte("servers: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := serveConfig(t, cfg, `MCP_SERVERS=[{"name":"up","url":"`+up.URL+`","token":"`+tok+`"}]`)
	waitConnected(t, h, "up")
	if got := up.Authorization(); got != "Bearer "+tok {
		t.Fatalf("the upstream got Authorization %q, want the entry's token as a bearer token", got)
	}

	t.Setenv("MCP_SERVERS", `[{"name":"up","url":"`+up.URL+`","auth":"none","token":"`+tok+`"}]`)
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	loaded, err := config.Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(t.Context(), loaded, Options{ConfigPath: cfg, Listen: "127.0.0.1:0"}, zerolog.Nop())
	if err == nil || !strings.Contains(err.Error(), `MCP_SERVERS[0] (up).token: auth is "none" but a token is given`) || strings.Contains(err.Error(), tok) {
		t.Fatalf("New = %v; want the entry refused, naming it, without the token", err)
	}
}
