package kube

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/purko-io/mcp-hub/internal/hubtest"
	"github.com/purko-io/mcp-hub/internal/kubetest"
)

// TestServiceAccountCallers: an executor pod calls the hub with its own
// projected ServiceAccount token and no hub token; the hub reviews it, finds
// the pod's Agent and enforces that Agent's autonomy and tool list. The hub
// runs with the chart's RBAC for auth.serviceAccounts.enabled.
func TestServiceAccountCallers(t *testing.T) {
	var agentsNS string
	cluster := kubetest.Shared(t)
	admin := cluster.AdminConfig()
	kc := kubernetes.NewForConfigOrDie(admin)
	dyn := dynamic.NewForConfigOrDie(admin)
	ctx := context.Background()
	agentsNS = freshNamespace(t, kc, "agents")
	saName := applyChartAccess(t, admin, agentsNS, "--set", "auth.serviceAccounts.enabled=true")
	kubetest.ApplyYAML(t, admin, filepath.Join(repoRoot, "internal", "kubeauth", "testdata", "agents.purko.io.yaml"))
	cluster.WaitForCRD(t, "mcpservers.purko.io")
	cluster.WaitForCRD(t, "agents.purko.io")

	// The executor: ServiceAccount, pod labelled with its Agent, the Agent.
	if _, err := kc.CoreV1().ServiceAccounts(agentsNS).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "executor"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod, err := kc.CoreV1().Pods(agentsNS).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "run-1-step-1", Labels: map[string]string{"purko.io/agent": "reviewer"}},
		Spec:       corev1.PodSpec{ServiceAccountName: "executor", Containers: []corev1.Container{{Name: "executor", Image: "example/executor:1"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The agent's own api tool: a GET with a Bearer credential from a Secret.
	var ticketAuth atomic.Value
	tickets := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ticketAuth.Store(r.Method + " " + r.URL.Path + " " + r.Header.Get("Authorization"))
		_, _ = io.WriteString(w, `{"ticket":"T-7","state":"open","reporter":"olga.kowalska@fabrikam.de"}`)
	}))
	defer tickets.Close()
	if _, err := kc.CoreV1().Secrets(agentsNS).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ticket-cred", Labels: upstreamCredential},
		Data: map[string][]byte{"token": []byte("ticket-secret-5")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	agents := dyn.Resource(schema.GroupVersionResource{Group: "purko.io", Version: "v1alpha1", Resource: "agents"}).Namespace(agentsNS)
	newAgent := func(name, level string, tools []any, guardrails map[string]any) {
		spec := map[string]any{"autonomyLevel": level, "tools": tools}
		if guardrails != nil {
			spec["guardrails"] = guardrails
		}
		agent := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "purko.io/v1alpha1", "kind": "Agent", "metadata": map[string]any{"name": name},
			"spec": spec,
		}}
		if err := kubetest.Retry(ctx, 10*time.Second, func() error { _, err := agents.Create(ctx, agent, metav1.CreateOptions{}); return err }); err != nil {
			t.Fatal(err)
		}
	}
	newAgent("reviewer", "Shu", []any{"issue_read", map[string]any{"name": "create_issue"},
		map[string]any{"name": "lookup_ticket", "type": "api", "credentialsSecretRef": "ticket-cred",
			"endpoint": map[string]any{"url": tickets.URL + "/tickets/{id}", "method": "GET", "authScheme": "Bearer"}}},
		// Purko's guardrails: the hub redacts personal data and counts
		// the run's calls (decided calls only: a denial is no call).
		map[string]any{"contentFilters": []any{"pii"}, "maxIterations": int64(3), "costLimitUSD": 2.5})
	newAgent("other", "full", nil, nil)
	// An Agent read as a virtual server: its spec.tools and a whole server.
	view := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "purko.io/v1alpha1", "kind": "Agent",
		"metadata": map[string]any{"name": "coding-view", "annotations": map[string]any{
			"mcp-hub.purko.io/virtual-server": "true", "mcp-hub.purko.io/virtual-server-servers": "writer"}},
		"spec": map[string]any{"autonomyLevel": "full", "tools": []any{"issue_read"}},
	}}
	if err := kubetest.Retry(ctx, 10*time.Second, func() error { _, err := agents.Create(ctx, view, metav1.CreateOptions{}); return err }); err != nil {
		t.Fatal(err)
	}
	other, err := kc.CoreV1().Pods(agentsNS).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "run-2-step-1", Labels: map[string]string{"purko.io/agent": "other"}},
		Spec:       corev1.PodSpec{ServiceAccountName: "executor", Containers: []corev1.Container{{Name: "executor", Image: "example/executor:1"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	podToken := func(p *corev1.Pod) string {
		tr, err := kc.CoreV1().ServiceAccounts(agentsNS).CreateToken(ctx, "executor", &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{
			BoundObjectRef: &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: p.Name, UID: p.UID}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	reviewerToken, otherToken := podToken(pod), podToken(other)

	up := startUpstream(t, "issue_read")
	upWrite := startUpstream(t, "create_issue")
	mcps := dyn.Resource(gvr).Namespace(agentsNS)
	for name, u := range map[string]*hubtest.Upstream{"issues": up, "writer": upWrite} {
		obj := mcpServerObj(name, u.URL, nil)
		obj.SetNamespace(agentsNS)
		if err := kubetest.Retry(ctx, 10*time.Second, func() error { _, err := mcps.Create(ctx, obj, metav1.CreateOptions{}); return err }); err != nil {
			t.Fatal(err)
		}
	}
	cfgPath := filepath.Join(t.TempDir(), "hub.yaml")
	// The ServiceAccount ops is granted the REST API's writes; executor is not.
	if _, err := kc.CoreV1().ServiceAccounts(agentsNS).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "ops"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	opsPod, err := kc.CoreV1().Pods(agentsNS).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "ops-1", Labels: map[string]string{"purko.io/agent": "other"}},
		Spec:       corev1.PodSpec{ServiceAccountName: "ops", Containers: []corev1.Container{{Name: "ops", Image: "example/ops:1"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	opsTR, err := kc.CoreV1().ServiceAccounts(agentsNS).CreateToken(ctx, "ops", &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{
		BoundObjectRef: &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: opsPod.Name, UID: opsPod.UID}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, []byte("auth:\n  serviceAccounts: {enabled: true, admins: ["+agentsNS+"/ops]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	hub := startHub(t, kubetest.KubeconfigFor(t, cluster.ServiceAccountConfig(agentsNS, saName)),
		"--namespaces", agentsNS, "--config", cfgPath)
	hubtest.Eventually(t, 15*time.Second, poll, "both servers connected", func() error {
		for _, n := range []string{"issues", "writer"} {
			if status, _, _, ok := hub.server(n); !ok || status != "connected" {
				return fmt.Errorf("%s = %q", n, status)
			}
		}
		return nil
	})

	post := func(token, body string) (int, string) {
		req, _ := http.NewRequest("POST", hub.Base+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
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
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`
	if status, _ := post("", list); status != http.StatusUnauthorized {
		t.Fatalf("no credentials: HTTP %d", status)
	}
	if status, _ := post("not-a-token", list); status != http.StatusUnauthorized {
		t.Fatalf("garbage token: HTTP %d", status)
	}
	c, _ := dialHubWith(t, hub.Base, reviewerToken)
	// The session lists the Agent's view once the catalog is published.
	hubtest.Eventually(t, 10*time.Second, poll, "the agent's view", func() error {
		if tools := toolNamesOf(t, c); strings.Join(tools, ",") != "issue_read,lookup_ticket" {
			return fmt.Errorf("the restricted agent with tools [issue_read create_issue lookup_ticket] lists %v, want [issue_read lookup_ticket]", tools)
		}
		return nil
	})
	if got, err := callText(c, "issue_read"); err != nil || got != "from issue_read" {
		t.Fatalf("issue_read = %q, %v", got, err)
	}
	_, err = callText(c, "create_issue")
	if err == nil || !strings.Contains(err.Error(), "BLOCKED: Restricted autonomy — write tool 'create_issue' not allowed.") {
		t.Fatalf("create_issue by a restricted agent: %v", err)
	}
	// The agent's api tool runs with the credential the hub attaches.
	if got, err := callText(c, "lookup_ticket", map[string]any{"id": "T-7"}); err != nil || !strings.Contains(got, `"ticket":"T-7"`) || strings.Contains(got, "ticket-secret-5") ||
		!strings.Contains(got, `"reporter":"[redacted: email]"`) {
		t.Fatalf("lookup_ticket = %q, %v (want the reporter's address redacted by the Agent's pii filter)", got, err)
	}
	if got := ticketAuth.Load(); got != "GET /tickets/T-7 Bearer ticket-secret-5" {
		t.Fatalf("the ticket API saw %v", got)
	}
	// The Agent's maxIterations: 3 calls in this session's run, the
	// fourth refused.
	if got, err := callText(c, "issue_read"); err != nil || got != "from issue_read" {
		t.Fatalf("third call: %q, %v", got, err)
	}
	if _, err := callText(c, "issue_read"); err == nil || !strings.Contains(err.Error(), "may make 3 tool calls (guardrails maxIterations) and has made 3") {
		t.Fatalf("fourth call of the run: %v", err)
	}
	// The run is the pod its projected token is bound to: a new session
	// with a new traceparent is the same run, refused naming the pod.
	again, _ := dialHubHeaders(t, hub.Base, map[string]string{"Authorization": "Bearer " + reviewerToken,
		"traceparent": fmt.Sprintf("00-%032x-00f067aa0ba902b7-01", time.Now().UnixNano())})
	if _, err := callText(again, "issue_read"); err == nil || !strings.Contains(err.Error(), "this agent run (pod "+string(pod.UID)+") of agent "+agentsNS+"/reviewer") {
		t.Fatalf("a call of the reviewer's pod in a new session and trace: %v", err)
	}
	// Another agent neither sees nor runs it.
	oc, _ := dialHubWith(t, hub.Base, otherToken)
	hubtest.Eventually(t, 10*time.Second, poll, "the other agent's view", func() error {
		if tools := toolNamesOf(t, oc); !slices.Contains(tools, "create_issue") || slices.Contains(tools, "lookup_ticket") {
			return fmt.Errorf("the other agent lists %v, want create_issue and not the reviewer's lookup_ticket", tools)
		}
		return nil
	})
	if _, err := callText(oc, "lookup_ticket", map[string]any{"id": "T-7"}); err == nil || !strings.Contains(err.Error(), "belongs to agent "+agentsNS+"/reviewer") {
		t.Fatalf("lookup_ticket by another agent: %v", err)
	}
	// The annotated Agent's endpoint: its tools for a caller that may see
	// everything, and only narrower for the restricted reviewer (no write
	// tool, none of its own api tools: the endpoint does not publish them).
	for _, tc := range []struct {
		who, token, want string
	}{{"the other agent", otherToken, "create_issue,issue_read"}, {"the reviewer", reviewerToken, "issue_read"}} {
		vc, _ := dialHubWith(t, hub.Base+"/servers/coding-view", tc.token)
		hubtest.Eventually(t, 10*time.Second, poll, tc.who+" at /servers/coding-view", func() error {
			if tools := strings.Join(toolNamesOf(t, vc), ","); tools != tc.want {
				return fmt.Errorf("%s lists %s at /servers/coding-view/mcp, want %s", tc.who, tools, tc.want)
			}
			return nil
		})
	}
	// Only the admin ServiceAccount's pod passes the write endpoints' admin
	// check (the body is then refused for its missing url, so nothing is
	// written).
	for _, tc := range []struct {
		token  string
		status int
		want   string
	}{{reviewerToken, http.StatusForbidden, "needs an admin caller"}, {opsTR.Status.Token, http.StatusBadRequest, `"url: one of url`}} {
		if status, body := apiRequest(t, "POST", hub.Base+"/api/mcp/server", tc.token, `{"name":"x"}`); status != tc.status || !strings.Contains(body, tc.want) {
			t.Errorf("POST /api/mcp/server: %d %s, want %d with %q", status, body, tc.status, tc.want)
		}
	}
	for _, secret := range []string{reviewerToken, "ticket-secret-5"} {
		if strings.Contains(hub.Output(), secret) {
			t.Fatal("a secret is in the hub's log")
		}
	}
}
