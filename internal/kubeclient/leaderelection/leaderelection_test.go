package leaderelection

import (
	"context"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/purko-io/mcp-hub/internal/kubeclient"
)

// candidate is one elector on the shared Lease, with what its callbacks saw.
type candidate struct {
	cancel  context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	term    context.Context // the context of its current term, if it leads
	stopped int
}

func (c *candidate) leading() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.term != nil && c.term.Err() == nil
}

func start(t *testing.T, lock Lock, lease, renew, retry time.Duration) *candidate {
	t.Helper()
	c := &candidate{done: make(chan struct{})}
	le, err := NewLeaderElector(LeaderElectionConfig{
		Lock: lock, LeaseDuration: lease, RenewDeadline: renew, RetryPeriod: retry, ReleaseOnCancel: true, Name: "test",
		Callbacks: LeaderCallbacks{
			OnStartedLeading: func(term context.Context) { c.mu.Lock(); c.term = term; c.mu.Unlock() },
			OnStoppedLeading: func() { c.mu.Lock(); c.stopped++; c.mu.Unlock() },
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	go func() { // owned by the test: ends with cancel
		defer close(c.done)
		le.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-c.done })
	return c
}

func fakeCluster() *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		kubeclient.Leases.GVR: "LeaseList",
	})
}

func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	t0 := time.Now()
	for !cond() {
		if time.Since(t0) > within {
			t.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Since(t0)
}

// TestOneLeaderAndHandOver: of two candidates on one Lease one leads, and
// the Lease says so; cancelled, it releases the Lease and the other takes
// it at once rather than after the lease duration.
func TestOneLeaderAndHandOver(t *testing.T) {
	dyn := fakeCluster()
	const lease = 3 * time.Second
	a := start(t, NewLeaseLock(dyn, "hub", "mcp-hub", "a"), lease, 2*time.Second, 100*time.Millisecond)
	waitFor(t, 2*time.Second, "a leads", a.leading)
	b := start(t, NewLeaseLock(dyn, "hub", "mcp-hub", "b"), lease, 2*time.Second, 100*time.Millisecond)
	time.Sleep(500 * time.Millisecond) // b tries a few times
	if b.leading() {
		t.Fatal("b leads while a holds the lease")
	}
	l, err := kubeclient.Leases.In(dyn, "hub").Get(context.Background(), "mcp-hub")
	if err != nil {
		t.Fatal(err)
	}
	if h := l.Spec.HolderIdentity; h == nil || *h != "a" || *l.Spec.LeaseDurationSeconds != 3 {
		t.Fatalf("lease spec %+v", l.Spec)
	}

	a.cancel()
	<-a.done
	if a.leading() || a.stopped != 1 {
		t.Fatalf("a after cancel: leading %v, stopped %d", a.leading(), a.stopped)
	}
	took := waitFor(t, lease, "b leads", b.leading)
	if took > lease/2 {
		t.Errorf("hand-over took %s: the released lease was not taken at once", took)
	}
}

func TestConfigRefused(t *testing.T) {
	lock := NewLeaseLock(fakeCluster(), "hub", "mcp-hub", "a")
	cb := LeaderCallbacks{OnStartedLeading: func(context.Context) {}, OnStoppedLeading: func() {}}
	for _, tc := range []struct {
		name                string
		lease, renew, retry time.Duration
	}{
		{"renew not below lease", 10 * time.Second, 10 * time.Second, time.Second},
		{"retry too long", 15 * time.Second, 10 * time.Second, 9 * time.Second},
		{"no retry", 15 * time.Second, 10 * time.Second, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewLeaderElector(LeaderElectionConfig{Lock: lock, LeaseDuration: tc.lease, RenewDeadline: tc.renew, RetryPeriod: tc.retry, Callbacks: cb}); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}
