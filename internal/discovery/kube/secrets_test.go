package kube

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// TestSecretGetter: Secrets from the informer cache follow the hub's one
// credential rule (trimmed, not empty, at most 64 KiB) with errors that
// name the Secret and key, never the value.
func TestSecretGetter(t *testing.T) {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := idx.Add(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "purko", Name: "gh"},
		Data: map[string][]byte{
			"token": []byte("ghp_value\n"),
			"blank": []byte(" \n"),
			"big":   []byte(strings.Repeat("v", 64<<10+1)),
		},
	}); err != nil {
		t.Fatal(err)
	}
	get := secretGetter(idx)
	cases := []struct {
		ns, name, key string
		want, wantErr string
	}{
		{"purko", "gh", "token", "ghp_value", ""},
		{"purko", "gh", "other", "", `Secret purko/gh has no key "other"`},
		{"purko", "gh", "blank", "", `Secret purko/gh key "blank": is empty`},
		{"purko", "gh", "big", "", `Secret purko/gh key "big": is larger than 64 KiB`},
		{"purko", "nope", "token", "", "Secret purko/nope not found"},
		{"other", "gh", "token", "", "Secret other/gh not found"},
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
		if err != nil && strings.Contains(err.Error(), "vvvv") {
			t.Errorf("error holds the value")
		}
	}
}

// TestNamedSecrets: with Options.SecretNames each Secret has a cache of its
// own; a lookup finds a Secret in whichever holds it, and one in none reads
// as not found, as a Secret outside the list must.
func TestNamedSecrets(t *testing.T) {
	var named namedSecrets
	for _, name := range []string{"a", "b"} {
		idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
		if err := idx.Add(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "purko", Name: name},
			Data: map[string][]byte{"token": []byte("tok-" + name)}}); err != nil {
			t.Fatal(err)
		}
		named = append(named, idx)
	}
	get := secretGetter(named)
	for _, name := range []string{"a", "b"} {
		if got, err := get("purko", name, "token"); err != nil || got.Reveal() != "tok-"+name {
			t.Errorf("%s: %q, %v", name, got.Reveal(), err)
		}
	}
	if _, err := get("purko", "c", "token"); err == nil || !strings.Contains(err.Error(), "Secret purko/c not found") {
		t.Errorf("an unlisted Secret: %v, want not found", err)
	}
}
