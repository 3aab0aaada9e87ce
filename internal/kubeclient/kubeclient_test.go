package kubeclient

import (
	"context"
	"encoding/base64"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// fakeCluster serves ConfigMaps, Secrets and Events holding objs.
func fakeCluster(objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		ConfigMaps.GVR: "ConfigMapList", Secrets.GVR: "SecretList", Events.GVR: "EventList",
	}, objs...)
}

// object is an object as the API server sends it.
func object(kind, ns, name string, labels map[string]any, fields map[string]any) *unstructured.Unstructured {
	meta := map[string]any{"name": name, "namespace": ns}
	if labels != nil {
		meta["labels"] = labels
	}
	o := map[string]any{"apiVersion": "v1", "kind": kind, "metadata": meta}
	maps.Copy(o, fields)
	return &unstructured.Unstructured{Object: o}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// run starts inf until the test ends and waits for its first list.
func run(ctx context.Context, t *testing.T, inf cache.SharedIndexInformer) {
	t.Helper()
	runCtx, stop := context.WithCancel(ctx)
	wait := Start(runCtx, inf)
	t.Cleanup(func() {
		stop()
		wait()
	})
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("not synced")
	}
}

// TestSecretsRead: a Secret's data arrives base64-encoded and is read as
// bytes; a label selector narrows the list; a missing Secret is NotFound.
func TestSecretsRead(t *testing.T) {
	ctx := context.Background()
	dyn := fakeCluster(
		object("Secret", "ns", "up", map[string]any{"set": "aside"}, map[string]any{"data": map[string]any{"token": b64("t0k3n")}}),
		object("Secret", "ns", "other", nil, map[string]any{"data": map[string]any{"token": b64("x")}}),
	)
	secrets := Secrets.In(dyn, "ns")
	s, err := secrets.Get(ctx, "up")
	if err != nil || string(s.Data["token"]) != "t0k3n" || s.Name != "up" || s.Labels["set"] != "aside" {
		t.Fatalf("get: %+v, %v", s, err)
	}
	list, err := secrets.List(ctx, metav1.ListOptions{LabelSelector: "set=aside"})
	if err != nil || len(list) != 1 || list[0].Name != "up" {
		t.Fatalf("list: %+v, %v", list, err)
	}
	if _, err := secrets.Get(ctx, "nope"); !apierrors.IsNotFound(err) {
		t.Fatalf("missing: %v, want NotFound", err)
	}
}

// TestConfigMapWrite: a ConfigMap created and updated keeps the fields
// the hub does not touch (binaryData written by someone else).
func TestConfigMapWrite(t *testing.T) {
	ctx := context.Background()
	dyn := fakeCluster(object("ConfigMap", "ns", "theirs", nil, map[string]any{
		"data": map[string]any{"a": "1"}, "binaryData": map[string]any{"b": b64("\x00\x01")}}))
	cms := ConfigMaps.In(dyn, "ns")
	cm, err := cms.Get(ctx, "theirs")
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["a"] = "2"
	if _, err := cms.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	u, err := dyn.Resource(ConfigMaps.GVR).Namespace("ns").Get(ctx, "theirs", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a, _, _ := unstructured.NestedString(u.Object, "data", "a"); a != "2" {
		t.Errorf("data.a = %q, want 2", a)
	}
	if b, _, _ := unstructured.NestedString(u.Object, "binaryData", "b"); b != b64("\x00\x01") {
		t.Errorf("binaryData.b = %q: lost by the update", b)
	}
	if u.GetKind() != "ConfigMap" || u.GetAPIVersion() != "v1" {
		t.Errorf("written as %s %s", u.GetAPIVersion(), u.GetKind())
	}
	created, err := cms.Create(ctx, &ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "mine"}, Data: map[string]string{"k": "v"}})
	if err != nil || created.Name != "mine" || created.Data["k"] != "v" {
		t.Fatalf("create: %+v, %v", created, err)
	}
	if _, err := cms.Create(ctx, &ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "mine"}}); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create again: %v, want AlreadyExists", err)
	}
}

// TestInformerHoldsTypedObjects: the cache of a Resource's informer holds
// its struct, for what was listed and for what the watch brings later.
func TestInformerHoldsTypedObjects(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dyn := fakeCluster(object("Secret", "ns", "first", nil, map[string]any{"data": map[string]any{"token": b64("one")}}))
	inf, err := Secrets.Informer(dyn, "ns", nil)
	if err != nil {
		t.Fatal(err)
	}
	added := make(chan string, 4)
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(o any) {
		if s, ok := o.(*Secret); ok {
			added <- s.Name + "=" + string(s.Data["token"])
		} else {
			added <- "not a *Secret"
		}
	}}); err != nil {
		t.Fatal(err)
	}
	run(ctx, t, inf)
	if _, err := dyn.Resource(Secrets.GVR).Namespace("ns").Create(ctx,
		object("Secret", "ns", "second", nil, map[string]any{"data": map[string]any{"token": b64("two")}}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) < 2 {
		select {
		case s := <-added:
			got = append(got, s)
		case <-ctx.Done():
			t.Fatalf("added so far: %v", got)
		}
	}
	if strings.Join(got, ",") != "first=one,second=two" {
		t.Fatalf("added %v", got)
	}
	o, ok, err := inf.GetIndexer().GetByKey("ns/second")
	if _, isSecret := o.(*Secret); !ok || err != nil || !isSecret {
		t.Fatalf("cache holds %T (%v, %v)", o, ok, err)
	}
}

// TestNewInformerFilters: the list options set by tweak reach the API
// server (the fake filters by label).
func TestNewInformerFilters(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dyn := fakeCluster(object("ConfigMap", "ns", "in", map[string]any{"pick": "me"}, nil), object("ConfigMap", "ns", "out", nil, nil))
	inf := NewInformer(dyn, ConfigMaps.GVR, "ns", func(o *metav1.ListOptions) { o.LabelSelector = "pick=me" })
	run(ctx, t, inf)
	if keys := inf.GetIndexer().ListKeys(); len(keys) != 1 || keys[0] != "ns/in" {
		t.Fatalf("cached %v, want ns/in", keys)
	}
}

// TestEventWriter: an Event is written on the object's namespace; a
// repeat raises its count instead of adding another; another message is
// another Event; a repeat of an Event gone (expired) writes it anew.
func TestEventWriter(t *testing.T) {
	ctx := context.Background()
	dyn := fakeCluster()
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	w := NewEventWriter(dyn, "mcp-hub")
	w.now = func() time.Time { clock = clock.Add(time.Second); return clock }
	ref := ObjectReference{APIVersion: "purko.io/v1alpha1", Kind: "MCPServer", Namespace: "ns", Name: "github", UID: "u1"}
	events := func() []Event {
		t.Helper()
		l, err := Events.In(dyn, "ns").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	write := func(msg string) {
		t.Helper()
		if err := w.Write(ctx, ref, EventTypeWarning, "ConnectFailed", msg); err != nil {
			t.Fatal(err)
		}
	}

	write("down")
	write("down")
	got := events()
	if len(got) != 1 {
		t.Fatalf("%d Events after a repeat, want 1", len(got))
	}
	e := got[0]
	if e.Count != 2 || e.Reason != "ConnectFailed" || e.Type != EventTypeWarning || e.Message != "down" || e.InvolvedObject != ref ||
		e.Source.Component != "mcp-hub" || !e.LastTimestamp.After(e.FirstTimestamp.Time) || !strings.HasPrefix(e.Name, "github.") {
		t.Fatalf("Event %+v", e)
	}

	write("still down, otherwise")
	if n := len(events()); n != 2 {
		t.Fatalf("%d Events after another message, want 2", n)
	}

	if err := dyn.Resource(Events.GVR).Namespace("ns").Delete(ctx, e.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	write("down")
	var again []Event
	for _, e := range events() {
		if e.Message == "down" {
			again = append(again, e)
		}
	}
	if len(again) != 1 || again[0].Count != 1 || again[0].Name == e.Name {
		t.Fatalf("after expiry: %+v", again)
	}

	// A cluster-scoped object's Events go to the default namespace.
	if err := w.Write(ctx, ObjectReference{APIVersion: "v1", Kind: "Node", Name: "n1"}, EventTypeNormal, "Seen", "hi"); err != nil {
		t.Fatal(err)
	}
	if l, err := Events.In(dyn, "default").List(ctx, metav1.ListOptions{}); err != nil || len(l) != 1 || l[0].Reason != "Seen" {
		t.Fatalf("default namespace: %+v, %v", l, err)
	}
}

// TestDiscoveryServes reads the API server's discovery documents.
func TestDiscoveryServes(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/apis/purko.io/v1alpha1":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"purko.io/v1alpha1",
				"resources":[{"name":"mcpservers","namespaced":true,"kind":"MCPServer","verbs":["get"]},{"name":"mcpservers/status","namespaced":true,"kind":"MCPServer","verbs":["get"]}]}`))
		case "/api/v1":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"kind":"APIResourceList","groupVersion":"v1","resources":[{"name":"configmaps","namespaced":true,"kind":"ConfigMap","verbs":["get"]}]}`))
		case "/apis/broken.io/v1":
			http.Error(w, "boom", http.StatusInternalServerError)
		default:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
		}
	}))
	defer srv.Close()
	d, err := NewDiscovery(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		gvr     schema.GroupVersionResource
		want    bool
		wantErr bool
	}{
		{gvr: schema.GroupVersionResource{Group: "purko.io", Version: "v1alpha1", Resource: "mcpservers"}, want: true},
		{gvr: schema.GroupVersionResource{Group: "purko.io", Version: "v1alpha1", Resource: "agents"}},
		{gvr: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, want: true},
		{gvr: schema.GroupVersionResource{Group: "absent.io", Version: "v1", Resource: "things"}},
		{gvr: schema.GroupVersionResource{Group: "broken.io", Version: "v1", Resource: "things"}, wantErr: true},
	} {
		t.Run(tc.gvr.String(), func(t *testing.T) {
			got, err := d.Serves(context.Background(), tc.gvr)
			if got != tc.want || (err != nil) != tc.wantErr {
				t.Fatalf("Serves = %v, %v; want %v, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}
