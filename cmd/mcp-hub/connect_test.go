package main

import (
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/purko-io/mcp-hub/internal/oauth"
)

// TestConnect runs `mcp-hub connect` against a home directory of its own:
// what lands in the client's file for a hub without auth, one that takes a
// token (by reference, never the token itself where the client can read a
// variable), one that publishes OAuth metadata, and the mistakes.
func TestConnect(t *testing.T) {
	// A hub that is not there: auto finds no OAuth metadata.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := "http://" + ln.Addr().String()
	ln.Close()
	oauthHub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, oauth.WellKnown) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"resource":"` + "http://" + r.Host + `/mcp","authorization_servers":["https://idp.example"]}`))
			return
		}
		http.NotFound(w, r)
	}))
	defer oauthHub.Close()

	const secret = "tok-connect-test-5b1f"
	for _, tc := range []struct {
		name     string
		args     []string
		env      map[string]string
		existing map[string]string // file under home -> content
		code     int
		file     string   // under home, "" when nothing may be written
		has      []string // in the file (or stdout when file is "")
		hasNot   []string // in the file and stdout
		said     string   // in stdout or stderr
	}{
		{name: "no auth", args: []string{"connect", "cursor", "--hub", gone},
			file: ".cursor/mcp.json", has: []string{`"mcp-hub"`, `"url": "` + gone + `/mcp"`}, hasNot: []string{"Authorization"},
			said: "added mcp-hub"},
		{name: "hub given as its MCP endpoint", args: []string{"connect", "cursor", "--hub", gone + "/mcp/"},
			file: ".cursor/mcp.json", has: []string{`"url": "` + gone + `/mcp"`}, hasNot: []string{"/mcp/mcp"}},
		{name: "merged, other servers kept", args: []string{"connect", "cursor", "--hub", gone, "--name", "hub"},
			existing: map[string]string{".cursor/mcp.json": `{"mcpServers": {"other": {"command": "other-mcp"}}}`},
			file:     ".cursor/mcp.json", has: []string{`"other-mcp"`, `"hub"`, gone + "/mcp"}, said: "added hub"},
		{name: "token by reference", args: []string{"connect", "claude-code", "--hub", gone, "--token-env", "MCP_HUB_TOKEN"},
			env:  map[string]string{"MCP_HUB_TOKEN": secret},
			file: ".claude.json", has: []string{"Bearer ${MCP_HUB_TOKEN}"}, hasNot: []string{secret}},
		{name: "oauth found on the hub", args: []string{"connect", "gemini", "--hub", oauthHub.URL},
			env:  map[string]string{"MCP_HUB_TOKEN": secret},
			file: ".gemini/settings.json", has: []string{`"httpUrl": "` + oauthHub.URL + `/mcp"`}, hasNot: []string{"Authorization", secret}},
		{name: "print writes nothing", args: []string{"connect", "codex", "--hub", gone, "--print"},
			has: []string{"[mcp_servers.mcp-hub]", gone + "/mcp"}},
		{name: "token wanted, none given", args: []string{"connect", "cursor", "--hub", gone, "--auth", "token"},
			code: 2, said: "set MCP_HUB_TOKEN"},
		{name: "unknown auth", args: []string{"connect", "cursor", "--auth", "basic"},
			code: 2, said: `unknown --auth "basic": want auto, token, oauth or none`},
		{name: "unknown client", args: []string{"connect", "notepad", "--hub", gone},
			code: 1, said: "notepad"},
		{name: "no client", args: []string{"connect"}, code: 2, said: "CLIENT is required"},
		{name: "malformed file left alone", args: []string{"connect", "cursor", "--hub", gone},
			existing: map[string]string{".cursor/mcp.json": `{"mcpServers": {`},
			code:     1, file: ".cursor/mcp.json", has: []string{`{"mcpServers": {`}, hasNot: []string{gone}, said: "add this by hand"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			t.Setenv("HOME", home)
			t.Setenv("XDG_CONFIG_HOME", "")
			t.Setenv("MCP_HUB_TOKEN", "")
			t.Setenv("MCP_HUB_URL", "")
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			for f, content := range tc.existing {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(home, f)), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(home, f), []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var stdout, stderr bytes.Buffer
			code := run(tc.args, &stdout, &stderr)
			out := stdout.String() + stderr.String()
			if code != tc.code {
				t.Fatalf("exit %d, want %d:\n%s", code, tc.code, out)
			}
			if tc.said != "" && !strings.Contains(out, tc.said) {
				t.Errorf("output does not say %q:\n%s", tc.said, out)
			}
			text := stdout.String()
			if tc.file != "" {
				b, err := os.ReadFile(filepath.Join(home, tc.file))
				if err != nil {
					t.Fatalf("%s: %v\n%s", tc.file, err, out)
				}
				text = string(b)
			} else if entries, _ := os.ReadDir(home); len(entries) > 0 {
				t.Errorf("wrote %s in home; want nothing written", entries[0].Name())
			}
			for _, s := range tc.has {
				if !strings.Contains(text, s) {
					t.Errorf("missing %q in:\n%s", s, text)
				}
			}
			for _, s := range tc.hasNot {
				if strings.Contains(text, s) || strings.Contains(out, s) && s == secret {
					t.Errorf("%q should not be in:\n%s\n%s", s, text, out)
				}
			}
		})
	}
}
