package soak

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/purko-io/mcp-hub/internal/hubtest"
	"github.com/purko-io/mcp-hub/internal/kubetest"
	"github.com/purko-io/mcp-hub/test/conformance"
)

// The fleet: a kube-apiserver and etcd of the soak's own, three hub
// replicas that know each other (replicas.peers) behind a round-robin
// balancer, and the upstreams: go-sdk's conformance everything-server
// (stable), the flapping one and the hostile one (children of this test
// binary), the hostile one discovered from an MCPServer.

const (
	replicas     = 3
	namespace    = "soak"
	agentName    = "soak-agent"
	agentPodName = "run-1-step-1"
)

// Tokens of the hub-token callers.
const (
	botToken    = "soak-bot-token-0123456789"
	opsToken    = "soak-ops-token-0123456789"
	budgetToken = "soak-budget-token-0123456789"
)

// sessionIdle is the replicas' http.sessionIdleTimeout: short, so that
// once the callers have gone the soak can see every session end. (A
// session no request has used is swept after two thirds of it at the
// earliest; the soak's pauses at rest are shorter than that.)
const sessionIdle = 30 * time.Second

// opsRate is the admin's rate limit in calls/s, shared by the replicas:
// its six workers ask for more, and some of their calls are refused.
const opsRate = 3

// budget is the budget caller's guardrails maxIterations: a run of
// budgetRun calls gets budget of them and is refused the rest.
const (
	budget    = 5
	budgetRun = 7
)

// fleet is everything the soak runs against.
type fleet struct {
	t       *testing.T
	cluster *kubetest.Cluster
	kc      kubernetes.Interface
	dyn     dynamic.Interface

	hubs    []*hubtest.Hub
	pprof   []string // each replica's --pprof address
	configs []string // each replica's config file
	peers   string
	lb      *hubtest.Balancer

	everythingURL string
	hostileURL    string
	flakyPort     int
	flakyJournal  string
	hostileJrnl   string
	spareURL      string
	probeURL      string // the upstream of the MCPServers created after each kube-apiserver restart
	agentToken    string // the agent pod's projected ServiceAccount token

	flakyMu sync.Mutex
	flaky   *hubtest.Process

	apiMu     sync.Mutex
	apiserver *hubtest.Process // the kube-apiserver started again by the soak, nil before
	apiArgs   []string         // its command line, read from the first one
	apiPort   int
}

// startFleet starts the cluster, the upstreams and the replicas and waits
// until every replica has every server connected and counts the others.
func startFleet(t *testing.T) *fleet {
	t.Helper()
	f := &fleet{t: t}
	dir := t.TempDir()
	f.flakyJournal, f.hostileJrnl = filepath.Join(dir, "flaky.journal"), filepath.Join(dir, "hostile.journal")

	c, err := kubetest.StartCluster(context.Background(), kubetest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		f.stopAPIServer() // ours first: etcd must outlive it
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	})
	f.cluster = c
	t.Logf("cluster started in %v", c.StartupTime.Round(time.Millisecond))
	admin := c.AdminConfig()
	f.kc, f.dyn = kubernetes.NewForConfigOrDie(admin), dynamic.NewForConfigOrDie(admin)
	f.readAPIServerCommand()

	root, err := hubtest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	kubetest.ApplyYAML(t, admin, filepath.Join(root, "charts", "mcp-hub", "crds", "mcpservers.purko.io.yaml"))
	kubetest.ApplyYAML(t, admin, filepath.Join(root, "internal", "kubeauth", "testdata", "agents.purko.io.yaml"))
	c.WaitForCRD(t, "mcpservers.purko.io")
	c.WaitForCRD(t, "agents.purko.io")
	ctx := context.Background()
	if _, err := f.kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Upstreams.
	f.everythingURL = conformance.EverythingServer(t, false)
	_, hostilePort := hubtest.StartServer(t, "hostile upstream", 0, upstreamCommand("hostile", f.hostileJrnl))
	f.hostileURL = fmt.Sprintf("http://127.0.0.1:%d/mcp", hostilePort)
	f.flakyPort = hubtest.FreePort(t)
	f.startFlaky()
	t.Cleanup(func() {
		f.flakyMu.Lock()
		defer f.flakyMu.Unlock()
		if f.flaky != nil {
			_ = f.flaky.Stop(hubtest.StopGrace)
		}
	})
	f.spareURL = hubtest.StartUpstream(t, "spare", mcpserver.ServerTool{Tool: mcp.NewTool("get_spare"),
		Handler: func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("spare"), nil
		}}).URL
	f.probeURL = hubtest.StartUpstream(t, "kprobe").URL
	if err := f.createMCPServer("hostile", f.hostileURL); err != nil {
		t.Fatal(err)
	}
	f.agentToken = f.agentPod()

	// The replicas.
	bin := hubtest.HubBinary(t)
	kubeconfig := c.Kubeconfig(t)
	addrs := make([]string, replicas)
	for i := range addrs {
		addrs[i] = fmt.Sprintf("127.0.0.1:%d", hubtest.FreePort(t))
	}
	f.peers = strings.Join(addrs, ",")
	sink := startSpanSink(t)
	env := []string{"SOAK_BOT_TOKEN=" + botToken, "SOAK_OPS_TOKEN=" + opsToken, "SOAK_BUDGET_TOKEN=" + budgetToken,
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + sink, "OTEL_BSP_SCHEDULE_DELAY=500"}
	for i, a := range addrs {
		path := filepath.Join(dir, fmt.Sprintf("hub-%d.yaml", i))
		f.configs = append(f.configs, path)
		f.writeConfig(i, false)
		f.pprof = append(f.pprof, fmt.Sprintf("127.0.0.1:%d", hubtest.FreePort(t)))
		f.hubs = append(f.hubs, hubtest.StartHub(t, hubtest.HubOptions{Bin: bin, Listen: a, ConfigFile: path, Env: env, LogLevel: "info",
			Wait: hubtest.Ready, Timeout: 90 * time.Second,
			Args: []string{"--kubeconfig", kubeconfig, "--namespaces", namespace, "--pprof", f.pprof[i]}}))
	}
	for i := range f.hubs {
		f.waitReplicas(i)
		f.waitServers(i, 60*time.Second, "everything", "flaky", "hostile")
	}
	backends := make([]string, replicas)
	for i, h := range f.hubs {
		backends[i] = h.Base
	}
	f.lb = hubtest.StartBalancer(t, backends)
	return f
}

// config is replica i's config file; with spare, it lists the spare
// server too (the reloads toggle it).
func (f *fleet) config(spare bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, `builtins: {staticAnalysis: {enabled: false}, triggerWorkflow: {enabled: false}}
replicas: {peers: %q}
upstream: {backoffMin: 100ms, backoffMax: 1s, breakerOpenFor: 2s, maxResultChars: 20000}
http: {sessionIdleTimeout: %s}
auth:
  anonymous: {enabled: true, maxLevel: restricted}
  serviceAccounts: {enabled: true}
  tokens:
    - {name: bot, token: {env: SOAK_BOT_TOKEN}, maxLevel: supervised, guardrails: {contentFilters: [pii, secrets], humanApprovalRequired: true}}
    - {name: ops, token: {env: SOAK_OPS_TOKEN}, maxLevel: full, admin: true, limits: {rate: %d}}
    - {name: budget, token: {env: SOAK_BUDGET_TOKEN}, maxLevel: full, guardrails: {maxIterations: %d}}
approvals: {timeout: 2m}
servers:
  - name: everything
    url: %s
    transport: streamable-http
    toolPolicy: {readOnly: [test_simple_text, test_tool_with_progress, test_image_content]}
  - name: flaky
    url: http://127.0.0.1:%d/mcp
    transport: streamable-http
`, f.peers, sessionIdle, opsRate, budget, f.everythingURL, f.flakyPort)
	if spare {
		fmt.Fprintf(&b, "  - name: spare\n    url: %s\n    transport: streamable-http\n", f.spareURL)
	}
	return b.String()
}

// writeConfig writes replica i's config file whole (a new file renamed
// over the old one: the hub never reads it half-written).
func (f *fleet) writeConfig(i int, spare bool) {
	tmp := f.configs[i] + ".new"
	if err := os.WriteFile(tmp, []byte(f.config(spare)), 0o600); err != nil {
		f.t.Error(err)
		return
	}
	if err := os.Rename(tmp, f.configs[i]); err != nil {
		f.t.Error(err)
	}
}

// createMCPServer creates an MCPServer whose URL the hub takes from the
// annotation.
func (f *fleet) createMCPServer(name, u string) error {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "purko.io/v1alpha1", "kind": "MCPServer",
		"metadata": map[string]any{"name": name, "namespace": namespace, "annotations": map[string]any{"mcp-hub.purko.io/url": u}},
		"spec":     map[string]any{"image": "example/mcp:1"},
	}}
	gvr := schema.GroupVersionResource{Group: "purko.io", Version: "v1alpha1", Resource: "mcpservers"}
	ctx := context.Background()
	if err := kubetest.Retry(ctx, 60*time.Second, func() error {
		_, err := f.dyn.Resource(gvr).Namespace(namespace).Create(ctx, obj, metav1.CreateOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("create MCPServer %s: %w", name, err)
	}
	return nil
}

// deleteMCPServer deletes an MCPServer.
func (f *fleet) deleteMCPServer(name string) error {
	gvr := schema.GroupVersionResource{Group: "purko.io", Version: "v1alpha1", Resource: "mcpservers"}
	ctx := context.Background()
	return kubetest.Retry(ctx, 60*time.Second, func() error {
		return f.dyn.Resource(gvr).Namespace(namespace).Delete(ctx, name, metav1.DeleteOptions{})
	})
}

// agentPod creates the agent: its Agent (supervised, the pii filter), a
// ServiceAccount and a pod labelled with the Agent, and returns a token of
// that ServiceAccount bound to the pod, as the kubelet projects it.
func (f *fleet) agentPod() string {
	t := f.t
	t.Helper()
	ctx := context.Background()
	agents := f.dyn.Resource(schema.GroupVersionResource{Group: "purko.io", Version: "v1alpha1", Resource: "agents"}).Namespace(namespace)
	agent := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "purko.io/v1alpha1", "kind": "Agent", "metadata": map[string]any{"name": agentName},
		"spec": map[string]any{"autonomyLevel": "Ha", "guardrails": map[string]any{"contentFilters": []any{"pii"}}},
	}}
	if err := kubetest.Retry(ctx, 30*time.Second, func() error { _, err := agents.Create(ctx, agent, metav1.CreateOptions{}); return err }); err != nil {
		t.Fatal(err)
	}
	if _, err := f.kc.CoreV1().ServiceAccounts(namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "executor"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod, err := f.kc.CoreV1().Pods(namespace).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: agentPodName, Labels: map[string]string{"purko.io/agent": agentName}},
		Spec:       corev1.PodSpec{ServiceAccountName: "executor", Containers: []corev1.Container{{Name: "executor", Image: "example/executor:1"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hour := int64(3 * 3600)
	tr, err := f.kc.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, "executor", &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{
		ExpirationSeconds: &hour,
		BoundObjectRef:    &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// waitReplicas waits until replica i exports mcphub_replicas and
// mcphub_peer_members 3: it counts the others and knows their ids.
func (f *fleet) waitReplicas(i int) {
	f.t.Helper()
	want := []string{fmt.Sprintf("\nmcphub_replicas %d\n", replicas), fmt.Sprintf("\nmcphub_peer_members %d\n", replicas)}
	hubtest.Eventually(f.t, 30*time.Second, 100*time.Millisecond, fmt.Sprintf("replica %d counting %d replicas", i, replicas), func() error {
		body, err := getText(f.hubs[i].Base + "/metrics")
		if err != nil {
			return err
		}
		for _, w := range want {
			if !strings.Contains(body, w) {
				return fmt.Errorf("no %s", strings.TrimSpace(w))
			}
		}
		return nil
	})
}

// serversState says whether replica i lists every one of names connected
// (and, with absent, none of absent).
func (f *fleet) serversState(i int, names []string, absent ...string) error {
	l, err := f.hubs[i].Listing("?format=names")
	if err != nil {
		return err
	}
	for _, n := range names {
		s, ok := l.Server(n)
		if !ok || s.Status != "connected" {
			return fmt.Errorf("replica %d: %s not connected: %s", i, n, l.Summary())
		}
	}
	for _, n := range absent {
		if _, ok := l.Server(n); ok {
			return fmt.Errorf("replica %d still lists %s: %s", i, n, l.Summary())
		}
	}
	return nil
}

// waitServers waits until replica i lists names connected.
func (f *fleet) waitServers(i int, timeout time.Duration, names ...string) {
	f.t.Helper()
	hubtest.Eventually(f.t, timeout, 100*time.Millisecond, fmt.Sprintf("replica %d with %v connected", i, names), func() error {
		return f.serversState(i, names)
	})
}

// startFlaky starts the flapping upstream on its port.
func (f *fleet) startFlaky() {
	ctx, cancel := context.WithTimeout(context.Background(), hubtest.StartTimeout)
	defer cancel()
	p, _, err := hubtest.LaunchServer(ctx, "flaky upstream", f.flakyPort, upstreamCommand("flaky", f.flakyJournal))
	if err != nil {
		f.t.Errorf("start the flaky upstream again: %v", err)
		return
	}
	f.flakyMu.Lock()
	f.flaky = p
	f.flakyMu.Unlock()
}

// stopFlaky stops the flapping upstream by its PID (SIGTERM: it finishes
// what it is doing, at most 3 s).
func (f *fleet) stopFlaky() {
	f.flakyMu.Lock()
	p := f.flaky
	f.flaky = nil
	f.flakyMu.Unlock()
	if p != nil {
		_ = p.Stop(10 * time.Second)
	}
}

// readAPIServerCommand reads the kube-apiserver's command line from
// /proc, to start it again exactly so (same port, etcd, certificates).
func (f *fleet) readAPIServerCommand() {
	pid, _ := f.cluster.PIDs()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		f.t.Fatalf("the kube-apiserver's command line: %v", err)
	}
	f.apiArgs = strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	u, err := url.Parse(f.cluster.Host)
	if err != nil {
		f.t.Fatal(err)
	}
	f.apiPort, _ = strconv.Atoi(u.Port())
}

// restartAPIServer stops the kube-apiserver (SIGTERM by its PID; etcd
// keeps running), waits down for a while once it has exited, and starts
// it again on the same port with the same flags, then waits until it is
// ready. It returns when it was told to stop and when it was ready again.
func (f *fleet) restartAPIServer(down time.Duration) (stopped, ready time.Time, err error) {
	f.apiMu.Lock()
	defer f.apiMu.Unlock()
	stopped = time.Now()
	if f.apiserver != nil {
		_ = f.apiserver.Stop(20 * time.Second)
		f.apiserver = nil
	} else {
		pid, _ := f.cluster.PIDs()
		_ = syscall.Kill(-pid, syscall.SIGTERM)
		for end := time.Now().Add(20 * time.Second); syscall.Kill(pid, 0) == nil && time.Now().Before(end); {
			time.Sleep(50 * time.Millisecond)
		}
		if syscall.Kill(pid, 0) == nil {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
	}
	time.Sleep(down)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	p, _, err := hubtest.LaunchServer(ctx, "kube-apiserver", f.apiPort, func(int) *exec.Cmd {
		cmd := exec.Command(f.apiArgs[0], f.apiArgs[1:]...)
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
		return cmd
	})
	if err != nil {
		return stopped, time.Time{}, fmt.Errorf("start the kube-apiserver again: %w", err)
	}
	f.apiserver = p
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(f.cluster.CAData)
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	defer hc.CloseIdleConnections()
	err = hubtest.Poll(ctx, 100*time.Millisecond, func() error {
		req, _ := http.NewRequest(http.MethodGet, f.cluster.Host+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+f.cluster.AdminToken)
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz: %s", resp.Status)
		}
		return nil
	})
	return stopped, time.Now(), err
}

// stopAPIServer stops the kube-apiserver the soak started again, if any.
func (f *fleet) stopAPIServer() {
	f.apiMu.Lock()
	defer f.apiMu.Unlock()
	if f.apiserver != nil {
		_ = f.apiserver.Stop(20 * time.Second)
		f.apiserver = nil
	}
}

// getText GETs u and returns its body (an error for a status other than 200).
func getText(u string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return string(b), fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return string(b), err
}

// startSpanSink is an OTLP/HTTP endpoint that takes every export and keeps
// nothing: with tracing on, each audit line carries its call's trace id,
// the caller's own when it sent a traceparent, which is how the soak
// finds each of its calls in the audit.
func startSpanSink(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	return "http://" + ln.Addr().String()
}

// metrics reads unlabelled samples of replica i's /metrics.
func (f *fleet) metrics(i int, names ...string) (map[string]float64, error) {
	body, err := getText(f.hubs[i].Base + "/metrics")
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for line := range strings.SplitSeq(body, "\n") {
		name, v, ok := strings.Cut(line, " ")
		if ok && slices.Contains(names, name) {
			if out[name], err = strconv.ParseFloat(strings.TrimSpace(v), 64); err != nil {
				return nil, err
			}
		}
	}
	for _, n := range names {
		if _, ok := out[n]; !ok {
			return nil, fmt.Errorf("replica %d: no %s in /metrics", i, n)
		}
	}
	return out, nil
}

// metricSum sums every sample of a labelled metric of replica i.
func (f *fleet) metricSum(i int, name string) (float64, error) {
	body, err := getText(f.hubs[i].Base + "/metrics")
	if err != nil {
		return 0, err
	}
	var sum float64
	for line := range strings.SplitSeq(body, "\n") {
		if !strings.HasPrefix(line, name+"{") {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			return 0, err
		}
		sum += v
	}
	return sum, nil
}
