package clientconfig

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func testEnv(t *testing.T) Env {
	return Env{Home: t.TempDir(), GOOS: "linux", Getenv: func(string) string { return "" }}
}

const hubURL = "http://127.0.0.1:8080/mcp"

// entryOf reads the hub's entry back from a client's file as the client
// would decode it.
func entryOf(t *testing.T, client string, b []byte, name string) map[string]any {
	t.Helper()
	c, _ := lookup(client)
	var m map[string]any
	if c.section == nil {
		var err error
		if m, err = decodeTOML(b); err != nil {
			t.Fatalf("%s: %v\n%s", client, err, b)
		}
		servers, _ := m["mcp_servers"].(map[string]any)
		e, _ := servers[name].(map[string]any)
		return e
	}
	if err := json.Unmarshal(plain(b), &m); err != nil {
		t.Fatalf("%s: %v\n%s", client, err, b)
	}
	for _, k := range c.section {
		m, _ = m[k].(map[string]any)
	}
	e, _ := m[name].(map[string]any)
	return e
}

// existing is a file of the client's with another server, another setting
// and (where the client reads them) a comment.
func existing(client string) string {
	c, _ := lookup(client)
	if c.section == nil {
		return "# my settings\nmodel = \"o3\"\n\n[mcp_servers.other]\ncommand = \"other-server\"\nargs = [\"--x\"]\n\n[profiles.fast]\nmodel = \"o4-mini\"\n"
	}
	comment := ""
	if c.jsonc {
		comment = "  // my settings\n"
	}
	return "{\n" + comment + "  \"theme\": \"dark\",\n  \"" + c.section[0] + "\": {\n    \"other\": {\"command\": \"other-server\", \"args\": [\"--x\"]}\n  }\n}\n"
}

func TestConnectEveryClient(t *testing.T) {
	for _, client := range Clients() {
		t.Run(client, func(t *testing.T) {
			hub := Hub{URL: hubURL, Token: "s3cret-token"}

			// A new file: created with its directories, 0600.
			env := testEnv(t)
			var out bytes.Buffer
			if err := Connect(&out, client, hub, env, false); err != nil {
				t.Fatal(err)
			}
			ch, _ := Plan(client, hub, env)
			if want := "wrote " + ch.Path + " (added mcp-hub)\n"; !strings.HasPrefix(out.String(), want) {
				t.Errorf("output %q, want %q first", out.String(), want)
			}
			b, err := os.ReadFile(ch.Path)
			if err != nil {
				t.Fatal(err)
			}
			if info, _ := os.Stat(ch.Path); info.Mode().Perm() != 0o600 {
				t.Errorf("new file mode %v, want 0600", info.Mode().Perm())
			}
			e := entryOf(t, client, b, "mcp-hub")
			if e == nil || !strings.Contains(string(b), hubURL) {
				t.Fatalf("no entry for the hub in\n%s", b)
			}
			if !ch.Unchanged() {
				t.Error("planning again after writing should change nothing")
			}
			if client == "vscode" {
				if strings.Contains(string(b), "s3cret-token") || !strings.Contains(string(b), "${input:mcp-hub-token}") {
					t.Errorf("VS Code should ask for the token, not store it:\n%s", b)
				}
			} else if !strings.Contains(string(b), "Bearer s3cret-token") {
				t.Errorf("no bearer header in\n%s", b)
			}

			// Merged into a file with other servers: they stay byte for
			// byte, and so does the file's mode.
			env = testEnv(t)
			ch, _ = Plan(client, hub, env)
			if err := os.MkdirAll(filepath.Dir(ch.Path), 0o700); err != nil {
				t.Fatal(err)
			}
			old := existing(client)
			if err := os.WriteFile(ch.Path, []byte(old), 0o640); err != nil {
				t.Fatal(err)
			}
			out.Reset()
			if err := Connect(&out, client, hub, env, false); err != nil {
				t.Fatal(err)
			}
			b, _ = os.ReadFile(ch.Path)
			if info, _ := os.Stat(ch.Path); info.Mode().Perm() != 0o640 {
				t.Errorf("mode %v, want 0640 kept", info.Mode().Perm())
			}
			for _, line := range strings.Split(old, "\n") {
				if line != "}" && line != "  }" && !strings.Contains(string(b), line) {
					t.Errorf("line %q of the user's file is gone:\n%s", line, b)
				}
			}
			if entryOf(t, client, b, "other") == nil || entryOf(t, client, b, "mcp-hub") == nil {
				t.Errorf("want both servers in\n%s", b)
			}

			// Its own entry replaced, not doubled; again: nothing to do.
			hub2 := Hub{URL: "https://hub.example.com/mcp", OAuth: true}
			out.Reset()
			if err := Connect(&out, client, hub2, env, false); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), "(replaced mcp-hub)") {
				t.Errorf("output %q, want replaced", out.String())
			}
			b, _ = os.ReadFile(ch.Path)
			if strings.Contains(string(b), hubURL) || strings.Count(string(b), "https://hub.example.com/mcp") != 1 {
				t.Errorf("want only the new URL, once:\n%s", b)
			}
			if strings.Contains(string(b), "Authorization") || strings.Contains(string(b), "s3cret") {
				t.Errorf("an OAuth hub gets no header, and the old token goes:\n%s", b)
			}
			if entryOf(t, client, b, "other") == nil {
				t.Errorf("the other server is gone:\n%s", b)
			}
			out.Reset()
			if err := Connect(&out, client, hub2, env, false); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), "already has mcp-hub") {
				t.Errorf("output %q, want already has", out.String())
			}

			// A malformed file is refused, named, left alone; the snippet
			// is printed for adding by hand.
			bad := "{\n  \"theme\": \"dark\",\n  \"x\": [1, 2\n"
			if client == "codex" {
				bad = "model = \"o3\"\n[mcp_servers.other\n"
			}
			if err := os.WriteFile(ch.Path, []byte(bad), 0o600); err != nil {
				t.Fatal(err)
			}
			out.Reset()
			err = Connect(&out, client, hub, env, false)
			if err == nil || !strings.Contains(err.Error(), ch.Path) || !strings.Contains(err.Error(), "line") {
				t.Errorf("malformed file: error %v, want one naming %s and a line", err, ch.Path)
			}
			if err != nil && strings.Contains(err.Error(), "s3cret") {
				t.Errorf("the token is in the error: %v", err)
			}
			if b, _ := os.ReadFile(ch.Path); string(b) != bad {
				t.Errorf("the malformed file was changed:\n%s", b)
			}
			if !strings.Contains(out.String(), "add this by hand") || !strings.Contains(out.String(), hubURL) {
				t.Errorf("want the snippet printed, got %q", out.String())
			}

			// --print shows the entry whatever the file holds.
			out.Reset()
			if err := Connect(&out, client, hub, env, true); err != nil || !strings.Contains(out.String(), hubURL) {
				t.Errorf("--print beside a malformed file: %v\n%s", err, out.String())
			}

			// --print writes nothing.
			env = testEnv(t)
			out.Reset()
			if err := Connect(&out, client, hub, env, true); err != nil {
				t.Fatal(err)
			}
			ch, _ = Plan(client, hub, env)
			if _, err := os.Stat(ch.Path); err == nil {
				t.Error("--print wrote the file")
			}
			if !strings.Contains(out.String(), ch.Snippet) || !strings.Contains(out.String(), ch.Path) {
				t.Errorf("--print: %q lacks the snippet or the path", out.String())
			}
		})
	}
}

func TestTokenFromEnvironment(t *testing.T) {
	for _, tc := range []struct {
		client, want string
		literal      bool
	}{
		{"claude-code", `"Authorization": "Bearer ${HUB_TOKEN}"`, false},
		{"vscode", `"Authorization": "Bearer ${env:HUB_TOKEN}"`, false},
		{"cursor", `"Authorization": "Bearer ${env:HUB_TOKEN}"`, false},
		{"windsurf", `"Authorization": "Bearer ${env:HUB_TOKEN}"`, false},
		{"gemini", `"Authorization": "Bearer ${HUB_TOKEN}"`, false},
		{"codex", `bearer_token_env_var = "HUB_TOKEN"`, false},
		{"claude-desktop", `"AUTH_HEADER": "Bearer tok"`, true},
		{"zed", `"Authorization": "Bearer tok"`, true},
	} {
		t.Run(tc.client, func(t *testing.T) {
			ch, err := Plan(tc.client, Hub{URL: hubURL, Token: "tok", TokenEnv: "HUB_TOKEN"}, testEnv(t))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(ch.Snippet, tc.want) {
				t.Errorf("snippet lacks %s:\n%s", tc.want, ch.Snippet)
			}
			if !tc.literal && (strings.Contains(ch.Snippet, "tok\"") || !strings.Contains(ch.Note, "HUB_TOKEN")) {
				t.Errorf("want a reference, not the token, and a note naming the variable: %q\n%s", ch.Note, ch.Snippet)
			}
			// Without the token itself, clients that cannot read a
			// variable refuse.
			_, err = Plan(tc.client, Hub{URL: hubURL, TokenEnv: "HUB_TOKEN"}, testEnv(t))
			if tc.literal != (err != nil) {
				t.Errorf("only a token variable: error %v, want one: %v", err, tc.literal)
			}
		})
	}
}

func TestClaudeDesktopBridges(t *testing.T) {
	for _, tc := range []struct {
		url       string
		allowHTTP bool
	}{
		{"http://127.0.0.1:8080/mcp", false},
		{"http://localhost:8080/mcp", false},
		{"http://hub.lan:8080/mcp", true},
		{"https://hub.example.com/mcp", false},
	} {
		ch, err := Plan("claude-desktop", Hub{URL: tc.url, Token: "tok"}, testEnv(t))
		if err != nil {
			t.Fatal(err)
		}
		e := entryOf(t, "claude-desktop", []byte(ch.Snippet), "mcp-hub")
		args, _ := json.Marshal(e["args"])
		want := `["-y","mcp-remote","` + tc.url + `"`
		if tc.allowHTTP {
			want += `,"--allow-http"`
		}
		want += `,"--header","Authorization:${AUTH_HEADER}"]`
		if e["command"] != "npx" || string(args) != want {
			t.Errorf("%s: command %v args %s, want npx %s", tc.url, e["command"], args, want)
		}
	}
}

func TestStandardPaths(t *testing.T) {
	vars := map[string]string{"APPDATA": `C:\Users\u\AppData\Roaming`, "XDG_CONFIG_HOME": "/xdg", "CODEX_HOME": "/codex"}
	for _, tc := range []struct {
		client, goos string
		vars         bool
		want         string
	}{
		{"claude-code", "linux", false, "/h/.claude.json"},
		{"claude-desktop", "darwin", false, "/h/Library/Application Support/Claude/claude_desktop_config.json"},
		{"claude-desktop", "linux", false, "/h/.config/Claude/claude_desktop_config.json"},
		{"claude-desktop", "windows", true, `C:\Users\u\AppData\Roaming/Claude/claude_desktop_config.json`},
		{"vscode", "linux", false, "/h/.config/Code/User/mcp.json"},
		{"vscode", "linux", true, "/xdg/Code/User/mcp.json"},
		{"vscode", "darwin", true, "/h/Library/Application Support/Code/User/mcp.json"},
		{"cursor", "darwin", false, "/h/.cursor/mcp.json"},
		{"windsurf", "linux", false, "/h/.codeium/windsurf/mcp_config.json"},
		{"zed", "darwin", false, "/h/.config/zed/settings.json"},
		{"zed", "linux", true, "/xdg/zed/settings.json"},
		{"zed", "windows", true, `C:\Users\u\AppData\Roaming/Zed/settings.json`},
		{"codex", "linux", false, "/h/.codex/config.toml"},
		{"codex", "linux", true, "/codex/config.toml"},
		{"gemini", "linux", false, "/h/.gemini/settings.json"},
	} {
		env := Env{Home: "/h", GOOS: tc.goos}
		if tc.vars {
			env.Getenv = func(k string) string { return vars[k] }
		}
		c, _ := lookup(tc.client)
		if got := filepath.ToSlash(c.path(env)); got != filepath.ToSlash(tc.want) {
			t.Errorf("%s on %s: %s, want %s", tc.client, tc.goos, got, tc.want)
		}
	}
}

func TestHubChecked(t *testing.T) {
	for _, tc := range []struct {
		hub  Hub
		want string
	}{
		{Hub{URL: "127.0.0.1:8080/mcp"}, "want http:// or https://"},
		{Hub{URL: "ftp://h/mcp"}, "want http:// or https://"},
		{Hub{URL: hubURL, Name: "my hub"}, `name "my hub"`},
		{Hub{URL: hubURL, Name: "1hub"}, `name "1hub"`},
		{Hub{URL: hubURL, Token: "t", OAuth: true}, "not both"},
		{Hub{URL: hubURL, TokenEnv: "A-B"}, "not an environment variable"},
	} {
		_, err := Plan("cursor", tc.hub, testEnv(t))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.hub, err, tc.want)
		}
	}
	if _, err := Plan("notepad", Hub{URL: hubURL}, testEnv(t)); err == nil || !strings.Contains(err.Error(), "claude-code") {
		t.Errorf("unknown client: %v, want the list", err)
	}
}

// A strict-JSON client's file with comments is refused, not rewritten.
func TestStrictClientRefusesComments(t *testing.T) {
	env := testEnv(t)
	ch, _ := Plan("cursor", Hub{URL: hubURL}, env)
	_ = os.MkdirAll(filepath.Dir(ch.Path), 0o700)
	doc := "{\n  // mine\n  \"mcpServers\": {}\n}\n"
	_ = os.WriteFile(ch.Path, []byte(doc), 0o600)
	if _, err := Plan("cursor", Hub{URL: hubURL}, env); err == nil || !strings.Contains(err.Error(), "comments") {
		t.Errorf("error %v, want one about comments", err)
	}
}

func TestApplyRefusesAFileChangedSincePlan(t *testing.T) {
	env := testEnv(t)
	ch, err := Plan("gemini", Hub{URL: hubURL}, env)
	if err != nil {
		t.Fatal(err)
	}
	_ = os.MkdirAll(filepath.Dir(ch.Path), 0o700)
	_ = os.WriteFile(ch.Path, []byte(`{"theme":"x"}`), 0o600)
	if err := ch.Apply(); err == nil || !strings.Contains(err.Error(), "changed since") {
		t.Errorf("error %v, want changed since", err)
	}
	if b, _ := os.ReadFile(ch.Path); string(b) != `{"theme":"x"}` {
		t.Errorf("file overwritten: %s", b)
	}
}

func TestApplyWritesThroughASymlink(t *testing.T) {
	env := testEnv(t)
	real := filepath.Join(t.TempDir(), "dotfiles-settings.json")
	_ = os.WriteFile(real, []byte("{}\n"), 0o644)
	link := filepath.Join(env.Home, ".gemini", "settings.json")
	_ = os.MkdirAll(filepath.Dir(link), 0o700)
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if err := Connect(&bytes.Buffer{}, "gemini", Hub{URL: hubURL}, env, false); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v", err)
	}
	if b, _ := os.ReadFile(real); !strings.Contains(string(b), hubURL) {
		t.Errorf("the link's target lacks the hub: %s", b)
	}
	if fi, _ := os.Stat(real); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644 kept", fi.Mode().Perm())
	}
}
