package config

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/purko-io/mcp-hub/internal/fieldpaths"
	"github.com/purko-io/mcp-hub/internal/toolspec"
)

// credentialFields is every field of the config a credential is read from
// (a TokenRef or a toolspec.CredentialRef), with a config that sets it to
// the variable CRED_VAR, and whether it holds a secret of the hub itself
// (refused in registrations.credentialRefs) or a credential the hub sends to
// one upstream (which a registered server may share). The guard
// TestEveryCredentialFieldIsListed fails when the config gains a credential
// field missing here: whoever adds it decides which it is.
var credentialFields = []struct {
	pattern, doc, path string // path: as the refusal names it
	hub                bool
}{
	{"auth.tokens[].token", "auth:\n  tokens:\n  - {name: ops, token: {env: CRED_VAR}, maxLevel: full, admin: true}\n",
		"auth.tokens[0] (ops).token", true},
	{"replicas.secret", "replicas: {secret: {env: CRED_VAR}}\n", "replicas.secret", true},
	{"userGrants.key", "userGrants: {key: {env: CRED_VAR}}\n", "userGrants.key", true},
	{"approvals.webhook.token", "approvals: {webhook: {url: 'https://chat.example.com/hook', token: {env: CRED_VAR}}}\n",
		"approvals.webhook.token", true},
	{"builtins.triggerWorkflow.token", "builtins: {triggerWorkflow: {token: {env: CRED_VAR}}}\n", "builtins.triggerWorkflow.token", true},
	{"servers[].oauth.clientSecret", "servers:\n- name: remote\n  url: https://remote.example.com/mcp\n" +
		"  oauth: {tokenURL: 'https://login.example.com/token', clientID: hub, clientSecret: {env: CRED_VAR}}\n",
		"servers[0] (remote).oauth.clientSecret", true},
	{"servers[].tokenExchange.clientSecret", "servers:\n- name: jira\n  url: https://jira.example.com/mcp\n" +
		"  tokenExchange: {tokenURL: 'https://login.example.com/token', clientID: hub, audience: jira, clientSecret: {env: CRED_VAR}}\n",
		"servers[0] (jira).tokenExchange.clientSecret", true},
	{"servers[].userOAuth.clientSecret", "servers:\n- name: github\n  url: https://github.example.com/mcp\n" +
		"  userOAuth: {clientID: Iv1.abc, clientSecret: {env: CRED_VAR}}\n",
		"servers[0] (github).userOAuth.clientSecret", true},
	{"servers[].token", "servers:\n- {name: up, url: 'https://up.example.com/mcp', token: {env: CRED_VAR}}\n", "", false},
	{"apiTools[].credentials", "apiTools:\n- {name: weather, url: 'https://api.example.com/v1/weather', method: GET, authScheme: ApiKey, credentials: {env: CRED_VAR}}\n", "", false},
	{"openapi[].base.credentials", "openapi:\n- {file: /nonexistent/openapi.json, base: {credentials: {env: CRED_VAR}}}\n", "", false},
}

// TestEveryCredentialFieldIsListed: credentialFields names exactly the
// places of Config a TokenRef or a toolspec.CredentialRef can be, found by
// reflection over its types; and upstreamCredentials names only such
// places, so a renamed field cannot leave it stale (a stale entry would
// turn nothing into a hub secret, but would read as if it did).
func TestEveryCredentialFieldIsListed(t *testing.T) {
	root := reflect.TypeFor[Config]()
	found := append(fieldpaths.Patterns[TokenRef](root), fieldpaths.Patterns[toolspec.CredentialRef](root)...)
	var listed, upstream []string
	for _, f := range credentialFields {
		listed = append(listed, f.pattern)
		if !f.hub {
			upstream = append(upstream, f.pattern)
		}
	}
	slices.Sort(found)
	slices.Sort(listed)
	if !slices.Equal(found, listed) {
		t.Errorf("the config's credential fields are\n  %v\ncredentialFields lists\n  %v\nadd the new field to credentialFields (and, only if it is sent to one upstream, to upstreamCredentials)", found, listed)
	}
	slices.Sort(upstream)
	if want := slices.Sorted(slices.Values(upstreamCredentials)); !slices.Equal(upstream, want) {
		t.Errorf("upstreamCredentials = %v, credentialFields says %v", want, upstream)
	}
	if len(found) < 11 {
		t.Fatalf("found %d credential fields: the walk lost some", len(found))
	}
}

// TestNoHubSecretInCredentialRefs tries every credential field of the
// config in registrations.credentialRefs: a hub secret's variable is
// refused at load, in any case and wherever it is listed, with an error
// naming both fields and the file; an upstream's credential is accepted,
// unless a hub secret is read from the same variable.
func TestNoHubSecretInCredentialRefs(t *testing.T) {
	t.Setenv("CRED_VAR", "cred-value-0123456789")
	t.Setenv("UP_TOKEN", "up-value-0123456789")
	for _, f := range credentialFields {
		for _, refs := range []string{"[CRED_VAR]", "[UP_TOKEN, cred_var]"} {
			t.Run(f.pattern+" "+refs, func(t *testing.T) {
				c, err := Parse("hub.yaml", []byte(f.doc+"registrations: {credentialRefs: "+refs+"}\n"))
				if !f.hub {
					if err != nil {
						t.Fatalf("an upstream's credential refused: %v", err)
					}
					if !c.Registrations.Allows("CRED_VAR") && !c.Registrations.Allows("cred_var") {
						t.Fatal("CRED_VAR not allowed")
					}
					return
				}
				i, name := "0", "CRED_VAR"
				if strings.HasPrefix(refs, "[UP_TOKEN") {
					i, name = "1", "cred_var"
				}
				want := "config hub.yaml: registrations.credentialRefs[" + i + "]: env " + name + " holds " + f.path + ", a secret of the hub itself"
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("error %v, want %q", err, want)
				}
				if strings.Contains(err.Error(), "cred-value") {
					t.Fatalf("the error holds the value: %v", err)
				}
			})
		}
	}

	// A variable both an upstream's token and a hub secret is the hub's.
	_, err := Parse("hub.yaml", []byte(credentialFields[0].doc+credentialFields[8].doc+"registrations: {credentialRefs: [CRED_VAR]}\n"))
	if want := "env CRED_VAR holds auth.tokens[0] (ops).token"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want %q", err, want)
	}
}

// TestHubEnvInCredentialRefs: the variables the hub reads secrets from
// without the config naming them are refused too; a variable that only
// looks like one is not.
func TestHubEnvInCredentialRefs(t *testing.T) {
	const otel = "the OpenTelemetry exporter's settings (its headers and endpoint carry the collector's credentials)"
	for name, holds := range map[string]string{
		"OTEL_EXPORTER_OTLP_HEADERS":         otel,
		"OTEL_EXPORTER_OTLP_TRACES_HEADERS":  otel,
		"otel_exporter_otlp_traces_endpoint": otel,
		"MCP_SERVERS":                        "the MCP_SERVERS source's servers with their tokens",
		"MCP_HUB_TOKEN":                      "the mcp-hub CLI's caller token",
		"UP_TOKEN":                           "",
		"MCP_SERVERS_TOKEN":                  "",
		"OTEL_SERVICE_NAME_TOKEN":            "",
	} {
		_, err := Parse("hub.yaml", []byte("servers: []\nregistrations: {credentialRefs: [UP, "+name+"]}\n"))
		want := "config hub.yaml: registrations.credentialRefs[1]: env " + name + " holds " + holds + ", a secret of the hub itself"
		switch {
		case holds == "" && err != nil:
			t.Errorf("%s refused: %v", name, err)
		case holds != "" && (err == nil || !strings.HasPrefix(err.Error(), want)):
			t.Errorf("%s: error %v, want %q", name, err, want)
		}
	}
}
