package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCredentialRefs: registrations.credentialRefs lists variable names
// only, each once, and never one the config reads a hub secret from (a
// caller token, an OAuth client secret, the dashboard token), whatever its
// case; the error names the field and the holder.
func TestCredentialRefs(t *testing.T) {
	t.Setenv("OPS_TOKEN", "ops-value")
	t.Setenv("CLIENT_SECRET", "cs-value")
	t.Setenv("DASH_TOKEN", "dash-value")
	botFile := filepath.Join(t.TempDir(), "bot")
	if err := os.WriteFile(botFile, []byte("bot-value"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := `auth:
  tokens:
  - {name: bot, token: {file: ` + botFile + `}, maxLevel: manual}
  - {name: ops, token: {env: OPS_TOKEN}, maxLevel: full, admin: true}
builtins:
  triggerWorkflow: {token: {env: DASH_TOKEN}}
servers:
- name: remote
  url: http://127.0.0.1:1/mcp
  oauth: {tokenURL: "http://127.0.0.1:1/token", clientID: hub, clientSecret: {env: CLIENT_SECRET}}
`
	cases := []struct {
		name, refs, want string
		allowed, refused []string
	}{
		{name: "default is none", refs: "", refused: []string{"UP_TOKEN", "OPS_TOKEN", ""}},
		{name: "listed names", refs: "[UP_TOKEN, GITHUB_MCP_TOKEN]", allowed: []string{"UP_TOKEN", "GITHUB_MCP_TOKEN"}, refused: []string{"up_token", "OPS_TOKEN", "HOME"}},
		{name: "a caller token", refs: "[UP_TOKEN, OPS_TOKEN]",
			want: "registrations.credentialRefs[1]: env OPS_TOKEN holds auth.tokens[1] (ops).token, a secret of the hub itself"},
		{name: "a caller token in another case", refs: "[ops_token]",
			want: "registrations.credentialRefs[0]: env ops_token holds auth.tokens[1] (ops).token, a secret of the hub itself"},
		{name: "an OAuth client secret", refs: "[CLIENT_SECRET]",
			want: "registrations.credentialRefs[0]: env CLIENT_SECRET holds servers[0] (remote).oauth.clientSecret, a secret of the hub itself"},
		{name: "the dashboard token", refs: "[DASH_TOKEN]",
			want: "registrations.credentialRefs[0]: env DASH_TOKEN holds builtins.triggerWorkflow.token, a secret of the hub itself"},
		{name: "not a name", refs: "[UP_TOKEN, 'A-B']", want: `registrations.credentialRefs[1]: "A-B" is not an environment variable name`},
		{name: "empty name", refs: "['']", want: `registrations.credentialRefs[0]: "" is not an environment variable name`},
		{name: "twice", refs: "[A, B, A]", want: "registrations.credentialRefs[2]: A is already listed at [0]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc := base
			if tc.refs != "" {
				doc += "registrations: {credentialRefs: " + tc.refs + "}\n"
			}
			c, err := Parse("hub.yaml", []byte(doc))
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), "config hub.yaml: "+tc.want) {
					t.Fatalf("error %v, want %q", err, tc.want)
				}
				for _, v := range []string{"ops-value", "cs-value", "dash-value"} {
					if strings.Contains(err.Error(), v) {
						t.Fatalf("the error holds a secret value: %v", err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range tc.allowed {
				if !c.Registrations.Allows(n) {
					t.Errorf("%s refused", n)
				}
			}
			for _, n := range tc.refused {
				if c.Registrations.Allows(n) {
					t.Errorf("%s allowed", n)
				}
			}
		})
	}
}
