package kube

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
)

// syncBuffer is a log written by the writer's goroutines and read by the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestLeaderStepsDown: a leading writer whose Lease requests fail says it
// stopped leading within the renew deadline and writes nothing more, not
// even a new report; once the Lease answers again it leads and writes
// again.
func TestLeaderStepsDown(t *testing.T) {
	const (
		lease = 1500 * time.Millisecond
		renew = time.Second
		retry = 200 * time.Millisecond
		slack = 300 * time.Millisecond
	)
	connected := Status{Origin: ghOrigin, Connected: true, Reason: "Connected", Message: "2 tools", ToolCount: 2}
	down := Status{Origin: ghOrigin, Reason: ReasonUnavailable, Message: "refused"}

	plain, all, rec := fakeStatusCluster(t, ghServer())
	dyn := plain.dyn.(*dynamicfake.FakeDynamicClient)
	var broken atomic.Bool
	dyn.PrependReactor("*", "leases", func(clienttesting.Action) (bool, runtime.Object, error) {
		if broken.Load() {
			return true, nil, errors.New("etcdserver: request timed out")
		}
		return false, nil, nil
	})
	logs := &syncBuffer{}
	w := newStatusWriter(dyn, &Election{Namespace: "purko", LeaseName: "mcp-hub", Identity: "a",
		LeaseDuration: lease, RenewDeadline: renew, RetryPeriod: retry}, zerolog.New(logs))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { // owned by the test: ends with cancel
		defer close(done)
		w.run(ctx, all)
	}()
	t.Cleanup(func() { cancel(); <-done })

	w.report([]Status{connected})
	waitUntil(t, 3*time.Second, "the leader writes", func() bool { n, _, _ := rec.last(); return n == 1 })

	broke := time.Now()
	broken.Store(true)
	waitUntil(t, renew+retry+slack, "no longer leading", func() bool { return strings.Contains(logs.String(), "no longer leading") })
	t.Logf("stopped leading %s after the Lease broke (renew deadline %s)", time.Since(broke).Round(time.Millisecond), renew)
	if !strings.Contains(logs.String(), `"level":"warn"`) || !strings.Contains(logs.String(), "not renewed") {
		t.Errorf("the step-down is not told as a failed renewal:\n%s", logs.String())
	}

	w.report([]Status{down})
	time.Sleep(3 * retry)
	if n, _, evs := rec.last(); n != 1 || len(evs) != 0 {
		t.Fatalf("written after the step-down: %d applies, Events %v", n, evs)
	}

	broken.Store(false)
	waitUntil(t, lease+2*retry+slack, "the writer leads and writes again", func() bool { n, _, evs := rec.last(); return n == 2 && len(evs) == 1 })
}

func waitUntil(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
