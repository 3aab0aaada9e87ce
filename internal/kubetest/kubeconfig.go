package kubetest

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// Kubeconfig writes a kubeconfig file for the admin user (context "kubetest",
// the current context) into t.TempDir and returns its path, e.g. for a binary's
// --kubeconfig flag.
func (c *Cluster) Kubeconfig(t testing.TB) string {
	t.Helper()
	return KubeconfigFor(t, c.AdminConfig())
}

// KubeconfigFor writes a kubeconfig file for cfg (host, CA data, bearer token
// and impersonation, as produced by AdminConfig/ImpersonatedConfig) into
// t.TempDir and returns its path.
func KubeconfigFor(t testing.TB, cfg *rest.Config) string {
	t.Helper()
	data, err := KubeconfigBytes(cfg)
	if err != nil {
		t.Fatalf("kubetest: kubeconfig: %v", err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatalf("kubetest: kubeconfig: %v", err)
	}
	return path
}

// KubeconfigBytes renders cfg as a kubeconfig (v1 Config) document.
func KubeconfigBytes(cfg *rest.Config) ([]byte, error) {
	cluster := map[string]any{"server": cfg.Host}
	if len(cfg.CAData) > 0 {
		cluster["certificate-authority-data"] = base64.StdEncoding.EncodeToString(cfg.CAData)
	}
	user := map[string]any{}
	if cfg.BearerToken != "" {
		user["token"] = cfg.BearerToken
	}
	if cfg.Impersonate.UserName != "" {
		user["as"] = cfg.Impersonate.UserName
	}
	if len(cfg.Impersonate.Groups) > 0 {
		user["as-groups"] = cfg.Impersonate.Groups
	}
	doc := map[string]any{
		"apiVersion":      "v1",
		"kind":            "Config",
		"current-context": "kubetest",
		"clusters":        []any{map[string]any{"name": "kubetest", "cluster": cluster}},
		"users":           []any{map[string]any{"name": "kubetest", "user": user}},
		"contexts": []any{map[string]any{"name": "kubetest", "context": map[string]any{
			"cluster": "kubetest", "user": "kubetest", "namespace": "default",
		}}},
	}
	return yaml.Marshal(doc)
}
