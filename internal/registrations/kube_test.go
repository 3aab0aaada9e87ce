package registrations

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/kubeclient"
)

// TestKubeUpsertRetriesOnConflict: another writer changes the ConfigMap
// between the hub's read and its update; the hub reads again and keeps
// that writer's entry.
func TestKubeUpsertRetriesOnConflict(t *testing.T) {
	dyn := fakeDynamic(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "mcp-servers", Namespace: "ns"},
		Data: map[string]string{"servers": `[{"name":"other","url":"http://o/mcp"}]`}})
	conflicts := 0
	dyn.PrependReactor("update", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts > 0 {
			return false, nil, nil
		}
		conflicts++
		// The other writer's change lands first.
		cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "mcp-servers", "namespace": "ns"},
			"data":     map[string]any{"servers": `[{"name":"other","url":"http://o/mcp"},{"name":"late","url":"http://l/mcp"}]`}}}
		if err := dyn.Tracker().Update(kubeclient.ConfigMaps.GVR, cm, "ns"); err != nil {
			t.Fatal(err)
		}
		return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "mcp-servers", nil)
	})
	k := NewKube(dyn, "ns", "", nil)
	if err := k.Upsert(context.Background(), Entry{Name: "web", URL: "http://w/mcp"}); err != nil {
		t.Fatal(err)
	}
	cm, err := kubeclient.ConfigMaps.In(dyn, "ns").Get(context.Background(), "mcp-servers")
	if err != nil {
		t.Fatal(err)
	}
	raw := cm.Data["servers"]
	if conflicts != 1 || !strings.Contains(raw, `"late"`) || !strings.Contains(raw, `"web"`) || !strings.Contains(raw, `"other"`) || !strings.HasPrefix(raw, "[") {
		t.Fatalf("after a conflict (%d): %s", conflicts, raw)
	}
}

// TestKubeUpsertCreatesTheConfigMap and Delete of a name it does not hold.
func TestKubeUpsertCreatesTheConfigMap(t *testing.T) {
	dyn := fakeDynamic(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns", Labels: setAside}})
	k := NewKube(dyn, "ns", "", nil)
	ctx := context.Background()
	if err := k.Delete(ctx, "web"); err != ErrNotFound {
		t.Fatalf("delete before anything: %v", err)
	}
	if err := k.Upsert(ctx, Entry{Name: "web", URL: "http://w/mcp", SecretRef: "s", Auth: "bearer"}); err != nil {
		t.Fatal(err)
	}
	if has, err := k.Has(ctx, "web"); !has || err != nil {
		t.Fatalf("has web: %v %v", has, err)
	}
	if err := k.Delete(ctx, "web"); err != nil {
		t.Fatal(err)
	}
	if has, _ := k.Has(ctx, "web"); has {
		t.Fatal("web still there")
	}
}

// setAside is the label of a Secret set aside for upstreams.
var setAside = map[string]string{config.UpstreamCredentialLabel: "true"}

// fakeDynamic is a fake cluster holding objs, which serves ConfigMaps,
// Secrets and MCPServers.
func fakeDynamic(t *testing.T, objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme, map[schema.GroupVersionResource]string{mcpServerGVR: "MCPServerList"}, objs...)
}

// TestKubeSecretRefs: in Kubernetes a registration's secretRef must name a
// Secret of the namespace written to that carries the upstream-credential
// label (and is in secretNames when that is set). Anything else is
// refused before the ConfigMap or an MCPServer is written, and a missing
// Secret reads the same as an unlabelled one.
func TestKubeSecretRefs(t *testing.T) {
	secret := func(ns, name string, labels map[string]string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
			Data: map[string][]byte{"token": []byte("value-of-" + name)}}
	}
	const notSetAside = ` carries the label mcp-hub.purko.io/upstream-credential: "true" that sets a Secret aside for upstreams`
	for _, tc := range []struct {
		name        string
		ref         string
		image       bool
		secretNames []string
		want        string // prefix of the refusal; empty: written
	}{
		{name: "labelled", ref: "up"},
		{name: "labelled image", ref: "up", image: true},
		{name: "labelled and listed", ref: "up", secretNames: []string{"up", "x"}},
		{name: "the hub's tokens", ref: "hub-tokens", want: "secretRef: no Secret ns/hub-tokens" + notSetAside},
		{name: "the hub's tokens as an image", ref: "hub-tokens", image: true, want: "secretRef: no Secret ns/hub-tokens" + notSetAside},
		{name: "labelled false", ref: "off", want: "secretRef: no Secret ns/off" + notSetAside},
		{name: "missing", ref: "nope", want: "secretRef: no Secret ns/nope" + notSetAside},
		{name: "labelled in another namespace", ref: "elsewhere", want: "secretRef: no Secret ns/elsewhere" + notSetAside},
		{name: "not listed", ref: "up", secretNames: []string{"x"}, want: "secretRef: Secret ns/up is not in kubernetes.secretNames"},
		{name: "a path", ref: "other/up", want: `secretRef: "other/up" is not a Secret name`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dyn := fakeDynamic(t, secret("ns", "up", setAside), secret("ns", "hub-tokens", nil),
				secret("ns", "off", map[string]string{config.UpstreamCredentialLabel: "false"}), secret("other", "elsewhere", setAside))
			k := NewKube(dyn, "ns", "", tc.secretNames)
			e := Entry{Name: "web", URL: "http://w/mcp", Auth: "bearer", SecretRef: tc.ref}
			if tc.image {
				e = Entry{Name: "web", Image: "i", Auth: "bearer", SecretRef: tc.ref}
			}
			err := k.Upsert(context.Background(), e)
			written, herr := k.Has(context.Background(), "web")
			if herr != nil {
				t.Fatal(herr)
			}
			if tc.want == "" {
				if err != nil || !written {
					t.Fatalf("%v; written %v", err, written)
				}
				return
			}
			if !errors.Is(err, ErrRefused) || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("%v, want ErrRefused %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "value-of-") {
				t.Fatalf("a Secret's value in the error: %v", err)
			}
			if written {
				t.Fatal("refused, yet written")
			}
			if _, err := kubeclient.ConfigMaps.In(dyn, "ns").Get(context.Background(), ConfigMapName); !apierrors.IsNotFound(err) {
				t.Fatalf("the ConfigMap was created: %v", err)
			}
		})
	}
}
