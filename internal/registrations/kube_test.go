package registrations

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestKubeUpsertRetriesOnConflict: another writer changes the ConfigMap
// between the hub's read and its update; the hub reads again and keeps
// that writer's entry.
func TestKubeUpsertRetriesOnConflict(t *testing.T) {
	cs := fake.NewSimpleClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "mcp-servers", Namespace: "ns"},
		Data: map[string]string{"servers": `[{"name":"other","url":"http://o/mcp"}]`}})
	conflicts := 0
	cs.PrependReactor("update", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts > 0 {
			return false, nil, nil
		}
		conflicts++
		// The other writer's change lands first.
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "mcp-servers", Namespace: "ns"},
			Data: map[string]string{"servers": `[{"name":"other","url":"http://o/mcp"},{"name":"late","url":"http://l/mcp"}]`}}
		if err := cs.Tracker().Update(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, cm, "ns"); err != nil {
			t.Fatal(err)
		}
		return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "mcp-servers", nil)
	})
	k := NewKube(cs, dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()), "ns", "")
	if err := k.Upsert(context.Background(), Entry{Name: "web", URL: "http://w/mcp"}); err != nil {
		t.Fatal(err)
	}
	cm, err := cs.CoreV1().ConfigMaps("ns").Get(context.Background(), "mcp-servers", metav1.GetOptions{})
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
	cs := fake.NewSimpleClientset()
	gvr := mcpServerGVR
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "MCPServerList"})
	k := NewKube(cs, dyn, "ns", "")
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
