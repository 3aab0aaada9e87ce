package config

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func TestTokenExchangeParsed(t *testing.T) {
	t.Setenv("MCPHUB_TEST_CLIENT_SECRET", "exchange-client-secret")
	c, err := Parse("t.yaml", []byte(`
servers:
- name: github
  url: https://github-mcp.example.com/mcp
  auth: tokenExchange
  tokenExchange:
    issuer: https://login.example.com
    clientID: mcp-hub
    clientSecret: {env: MCPHUB_TEST_CLIENT_SECRET}
    audience: github-mcp
    scopes: [repo:read]
    subjectToken: any
- name: jira
  url: https://jira-mcp.example.com/mcp
  tokenExchange:
    tokenURL: http://127.0.0.1:9000/token
    clientID: hub
    clientSecret: {env: MCPHUB_TEST_CLIENT_SECRET}
    resource: https://jira-mcp.example.com/mcp
- name: plain
  url: https://plain.example.com/mcp
`))
	if err != nil {
		t.Fatal(err)
	}
	x := c.Servers[0].TokenExchange
	if x == nil || x.Issuer != "https://login.example.com" || x.ClientID != "mcp-hub" || x.Audience != "github-mcp" ||
		strings.Join(x.Scopes, " ") != "repo:read" || x.Subjects() != SubjectAny {
		t.Fatalf("tokenExchange = %+v", x)
	}
	if got := x.ClientSecretValue.Reveal(); got != "exchange-client-secret" {
		t.Errorf("client secret = %q", got)
	}
	if got := c.Servers[1].TokenExchange.Subjects(); got != SubjectOAuth {
		t.Errorf("default subjectToken = %q, want oauth", got)
	}
	for i, want := range []string{AuthTokenExchange, AuthTokenExchange, AuthNone} {
		if got := c.Servers[i].AuthMode(); got != want {
			t.Errorf("servers[%d].AuthMode() = %q, want %q", i, got, want)
		}
	}
	// The hub's own requests use the exchange's client.
	if cc := c.Servers[0].ClientCredentials(); cc == nil || cc.ClientID != "mcp-hub" {
		t.Errorf("ClientCredentials() = %+v, want the exchange's client", cc)
	}
	js, _ := json.Marshal(c)
	if printed := fmt.Sprintf("%v %+v %s", c.Servers, *x, js); strings.Contains(printed, "exchange-client-secret") {
		t.Fatalf("client secret leaked into the printed config: %s", printed)
	}
}

func TestTokenExchangeErrors(t *testing.T) {
	t.Setenv("MCPHUB_TEST_CLIENT_SECRET", "s3cret-value")
	const head = "servers:\n- name: r\n  url: https://mcp.example.com/mcp\n"
	const client = "    clientID: hub\n    clientSecret: {env: MCPHUB_TEST_CLIENT_SECRET}\n"
	const ok = "    tokenURL: https://login.example.com/token\n    audience: r\n" + client
	cases := []struct {
		name, yaml, want string
	}{
		{"auth without block", head + "  auth: tokenExchange\n",
			"servers[0] (r).auth: is tokenExchange, but the tokenExchange block is not set"},
		{"unknown auth", head + "  auth: mtls\n",
			`servers[0] (r).auth: "mtls" is not one of none, bearer, oauth, tokenExchange, userOAuth`},
		{"auth none with block", head + "  auth: none\n  tokenExchange:\n" + ok,
			"servers[0] (r).auth: is none, but the server names a credential"},
		{"auth bearer without token", head + "  auth: bearer\n",
			"servers[0] (r).auth: is bearer, but token is not set"},
		{"with token", head + "  token: {env: MCPHUB_TEST_CLIENT_SECRET}\n  tokenExchange:\n" + ok,
			"servers[0] (r).tokenExchange: set one of token, oauth and tokenExchange"},
		{"sse", "servers:\n- name: r\n  url: https://mcp.example.com/sse\n  transport: sse\n  tokenExchange:\n" + ok,
			"servers[0] (r).tokenExchange: works only with transport streamable-http (each call is an HTTP request of its own that carries its caller's token), not sse"},
		{"no endpoint", head + "  tokenExchange:\n    audience: r\n" + client,
			"servers[0] (r).tokenExchange.tokenURL: is required (or tokenExchange.issuer, to discover it)"},
		{"clear-text endpoint", head + "  tokenExchange:\n    tokenURL: http://login.example.com/token\n    audience: r\n" + client,
			"servers[0] (r).tokenExchange.tokenURL: \"http://login.example.com/token\" must be https (http only on loopback)"},
		{"clear-text issuer", head + "  tokenExchange:\n    issuer: http://login.example.com\n    audience: r\n" + client,
			"servers[0] (r).tokenExchange.issuer: \"http://login.example.com\" must be https (http only on loopback)"},
		{"no audience", head + "  tokenExchange:\n    tokenURL: https://login.example.com/token\n" + client,
			"servers[0] (r).tokenExchange.audience: is required (or tokenExchange.resource)"},
		{"no client id", head + "  tokenExchange:\n    tokenURL: https://login.example.com/token\n    audience: r\n",
			"servers[0] (r).tokenExchange.clientID: is required"},
		{"no client secret", head + "  tokenExchange:\n    tokenURL: https://login.example.com/token\n    audience: r\n    clientID: hub\n",
			"servers[0] (r).tokenExchange.clientSecret: is required (env or file)"},
		{"bad subject token", head + "  tokenExchange:\n" + ok + "    subjectToken: idToken\n",
			`servers[0] (r).tokenExchange.subjectToken: "idToken" is not one of oauth, serviceAccount, any`},
		{"bad scope", head + "  tokenExchange:\n" + ok + "    scopes: ['a b']\n",
			`servers[0] (r).tokenExchange.scopes[0]: "a b" is not a scope`},
		{"inline secret", head + "  tokenExchange:\n" + ok + "    clientSecretValue: x\n",
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
