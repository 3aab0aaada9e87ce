package kube

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/purko-io/mcp-hub/internal/kubeclient/leaderelection"
	"github.com/purko-io/mcp-hub/internal/kubetest"
)

// The election of TestLeaderStepsDownWhenAPIServerFreezes: client-go's defaults, the hub's.
const (
	stepDownLease = 15 * time.Second
	stepDownRenew = 10 * time.Second
	stepDownRetry = 2 * time.Second
	// stepDownFreeze is how long the API server is stopped: past the
	// lease, so every elector's view of it has expired when it resumes.
	stepDownFreeze = 30 * time.Second
	// stepDownSlack is what a loaded machine (a CI run beside the test)
	// may add to a deadline.
	stepDownSlack = 3 * time.Second
)

// stepDownLog is what the electors did, by the test's clock.
type stepDownLog struct {
	mu      sync.Mutex
	writes  []stepDownEvent // a write under a term that the API server answered
	beliefs []stepDownEvent // an elector found its term lasting, every tick
	stops   []stepDownEvent // OnStoppedLeading after a term
	starts  []stepDownEvent // OnStartedLeading
}

type stepDownEvent struct {
	who   string
	at    time.Time
	cause error
}

func (l *stepDownLog) add(list *[]stepDownEvent, who string, cause error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	*list = append(*list, stepDownEvent{who: who, at: time.Now(), cause: cause})
}

// since returns the events of list at or after t.
func (l *stepDownLog) since(list *[]stepDownEvent, t time.Time) []stepDownEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []stepDownEvent
	for _, e := range *list {
		if !e.at.Before(t) {
			out = append(out, e)
		}
	}
	return out
}

// stepDownElector stands for the Lease as the hub does (internal/discovery/
// kube's elect: again after every term) and, while its term lasts, writes
// a ConfigMap every 100 ms under the term, as the hub writes status.
type stepDownElector struct {
	id  string
	dyn dynamic.Interface
	log *stepDownLog

	mu   sync.Mutex
	term context.Context
}

func (e *stepDownElector) current() context.Context {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.term
}

func (e *stepDownElector) elect(ctx context.Context, t *testing.T) {
	lock := leaderelection.NewLeaseLock(e.dyn, "default", "stepdown", e.id)
	for ctx.Err() == nil {
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock: lock, Name: "stepdown", ReleaseOnCancel: true,
			LeaseDuration: stepDownLease, RenewDeadline: stepDownRenew, RetryPeriod: stepDownRetry,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(term context.Context) {
					e.mu.Lock()
					e.term = term
					e.mu.Unlock()
					e.log.add(&e.log.starts, e.id, nil)
				},
				OnStoppedLeading: func() {
					e.mu.Lock()
					term := e.term
					e.term = nil
					e.mu.Unlock()
					if term != nil {
						e.log.add(&e.log.stops, e.id, context.Cause(term))
					}
				},
			},
		})
		if err != nil {
			t.Error(err)
			return
		}
		le.Run(ctx)
	}
}

func (e *stepDownElector) write(ctx context.Context) {
	cms := e.dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("default")
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		term := e.current()
		if term == nil || term.Err() != nil {
			continue
		}
		e.log.add(&e.log.beliefs, e.id, nil)
		patch := fmt.Sprintf(`{"data":{"writer":%q,"at":%q}}`, e.id, time.Now().Format(time.RFC3339Nano))
		if _, err := cms.Patch(term, "stepdown-writes", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err == nil {
			e.log.add(&e.log.writes, e.id, nil)
		}
	}
}

// TestLeaderStepsDownWhenAPIServerFreezes (issue 41): three electors on one Lease of a real
// kube-apiserver, which is then frozen (SIGSTOP) for 30 s. The leader
// stops leading (its term ends, OnStoppedLeading) within the renew
// deadline, without the API server's answer; nobody leads or writes while
// it is frozen; after SIGCONT exactly one elector leads within the lease
// duration, and no two electors believe they lead, or write, in the same
// second.
func TestLeaderStepsDownWhenAPIServerFreezes(t *testing.T) {
	if testing.Short() {
		t.Skip("freezes an API server for 30 s")
	}
	cluster, err := kubetest.StartCluster(context.Background(), kubetest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Stop() })
	pid, _ := cluster.PIDs()

	admin := cluster.AdminConfig()
	kc := kubernetes.NewForConfigOrDie(admin)
	if _, err := kc.CoreV1().ConfigMaps("default").Create(context.Background(),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "stepdown-writes"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	log := &stepDownLog{}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	var electors []*stepDownElector
	for i := range 3 {
		// Each elector has its own connection, as a replica would.
		cfg := rest.CopyConfig(admin)
		cfg.UserAgent = fmt.Sprintf("stepdown-%d", i)
		cfg.Dial = (&net.Dialer{}).DialContext // a transport of its own (client-go shares one per TLS config)
		e := &stepDownElector{id: fmt.Sprintf("elector-%d", i), dyn: dynamic.NewForConfigOrDie(cfg), log: log}
		electors = append(electors, e)
		wg.Add(2)
		go func() { defer wg.Done(); e.elect(ctx, t) }() // owned by the test: ends with cancel
		go func() { defer wg.Done(); e.write(ctx) }()    // owned by the test: ends with cancel
	}
	// Runs first (cleanups run last first): the electors release the
	// Lease and the cluster stops gracefully only once it runs again.
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })

	leader := waitOneLeader(t, electors, 10*time.Second)
	time.Sleep(2 * stepDownRetry) // a renewal or two, and writes
	if len(log.since(&log.writes, time.Time{})) == 0 {
		t.Fatal("no writes before the freeze")
	}

	frozen := time.Now()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Logf("kube-apiserver (pid %d) stopped; %s led", pid, leader.id)
	var stepDown time.Duration
	deadline := time.Now().Add(stepDownRenew + stepDownSlack)
	for {
		if stops := log.since(&log.stops, frozen); len(stops) > 0 {
			if stops[0].who != leader.id || !errors.Is(stops[0].cause, leaderelection.ErrNotRenewed) {
				t.Errorf("stopped leading: %s (%v), want %s for want of a renewal", stops[0].who, stops[0].cause, leader.id)
			}
			stepDown = stops[0].at.Sub(frozen)
			break
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGCONT)
			t.Fatalf("%s still leads %s after the API server froze (renew deadline %s)", leader.id, time.Since(frozen), stepDownRenew)
		}
		time.Sleep(poll)
	}
	t.Logf("%s stopped leading %s after the API server froze (renew deadline %s, lease duration %s)",
		leader.id, stepDown.Round(time.Millisecond), stepDownRenew, stepDownLease)
	if stepDown > stepDownRenew+stepDownSlack {
		t.Errorf("step-down took %s: past the renew deadline %s", stepDown, stepDownRenew)
	}

	time.Sleep(time.Until(frozen.Add(stepDownFreeze)))
	// Nobody led, nor wrote, from the step-down to the end of the freeze.
	for _, b := range log.since(&log.beliefs, frozen.Add(stepDown)) {
		t.Errorf("%s believed it led at +%s, while the API server was frozen", b.who, b.at.Sub(frozen).Round(time.Millisecond))
	}
	// (A write answered as the signal came may be counted just after it.)
	for _, w := range log.since(&log.writes, frozen.Add(time.Second)) {
		t.Errorf("%s wrote at +%s, while the API server was frozen", w.who, w.at.Sub(frozen).Round(time.Millisecond))
	}
	resumed := time.Now()
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}

	next := waitOneLeader(t, electors, stepDownLease+stepDownSlack)
	t.Logf("%s leads %s after the API server resumed (lease duration %s)", next.id, time.Since(resumed).Round(time.Millisecond), stepDownLease)
	waitWrite(t, log, next.id, resumed)
	time.Sleep(3 * stepDownRetry) // renewals of the new term
	cancel()
	wg.Wait()
	ended := time.Now()

	// No two electors in the same second, after the resume: neither in
	// believing they led nor in writing.
	for _, list := range []struct {
		what   string
		events []stepDownEvent
	}{{"believed they led", log.since(&log.beliefs, resumed)}, {"wrote", log.since(&log.writes, resumed)}} {
		bySecond := map[int64]map[string]bool{}
		for _, e := range list.events {
			if e.at.After(ended) {
				continue
			}
			s := e.at.Unix()
			if bySecond[s] == nil {
				bySecond[s] = map[string]bool{}
			}
			bySecond[s][e.who] = true
		}
		for s, who := range bySecond {
			if len(who) > 1 {
				t.Errorf("%s in the same second (%s): %s", list.what, time.Unix(s, 0).UTC().Format(time.TimeOnly), strings.Join(sortedKeys(who), ", "))
			}
		}
	}
	t.Logf("writes: %d before the freeze, %d after the resume", len(log.writes)-len(log.since(&log.writes, frozen)), len(log.since(&log.writes, resumed)))
}

// waitOneLeader waits until exactly one elector's term lasts, and returns it.
func waitOneLeader(t *testing.T, electors []*stepDownElector, within time.Duration) *stepDownElector {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		var leading []*stepDownElector
		for _, e := range electors {
			if term := e.current(); term != nil && term.Err() == nil {
				leading = append(leading, e)
			}
		}
		if len(leading) == 1 {
			return leading[0]
		}
		if len(leading) > 1 {
			t.Fatalf("%d electors lead at once", len(leading))
		}
		if time.Now().After(deadline) {
			t.Fatalf("no elector leads within %s", within)
		}
		time.Sleep(poll)
	}
}

// waitWrite waits for a write of who after t.
func waitWrite(t *testing.T, log *stepDownLog, who string, after time.Time) {
	t.Helper()
	deadline := time.Now().Add(stepDownRetry + stepDownSlack)
	for time.Now().Before(deadline) {
		for _, w := range log.since(&log.writes, after) {
			if w.who == who {
				return
			}
		}
		time.Sleep(poll)
	}
	t.Errorf("the new leader %s wrote nothing", who)
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
