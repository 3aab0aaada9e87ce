package config

import (
	"strings"
	"testing"
)

// TestRegistryAPISettings: the namespace must fit server.json's name
// pattern, the base URL must be one a client can dial, and the base of the
// published remotes falls back to the OAuth resource's.
func TestRegistryAPISettings(t *testing.T) {
	const oauth = "auth: {oauth: {resource: %q, issuers: [{issuer: https://idp.example.com}]}}\n"
	for _, tc := range []struct {
		name, yaml string
		wantErr    string
		namespace  string
		base       string
	}{
		{name: "defaults", yaml: "servers: []\n", namespace: "local.mcp-hub"},
		{name: "namespace", yaml: "registryAPI: {namespace: com.Example.team-a}\n", namespace: "com.Example.team-a"},
		{name: "slash in namespace", yaml: "registryAPI: {namespace: a/b}\n", wantErr: "registryAPI.namespace"},
		{name: "underscore in namespace", yaml: "registryAPI: {namespace: a_b}\n", wantErr: "registryAPI.namespace"},
		{name: "long namespace", yaml: "registryAPI: {namespace: " + strings.Repeat("a", 121) + "}\n", wantErr: "registryAPI.namespace"},
		{name: "base URL", yaml: "registryAPI: {baseURL: https://hub.example.com/tools/}\n", namespace: "local.mcp-hub", base: "https://hub.example.com/tools"},
		{name: "base URL with a query", yaml: "registryAPI: {baseURL: 'https://hub.example.com/?a=b'}\n", wantErr: "registryAPI.baseURL"},
		{name: "base URL with user info", yaml: "registryAPI: {baseURL: 'https://u:p@hub.example.com'}\n", wantErr: "registryAPI.baseURL"},
		{name: "base URL not http", yaml: "registryAPI: {baseURL: 'ftp://hub.example.com'}\n", wantErr: "registryAPI.baseURL"},
		{name: "base URL relative", yaml: "registryAPI: {baseURL: /hub}\n", wantErr: "registryAPI.baseURL"},
		{name: "OAuth resource", yaml: strings.ReplaceAll(oauth, "%q", "https://hub.example.com/mcp"), namespace: "local.mcp-hub", base: "https://hub.example.com"},
		{name: "OAuth resource with a prefix", yaml: strings.ReplaceAll(oauth, "%q", "https://example.com/hub/mcp/"), namespace: "local.mcp-hub", base: "https://example.com/hub"},
		{name: "base URL over OAuth", yaml: strings.ReplaceAll(oauth, "%q", "https://hub.example.com/mcp") + "registryAPI: {baseURL: 'https://other.example.com'}\n",
			namespace: "local.mcp-hub", base: "https://other.example.com"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse("hub.yaml", []byte(tc.yaml))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.RegistryAPI.Namespace != tc.namespace || c.RegistryBaseURL() != tc.base {
				t.Errorf("namespace %q, base %q; want %q, %q", c.RegistryAPI.Namespace, c.RegistryBaseURL(), tc.namespace, tc.base)
			}
		})
	}
}
