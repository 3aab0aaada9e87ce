package config

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
	if c.Upstream.ResultCap() != 100000 || c.Upstream.MaxResponseBytes != 16<<20 {
		t.Errorf("result cap %d, response limit %d: want Purko's 100000 characters and 16 MiB", c.Upstream.ResultCap(), c.Upstream.MaxResponseBytes)
	}
	if u := c.Upstream; u.MaxListPages != 100 || u.MaxTools != 2000 || u.MaxListBytes != 2<<20 {
		t.Errorf("list bounds %d pages, %d tools, %d bytes: want 100, 2000 and 2 MiB", u.MaxListPages, u.MaxTools, u.MaxListBytes)
	}
	off, err := Parse("off.yaml", []byte("servers: []\nupstream: {maxResultChars: 0}\n"))
	if err != nil || off.Upstream.ResultCap() != 0 {
		t.Errorf("maxResultChars: 0 must turn the cap off: %v", err)
	}
}

func TestParseErrorsNameFileAndField(t *testing.T) {
	cases := []struct {
		name, yaml, want string
	}{
		{"unknown field", "servers:\n- name: a\n  url: http://x/mcp\n  tranport: sse\n", `unknown field "tranport"`},
		{"bad secret name", "servers: []\nkubernetes: {secretNames: [gh, GH_Token]}\n", `kubernetes.secretNames[1]: "GH_Token" is not a Secret name`},
		{"lease name", "kubernetes: {leaderElection: {leaseName: Hub}}\n", `kubernetes.leaderElection.leaseName: "Hub" is not a Lease name`},
		{"lease namespace", "kubernetes: {leaderElection: {namespace: a.b}}\n", `kubernetes.leaderElection.namespace: "a.b" is not a namespace name`},
		{"lease seconds", "kubernetes: {leaderElection: {leaseDuration: 1500ms}}\n", "kubernetes.leaderElection.leaseDuration: 1.5s must be whole seconds"},
		{"renew after lease", "kubernetes: {leaderElection: {leaseDuration: 10s, renewDeadline: 10s}}\n", "kubernetes.leaderElection.renewDeadline: 10s must be shorter than leaseDuration 10s"},
		{"retry too long", "kubernetes: {leaderElection: {retryPeriod: 9s}}\n", "kubernetes.leaderElection.retryPeriod: 9s must be above zero and renewDeadline 10s more than 1.2 times it"},
		{"bad transport", "servers:\n- name: a\n  url: http://x/mcp\n  transport: grpc\n", `servers[0] (a).transport: "grpc" is not one of`},
		{"missing name", "servers:\n- url: http://x/mcp\n", "servers[0].name: is required"},
		{"virtual server without tools", "virtualServers:\n- name: coding\n", "virtualServers[0] (coding).servers: a virtual server needs servers or tools"},
		{"virtual server pattern", "virtualServers:\n- name: coding\n  tools: ['[x']\n", `virtualServers[0] (coding).tools[0]: "[x" is not a valid tool pattern`},
		{"virtual server twice", "virtualServers:\n- {name: v, servers: [a]}\n- {name: v, servers: [b]}\n", `virtualServers[1].name: "v" is already used by virtualServers[0]`},
		{"virtual server field", "virtualServers:\n- {name: v, server: [a]}\n", `unknown field "server"`},
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
		{"result cap", "upstream: {maxResultChars: 10}\n", "upstream.maxResultChars: 10 must be 0 (off) or at least 1000"},
		{"negative result cap", "upstream: {maxResultChars: -1}\n", "upstream.maxResultChars: -1 must be 0"},
		{"server result cap", "servers:\n- name: a\n  url: http://x/mcp\n  maxResultChars: 999\n", "servers[0] (a).maxResultChars: 999 must be 0 (off)"},
		{"response bytes", "upstream: {maxResponseBytes: 1000}\n", "upstream.maxResponseBytes: 1000 is not within"},
		{"response bytes too many", "upstream: {maxResponseBytes: 4294967296}\n", "upstream.maxResponseBytes: 4294967296 is not within"},
		{"list pages negative", "upstream: {maxListPages: -1}\n", "upstream.maxListPages: -1 is not within 1 and 100000"},
		{"list pages too many", "upstream: {maxListPages: 100001}\n", "upstream.maxListPages: 100001 is not within"},
		{"tools negative", "upstream: {maxTools: -3}\n", "upstream.maxTools: -3 is not within 1 and 100000"},
		{"tools too many", "upstream: {maxTools: 1000000}\n", "upstream.maxTools: 1000000 is not within"},
		{"list bytes too few", "upstream: {maxListBytes: 1000}\n", "upstream.maxListBytes: 1000 is not within 65536 (64 KiB)"},
		{"list bytes too many", "upstream: {maxListBytes: 2147483648}\n", "upstream.maxListBytes: 2147483648 is not within"},
		{"extension id", "upstream: {extensions: {ui: {}}}\n", `upstream.extensions: "ui" is not an extension identifier`},
		{"extension served here", "upstream: {extensions: {io.modelcontextprotocol/tasks: {}}}\n", "upstream.extensions: io.modelcontextprotocol/tasks is served by the hub itself"},
		{"extension settings", "upstream: {extensions: {com.example/x: [1]}}\n", "upstream.extensions.com.example/x: the settings must be an object"},
		{"not yaml", "servers: [\n", "config test.yaml:"},
		{"auth level", "auth:\n  tokens:\n  - name: bot\n    token: {env: HOME}\n    maxLevel: godmode\n", `auth.tokens[0] (bot).maxLevel: `},
		{"guardrails filter", "auth:\n  tokens:\n  - name: bot\n    token: {env: HOME}\n    maxLevel: full\n    guardrails: {contentFilters: [pii, no-emails]}\n",
			`auth.tokens[0] (bot).guardrails.contentFilters: unknown content filter "no-emails" (known: pii, no-pii, secrets, no-secrets-in-output, regex:PATTERN:REPLACEMENT)`},
		{"guardrails key", "auth:\n  tokens:\n  - name: bot\n    token: {env: HOME}\n    maxLevel: full\n    guardrails: {maxIteration: 3}\n", `maxIteration`},
		{"guardrails per hour", "auth:\n  tokens:\n  - name: bot\n    token: {env: HOME}\n    maxLevel: full\n    guardrails: {maxIterations: 20, maxIterationsPerHour: -1}\n",
			`auth.tokens[0] (bot).guardrails.maxIterationsPerHour: -1 is negative (0 or absent: no cap)`},
		{"guardrails per hour of an issuer", "auth:\n  oauth:\n    resource: https://hub.example.com/mcp\n    issuers:\n    - issuer: https://idp.example.com\n      guardrails: {maxIterationsPerHour: -200}\n",
			`auth.oauth.issuers[0].guardrails.maxIterationsPerHour: -200 is negative`},
		{"guardrails per hour not a number", "auth:\n  tokens:\n  - name: bot\n    token: {env: HOME}\n    maxLevel: full\n    guardrails: {maxIterationsPerHour: lots}\n",
			`maxIterationsPerHour`},
		{"guardrails grant", "auth:\n  oauth:\n    resource: https://hub.example.com/mcp\n    issuers:\n    - issuer: https://idp.example.com\n      grants:\n      - {claim: sub, value: alice, maxLevel: full, guardrails: {contentFilterMode: mask}}\n",
			`auth.oauth.issuers[0].grants[0].guardrails.contentFilterMode: "mask" is not one of redact, block`},
		{"auth token source", "auth:\n  tokens:\n  - name: bot\n    maxLevel: full\n", "auth.tokens[0] (bot).token: set exactly one of env or file"},
		{"auth name", "auth:\n  tokens:\n  - token: {env: HOME}\n    maxLevel: full\n", "auth.tokens[0].name: is required"},
		{"anonymous level", "auth:\n  anonymous: {enabled: true, maxLevel: most}\n", "auth.anonymous.maxLevel"},
		{"admin ServiceAccount", "auth:\n  serviceAccounts: {enabled: true, admins: [ops]}\n", `auth.serviceAccounts.admins[0]: "ops" is not namespace/name`},
		{"tool policy pattern", "servers:\n- name: a\n  url: http://x/mcp\n  toolPolicy: {write: ['[']}\n", `servers[0] (a).toolPolicy.write: "[" is not a valid tool pattern`},
		{"tool policy empty pattern", "servers:\n- name: a\n  url: http://x/mcp\n  toolPolicy: {readOnly: ['']}\n", `servers[0] (a).toolPolicy.readOnly: empty tool pattern`},

		// A file with nothing in it is a half-written file, not a config.
		{"empty file", "", "the file is empty"},
		{"whitespace only", " \n\t\n", "the file is empty"},
		{"comments only", "# servers come later\n", "the file is empty"},
		{"null document", "null\n", "the file is empty"},

		// Durations: negative or too large for a time.Duration, named by field.
		{"negative server timeout", "servers:\n- name: a\n  url: http://x/mcp\n  timeout: -5s\n", "servers[0] (a).timeout: -5s must not be negative"},
		{"negative upstream timeout", "upstream: {timeout: -1s}\n", "upstream.timeout: -1s must not be negative"},
		{"negative seconds", "shutdownGrace: -3\n", "shutdownGrace: -3s must not be negative"},
		{"negative trigger timeout", "builtins: {triggerWorkflow: {timeout: -1m}}\n", "builtins.triggerWorkflow.timeout: -1m0s must not be negative"},
		{"negative http timeout", "http: {readTimeout: -1s}\n", "http.readTimeout: -1s must not be negative"},
		{"overflowing duration", "upstream: {timeout: 9999999999h}\n", `upstream.timeout: invalid duration "9999999999h"`},
		{"overflowing server timeout", "servers:\n- name: a\n  url: http://x/mcp\n  timeout: 9999999999h\n", `servers[0] (a).timeout: invalid duration "9999999999h"`},
		{"overflowing seconds", "upstream: {connectTimeout: 1e20}\n", "upstream.connectTimeout: invalid duration 1e+20 seconds"},
		{"seconds just past the limit", "catalog: {notifyDebounce: 9223372037}\n", "catalog.notifyDebounce: invalid duration"},
		{"duration of another type", "upstream: {pingInterval: [1]}\n", `upstream.pingInterval: duration must be a string like "30s"`},

		// Ports out of range, wherever the config holds an address.
		{"server port too large", "servers:\n- name: a\n  url: http://x:99999/mcp\n", `servers[0] (a).url: "http://x:99999/mcp": port "99999" is not within 1..65535`},
		{"server port zero", "servers:\n- name: a\n  url: http://x:0/mcp\n", `servers[0] (a).url: "http://x:0/mcp": port "0"`},
		{"websocket port", "servers:\n- name: a\n  url: ws://x:65536/ws\n", `servers[0] (a).url: "ws://x:65536/ws": port "65536"`},
		{"peer port", "replicas: {peers: 'a:8080, b:70000'}\n", `replicas.peers: "b:70000": port "70000"`},
		{"dashboard port", "builtins: {triggerWorkflow: {dashboardURL: 'http://d:65536'}}\n", `builtins.triggerWorkflow.dashboardURL: "http://d:65536": port "65536"`},
		{"api tool port", "apiTools:\n- name: t\n  url: https://api:0/x\n", `apiTools[0] (t).url: "https://api:0/x": port "0"`},
		{"openapi url port", "openapi:\n- url: http://h:123456/doc.json\n", `openapi[0].url: "http://h:123456/doc.json": port "123456"`},
		{"openapi base url port", "openapi:\n- file: /x.json\n  base: {url: 'http://h:0/v1'}\n", `openapi[0].base.url: "http://h:0/v1": port "0"`},
		{"allowed origin port", "http: {allowedOrigins: ['https://ui:99999']}\n", `http.allowedOrigins[0]: "https://ui:99999": port "99999"`},

		// http limits.
		{"body limit negative", "http: {maxBodyBytes: -1}\n", "http.maxBodyBytes: -1 is not within 1..1073741824"},
		{"body limit too large", "http: {maxBodyBytes: 1073741825}\n", "http.maxBodyBytes: 1073741825 is not within"},
		{"sessions negative", "http: {maxSessions: -5}\n", "http.maxSessions: -5 must be positive"},
		{"per caller negative", "http: {maxSessionsPerCaller: -1}\n", "http.maxSessionsPerCaller: -1 must be positive"},
		{"per caller above total", "http: {maxSessions: 10, maxSessionsPerCaller: 11}\n", "http.maxSessionsPerCaller: 11 is more than http.maxSessions 10"},
		{"idle timeout short", "http: {sessionIdleTimeout: 9s}\n", "http.sessionIdleTimeout: 9s is shorter than 10s"},
		{"origin star", "http: {allowedOrigins: ['*']}\n", `http.allowedOrigins[0]: "*" is not allowed`},
		{"origin with path", "http: {allowedOrigins: ['https://ui.example.com', 'https://ui.example.com/']}\n", `http.allowedOrigins[1]: "https://ui.example.com/" must be scheme://host[:port] alone`},
		{"origin with query", "http: {allowedOrigins: ['http://ui?x=1']}\n", `http.allowedOrigins[0]: "http://ui?x=1" must be scheme://host[:port] alone`},
		{"origin with user", "http: {allowedOrigins: ['http://u@ui']}\n", `http.allowedOrigins[0]: "http://u@ui" must be`},
		{"origin scheme", "http: {allowedOrigins: ['ftp://ui']}\n", `http.allowedOrigins[0]: "ftp://ui" is not an http or https origin`},
		{"origin bare host", "http: {allowedOrigins: ['ui.example.com']}\n", `http.allowedOrigins[0]: "ui.example.com" is not an http or https origin`},
		{"http unknown key", "http: {maxBody: 1}\n", `unknown field "maxBody"`},
		{"findTools negative", "catalog: {findTools: {above: -1}}\n", "catalog.findTools.above: must not be negative"},
		{"findTools unknown key", "catalog: {findTools: {over: 10}}\n", `unknown field "over"`},
		{"pinning mode", "pinning: {mode: strict}\n", `pinning.mode: "strict" is not one of enforce, warn, off`},
		{"pinning state file", "pinning: {stateFile: pins.json}\n", `pinning.stateFile: "pins.json" must be an absolute path`},
		{"pinning approve server", "pinning: {approve: [{tool: x}]}\n", "pinning.approve[0].server: is required"},
		{"pinning approve glob", "pinning: {approve: [{server: gh, tool: '['}]}\n", `pinning.approve[0] (gh).tool: "[" is not a glob`},
		{"pinning approve hash", "pinning: {approve: [{server: gh, sha256: abc}]}\n", `pinning.approve[0] (gh).sha256: "abc" is not 64 lower-case hex digits`},
		{"pinning unknown key", "pinning: {approvals: []}\n", `unknown field "approvals"`},
		{"screening mode", "screening: {mode: strict}\n", `screening.mode: "strict" is not one of enforce, warn, off`},
		{"screening unknown key", "screening: {rules: []}\n", `unknown field "rules"`},
		{"approver glob", "approvals: {approvers: ['[ops']}\n", `approvals.approvers[0]: "[ops" is not a valid glob`},
		{"approver blank", "approvals: {approvers: [' ops']}\n", `approvals.approvers[0]: " ops" is not a caller name or glob`},
		{"approval timeout", "approvals: {timeout: 500ms}\n", "approvals.timeout: 500ms is shorter than 1s"},
		{"approval webhook url", "approvals: {webhook: {url: 'ftp://chat/hook'}}\n", "approvals.webhook.url: not an absolute http(s) URL"},
		{"approval webhook console", "approvals: {webhook: {url: 'https://chat/hook', consoleURL: 'hub.example.com'}}\n", `approvals.webhook.consoleURL: "hub.example.com" is not an absolute`},
		{"approval webhook token", "approvals: {webhook: {url: 'https://chat/hook', token: {env: MCPHUB_TEST_UNSET_WEBHOOK}}}\n", "approvals.webhook.token"},
		{"approval mode", "auth: {tokens: [{name: a, token: {env: HOME}, maxLevel: supervised, guardrails: {humanApprovalRequired: true, approvalMode: chat}}]}\n", `guardrails.approvalMode: "chat" is not one of api, elicit`},
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

// TestLeaderElectionDefaults: replicas elect a status writer unless told
// not to, on client-go's usual timings.
func TestLeaderElectionDefaults(t *testing.T) {
	d, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	le := d.Kubernetes.LeaderElection
	if !le.On() || le.LeaseName != "mcp-hub" || le.Namespace != "" || le.LeaseDuration.D() != 15*time.Second ||
		le.RenewDeadline.D() != 10*time.Second || le.RetryPeriod.D() != 2*time.Second {
		t.Fatalf("defaults %+v", le)
	}
	c, err := Parse("t.yaml", []byte("kubernetes: {leaderElection: {enabled: false}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Kubernetes.LeaderElection.On() {
		t.Fatal("enabled: false left the election on")
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
	if c.Auth.Tokens[0].Admin {
		t.Fatal("a token is admin without admin: true")
	}
	if d, _ := Default(); d.Auth.Configured() || d.Pinning.Mode != PinningEnforce || d.Screening.Mode != ScreeningEnforce {
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

// TestTokenFilesBounded: every token a config names (upstream, caller,
// trigger-workflow) is read by the one credential resolver: a file over
// 64 KiB, an empty file or a device fails with the field and path named,
// and never hangs.
func TestTokenFilesBounded(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	big := write("big", strings.Repeat("x", 64<<10+1))
	empty := write("empty", "\n")
	places := []struct {
		name, yaml, field string
	}{
		{"server", "servers:\n- name: a\n  url: http://x/mcp\n  token: {file: %s}\n", "servers[0] (a).token: "},
		{"caller", "auth:\n  tokens:\n  - name: bot\n    token: {file: %s}\n    maxLevel: full\n", "auth.tokens[0] (bot).token: "},
		{"trigger", "builtins:\n  triggerWorkflow:\n    token: {file: %s}\n", "builtins.triggerWorkflow.token: "},
	}
	files := []struct {
		path, want string
	}{
		{big, "file " + big + ": is larger than 64 KiB"},
		{empty, "file " + empty + ": is empty"},
		{"/dev/zero", "file /dev/zero: is not a regular file"},
	}
	for _, pl := range places {
		for _, f := range files {
			t.Run(pl.name+" "+filepath.Base(f.path), func(t *testing.T) {
				errc := make(chan error, 1)
				go func() {
					_, err := Parse("t.yaml", []byte(fmt.Sprintf(pl.yaml, f.path)))
					errc <- err
				}()
				select {
				case err := <-errc:
					if want := pl.field + f.want; err == nil || !strings.Contains(err.Error(), want) {
						t.Fatalf("error %v, want %q", err, want)
					}
				case <-time.After(5 * time.Second):
					t.Fatal("Parse did not return within 5s")
				}
			})
		}
	}
}

func TestServersKeyAbsentVersusEmpty(t *testing.T) {
	cases := []struct {
		yaml    string
		wantNil bool
	}{
		{"servers: []\n", false},
		{"servers:\n- name: a\n  url: http://x/mcp\n", false},
		{"naming: {prefix: never}\n", true},
		{"servers:\nnaming: {prefix: never}\n", true},
	}
	for _, tc := range cases {
		c, err := Parse("t.yaml", []byte(tc.yaml))
		if err != nil {
			t.Fatalf("%q: %v", tc.yaml, err)
		}
		if (c.Servers == nil) != tc.wantNil {
			t.Errorf("%q: Servers = %#v, want nil=%v", tc.yaml, c.Servers, tc.wantNil)
		}
	}
}

// TestInlineTokenNamesWhereToPutIt: a token written into the config is
// refused with the field and the two ways to give it, never echoed.
func TestInlineTokenNamesWhereToPutIt(t *testing.T) {
	for _, tc := range []struct{ doc, field string }{
		{"servers:\n  - name: gh\n    url: https://x.example.com/mcp\n    token: ghp_inline_secret\n", "servers[0] (gh).token"},
		{"servers: []\nauth:\n  tokens:\n    - name: ci\n      token: ghp_inline_secret\n      maxLevel: full\n", "auth.tokens[0] (ci).token"},
		{"servers:\n  - name: r\n    url: https://x.example.com/mcp\n    oauth: {tokenURL: https://login.example.com/token, clientID: hub, clientSecret: ghp_inline_secret}\n", "servers[0] (r).oauth.clientSecret"},
	} {
		_, err := Parse("hub.yaml", []byte(tc.doc))
		want := "config hub.yaml: " + tc.field + ": a token is never written into the config file; give where to read it: {env: VARIABLE} or {file: /path/to/token}"
		if err == nil || err.Error() != want {
			t.Errorf("Parse(%q) = %v\nwant %s", tc.doc, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "ghp_inline_secret") {
			t.Errorf("the error echoes the token: %v", err)
		}
	}
}

func TestExtensionsDefaultToAppsAndMayBeEmptied(t *testing.T) {
	cases := []struct {
		name, yaml string
		want       []string
	}{
		{"absent", "servers: []\n", []string{ExtensionUI}},
		{"none", "upstream: {extensions: {}}\n", []string{}},
		{"another", "upstream: {extensions: {com.example/maps: {zoom: 3}}}\n", []string{"com.example/maps"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse("test.yaml", []byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Upstream.Extensions.IDs(); !slices.Equal(got, tc.want) {
				t.Fatalf("carried %v, want %v", got, tc.want)
			}
		})
	}
}
