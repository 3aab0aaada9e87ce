package kube

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/purko-io/mcp-hub/internal/hubtest"
	"github.com/purko-io/mcp-hub/internal/kubetest"
)

// The test's election: short, so a hand-over after a kill takes seconds.
const (
	testLeaseDuration = 4 * time.Second
	testRetryPeriod   = time.Second
)

// wroteStatus is the log line of a status write (internal/discovery/kube).
const wroteStatus = "wrote MCPServer status"

// TestLeaderElection: three hubs on one cluster write MCPServer status and
// Events through one of them, the holder of the Lease, with server-side
// apply that keeps another manager's condition; killed, the leader is
// replaced within the lease duration, and the new one writes.
func TestLeaderElection(t *testing.T) {
	cluster := kubetest.Shared(t)
	admin := cluster.AdminConfig()
	kc := kubernetes.NewForConfigOrDie(admin)
	dyn := dynamic.NewForConfigOrDie(admin)
	ctx := context.Background()

	ns = freshNamespace(t, kc, "leader")
	saName := applyChartAccess(t, admin, ns)
	cluster.WaitForCRD(t, "mcpservers.purko.io")
	kubeconfig := kubetest.KubeconfigFor(t, cluster.ServiceAccountConfig(ns, saName))
	cfg := electionConfig(ns, fmt.Sprintf(", leaseDuration: %s, renewDeadline: 3s, retryPeriod: %s", testLeaseDuration, testRetryPeriod))
	var hubs []hubProc
	for range 3 {
		hubs = append(hubs, hubProc{hubtest.StartHub(t, hubtest.HubOptions{Bin: hubBin, LogLevel: "info", Wait: hubtest.Ready,
			Timeout: 30 * time.Second, Config: cfg, Args: []string{"--kubeconfig", kubeconfig, "--namespaces", ns}})})
	}

	up := startUpstream(t, "lead_tool")
	mcps := dyn.Resource(gvr).Namespace(ns)
	if _, err := mcps.Create(ctx, mcpServerObj("lead", up.URL, nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Another manager (Purko's operator) owns a condition of its own.
	operator := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "purko.io/v1alpha1", "kind": "MCPServer",
		"metadata": map[string]any{"name": "lead", "namespace": ns},
		"status": map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "Deployed",
			"message": "pod running", "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}}},
	}}
	if _, err := mcps.ApplyStatus(ctx, "lead", operator, metav1.ApplyOptions{FieldManager: "purko-operator", Force: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := mcps.Create(ctx, mcpServerObj("broken", "http://"+closedAddr(t)+"/mcp", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	waitCondition(t, mcps, "lead", "True")
	waitCondition(t, mcps, "broken", "False")
	leader, holder := leaderOf(t, kc, hubs, "")
	for _, h := range hubs {
		if wrote := strings.Contains(h.Output(), wroteStatus); wrote != (h == leader) {
			t.Errorf("hub %d (leader: %v) wrote status: %v", h.PID(), h == leader, wrote)
		}
	}
	checkStatusOwners(t, mcps, "lead")
	checkEvents(t, kc, "broken")

	// The leader dies without releasing the Lease: another takes it once
	// the lease duration has passed since the last renewal.
	killed := time.Now()
	leader.Kill()
	var rest []hubProc
	for _, h := range hubs {
		if h != leader {
			rest = append(rest, h)
		}
	}
	var next hubProc
	hubtest.Eventually(t, testLeaseDuration+3*testRetryPeriod, poll, "another hub holds the Lease", func() error {
		l, err := kc.CoordinationV1().Leases(ns).Get(ctx, chartLease, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if h := l.Spec.HolderIdentity; h == nil || *h == "" || *h == holder {
			return fmt.Errorf("holder %v", h)
		}
		return nil
	})
	handOver := time.Since(killed)
	t.Logf("hand-over after the leader was killed: %s (lease duration %s, retry period %s)", handOver.Round(10*time.Millisecond), testLeaseDuration, testRetryPeriod)
	next, _ = leaderOf(t, kc, rest, holder)
	// A new leader writes every object again, correcting what the one
	// before left stale.
	hubtest.Eventually(t, 10*time.Second, poll, "the new leader rewrote status", func() error {
		if !strings.Contains(next.Output(), wroteStatus) {
			return fmt.Errorf("no %q in the new leader's log", wroteStatus)
		}
		return nil
	})

	// A change after the kill is written by the new leader alone.
	if _, err := mcps.Create(ctx, mcpServerObj("late", "http://"+closedAddr(t)+"/mcp", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, mcps, "late", "False")
	// The leader logs the write after the API server took it: wait for
	// the line, then no one else may have written.
	wroteLate := `"mcpserver":"` + ns + `/late"`
	hubtest.Eventually(t, 10*time.Second, poll, "the new leader logged the status of late", func() error {
		if !strings.Contains(next.Output(), wroteLate) {
			return fmt.Errorf("no %s in the new leader's log", wroteLate)
		}
		return nil
	})
	for _, h := range rest {
		if h != next && strings.Contains(h.Output(), wroteLate) {
			t.Errorf("hub %d, not the leader, wrote status of late", h.PID())
		}
	}
	checkStatusOwners(t, mcps, "late")
	checkStatusOwners(t, mcps, "lead")
	checkEvents(t, kc, "late")
	checkEvents(t, kc, "broken")

	// A leader that stops cleanly releases the Lease: the last hub takes
	// it within a retry period, not a lease duration.
	nextHolder := holderOf(t, kc)
	stopped := time.Now()
	if err := next.Stop(10 * time.Second); err != nil {
		t.Fatalf("stop the leader: %v", err)
	}
	var last hubProc
	for _, h := range rest {
		if h != next {
			last = h
		}
	}
	hubtest.Eventually(t, 3*testRetryPeriod, poll, "the last hub holds the released Lease", func() error {
		if h := holderOf(t, kc); h == "" || h == nextHolder {
			return fmt.Errorf("holder %q", h)
		}
		return nil
	})
	t.Logf("hand-over after the leader stopped (SIGTERM): %s", time.Since(stopped).Round(10*time.Millisecond))
	leaderOf(t, kc, []hubProc{last}, nextHolder)
}

// holderOf is the Lease's holder ("" when released or absent).
func holderOf(t *testing.T, kc kubernetes.Interface) string {
	t.Helper()
	l, err := kc.CoordinationV1().Leases(ns).Get(context.Background(), chartLease, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// waitCondition waits for the hub's condition on the MCPServer name to
// have status (True or False).
func waitCondition(t *testing.T, mcps dynamic.ResourceInterface, name, status string) {
	t.Helper()
	hubtest.Eventually(t, 15*time.Second, poll, name+" HubConnected "+status, func() error {
		u, err := mcps.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if c := condition(u, "HubConnected"); c == nil || c["status"] != status || c["observedGeneration"] != u.GetGeneration() {
			return fmt.Errorf("status %v", u.Object["status"])
		}
		return nil
	})
}

func condition(u *unstructured.Unstructured, typ string) map[string]any {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return m
		}
	}
	return nil
}

// leaderOf returns the hub that holds the Lease (other than the holder
// before) and its identity: the Lease names it, and its log says it leads.
func leaderOf(t *testing.T, kc kubernetes.Interface, hubs []hubProc, before string) (hubProc, string) {
	t.Helper()
	var leader hubProc
	var holder string
	hubtest.Eventually(t, 10*time.Second, poll, "one hub leads", func() error {
		l, err := kc.CoordinationV1().Leases(ns).Get(context.Background(), chartLease, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == before {
			return fmt.Errorf("holder %v", l.Spec.HolderIdentity)
		}
		holder = *l.Spec.HolderIdentity
		var leading []hubProc
		for _, h := range hubs {
			if out := h.Output(); strings.Contains(out, holder) && strings.Contains(out, "leading: this replica writes") {
				leading = append(leading, h)
			}
		}
		if len(leading) != 1 {
			return fmt.Errorf("%d hubs say they lead as %s", len(leading), holder)
		}
		leader = leading[0]
		return nil
	})
	return leader, holder
}

// checkStatusOwners: the status of the MCPServer name is written by one
// apply of mcp-hub (no update, so no merge patch, of it), and the other
// manager's Ready condition is still there.
func checkStatusOwners(t *testing.T, mcps dynamic.ResourceInterface, name string) {
	t.Helper()
	u, err := mcps.Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var hub []string
	for _, m := range u.GetManagedFields() {
		if m.Manager == "mcp-hub" {
			hub = append(hub, string(m.Operation)+" "+m.Subresource)
		}
	}
	if len(hub) != 1 || hub[0] != "Apply status" {
		t.Errorf("%s: mcp-hub's managedFields entries %v, want one [Apply status]", name, hub)
	}
	if name == "lead" && condition(u, "Ready") == nil {
		t.Errorf("%s: the operator's Ready condition is gone: %v", name, u.Object["status"])
	}
}

// checkEvents: the hub's Events on the MCPServer name are there once each:
// a ConnectFailed, and no Event twice (one per replica, as before leader
// election).
func checkEvents(t *testing.T, kc kubernetes.Interface, name string) {
	t.Helper()
	var evs []corev1.Event
	hubtest.Eventually(t, 10*time.Second, poll, "ConnectFailed on "+name, func() error {
		l, err := kc.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
		if err != nil {
			return err
		}
		evs = l.Items
		for _, e := range evs {
			if e.Reason == "ConnectFailed" {
				return nil
			}
		}
		return fmt.Errorf("%d Events, no ConnectFailed", len(evs))
	})
	seen := map[string]string{}
	for _, e := range evs {
		key := e.Type + " " + e.Reason + " " + e.Message
		if prev, dup := seen[key]; dup {
			t.Errorf("%s: Event %q written twice (%s and %s)", name, key, prev, e.Name)
		}
		seen[key] = e.Name
		if e.Reason == "ConnectFailed" && e.Count != 1 {
			t.Errorf("%s: ConnectFailed Event count %d, want 1", name, e.Count)
		}
	}
}
