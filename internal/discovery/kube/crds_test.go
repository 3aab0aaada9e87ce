package kube

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/rest"

	"github.com/purko-io/mcp-hub/internal/discovery"
	"github.com/purko-io/mcp-hub/internal/kubeclient"
)

// TestCRDLater: the source starts without the MCPServer CRD, sees it
// appear and disappear through discovery, and builds its informers again
// each time; the ConfigMap's server is in every snapshot sent (none goes
// out while the informers are built again), and the MCPServer's only
// while its CRD is served. While discovery cannot be asked, nothing
// changes and the outage is reported.
func TestCRDLater(t *testing.T) {
	var served, broken atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case broken.Load():
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"ServiceUnavailable","code":503}`))
		case served.Load() && r.URL.Path == "/apis/purko.io/v1alpha1":
			_, _ = w.Write([]byte(`{"kind":"APIResourceList","groupVersion":"purko.io/v1alpha1","resources":[{"name":"mcpservers","namespaced":true,"kind":"MCPServer","verbs":["list","watch"]}]}`))
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
		}
	}))
	defer srv.Close()
	disc, err := kubeclient.NewDiscovery(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "mcp-servers", "namespace": "purko"},
		"data":     map[string]any{"servers": `[{"name":"from-cm","url":"http://cm.example:8000/mcp"}]`}}}
	ms := mcpServer("from-crd", map[string]any{"image": "x"}, map[string]string{AnnotationURL: "http://crd.example:8000/mcp"})
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		kubeclient.ConfigMaps.GVR: "ConfigMapList", kubeclient.Secrets.GVR: "SecretList", kubeclient.Events.GVR: "EventList",
		MCPServerGVR: "MCPServerList", AgentGVR: "AgentList",
	}, cm, ms)
	log := zerolog.Nop()
	s := &Source{opts: Options{Namespaces: []string{"purko"}, ConfigMapName: "mcp-servers", CRDPoll: 5 * time.Millisecond},
		discovery: disc, dyn: dyn, log: log, status: newStatusWriter(dyn, nil, log), api: &apiState{log: log}}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out := make(chan discovery.Snapshot)
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx, out) }()
	defer func() { cancel(); <-done }()

	names := func(snap discovery.Snapshot) []string {
		var n []string
		for _, sp := range snap.Servers {
			n = append(n, sp.Name)
		}
		return n
	}
	// next waits for the next snapshot; every one holds the ConfigMap's
	// server.
	next := func(want ...string) {
		t.Helper()
		select {
		case snap := <-out:
			if got := names(snap); !slices.Equal(got, want) {
				t.Fatalf("snapshot %v, want %v", got, want)
			}
		case <-ctx.Done():
			t.Fatalf("no snapshot; want %v", want)
		}
	}
	next("from-cm")
	served.Store(true)
	next("from-crd", "from-cm")

	broken.Store(true)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, ok := s.Outage(); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no outage reported while discovery answers 503")
		}
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case snap := <-out:
		t.Fatalf("a snapshot while the API server is unreachable: %v", names(snap))
	case <-time.After(50 * time.Millisecond):
	}
	served.Store(false)
	broken.Store(false)
	next("from-cm")
	if o, ok := s.Outage(); ok {
		t.Fatalf("outage %v still reported after discovery answered", o)
	}
}
