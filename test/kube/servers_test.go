package kube

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/purko-io/mcp-hub/internal/kubetest"
)

// TestServersAPIWritesPurkosObjects runs the hub as the chart's
// ServiceAccount and registers through its REST API: a URL entry is
// upserted into the mcp-servers ConfigMap (another entry, and the YAML it
// was written in, kept) and reaches the catalog; an image entry creates
// the MCPServer; DELETE removes each.
func TestServersAPIWritesPurkosObjects(t *testing.T) {
	cluster := kubetest.Shared(t)
	admin := cluster.AdminConfig()
	kc := kubernetes.NewForConfigOrDie(admin)
	dyn := dynamic.NewForConfigOrDie(admin)
	ctx := context.Background()
	ns = freshNamespace(t, kc, "servers-api")
	saName := applyChartAccess(t, admin, ns)
	cluster.WaitForCRD(t, "mcpservers.purko.io")
	otherYAML := "- name: other\n  url: http://127.0.0.1:1/mcp\n  icon: K\n  category: keep\n"
	cms := kc.CoreV1().ConfigMaps(ns)
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "mcp-servers"},
		Data: map[string]string{"servers": otherYAML}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	up := startUpstream(t, "web_tool")
	h := startHub(t, kubetest.KubeconfigFor(t, cluster.ServiceAccountConfig(ns, saName)))
	call := func(method, path, body string) (int, string) {
		t.Helper()
		return apiRequest(t, method, h.Base+path, "", body)
	}
	entries := func() []map[string]any {
		t.Helper()
		cm, err := cms.Get(ctx, "mcp-servers", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		raw := cm.Data["servers"]
		if strings.HasPrefix(strings.TrimSpace(raw), "[") {
			t.Errorf("the YAML list was rewritten as JSON:\n%s", raw)
		}
		var list []map[string]any
		if err := yaml.Unmarshal([]byte(raw), &list); err != nil {
			t.Fatal(err)
		}
		return list
	}
	otherKept := func(list []map[string]any) bool {
		for _, e := range list {
			if e["name"] == "other" {
				return e["url"] == "http://127.0.0.1:1/mcp" && e["icon"] == "K" && e["category"] == "keep" && len(e) == 4
			}
		}
		return false
	}

	if status, body := call("POST", "/api/mcp/server", `{"name":"web","url":"`+up.URL+`","auth":"none","category":"demo","icon":"W"}`); status != 200 || !strings.Contains(body, `"connected"`) {
		t.Fatalf("POST web: %d %s", status, body)
	}
	list := entries()
	if len(list) != 2 || !otherKept(list) || list[1]["name"] != "web" || list[1]["url"] != up.URL || list[1]["category"] != "demo" {
		t.Fatalf("after POST web: %v", list)
	}
	kubetest.Eventually(t, 20*time.Second, func() error {
		if status, _, _, ok := h.server("web"); !ok || status != "connected" {
			return errNotYet("web " + status)
		}
		return nil
	})
	// Listed as registered (DELETE may remove it); the other entry too, it
	// is in the same ConfigMap.
	if status, body := call("GET", "/api/mcp/servers", ""); status != 200 || !strings.Contains(body, `"kind": "ConfigMap"`) ||
		strings.Count(body, `"registered": true`) != 2 {
		t.Fatalf("GET /api/mcp/servers: %d %s", status, body)
	}
	// Upsert by name.
	if status, body := call("POST", "/api/mcp/server", `{"name":"web","url":"`+up.URL+`","icon":"X"}`); status != 200 {
		t.Fatalf("POST web again: %d %s", status, body)
	}
	if list := entries(); len(list) != 2 || !otherKept(list) || list[1]["icon"] != "X" {
		t.Fatalf("after the upsert: %v", list)
	}

	if status, body := call("POST", "/api/mcp/server", `{"name":"img","image":"ghcr.io/example/mcp:1","port":9000,"category":"demo"}`); status != 200 || !strings.Contains(body, `"created"`) {
		t.Fatalf("POST img: %d %s", status, body)
	}
	mcps := dyn.Resource(gvr).Namespace(ns)
	obj, err := mcps.Get(ctx, "img", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	image, _, _ := unstructured.NestedString(obj.Object, "spec", "image")
	port, _, _ := unstructured.NestedInt64(obj.Object, "spec", "port")
	if image != "ghcr.io/example/mcp:1" || port != 9000 {
		t.Fatalf("MCPServer img: %v", obj.Object["spec"])
	}
	if status, body := call("POST", "/api/mcp/server", `{"name":"bad","url":"ftp://x/mcp"}`); status != 400 || !strings.Contains(body, `"url: `) {
		t.Fatalf("POST bad: %d %s", status, body)
	}
	// A name is one kind: an image over a url entry, or the reverse, is 409.
	if status, body := call("POST", "/api/mcp/server", `{"name":"img","url":"`+up.URL+`"}`); status != 409 || !strings.Contains(body, "is an MCPServer") {
		t.Fatalf("POST img as a url: %d %s", status, body)
	}
	if status, body := call("POST", "/api/mcp/server", `{"name":"web","image":"ghcr.io/example/mcp:1"}`); status != 409 || !strings.Contains(body, "is a url entry") {
		t.Fatalf("POST web as an image: %d %s", status, body)
	}

	if status, body := call("DELETE", "/api/mcp/server/web", ""); status != 200 || !strings.Contains(body, `"deleted"`) {
		t.Fatalf("DELETE web: %d %s", status, body)
	}
	if list := entries(); len(list) != 1 || !otherKept(list) {
		t.Fatalf("after DELETE web: %v", list)
	}
	if status, body := call("DELETE", "/api/mcp/server/img", ""); status != 200 {
		t.Fatalf("DELETE img: %d %s", status, body)
	}
	if _, err := mcps.Get(ctx, "img", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("MCPServer img after DELETE: %v", err)
	}
	if status, body := call("DELETE", "/api/mcp/server/img", ""); status != 404 {
		t.Fatalf("DELETE img twice: %d %s", status, body)
	}
	kubetest.Eventually(t, 20*time.Second, func() error {
		if _, _, _, ok := h.server("web"); ok {
			return errNotYet("web still listed")
		}
		return nil
	})
}

// apiRequest sends one request to the hub's REST API (a JSON body when
// body is not empty, token as Bearer when not empty).
func apiRequest(t *testing.T, method, url, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

type errNotYet string

func (e errNotYet) Error() string { return string(e) }
