package config

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOAuthClientParsed(t *testing.T) {
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "secret")
	if err := os.WriteFile(secretFile, []byte("file-client-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MCPHUB_TEST_CLIENT_SECRET", "env-client-secret")
	c, err := Parse("t.yaml", []byte(fmt.Sprintf(`
servers:
- name: remote
  url: https://mcp.example.com/mcp
  oauth:
    tokenURL: https://login.example.com/oauth2/token
    clientID: mcp-hub
    clientSecret: {env: MCPHUB_TEST_CLIENT_SECRET}
    scopes: [mcp:full, read]
    audience: https://mcp.example.com/mcp
    authStyle: post
- name: ws
  url: wss://ws.example.com/mcp
  oauth:
    tokenURL: http://127.0.0.1:9000/token
    clientID: hub
    clientSecret: {file: %s}
`, secretFile)))
	if err != nil {
		t.Fatal(err)
	}
	o := c.Servers[0].OAuth
	if o == nil || o.TokenURL != "https://login.example.com/oauth2/token" || o.ClientID != "mcp-hub" ||
		strings.Join(o.Scopes, " ") != "mcp:full read" || o.Audience != "https://mcp.example.com/mcp" || o.AuthStyle != OAuthAuthPost {
		t.Fatalf("oauth = %+v", o)
	}
	if got := o.ClientSecretValue.Reveal(); got != "env-client-secret" {
		t.Errorf("env client secret = %q", got)
	}
	if got := o.ResourceOrURL(c.Servers[0].URL); got != "https://mcp.example.com/mcp" {
		t.Errorf("resource defaults to %q, want the server's url", got)
	}
	if got := c.Servers[1].OAuth.ClientSecretValue.Reveal(); got != "file-client-secret" {
		t.Errorf("file client secret = %q", got)
	}
	js, _ := json.Marshal(c)
	printed := fmt.Sprintf("%v %+v %#v %s", c.Servers, *o, *o, js)
	for _, secret := range []string{"env-client-secret", "file-client-secret"} {
		if strings.Contains(printed, secret) {
			t.Fatalf("client secret %q leaked into printed config: %s", secret, printed)
		}
	}
}

func TestOAuthClientErrors(t *testing.T) {
	t.Setenv("MCPHUB_TEST_CLIENT_SECRET", "s3cret-value")
	const head = "servers:\n- name: r\n  url: https://mcp.example.com/mcp\n"
	const ok = "    tokenURL: https://login.example.com/token\n    clientID: hub\n    clientSecret: {env: MCPHUB_TEST_CLIENT_SECRET}\n"
	cases := []struct {
		name, yaml, want string
	}{
		{"with token", head + "  token: {env: MCPHUB_TEST_CLIENT_SECRET}\n  oauth:\n" + ok,
			"config t.yaml: servers[0] (r).oauth: set either token or oauth, not both (oauth gets the bearer token from the authorization server)"},
		{"stdio", "servers:\n- name: r\n  command: mcp-server\n  oauth:\n" + ok,
			"config t.yaml: servers[0] (r).oauth: works only with transports streamable-http, sse and websocket, not stdio"},
		{"no token url", head + "  oauth:\n    clientID: hub\n    clientSecret: {env: MCPHUB_TEST_CLIENT_SECRET}\n",
			"config t.yaml: servers[0] (r).oauth.tokenURL: is required"},
		{"bad token url", head + "  oauth:\n    tokenURL: login.example.com/token\n    clientID: hub\n    clientSecret: {env: MCPHUB_TEST_CLIENT_SECRET}\n",
			`config t.yaml: servers[0] (r).oauth.tokenURL: "login.example.com/token" is not an absolute http(s) URL`},
		{"token url with credentials", head + "  oauth:\n    tokenURL: https://u:p@login.example.com/token\n    clientID: hub\n    clientSecret: {env: MCPHUB_TEST_CLIENT_SECRET}\n",
			"config t.yaml: servers[0] (r).oauth.tokenURL: must not carry credentials; use clientID and clientSecret"},
		{"no client id", head + "  oauth:\n    tokenURL: https://login.example.com/token\n    clientSecret: {env: MCPHUB_TEST_CLIENT_SECRET}\n",
			"config t.yaml: servers[0] (r).oauth.clientID: is required"},
		{"no client secret", head + "  oauth:\n    tokenURL: https://login.example.com/token\n    clientID: hub\n",
			"config t.yaml: servers[0] (r).oauth.clientSecret: is required (env or file)"},
		{"client secret both", head + "  oauth:\n    tokenURL: https://login.example.com/token\n    clientID: hub\n    clientSecret: {env: A, file: /b}\n",
			"config t.yaml: servers[0] (r).oauth.clientSecret: set exactly one of env or file"},
		{"client secret unset", head + "  oauth:\n    tokenURL: https://login.example.com/token\n    clientID: hub\n    clientSecret: {env: MCPHUB_TEST_UNSET_VAR}\n",
			"config t.yaml: servers[0] (r).oauth.clientSecret: env: variable MCPHUB_TEST_UNSET_VAR is not set"},
		{"bad scope", head + "  oauth:\n" + ok + "    scopes: ['a b']\n",
			`config t.yaml: servers[0] (r).oauth.scopes[0]: "a b" is not a scope (no spaces, quotes or backslashes)`},
		{"bad resource", head + "  oauth:\n" + ok + "    resource: /mcp\n",
			`config t.yaml: servers[0] (r).oauth.resource: "/mcp" is not an absolute URI without a fragment (RFC 8707)`},
		{"bad auth style", head + "  oauth:\n" + ok + "    authStyle: header\n",
			`config t.yaml: servers[0] (r).oauth.authStyle: "header" is not one of basic, post`},
		{"unknown field", head + "  oauth:\n" + ok + "    clientSecretValue: x\n",
			`unknown field "clientSecretValue"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(tc.yaml))
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error\n  %s\nwant\n  %s", err, tc.want)
			}
			if strings.Contains(err.Error(), "s3cret-value") {
				t.Fatalf("error leaks the client secret: %s", err)
			}
		})
	}
}

func TestSpecEqualOAuthSecret(t *testing.T) {
	a := ServerSpec{Name: "a", URL: "http://x/mcp", OAuth: &OAuthClient{TokenURL: "http://t/token", ClientID: "hub", ClientSecretValue: "s1"}}
	b := a
	b.OAuth = &OAuthClient{TokenURL: "http://t/token", ClientID: "hub", ClientSecretValue: "s1"}
	if !a.Equal(b) {
		t.Fatal("identical specs differ")
	}
	b.OAuth.ClientSecretValue = "s2"
	if a.Equal(b) {
		t.Fatal("a rotated client secret must count as a change")
	}
	c := a
	c.OAuth = &OAuthClient{TokenURL: "http://t/token", ClientID: "other", ClientSecretValue: "s1"}
	if a.Equal(c) {
		t.Fatal("a changed client id must count as a change")
	}
}
