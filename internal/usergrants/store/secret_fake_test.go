package store

import (
	"context"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/purko-io/mcp-hub/internal/kubeclient"
)

// The real API server's tests (secret_test.go) cover what a Secret store
// does; these cover answers a real server gives only rarely.

var secretsResource = schema.GroupResource{Resource: "secrets"}

func fakeWithSecret(t *testing.T, data map[string][]byte, typ string) *dynamicfake.FakeDynamicClient {
	t.Helper()
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&kubeclient.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "grants", Namespace: "hub", ResourceVersion: "1"},
		Type:       typ,
		Data:       data,
	})
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetAPIVersion("v1")
	u.SetKind("Secret")
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{kubeclient.Secrets.GVR: "SecretList"}, u)
}

// fakeSecretData is the data of the Secret in the fake's tracker.
func fakeSecretData(t *testing.T, dyn *dynamicfake.FakeDynamicClient) map[string][]byte {
	t.Helper()
	obj, err := dyn.Tracker().Get(kubeclient.Secrets.GVR, "hub", "grants")
	if err != nil {
		t.Fatal(err)
	}
	var sec kubeclient.Secret
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.(*unstructured.Unstructured).Object, &sec); err != nil {
		t.Fatal(err)
	}
	return sec.Data
}

func failing(err error) k8stesting.ReactionFunc {
	return func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, err }
}

func TestSecretKeepsConflicting(t *testing.T) {
	cs := fakeWithSecret(t, map[string][]byte{"a": []byte("1")}, secretTypeOpaque)
	cs.PrependReactor("update", "secrets", failing(apierrors.NewConflict(secretsResource, "grants", errors.New("the object has been modified"))))
	calls := 0
	err := Secret(cs, "hub", "grants").Update(context.Background(), func(r map[string][]byte) error {
		calls++
		r["a"] = []byte("2")
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "kept conflicting") || !strings.Contains(err.Error(), "Secret hub/grants") {
		t.Fatalf("Update = %v, want an error saying it kept conflicting", err)
	}
	if !apierrors.IsConflict(err) {
		t.Errorf("the last Conflict is not wrapped: %v", err)
	}
	if calls != maxAttempts {
		t.Errorf("change called %d times, want %d", calls, maxAttempts)
	}
}

func TestSecretFakeErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		typ     string
		verb    string // the request that fails
		err     error
		want    []string
		notLoad bool // Load succeeds
	}{
		{"request entity too large", secretTypeOpaque, "update",
			apierrors.NewRequestEntityTooLargeError("limit is 3145728"),
			[]string{"2 records", "1 MiB", "Secret hub/grants"}, true},
		{"forbidden update", secretTypeOpaque, "update",
			apierrors.NewForbidden(secretsResource, "grants", errors.New("RBAC")),
			[]string{`grant verb "update" on secrets`, "Secret hub/grants"}, true},
		{"server error on get", secretTypeOpaque, "get",
			apierrors.NewInternalError(errors.New("etcd down")),
			[]string{"get Secret hub/grants", "etcd down"}, false},
		{"another type of Secret", "kubernetes.io/tls", "",
			nil, []string{"Secret hub/grants is of type kubernetes.io/tls", "not a store of sealed records"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := fakeWithSecret(t, map[string][]byte{"a": []byte("1")}, tc.typ)
			if tc.verb != "" {
				cs.PrependReactor(tc.verb, "secrets", failing(tc.err))
			}
			s := Secret(cs, "hub", "grants")
			called := false
			err := s.Update(context.Background(), func(r map[string][]byte) error {
				called = true
				r["b"] = []byte("2")
				return nil
			})
			if err == nil {
				t.Fatal("Update succeeded")
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if tc.err != nil && !errors.Is(err, tc.err) {
				t.Errorf("the API server's error is not wrapped: %v", err)
			}
			if tc.verb != "update" && called {
				t.Error("change called although the records could not be read")
			}
			if _, err := s.Load(context.Background()); (err == nil) != tc.notLoad {
				t.Errorf("Load = %v", err)
			}
			if data := fakeSecretData(t, cs); len(data) != 1 || string(data["a"]) != "1" {
				t.Errorf("the Secret was changed: %q", data)
			}
		})
	}
}
