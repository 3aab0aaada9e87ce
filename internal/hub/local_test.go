package hub

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/credential"
	"github.com/purko-io/mcp-hub/internal/toolspec"
)

// TestAPICredential: api tool credentials go through the hub's one
// resolver, so an empty or oversized file fails start-up with the source
// named, as a server token would, instead of building a tool that fails
// every call.
func TestAPICredential(t *testing.T) {
	dir := t.TempDir()
	file := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good, empty, big := file("good", "key-123\n"), file("empty", " \n"), file("big", strings.Repeat("k", credential.MaxBytes+1))
	t.Setenv("LOCAL_TEST_KEY", "env-key")
	var asked []string
	secrets := credential.SecretReader(func(_ context.Context, ns, name string) (map[string][]byte, bool, error) {
		asked = append(asked, ns+"/"+name)
		if name != "api" {
			return nil, false, nil
		}
		return map[string][]byte{"token": []byte("secret-key\n")}, true, nil
	})
	cases := []struct {
		name    string
		ref     toolspec.CredentialRef
		secrets credential.SecretReader
		want    string
		wantErr string
	}{
		{name: "none", want: ""},
		{name: "env", ref: toolspec.CredentialRef{Env: "LOCAL_TEST_KEY"}, want: "env-key"},
		{name: "file", ref: toolspec.CredentialRef{File: good}, want: "key-123"},
		{name: "empty file", ref: toolspec.CredentialRef{File: empty}, wantErr: "file " + empty + ": is empty"},
		{name: "big file", ref: toolspec.CredentialRef{File: big}, wantErr: "file " + big + ": is larger than 64 KiB"},
		{name: "unset env", ref: toolspec.CredentialRef{Env: "LOCAL_TEST_UNSET"}, wantErr: "env: variable LOCAL_TEST_UNSET is not set"},
		{name: "secret in own namespace", ref: toolspec.CredentialRef{SecretRef: &toolspec.SecretKeyRef{Name: "api", Key: "token"}}, secrets: secrets, want: "secret-key"},
		{name: "secret key missing", ref: toolspec.CredentialRef{SecretRef: &toolspec.SecretKeyRef{Name: "api", Key: "other", Namespace: "tools"}}, secrets: secrets, wantErr: `Secret tools/api has no key "other"`},
		{name: "secret missing", ref: toolspec.CredentialRef{SecretRef: &toolspec.SecretKeyRef{Name: "gone", Key: "token"}}, secrets: secrets, wantErr: "Secret hub/gone not found"},
		{name: "secret without cluster", ref: toolspec.CredentialRef{SecretRef: &toolspec.SecretKeyRef{Name: "api", Key: "token"}}, wantErr: "secretRef api needs a cluster"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := apiCredential(context.Background(), tc.ref, tc.secrets, "hub")
			if tc.wantErr == "" {
				if err != nil || got != tc.want {
					t.Fatalf("apiCredential = %q, %v; want %q", got, err, tc.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("apiCredential error = %v, want %q", err, tc.wantErr)
			}
		})
	}
	if len(asked) == 0 || asked[0] != "hub/api" {
		t.Errorf("Secrets read %v; a secretRef without namespace must use the hub's own (hub/api first)", asked)
	}
}

// TestLocalToolsRefusesEmptyCredentialFile is the start-up view of the
// same rule: the api tool is named, and no hub starts with a tool whose
// every call would fail for want of a credential.
func TestLocalToolsRefusesEmptyCredentialFile(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	empty := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse("t.yaml", []byte("servers: []\nbuiltins: {staticAnalysis: {enabled: false}}\napiTools:\n- name: lookup\n  url: http://127.0.0.1:1/x\n  authScheme: Bearer\n  credentials: {file: "+empty+"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = localTools(context.Background(), cfg, Options{}, http.DefaultClient)
	if want := "api tool lookup: credentials: file " + empty + ": is empty"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("localTools error = %v, want %q", err, want)
	}
}
