package kube

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/kubeclient"
)

// setAside is the label of a Secret set aside for upstreams.
var setAside = map[string]string{config.UpstreamCredentialLabel: "true"}

// TestSecretGetter: only a Secret labelled as an upstream credential is
// read (an unlabelled one, or one labelled otherwise, reads as missing,
// whatever it holds), and what is read follows the hub's one credential
// rule (trimmed, not empty, at most 64 KiB) with errors that name the
// Secret and key, never the value.
func TestSecretGetter(t *testing.T) {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, s := range []*kubeclient.Secret{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "purko", Name: "gh", Labels: setAside},
			Data: map[string][]byte{
				"token": []byte("ghp_value\n"),
				"blank": []byte(" \n"),
				"big":   []byte(strings.Repeat("v", 64<<10+1)),
			}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "purko", Name: "hub-tokens"},
			Data: map[string][]byte{"token": []byte("admin-value")}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "purko", Name: "not-true", Labels: map[string]string{config.UpstreamCredentialLabel: "yes"}},
			Data: map[string][]byte{"token": []byte("admin-value")}},
	} {
		if err := idx.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := idx.Add(&kubeclient.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "purko", Name: "cm", Labels: setAside}}); err != nil {
		t.Fatal(err)
	}
	const unlabelled = `not found with the label mcp-hub.purko.io/upstream-credential: "true"`
	get := secretGetter(idx, nil)
	cases := []struct {
		ns, name, key string
		want, wantErr string
	}{
		{"purko", "gh", "token", "ghp_value", ""},
		{"purko", "gh", "other", "", `Secret purko/gh has no key "other"`},
		{"purko", "gh", "blank", "", `Secret purko/gh key "blank": is empty`},
		{"purko", "gh", "big", "", `Secret purko/gh key "big": is larger than 64 KiB`},
		{"purko", "hub-tokens", "token", "", "Secret purko/hub-tokens " + unlabelled},
		{"purko", "not-true", "token", "", "Secret purko/not-true " + unlabelled},
		{"purko", "cm", "token", "", "Secret purko/cm " + unlabelled},
		{"purko", "nope", "token", "", "Secret purko/nope " + unlabelled},
		{"other", "gh", "token", "", "Secret other/gh " + unlabelled},
	}
	for _, tc := range cases {
		got, err := get(tc.ns, tc.name, tc.key)
		if tc.wantErr == "" {
			if err != nil || got.Reveal() != tc.want {
				t.Errorf("%s/%s[%s] = %q, %v; want the value", tc.ns, tc.name, tc.key, got.Reveal(), err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%s/%s[%s] error = %v, want %q", tc.ns, tc.name, tc.key, err, tc.wantErr)
		}
		if got != "" || err != nil && (strings.Contains(err.Error(), "vvvv") || strings.Contains(err.Error(), "admin-value")) {
			t.Errorf("%s/%s[%s]: a value read or in the error: %q, %v", tc.ns, tc.name, tc.key, got.Reveal(), err)
		}
	}
}

// TestNamedSecrets: with Options.SecretNames each Secret has a cache of its
// own; a lookup finds a Secret in whichever holds it, and one outside the
// list is refused as such, even if a cache held it.
func TestNamedSecrets(t *testing.T) {
	var named namedSecrets
	for _, name := range []string{"a", "b", "c"} {
		idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
		if err := idx.Add(&kubeclient.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "purko", Name: name, Labels: setAside},
			Data: map[string][]byte{"token": []byte("tok-" + name)}}); err != nil {
			t.Fatal(err)
		}
		named = append(named, idx)
	}
	get := secretGetter(named, []string{"a", "b"})
	for _, name := range []string{"a", "b"} {
		if got, err := get("purko", name, "token"); err != nil || got.Reveal() != "tok-"+name {
			t.Errorf("%s: %q, %v", name, got.Reveal(), err)
		}
	}
	if got, err := get("purko", "c", "token"); got != "" || err == nil || !strings.Contains(err.Error(), "Secret purko/c is not in kubernetes.secretNames") {
		t.Errorf("an unlisted Secret: %q, %v, want refused as not listed", got.Reveal(), err)
	}
}

// TestEveryReferenceNeedsTheLabel: whatever names an unlabelled Secret
// (an MCPServer's bearer token or OAuth client secret, an entry of the
// mcp-servers ConfigMap, an Agent's api tool) gets no value from it, and
// the server or tool carries a problem naming the field, so it is listed
// as error and not dialled; the same Secret labelled is read.
func TestEveryReferenceNeedsTheLabel(t *testing.T) {
	oauth := map[string]string{AnnotationOAuthTokenURL: "https://login.example.com/token", AnnotationOAuthClientID: "hub"}
	for _, labelled := range []bool{false, true} {
		idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
		sec := &kubeclient.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "purko", Name: "hub-tokens"},
			Data: map[string][]byte{"token": []byte("admin-value"), "client-secret": []byte("admin-value")}}
		if labelled {
			sec.Labels = setAside
		}
		if err := idx.Add(sec); err != nil {
			t.Fatal(err)
		}
		get := secretGetter(idx, nil)
		bearer, err := fromMCPServer(mcpServer("bearer", map[string]any{"auth": "bearer", "secretRef": "hub-tokens"}, nil), get)
		if err != nil {
			t.Fatal(err)
		}
		withOAuth, err := fromMCPServer(mcpServer("oauth", map[string]any{"secretRef": "hub-tokens"}, oauth), get)
		if err != nil {
			t.Fatal(err)
		}
		cm := &kubeclient.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "mcp-servers", Namespace: "purko"},
			Data: map[string]string{"servers": `[{"name":"entry","url":"http://127.0.0.1:1/mcp","auth":"bearer","secretRef":"hub-tokens"}]`}}
		entries, errs := fromConfigMap(cm, get)
		if len(entries) != 1 || len(errs) != 0 {
			t.Fatalf("ConfigMap: %v %v", entries, errs)
		}
		agent := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "a", "namespace": "purko"},
			"spec": map[string]any{"tools": []any{map[string]any{"name": "lookup", "type": "api", "url": "https://api.example.com/x",
				"method": "GET", "authScheme": "Bearer", "credentialsSecretRef": "hub-tokens"}}}}}
		tools, errs := fromAgent(agent, get)
		if len(tools) != 1 || len(errs) != 0 {
			t.Fatalf("Agent: %v %v", tools, errs)
		}
		const why = `Secret purko/hub-tokens not found with the label mcp-hub.purko.io/upstream-credential: "true"`
		for _, tc := range []struct {
			what, problem string
			value         config.Secret
			field         string
		}{
			{"MCPServer bearer", bearer.Problem, bearer.BearerToken, "secretRef: "},
			{"MCPServer OAuth", withOAuth.Problem, withOAuth.OAuth.ClientSecretValue, "OAuth client secret from secretRef: "},
			{"ConfigMap entry", entries[0].Problem, entries[0].BearerToken, "secretRef: "},
			{"Agent api tool", tools[0].Problem, tools[0].Credential, "credentialsSecretRef: "},
		} {
			switch {
			case labelled && (tc.problem != "" || tc.value.Reveal() != "admin-value"):
				t.Errorf("%s, labelled: problem %q, value read %v", tc.what, tc.problem, tc.value != "")
			case !labelled && (tc.value != "" || !strings.HasPrefix(tc.problem, tc.field+why)):
				t.Errorf("%s, unlabelled: problem %q, value read %v; want %q", tc.what, tc.problem, tc.value != "", tc.field+why)
			}
		}
	}
}
