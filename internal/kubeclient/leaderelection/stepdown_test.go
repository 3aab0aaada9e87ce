package leaderelection

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Modes of fakeLock: how the API server behind it answers.
const (
	answer = iota // as a Lease would
	hang          // never: each request waits for its context's end
	fail          // at once, with an error
)

// fakeLock is a Lease in memory behind an API server that can be made to
// hang or fail; it records every request's context deadline.
type fakeLock struct {
	identity string
	mode     atomic.Int32

	mu        sync.Mutex
	record    *LeaderElectionRecord
	updates   int
	lastOK    time.Time     // when the last Update that succeeded arrived
	unbounded int           // requests whose context had no deadline
	longest   time.Duration // the longest time a request's deadline allowed
}

func (l *fakeLock) request(ctx context.Context) error {
	l.mu.Lock()
	if d, ok := ctx.Deadline(); !ok {
		l.unbounded++
	} else if left := time.Until(d); left > l.longest {
		l.longest = left
	}
	l.mu.Unlock()
	switch l.mode.Load() {
	case hang:
		<-ctx.Done()
		return ctx.Err()
	case fail:
		return errors.New("etcdserver: request timed out")
	}
	return nil
}

func (l *fakeLock) Get(ctx context.Context) (*LeaderElectionRecord, []byte, error) {
	if err := l.request(ctx); err != nil {
		return nil, nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.record == nil {
		return nil, nil, notFound()
	}
	r := *l.record
	return &r, []byte(r.HolderIdentity + r.RenewTime.String()), nil
}

func (l *fakeLock) Create(ctx context.Context, r LeaderElectionRecord) error { return l.Update(ctx, r) }

func (l *fakeLock) Update(ctx context.Context, r LeaderElectionRecord) error {
	arrived := time.Now()
	if err := l.request(ctx); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.record = &r
	l.updates++
	l.lastOK = arrived
	return nil
}

func notFound() error {
	return apierrors.NewNotFound(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "lease")
}

func (l *fakeLock) Identity() string { return l.identity }
func (l *fakeLock) Describe() string { return "test/lease" }

// leader is one elector on a fakeLock with what its callbacks saw.
type leader struct {
	mu      sync.Mutex
	term    context.Context
	started time.Time
	stopped time.Time
	stops   int
	done    chan struct{}
}

func (c *leader) get() (term context.Context, stopped time.Time, stops int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.term, c.stopped, c.stops
}

func runLeader(t *testing.T, lock Lock, lease, renew, retry time.Duration) *leader {
	t.Helper()
	c := &leader{done: make(chan struct{})}
	le, err := NewLeaderElector(LeaderElectionConfig{
		Lock: lock, LeaseDuration: lease, RenewDeadline: renew, RetryPeriod: retry, ReleaseOnCancel: true,
		Callbacks: LeaderCallbacks{
			OnStartedLeading: func(term context.Context) {
				c.mu.Lock()
				c.term, c.started = term, time.Now()
				c.mu.Unlock()
			},
			OnStoppedLeading: func() {
				c.mu.Lock()
				c.stopped, c.stops = time.Now(), c.stops+1
				c.mu.Unlock()
			},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { // owned by the test: ends with cancel, waited for in Cleanup
		defer close(c.done)
		le.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-c.done })
	return c
}

// TestStepDown: a leader whose Lease requests hang or fail ends its term
// and calls OnStoppedLeading within RenewDeadline of its last renewal
// (so within RenewDeadline + RetryPeriod of the API server's failure),
// without waiting for a release; every request it made had a deadline no
// later than RenewDeadline; a write after the step-down is refused before
// it is sent.
func TestStepDown(t *testing.T) {
	const (
		lease = 1500 * time.Millisecond
		renew = time.Second
		retry = 200 * time.Millisecond
		slack = 250 * time.Millisecond // a loaded machine's scheduling
	)
	for _, tc := range []struct {
		name string
		mode int32
	}{
		{"renewal hangs", hang},
		{"renewal fails", fail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lock := &fakeLock{identity: "a"}
			c := runLeader(t, lock, lease, renew, retry)
			waitFor(t, 2*time.Second, "a leads", func() bool { term, _, _ := c.get(); return term != nil })
			time.Sleep(3 * retry) // a few renewals
			term, _, _ := c.get()
			if term.Err() != nil {
				t.Fatalf("term over while renewing: %v", context.Cause(term))
			}

			broke := time.Now()
			lock.mode.Store(tc.mode)
			lock.mu.Lock()
			lastRenewal := lock.lastOK // read after the mode changed: no renewal succeeds any more
			lock.mu.Unlock()
			waitFor(t, renew+retry+slack+time.Second, "OnStoppedLeading", func() bool { _, _, n := c.get(); return n > 0 })
			_, stopped, stops := c.get()
			if stops != 1 {
				t.Errorf("OnStoppedLeading called %d times", stops)
			}
			sinceRenewal, sinceBreak := stopped.Sub(lastRenewal), stopped.Sub(broke)
			t.Logf("stopped leading %s after the last renewal, %s after the API server broke (renew deadline %s, retry period %s)",
				sinceRenewal.Round(time.Millisecond), sinceBreak.Round(time.Millisecond), renew, retry)
			if sinceRenewal > renew+slack {
				t.Errorf("stopped leading %s after the last renewal: past the renew deadline %s", sinceRenewal, renew)
			}
			if sinceBreak > renew+retry+slack {
				t.Errorf("stopped leading %s after the break: past renew deadline + retry period", sinceBreak)
			}
			if term.Err() == nil || !errors.Is(context.Cause(term), ErrNotRenewed) {
				t.Errorf("term after the step-down: err %v, cause %v", term.Err(), context.Cause(term))
			}

			// A write under the ended term is refused before it is sent.
			var served atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served.Add(1) }))
			defer srv.Close()
			req, err := http.NewRequestWithContext(term, http.MethodPatch, srv.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp, err := srv.Client().Do(req); err == nil {
				resp.Body.Close()
				t.Error("a write after the step-down was sent")
			}
			if served.Load() != 0 {
				t.Error("the server saw a write after the step-down")
			}

			lock.mu.Lock()
			defer lock.mu.Unlock()
			if lock.unbounded > 0 || lock.longest > renew {
				t.Errorf("Lease requests: %d without a deadline, the longest allowed %s (renew deadline %s)", lock.unbounded, lock.longest, renew)
			}
		})
	}
}

// TestAcquireBounded: a candidate's requests while it acquires are bounded
// by the renew deadline: one that hangs ends, and the candidate takes the
// lease once the API server answers again.
func TestAcquireBounded(t *testing.T) {
	lock := &fakeLock{identity: "a"}
	lock.mode.Store(hang)
	c := runLeader(t, lock, 1500*time.Millisecond, time.Second, 200*time.Millisecond)
	time.Sleep(1500 * time.Millisecond) // the first attempt hangs and ends at its deadline
	lock.mode.Store(answer)
	waitFor(t, 2*time.Second, "a leads after the API server answered again", func() bool { term, _, _ := c.get(); return term != nil })
	lock.mu.Lock()
	defer lock.mu.Unlock()
	if lock.unbounded > 0 || lock.longest > time.Second {
		t.Errorf("acquiring requests: %d without a deadline, the longest allowed %s", lock.unbounded, lock.longest)
	}
}

// TestTermEndsByTheClock: the term is over once its end has passed, for
// Err and Done, even when the timer that closes Done has not fired (a
// late timer on a loaded machine: here, stopped).
func TestTermEndsByTheClock(t *testing.T) {
	term := newTerm(context.Background(), time.Now().Add(50*time.Millisecond))
	term.timer.Stop()
	if term.Err() != nil {
		t.Fatal("over at once")
	}
	if !term.extend(time.Now().Add(100 * time.Millisecond)) {
		t.Fatal("not extended")
	}
	time.Sleep(60 * time.Millisecond)
	if term.Err() != nil {
		t.Fatal("over at the end it had before the extension")
	}
	time.Sleep(50 * time.Millisecond)
	select {
	case <-term.Done():
	default:
		t.Fatal("Done not closed after the end")
	}
	if term.Err() == nil || !errors.Is(context.Cause(term), ErrNotRenewed) {
		t.Fatalf("err %v, cause %v", term.Err(), context.Cause(term))
	}
	if term.extend(time.Now().Add(time.Hour)) {
		t.Fatal("an ended term was extended")
	}
	// A child made before the end follows it; one made after is over.
	child, cancel := context.WithTimeout(term, time.Hour)
	defer cancel()
	if child.Err() == nil {
		t.Fatal("a child of an ended term lasts")
	}
}

// TestReleaseKeepsAnothersLease: a release never overwrites a Lease that
// another candidate holds meanwhile.
func TestReleaseKeepsAnothersLease(t *testing.T) {
	lock := &fakeLock{identity: "a"}
	le, err := NewLeaderElector(LeaderElectionConfig{Lock: lock, LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second,
		RetryPeriod: time.Second, Callbacks: LeaderCallbacks{OnStartedLeading: func(context.Context) {}, OnStoppedLeading: func() {}}})
	if err != nil {
		t.Fatal(err)
	}
	if !le.tryAcquireOrRenew(context.Background()) {
		t.Fatal("not acquired")
	}
	lock.mu.Lock()
	lock.record = &LeaderElectionRecord{HolderIdentity: "b", LeaseDurationSeconds: 3}
	before := lock.updates
	lock.mu.Unlock()
	le.release()
	lock.mu.Lock()
	defer lock.mu.Unlock()
	if lock.updates != before || lock.record.HolderIdentity != "b" {
		t.Fatalf("release overwrote b's lease: %+v", *lock.record)
	}
}
