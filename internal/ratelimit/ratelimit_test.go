package ratelimit

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// clock is a settable time for deterministic buckets.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Unix(1_700_000_000, 0)} }

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// step is one Acquire in a scripted sequence: after advancing the clock by
// wait, a call is admitted (want "") or refused by the kind named, with the
// retry hint given (0: not checked).
type step struct {
	wait      time.Duration
	want      Kind
	retry     time.Duration
	releaseIt bool // release the call right away when admitted
}

func TestAcquire(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lim   Limits
		steps []step
	}{
		{"burst then rate", Limits{Rate: 5, Burst: 2}, []step{
			{releaseIt: true}, {releaseIt: true},
			{want: KindRate, retry: 200 * time.Millisecond},
			{wait: 100 * time.Millisecond, want: KindRate, retry: 100 * time.Millisecond},
			{wait: 100 * time.Millisecond, releaseIt: true},
			{want: KindRate, retry: 200 * time.Millisecond},
		}},
		{"burst defaults to ceil(rate)", Limits{Rate: 2.5}, []step{
			{releaseIt: true}, {releaseIt: true}, {releaseIt: true},
			{want: KindRate, retry: 400 * time.Millisecond},
		}},
		{"slow rate rounds retry up to the ms", Limits{Rate: 3, Burst: 1}, []step{
			{releaseIt: true},
			{want: KindRate, retry: 334 * time.Millisecond},
		}},
		{"in flight", Limits{MaxInFlight: 2}, []step{
			{}, {},
			{want: KindInFlight, retry: DefaultInFlightRetryAfter},
			{wait: time.Hour, want: KindInFlight},
		}},
		{"an in-flight refusal takes no token", Limits{Rate: 1, Burst: 2, MaxInFlight: 1}, []step{
			{},
			{want: KindInFlight}, {want: KindInFlight}, {want: KindInFlight},
		}},
		{"unlimited", Limits{}, []step{{}, {}, {}, {}, {}, {}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClock()
			l := New(Options{Name: "caller", Now: c.now})
			for i, s := range tc.steps {
				c.advance(s.wait)
				release, r := l.Acquire("k", tc.lim)
				switch {
				case s.want == "" && r != nil:
					t.Fatalf("step %d: refused: %v", i, r)
				case s.want != "" && r == nil:
					t.Fatalf("step %d: admitted, want a %s refusal", i, s.want)
				case r != nil && r.Kind != s.want:
					t.Fatalf("step %d: refused by %s, want %s", i, r.Kind, s.want)
				case r != nil && s.retry != 0 && r.RetryAfter != s.retry:
					t.Fatalf("step %d: retry after %s, want %s", i, r.RetryAfter, s.retry)
				case r == nil && s.releaseIt:
					release()
				}
			}
		})
	}
}

// TestInFlightAfterRelease: a release gives the slot back, and only its own.
func TestInFlightAfterRelease(t *testing.T) {
	l := New(Options{Name: "upstream"})
	lim := Limits{MaxInFlight: 1}
	release, r := l.Acquire("a", lim)
	if r != nil {
		t.Fatal(r)
	}
	if _, r := l.Acquire("a", lim); r == nil || r.InFlight != 1 {
		t.Fatalf("second call of a: %v, want an in-flight refusal with 1 in flight", r)
	}
	if rel, r := l.Acquire("b", lim); r != nil {
		t.Fatalf("b is refused while a is at its bound: %v", r)
	} else {
		defer rel()
	}
	release()
	if rel, r := l.Acquire("a", lim); r != nil {
		t.Fatalf("a after release: %v", r)
	} else {
		rel()
	}
}

// TestRefusalText: the caller reads which limit, its value, the setting and
// when to retry.
func TestRefusalText(t *testing.T) {
	c := newClock()
	l := New(Options{Name: "caller", Now: c.now})
	lim := Limits{Rate: 5, Burst: 1, Where: "auth.tokens[ci].limits"}
	l.Acquire("ci", lim)
	_, r := l.Acquire("ci", lim)
	want := `rate limit: caller "ci" is over its limit of 5 calls/s (auth.tokens[ci].limits.rate): retry after 0.2s`
	if r == nil || r.Error() != want {
		t.Fatalf("refusal %v\nwant      %s", r, want)
	}

	u := New(Options{Name: "upstream", InFlightRetryAfter: 1500 * time.Millisecond})
	ulim := Limits{MaxInFlight: 1, Where: "servers[github].limits"}
	u.Acquire("github", ulim)
	_, r = u.Acquire("github", ulim)
	want = `rate limit: upstream "github" has 1 calls in flight, its limit (servers[github].limits.maxInFlight): retry after 1.5s`
	if r == nil || r.Error() != want {
		t.Fatalf("refusal %v\nwant      %s", r, want)
	}
}

// TestLimitsFollowChanges: a reloaded limit applies to a key that has state.
func TestLimitsFollowChanges(t *testing.T) {
	c := newClock()
	l := New(Options{Now: c.now})
	for range 3 {
		if rel, r := l.Acquire("k", Limits{MaxInFlight: 5}); r != nil {
			t.Fatal(r)
		} else {
			defer rel()
		}
	}
	if _, r := l.Acquire("k", Limits{MaxInFlight: 3}); r == nil {
		t.Fatal("lowered maxInFlight not applied")
	}
	if _, r := l.Acquire("k", Limits{MaxInFlight: 5, Rate: 1, Burst: 1}); r != nil {
		t.Fatalf("first call under a new rate: %v", r)
	}
	if _, r := l.Acquire("k", Limits{MaxInFlight: 5, Rate: 1, Burst: 1}); r == nil || r.Kind != KindRate {
		t.Fatalf("second call under rate 1/s: %v", r)
	}
	if rel, r := l.Acquire("k", Limits{MaxInFlight: 5}); r != nil {
		t.Fatalf("rate removed, still refused: %v", r)
	} else {
		defer rel()
	}
}

// TestShare: each of n replicas applies rate/n and whole calls rounded up
// (at least 1); a bound protecting something per replica is not divided.
func TestShare(t *testing.T) {
	for _, tc := range []struct {
		name string
		lim  Limits
		n    int
		want Limits
	}{
		{"one replica", Limits{Rate: 10, MaxInFlight: 5}, 1, Limits{Rate: 10, MaxInFlight: 5}},
		{"no count", Limits{Rate: 10}, 0, Limits{Rate: 10}},
		{"three replicas, burst from the rate", Limits{Rate: 10}, 3, Limits{Rate: 10.0 / 3, Burst: 4}},
		{"burst and in flight rounded up", Limits{Rate: 6, Burst: 7, MaxInFlight: 5}, 3, Limits{Rate: 2, Burst: 3, MaxInFlight: 2}},
		{"at least one call", Limits{Rate: 0.5, Burst: 1, MaxInFlight: 1}, 4, Limits{Rate: 0.125, Burst: 1, MaxInFlight: 1}},
		{"in flight alone", Limits{MaxInFlight: 9}, 2, Limits{MaxInFlight: 5}},
		{"per replica", Limits{Rate: 10, MaxInFlight: 4, PerReplica: true}, 3, Limits{Rate: 10, MaxInFlight: 4, PerReplica: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.lim.Share(tc.n); got != tc.want {
				t.Fatalf("%+v shared by %d: %+v, want %+v", tc.lim, tc.n, got, tc.want)
			}
		})
	}
}

// TestSharesFollowReplicas: a key's bucket and in-flight bound take the
// share of the replicas counted at each call, so a replica come or gone
// changes the state of keys that already have one.
func TestSharesFollowReplicas(t *testing.T) {
	c := newClock()
	var n atomic.Int64
	n.Store(1)
	l := New(Options{Name: "caller", Now: c.now, Replicas: func() int { return int(n.Load()) }})
	lim := Limits{Rate: 10, MaxInFlight: 4, Where: "limits.perCaller"}
	admitted := func() (got int) {
		for range 100 {
			if rel, r := l.Acquire("k", lim); r == nil {
				got++
				rel()
			}
		}
		return got
	}
	if got := admitted(); got != 10 {
		t.Fatalf("one replica: %d calls of a full bucket, want the burst of 10", got)
	}
	n.Store(3)
	c.advance(time.Second) // refilled at 10/s, kept to the new burst of 4
	if got := admitted(); got != 4 {
		t.Fatalf("three replicas, a second later: %d calls, want the burst share of 4", got)
	}
	c.advance(600 * time.Millisecond) // 2 tokens at 3.33/s (4 at 10/s)
	if got := admitted(); got != 2 {
		t.Fatalf("three replicas, 0.6s later: %d calls, want 2", got)
	}
	for range 2 {
		if rel, r := l.Acquire("k", Limits{MaxInFlight: 4}); r != nil {
			t.Fatal(r)
		} else {
			defer rel()
		}
	}
	_, r := l.Acquire("k", Limits{MaxInFlight: 4, Where: "limits.perCaller"})
	want := `rate limit: caller "k" has 2 calls in flight, its limit here (limits.perCaller.maxInFlight 4 across 3 replicas, 2 here): retry after 1s`
	if r == nil || r.Error() != want {
		t.Fatalf("refusal %v\nwant      %s", r, want)
	}
	n.Store(0) // no count: one replica
	if rel, r := l.Acquire("k", Limits{MaxInFlight: 4}); r != nil {
		t.Fatalf("back to one replica, 3rd call of 4 in flight: %v", r)
	} else {
		defer rel()
	}
}

// TestSharedRefusalText: a refusal under a shared bound names the setting's
// value, the replicas and this replica's share.
func TestSharedRefusalText(t *testing.T) {
	c := newClock()
	l := New(Options{Name: "caller", Now: c.now, Replicas: func() int { return 3 }})
	lim := Limits{Rate: 10, Burst: 1, Where: "limits.perCaller"}
	l.Acquire("ci", lim)
	_, r := l.Acquire("ci", lim)
	want := `rate limit: caller "ci" is over its limit of 10 calls/s across 3 replicas, 3.33/s here (limits.perCaller.rate): retry after 0.3s`
	if r == nil || r.Error() != want || r.Replicas != 3 || r.Limits.Rate != 10 {
		t.Fatalf("refusal %+v: %v\nwant      %s", r, r, want)
	}
	lim.PerReplica = true
	l.Acquire("stdio", lim)
	_, r = l.Acquire("stdio", lim)
	want = `rate limit: caller "stdio" is over its limit of 10 calls/s (limits.perCaller.rate): retry after 0.1s`
	if r == nil || r.Error() != want {
		t.Fatalf("refusal %v\nwant      %s", r, want)
	}
}

// TestKeysAreBounded: a flood of distinct keys keeps at most MaxKeys states.
func TestKeysAreBounded(t *testing.T) {
	l := New(Options{MaxKeys: 100})
	for i := range 10_000 {
		if rel, r := l.Acquire(fmt.Sprintf("anonymous@10.0.%d.%d", i/256, i%256), Limits{Rate: 1, Burst: 1, MaxInFlight: 1}); r == nil {
			rel()
		}
	}
	if n := l.len(); n > 100 {
		t.Fatalf("%d keys kept, want at most 100", n)
	}
	// Unlimited calls keep no state at all.
	u := New(Options{})
	for i := range 1000 {
		u.Acquire(fmt.Sprint(i), Limits{})
	}
	if u.len() != 0 {
		t.Fatalf("unlimited calls kept %d keys", u.len())
	}
}

// TestConcurrentInFlight: however many goroutines race, at most MaxInFlight
// calls of a key run at once, and every slot comes back.
func TestConcurrentInFlight(t *testing.T) {
	l := New(Options{Name: "caller"})
	const bound = 4
	lim := Limits{MaxInFlight: bound}
	var running, peak, admitted, refused atomic.Int64
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for range 200 {
				release, r := l.Acquire("k", lim)
				if r != nil {
					refused.Add(1)
					continue
				}
				admitted.Add(1)
				n := running.Add(1)
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				time.Sleep(10 * time.Microsecond)
				running.Add(-1)
				release()
			}
		})
	}
	wg.Wait()
	if p := peak.Load(); p > bound {
		t.Fatalf("%d calls ran at once, bound %d", p, bound)
	}
	if admitted.Load() == 0 || refused.Load() == 0 {
		t.Fatalf("admitted %d, refused %d: the test did not contend", admitted.Load(), refused.Load())
	}
	for range bound {
		if _, r := l.Acquire("k", lim); r != nil {
			t.Fatalf("slots lost after the race: %v", r)
		}
	}
}

// TestConcurrentRate: racing goroutines get no more than the burst out of a
// bucket whose clock stands still.
func TestConcurrentRate(t *testing.T) {
	c := newClock()
	l := New(Options{Now: c.now})
	lim := Limits{Rate: 10, Burst: 25}
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 50 {
				if release, r := l.Acquire("k", lim); r == nil {
					admitted.Add(1)
					release()
				} else if !strings.Contains(r.Error(), "retry after") {
					t.Errorf("refusal without a retry hint: %v", r)
				}
			}
		})
	}
	wg.Wait()
	if n := admitted.Load(); n != 25 {
		t.Fatalf("%d calls admitted, want the burst of 25", n)
	}
}

// BenchmarkAcquire is the cost of one admitted call on a configured key.
func BenchmarkAcquire(b *testing.B) {
	l := New(Options{})
	lim := Limits{Rate: 1e9, Burst: 1 << 30, MaxInFlight: 1 << 20}
	b.ReportAllocs()
	for b.Loop() {
		release, _ := l.Acquire("caller", lim)
		release()
	}
}
