// Package kube tests the hub against a real kube-apiserver + etcd: the
// Helm chart's CRD and RBAC are applied, the hub binary runs as the chart's
// ServiceAccount (impersonated), and MCPServers, the mcp-servers ConfigMap
// and Secrets are created, changed and deleted while it runs.
package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/purko-io/mcp-hub/internal/hubtest"
	"github.com/purko-io/mcp-hub/internal/kubetest"
)

// ns is the namespace of TestKubernetesDiscovery's objects; each run gets
// a fresh one (a namespace cannot be deleted without a controller-manager).
var ns = "purko"

var (
	repoRoot string
	hubBin   string
	gvr      = schema.GroupVersionResource{Group: "purko.io", Version: "v1alpha1", Resource: "mcpservers"}
)

// poll is how often the tests look again for a change to show up.
const poll = 10 * time.Millisecond

func TestMain(m *testing.M) {
	var err error
	if repoRoot, err = hubtest.RepoRoot(); err == nil {
		hubBin, err = hubtest.Build(context.Background())
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "kube: %v\n", err)
		os.Exit(1)
	}
	kubetest.Main(m)
}

// startUpstream is an MCP server on loopback with one tool named after it,
// which answers "from <tool>".
func startUpstream(t *testing.T, tool string) *hubtest.Upstream {
	t.Helper()
	return hubtest.StartUpstream(t, tool, mcpserver.ServerTool{Tool: mcp.NewTool(tool),
		Handler: func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("from " + tool), nil
		}})
}

// applyChartAccess applies the chart's CRD, ServiceAccount and RBAC
// rendered into namespace (with extra helm args) and returns the
// ServiceAccount's name: the hub then runs with exactly these permissions.
func applyChartAccess(t *testing.T, admin *rest.Config, namespace string, helmArgs ...string) string {
	t.Helper()
	var saName string
	var apply []byte
	for _, o := range renderChartIn(t, namespace, helmArgs...) {
		switch o.GetKind() {
		case "CustomResourceDefinition", "ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding":
			b, err := json.Marshal(o.Object)
			if err != nil {
				t.Fatal(err)
			}
			apply = append(append(apply, b...), []byte("\n---\n")...)
			if o.GetKind() == "ServiceAccount" {
				saName = o.GetName()
			}
		}
	}
	if saName == "" {
		t.Fatal("the chart renders no ServiceAccount")
	}
	kubetest.ApplyYAML(t, admin, apply)
	return saName
}

// renderChartIn renders the Helm chart into namespace with extra helm args.
func renderChartIn(t *testing.T, namespace string, args ...string) []*unstructured.Unstructured {
	t.Helper()
	helmPath, err := exec.Command(filepath.Join(repoRoot, "hack", "helm.sh")).Output()
	if err != nil {
		t.Fatalf("hack/helm.sh: %v (run `make test-deps`)", err)
	}
	out, err := exec.Command(strings.TrimSpace(string(helmPath)), append([]string{"template", "hub", filepath.Join(repoRoot, "charts", "mcp-hub"),
		"--namespace", namespace, "--include-crds"}, args...)...).Output()
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	objs, err := kubetest.DecodeYAML(out)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// hubProc is a hub run against the cluster.
type hubProc struct{ *hubtest.Hub }

// startHub starts the hub binary against the cluster and waits until it is
// ready.
func startHub(t *testing.T, kubeconfig string, args ...string) hubProc {
	t.Helper()
	return runHub(t, hubtest.Ready, kubeconfig, args...)
}

// launchHub starts the hub binary against the cluster without waiting.
func launchHub(t *testing.T, kubeconfig string, args ...string) hubProc {
	t.Helper()
	return runHub(t, hubtest.Listening, kubeconfig, args...)
}

func runHub(t *testing.T, wait hubtest.Readiness, kubeconfig string, args ...string) hubProc {
	t.Helper()
	cfg := ""
	if !slices.Contains(args, "--config") {
		cfg = electionConfig(ns, "")
	}
	return hubProc{hubtest.StartHub(t, hubtest.HubOptions{Bin: hubBin, LogLevel: "info", Wait: wait, Timeout: 30 * time.Second,
		Config: cfg, Args: append([]string{"--kubeconfig", kubeconfig, "--namespaces", ns}, args...)})}
}

// chartLease is the Lease the chart's RBAC grants, rendered as release
// "hub" (renderChartIn).
const chartLease = "hub-mcp-hub"

// electionConfig is a hub config whose status writer stands for the
// chart's Lease in namespace, where applyChartAccess granted it (the
// hub's own namespace, the kubeconfig context's, is "default" here), with
// extra leaderElection fields (YAML flow members, "" for none).
func electionConfig(namespace, extra string) string {
	return fmt.Sprintf("kubernetes:\n  leaderElection: {leaseName: %s, namespace: %s%s}\n", chartLease, namespace, extra)
}

// freshNamespace creates base, or base-2, base-3, ... when a namespace of an
// earlier run (go test -count=N shares the cluster) has the name.
func freshNamespace(t *testing.T, kc kubernetes.Interface, base string) string {
	t.Helper()
	for i := 1; ; i++ {
		name := base
		if i > 1 {
			name = fmt.Sprintf("%s-%d", base, i)
		}
		_, err := kc.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if err == nil {
			return name
		}
		if !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
}

func (h hubProc) server(name string) (status, errMsg string, tools []string, ok bool) {
	l, err := h.Listing("?format=names")
	if err != nil {
		return "", "", nil, false
	}
	s, ok := l.Server(name)
	if !ok {
		return "", "", nil, false
	}
	tools, _ = s.ToolNames()
	return s.Status, s.Error, tools, true
}

func dialHub(t *testing.T, base string) (*client.Client, <-chan struct{}) {
	t.Helper()
	return dialHubWith(t, base, "")
}

// dialHubWith opens a session, with a bearer token when token is set.
func dialHubWith(t *testing.T, base, token string) (*client.Client, <-chan struct{}) {
	t.Helper()
	headers := map[string]string{}
	if token != "" {
		headers["Authorization"] = "Bearer " + token
	}
	return dialHubHeaders(t, base, headers)
}

// dialHubHeaders opens a session whose every request carries headers.
func dialHubHeaders(t *testing.T, base string, headers map[string]string) (*client.Client, <-chan struct{}) {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(base+"/mcp", transport.WithContinuousListening(), transport.WithHTTPHeaders(headers))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, client.WithProtocolVersion("2025-11-25"))
	changed := make(chan struct{}, 64)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationToolsListChanged) {
			select {
			case changed <- struct{}{}:
			default:
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, changed
}

func callText(c *client.Client, tool string, args ...map[string]any) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	if len(args) > 0 {
		req.Params.Arguments = args[0]
	}
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return "", err
	}
	if len(res.Content) == 0 {
		return "", fmt.Errorf("empty result")
	}
	tc, _ := res.Content[0].(mcp.TextContent)
	if res.IsError {
		return "", fmt.Errorf("error result: %s", tc.Text)
	}
	return tc.Text, nil
}

func toolNamesOf(t *testing.T, c *client.Client) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

func listed(c *client.Client, tool string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return false
	}
	for _, t := range res.Tools {
		if t.Name == tool {
			return true
		}
	}
	return false
}

func mcpServerObj(name, url string, spec map[string]any) *unstructured.Unstructured {
	if spec == nil {
		spec = map[string]any{}
	}
	spec["image"] = "example/mcp:1"
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "purko.io/v1alpha1", "kind": "MCPServer",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     spec,
	}}
	if url != "" {
		u.SetAnnotations(map[string]string{"mcp-hub.purko.io/url": url})
	}
	return u
}

func percentile(d []time.Duration, p int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

func TestKubernetesDiscovery(t *testing.T) {
	cluster := kubetest.Shared(t)
	admin := cluster.AdminConfig()
	kc := kubernetes.NewForConfigOrDie(admin)
	dyn := dynamic.NewForConfigOrDie(admin)
	ctx := context.Background()

	ns = freshNamespace(t, kc, "purko")
	// The chart's CRD, ServiceAccount and RBAC; nothing else is granted.
	saName := applyChartAccess(t, admin, ns)
	cluster.WaitForCRD(t, "mcpservers.purko.io")

	a, b := startUpstream(t, "alpha_tool"), startUpstream(t, "beta_tool")
	sec := startUpstream(t, "secure_tool")
	hub := startHub(t, kubetest.KubeconfigFor(t, cluster.ServiceAccountConfig(ns, saName)))
	c, changed := dialHub(t, hub.Base)
	mcps := dyn.Resource(gvr).Namespace(ns)

	create := func(u *unstructured.Unstructured) {
		t.Helper()
		if err := kubetest.Retry(ctx, 10*time.Second, func() error {
			_, err := mcps.Create(ctx, u, metav1.CreateOptions{})
			return err
		}); err != nil {
			t.Fatalf("create MCPServer %s: %v", u.GetName(), err)
		}
	}

	t.Run("created MCPServer becomes callable and gets status", func(t *testing.T) {
		create(mcpServerObj("alpha", a.URL, nil))
		hubtest.Eventually(t, 10*time.Second, poll, "alpha_tool callable", func() error {
			_, err := callText(c, "alpha_tool")
			return err
		})
		hubtest.Eventually(t, 10*time.Second, poll, "status written", func() error {
			u, err := mcps.Get(ctx, "alpha", metav1.GetOptions{})
			if err != nil {
				return err
			}
			n, _, _ := unstructured.NestedInt64(u.Object, "status", "toolCount")
			last, _, _ := unstructured.NestedString(u.Object, "status", "lastDiscovery")
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			if n != 1 || last == "" || len(conds) != 1 {
				return fmt.Errorf("status = %v", u.Object["status"])
			}
			cond := conds[0].(map[string]any)
			if cond["type"] != "HubConnected" || cond["status"] != "True" || cond["reason"] != "Connected" {
				return fmt.Errorf("condition = %v", cond)
			}
			return nil
		})
	})

	t.Run("changed annotation reconnects", func(t *testing.T) {
		hubtest.Eventually(t, 10*time.Second, poll, "update", func() error {
			u, err := mcps.Get(ctx, "alpha", metav1.GetOptions{})
			if err != nil {
				return err
			}
			u.SetAnnotations(map[string]string{"mcp-hub.purko.io/url": b.URL})
			_, err = mcps.Update(ctx, u, metav1.UpdateOptions{})
			return err
		})
		hubtest.Eventually(t, 10*time.Second, poll, "beta_tool callable through alpha", func() error {
			got, err := callText(c, "beta_tool")
			if err == nil && got != "from beta_tool" {
				err = fmt.Errorf("got %q", got)
			}
			return err
		})
		hubtest.Eventually(t, 10*time.Second, poll, "alpha_tool gone", func() error {
			if listed(c, "alpha_tool") {
				return fmt.Errorf("still listed")
			}
			return nil
		})
	})

	t.Run("Secret token, rotation and a missing Secret", func(t *testing.T) {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "secure-token", Namespace: ns, Labels: upstreamCredential},
			Data: map[string][]byte{"token": []byte("first-token")}}
		if _, err := kc.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		create(mcpServerObj("secure", sec.URL, map[string]any{"auth": "bearer", "secretRef": "secure-token"}))
		hubtest.Eventually(t, 10*time.Second, poll, "secure_tool with the first token", func() error {
			if _, err := callText(c, "secure_tool"); err != nil {
				return err
			}
			if got := sec.Authorization(); got != "Bearer first-token" {
				return fmt.Errorf("upstream saw %q", got)
			}
			return nil
		})
		secret.Data["token"] = []byte("rotated-token")
		if _, err := kc.CoreV1().Secrets(ns).Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		hubtest.Eventually(t, 10*time.Second, poll, "rotated token used", func() error {
			if _, err := callText(c, "secure_tool"); err != nil {
				return err
			}
			if got := sec.Authorization(); got != "Bearer rotated-token" {
				return fmt.Errorf("upstream saw %q", got)
			}
			return nil
		})

		create(mcpServerObj("nosecret", a.URL, map[string]any{"auth": "bearer", "secretRef": "does-not-exist"}))
		hubtest.Eventually(t, 10*time.Second, poll, "nosecret in error", func() error {
			status, msg, _, ok := hub.server("nosecret")
			if !ok || status != "error" || !strings.Contains(msg, "Secret "+ns+"/does-not-exist not found") {
				return fmt.Errorf("nosecret = %q %q", status, msg)
			}
			return nil
		})
		hubtest.Eventually(t, 10*time.Second, poll, "nosecret condition", func() error {
			u, err := mcps.Get(ctx, "nosecret", metav1.GetOptions{})
			if err != nil {
				return err
			}
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			if len(conds) != 1 || conds[0].(map[string]any)["status"] != "False" || !strings.Contains(fmt.Sprint(conds[0].(map[string]any)["message"]), "does-not-exist") {
				return fmt.Errorf("conditions = %v", conds)
			}
			return nil
		})
		hubtest.Eventually(t, 10*time.Second, poll, "ConnectFailed event", func() error {
			evs, err := kc.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=nosecret"})
			if err != nil {
				return err
			}
			for _, e := range evs.Items {
				if e.Reason == "ConnectFailed" && e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, "does-not-exist") {
					return nil
				}
			}
			return fmt.Errorf("events: %d, none ConnectFailed", len(evs.Items))
		})
		if _, err := callText(c, "beta_tool"); err != nil {
			t.Fatalf("another server broke while one had a missing Secret: %v", err)
		}
		for _, leak := range []string{"first-token", "rotated-token"} {
			if strings.Contains(hub.Output(), leak) {
				t.Fatalf("token %q in the hub's log", leak)
			}
		}
	})

	t.Run("ConfigMap in JSON then YAML", func(t *testing.T) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "mcp-servers", Namespace: ns}, Data: map[string]string{
			"servers": `[{"name":"cm-alpha","url":"` + a.URL + `","icon":"a","category":"dev"},{"name":"bad entry","url":"x"}]`,
		}}
		if _, err := kc.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		hubtest.Eventually(t, 10*time.Second, poll, "cm-alpha from JSON", func() error {
			status, _, tools, ok := hub.server("cm-alpha")
			// MCPServer alpha published alpha_tool first and still
			// exists (pointing elsewhere now): the name stays claimed
			// for it, so the newcomer's tool is prefixed (stable names).
			if !ok || status != "connected" || !slices.Contains(tools, "cm-alpha__alpha_tool") {
				return fmt.Errorf("cm-alpha = %q %v", status, tools)
			}
			return nil
		})
		cm.Data["servers"] = "- name: cm-beta\n  url: " + b.URL + "\n  category: dev\n"
		if _, err := kc.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		hubtest.Eventually(t, 10*time.Second, poll, "cm-beta from YAML replaces cm-alpha", func() error {
			if _, _, _, ok := hub.server("cm-alpha"); ok {
				return fmt.Errorf("cm-alpha still listed")
			}
			if status, _, _, ok := hub.server("cm-beta"); !ok || status != "connected" {
				return fmt.Errorf("cm-beta = %q", status)
			}
			return nil
		})
		if !strings.Contains(hub.Output(), "bad entry") {
			t.Error("the bad ConfigMap entry was not reported by name")
		}
	})

	t.Run("deleted MCPServer leaves and sessions are told", func(t *testing.T) {
		for len(changed) > 0 {
			<-changed
		}
		if err := mcps.Delete(ctx, "secure", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		hubtest.Eventually(t, 10*time.Second, poll, "secure_tool gone", func() error {
			if listed(c, "secure_tool") {
				return fmt.Errorf("still listed")
			}
			return nil
		})
		select {
		case <-changed:
		case <-time.After(5 * time.Second):
			t.Fatal("no tools/list_changed after the MCPServer was deleted")
		}
		// Re-created under the same name, it gets its status written again.
		create(mcpServerObj("secure", b.URL, nil))
		hubtest.Eventually(t, 10*time.Second, poll, "status of the re-created MCPServer", func() error {
			u, err := mcps.Get(ctx, "secure", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if n, _, _ := unstructured.NestedInt64(u.Object, "status", "toolCount"); n != 1 {
				return fmt.Errorf("status = %v", u.Object["status"])
			}
			return nil
		})
	})

	t.Run("label selector", func(t *testing.T) {
		labeled := mcpServerObj("labeled", a.URL, nil)
		labeled.SetLabels(map[string]string{"team": "a"})
		create(labeled)
		selective := startHub(t, kubetest.KubeconfigFor(t, cluster.ServiceAccountConfig(ns, saName)), "--label-selector", "team=a")
		hubtest.Eventually(t, 10*time.Second, poll, "labeled server on the selective hub", func() error {
			if status, _, _, ok := selective.server("labeled"); !ok || status != "connected" {
				return fmt.Errorf("labeled = %q", status)
			}
			return nil
		})
		if _, _, _, ok := selective.server("alpha"); ok {
			t.Fatal("the selective hub picked up an MCPServer without the label")
		}
		if err := mcps.Delete(ctx, "labeled", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("create-to-callable and delete-to-gone latency", func(t *testing.T) {
		var up, down []time.Duration
		for i := 0; i < 10; i++ {
			name := fmt.Sprintf("lat-%d", i)
			u := startUpstream(t, fmt.Sprintf("lat_tool_%d", i))
			start := time.Now()
			create(mcpServerObj(name, u.URL, nil))
			hubtest.Eventually(t, 10*time.Second, poll, name+" listed and callable", func() error {
				if !listed(c, fmt.Sprintf("lat_tool_%d", i)) {
					return fmt.Errorf("not listed")
				}
				_, err := callText(c, fmt.Sprintf("lat_tool_%d", i))
				return err
			})
			up = append(up, time.Since(start))
			start = time.Now()
			if err := mcps.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			hubtest.Eventually(t, 10*time.Second, poll, name+" gone", func() error {
				if listed(c, fmt.Sprintf("lat_tool_%d", i)) {
					return fmt.Errorf("still listed")
				}
				if _, err := callText(c, fmt.Sprintf("lat_tool_%d", i)); err == nil {
					return fmt.Errorf("still callable")
				}
				return nil
			})
			down = append(down, time.Since(start))
		}
		t.Logf("latency: MCPServer create -> tool listed and callable: p50 %v p99 %v; delete -> tool gone from tools/list and calls: p50 %v p99 %v (10 each; target p99 < 2s)",
			percentile(up, 50).Round(time.Millisecond), percentile(up, 99).Round(time.Millisecond),
			percentile(down, 50).Round(time.Millisecond), percentile(down, 99).Round(time.Millisecond))
	})

	if logs := hub.Output(); strings.Contains(strings.ToLower(logs), "forbidden") {
		t.Fatalf("the hub hit RBAC denials with the chart's permissions:\n%s", logs)
	}
}

// TestWithoutRBACNotReady: the RBAC check above can fail. A ServiceAccount
// without the chart's Role cannot watch, the hub logs the denial and never
// reports ready.
func TestWithoutRBACNotReady(t *testing.T) {
	cluster := kubetest.Shared(t)
	kc := kubernetes.NewForConfigOrDie(cluster.AdminConfig())
	other := freshNamespace(t, kc, "no-rbac")
	hub := launchHub(t, kubetest.KubeconfigFor(t, cluster.ServiceAccountConfig(other, "nobody")))
	hubtest.Eventually(t, 20*time.Second, poll, "denial logged", func() error {
		if !strings.Contains(strings.ToLower(hub.Output()), "forbidden") {
			return fmt.Errorf("no RBAC denial in the log yet")
		}
		return nil
	})
	resp, err := http.Get(hub.Base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		t.Fatal("the hub reports ready although it cannot watch anything")
	}
}
