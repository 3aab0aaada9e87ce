package config

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDefaultLoads(t *testing.T) {
	c, err := Default()
	if err != nil {
		t.Fatalf("embedded default: %v", err)
	}
	if c.Naming.Prefix != PrefixOnConflict || c.Naming.Separator != "__" {
		t.Errorf("naming = %+v, want on-conflict with __", c.Naming)
	}
	if c.Upstream.Timeout.D() != 60*time.Second {
		t.Errorf("timeout = %s", c.Upstream.Timeout.D())
	}
}

func TestParseErrorsNameFileAndField(t *testing.T) {
	cases := []struct {
		name, yaml, want string
	}{
		{"unknown field", "servers:\n- name: a\n  url: http://x/mcp\n  tranport: sse\n", `unknown field "tranport"`},
		{"bad transport", "servers:\n- name: a\n  url: http://x/mcp\n  transport: grpc\n", `servers[0] (a).transport: "grpc" is not one of`},
		{"missing name", "servers:\n- url: http://x/mcp\n", "servers[0].name: is required"},
		{"bad name", "servers:\n- name: 'a b'\n  url: http://x/mcp\n", `servers[0] (a b).name: "a b" must start`},
		{"duplicate", "servers:\n- name: a\n  url: http://x/mcp\n- name: a\n  url: http://y/mcp\n", `servers[1].name: "a" is already used by servers[0]`},
		{"neither url nor command", "servers:\n- name: a\n", "servers[0] (a).url: one of url or command is required"},
		{"both", "servers:\n- name: a\n  url: http://x/mcp\n  command: x\n", "url: set either url or command"},
		{"relative url", "servers:\n- name: a\n  url: /mcp\n", `url: "/mcp" is not an absolute URL`},
		{"scheme", "servers:\n- name: a\n  url: ftp://x/mcp\n  transport: sse\n", `url: scheme "ftp" does not fit transport sse`},
		{"credentials in url", "servers:\n- name: a\n  url: http://u:p@x/mcp\n", "url: must not carry credentials"},
		{"stdio without command", "servers:\n- name: a\n  transport: stdio\n", "command: is required with transport stdio"},
		{"token both", "servers:\n- name: a\n  url: http://x/mcp\n  token: {env: A, file: /b}\n", "token: set exactly one of env or file"},
		{"token env unset", "servers:\n- name: a\n  url: http://x/mcp\n  token: {env: MCPHUB_TEST_UNSET_VAR}\n", "servers[0] (a).token: env: variable MCPHUB_TEST_UNSET_VAR is not set"},
		{"bad duration", "servers:\n- name: a\n  url: http://x/mcp\n  timeout: soon\n", `invalid duration "soon"`},
		{"prefix", "naming: {prefix: sometimes}\n", `naming.prefix: "sometimes" is not one of`},
		{"separator", "naming: {separator: '.'}\n", `naming.separator: "." must be`},
		{"backoff", "upstream: {backoffMin: 10s, backoffMax: 1s}\n", "upstream.backoffMax"},
		{"not yaml", "servers: [\n", "config test.yaml:"},
		{"auth level", "auth:\n  tokens:\n  - name: bot\n    token: {env: HOME}\n    maxLevel: godmode\n", `auth.tokens[0] (bot).maxLevel: `},
		{"auth token source", "auth:\n  tokens:\n  - name: bot\n    maxLevel: full\n", "auth.tokens[0] (bot).token: set exactly one of env or file"},
		{"auth name", "auth:\n  tokens:\n  - token: {env: HOME}\n    maxLevel: full\n", "auth.tokens[0].name: is required"},
		{"anonymous level", "auth:\n  anonymous: {enabled: true, maxLevel: most}\n", "auth.anonymous.maxLevel"},
		{"tool policy pattern", "servers:\n- name: a\n  url: http://x/mcp\n  toolPolicy: {write: ['[']}\n", `toolPolicy.write: "[" is not a valid pattern`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("test.yaml", []byte(tc.yaml))
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			if !strings.HasPrefix(err.Error(), "config test.yaml: ") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q\nwant it to start with the file and contain %q", err, tc.want)
			}
		})
	}
}

func TestAuthTokensResolved(t *testing.T) {
	t.Setenv("MCPHUB_TEST_CALLER", "caller-secret")
	c, err := Parse("t.yaml", []byte("auth:\n  tokens:\n  - name: bot\n    token: {env: MCPHUB_TEST_CALLER}\n    maxLevel: Ha\n    tools: [get_issue]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if tok := c.Auth.Tokens[0]; tok.Value.Reveal() != "caller-secret" || !c.Auth.Configured() {
		t.Fatalf("token %+v", tok)
	}
	if js, _ := json.Marshal(c); strings.Contains(string(js), "caller-secret") {
		t.Fatal("caller token marshalled")
	}
	if d, _ := Default(); d.Auth.Configured() {
		t.Fatal("the embedded default must configure no auth (anonymous on loopback only)")
	}
}

func TestTransportInference(t *testing.T) {
	cases := []struct {
		url, command string
		want         Transport
	}{
		{"http://h:1/mcp", "", TransportStreamableHTTP},
		{"https://h/api/mcp/", "", TransportStreamableHTTP},
		{"http://h:1/sse", "", TransportSSE},
		{"http://h:1/sse/", "", TransportSSE},
		{"ws://h:1/ws", "", TransportWebSocket},
		{"wss://h/", "", TransportWebSocket},
		{"", "npx", TransportStdio},
	}
	for _, tc := range cases {
		if got := InferTransport(tc.url, tc.command); got != tc.want {
			t.Errorf("InferTransport(%q,%q) = %q, want %q", tc.url, tc.command, got, tc.want)
		}
	}
}

func TestTokensResolvedAndNeverPrinted(t *testing.T) {
	dir := t.TempDir()
	tokFile := filepath.Join(dir, "tok")
	if err := os.WriteFile(tokFile, []byte("file-secret-123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MCPHUB_TEST_TOKEN", "env-secret-456")
	c, err := Parse("t.yaml", []byte(fmt.Sprintf(`
servers:
- name: a
  url: http://127.0.0.1:1/mcp
  token: {env: MCPHUB_TEST_TOKEN}
- name: b
  url: http://127.0.0.1:2/mcp
  token: {file: %s}
  timeout: 5s
`, tokFile)))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Servers[0].BearerToken.Reveal(); got != "env-secret-456" {
		t.Errorf("env token = %q", got)
	}
	if got := c.Servers[1].BearerToken.Reveal(); got != "file-secret-123" {
		t.Errorf("file token = %q", got)
	}
	if c.Servers[1].Timeout.D() != 5*time.Second {
		t.Errorf("timeout = %s", c.Servers[1].Timeout.D())
	}
	js, _ := json.Marshal(c)
	printed := fmt.Sprintf("%v %+v %#v %s", c.Servers, c.Servers, c.Servers, js)
	for _, secret := range []string{"env-secret-456", "file-secret-123"} {
		if strings.Contains(printed, secret) {
			t.Fatalf("secret %q leaked into printed config: %s", secret, printed)
		}
	}
}

func TestSpecEqual(t *testing.T) {
	a := ServerSpec{Name: "a", URL: "http://x/mcp", Headers: map[string]string{"X": "1"}, BearerToken: "t1"}
	b := a
	if !a.Equal(b) {
		t.Fatal("identical specs differ")
	}
	b.BearerToken = "t2"
	if a.Equal(b) {
		t.Fatal("a rotated token must count as a change")
	}
	c := a
	c.Headers = map[string]string{"X": "2"}
	if a.Equal(c) {
		t.Fatal("changed header must count as a change")
	}
}
