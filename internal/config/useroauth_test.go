package config

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func TestUserOAuthParsed(t *testing.T) {
	t.Setenv("MCPHUB_TEST_USER_SECRET", "user-client-secret")
	t.Setenv("MCPHUB_TEST_GRANTS_KEY", "a-key-line")
	c, err := Parse("t.yaml", []byte(`servers:
- name: github
  url: https://api.githubcopilot.com/mcp/
  token: {env: MCPHUB_TEST_USER_SECRET}
  userOAuth:
    authorizationURL: https://github.com/login/oauth/authorize
    tokenURL: https://github.com/login/oauth/access_token
    clientID: Iv1.abc
    clientSecret: {env: MCPHUB_TEST_USER_SECRET}
    scopes: [repo, read:org]
- name: linear
  url: https://mcp.linear.app/mcp
  userOAuth: {}
userGrants:
  key: {env: MCPHUB_TEST_GRANTS_KEY}
  publicURL: https://hub.example.com
`))
	if err != nil {
		t.Fatal(err)
	}
	gh, lin := c.Servers[0], c.Servers[1]
	if gh.AuthMode() != AuthUserOAuth || lin.AuthMode() != AuthUserOAuth {
		t.Fatalf("auth modes %q %q", gh.AuthMode(), lin.AuthMode())
	}
	if gh.UserOAuth.ClientSecretValue != "user-client-secret" || c.UserGrants.KeyValue != "a-key-line" {
		t.Fatal("secrets not resolved")
	}
	if c.UserGrants.Secret != DefaultGrantsSecret || c.UserGrants.LinkTTL.D() != DefaultLinkTTL {
		t.Fatalf("defaults: %+v", c.UserGrants)
	}
	other := gh
	u := *gh.UserOAuth
	u.ClientSecretValue = "changed"
	other.UserOAuth = &u
	if gh.Equal(other) {
		t.Error("a changed client secret is not a changed spec")
	}
	js, _ := json.Marshal(c)
	if printed := fmt.Sprintf("%v %+v %s", c.Servers, c.UserGrants, js); strings.Contains(printed, "user-client-secret") || strings.Contains(printed, "a-key-line") {
		t.Fatalf("a secret leaked into the printed config: %s", printed)
	}
}

func TestUserOAuthErrors(t *testing.T) {
	t.Setenv("MCPHUB_TEST_USER_SECRET", "s3cret-value")
	const head = "servers:\n- name: r\n  url: https://mcp.example.com/mcp\n"
	cases := []struct{ name, yaml, want string }{
		{"auth without block", head + "  auth: userOAuth\n",
			"servers[0] (r).auth: is userOAuth, but the userOAuth block is not set"},
		{"auth bearer with block", head + "  auth: bearer\n  token: {env: MCPHUB_TEST_USER_SECRET}\n  userOAuth: {}\n",
			"servers[0] (r).auth: is bearer, but userOAuth is set: set auth: userOAuth"},
		{"with token exchange", head + "  tokenExchange: {tokenURL: https://l.example.com/t, audience: r, clientID: hub, clientSecret: {env: MCPHUB_TEST_USER_SECRET}}\n  userOAuth: {}\n",
			"servers[0] (r).userOAuth: set either tokenExchange or userOAuth"},
		{"websocket", "servers:\n- name: r\n  url: wss://mcp.example.com/ws\n  userOAuth: {}\n",
			"servers[0] (r).userOAuth: works only with transport streamable-http"},
		{"half the endpoints", head + "  userOAuth: {authorizationURL: https://l.example.com/a}\n",
			"servers[0] (r).userOAuth.authorizationURL: set both authorizationURL and tokenURL, or neither"},
		{"clear-text token URL", head + "  userOAuth: {authorizationURL: https://l.example.com/a, tokenURL: http://l.example.com/t}\n",
			`servers[0] (r).userOAuth.tokenURL: "http://l.example.com/t" must be https (http only on loopback)`},
		{"secret without client", head + "  userOAuth: {clientSecret: {env: MCPHUB_TEST_USER_SECRET}}\n",
			"servers[0] (r).userOAuth.clientSecret: needs userOAuth.clientID"},
		{"bad scope", head + "  userOAuth: {scopes: ['a b']}\n",
			`servers[0] (r).userOAuth.scopes[0]: "a b" is not a scope`},
		{"relative resource", head + "  userOAuth: {resource: notes}\n",
			`servers[0] (r).userOAuth.resource: "notes" is not an absolute URI`},
		{"unknown field", head + "  userOAuth: {client: x}\n", `unknown field "client"`},
		{"inline key", head + "userGrants: {key: 'k3y-text'}\n", "userGrants.key: a token is never written into the config file"},
		{"bad public URL", head + "userGrants: {publicURL: http://hub.example.com}\n",
			`userGrants.publicURL: "http://hub.example.com" must be https (http only on loopback)`},
		{"short link", head + "userGrants: {linkTTL: 10s}\n", "userGrants.linkTTL: 10s is not within 1m and 24h"},
		{"bad secret name", head + "userGrants: {secret: Grants_1}\n", `userGrants.secret: "Grants_1" is not a Secret name`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error\n  %v\nwant\n  %s", err, tc.want)
			}
		})
	}
}
