// Package ratelimit bounds the calls made under one key (a caller, an
// upstream server): how often (a token bucket) and how many at once (a
// count of calls in flight). A call over either bound is refused at once
// with how long to wait before trying again, never queued: nothing waits
// without bound, and a key at its bounds takes nothing from the others.
//
// Replicas of one hub share each bound (Options.Replicas): with N of them,
// each replica applies its share, so a round-robin balancer spreads a key's
// calls over replicas whose shares add up to the configured bound. A
// replica keeps no state of the others'; the share is what makes the bound
// fleet-wide. See Limits.Share for how a bound is divided.
//
// It imports nothing of the hub's: the server decides which key and which
// Limits a call runs under, and how many replicas there are.
package ratelimit

import (
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"
)

// Limits are the bounds of one key. A zero value means no bound.
type Limits struct {
	// Rate is the calls per second the bucket refills with; 0: no rate.
	Rate float64
	// Burst is how many calls may run back to back after an idle spell;
	// with a Rate and Burst below 1 it is ceil(Rate).
	Burst int
	// MaxInFlight bounds the calls running at once; 0: no bound.
	MaxInFlight int
	// Where names the setting the limits come from, such as
	// "limits.perCaller" or "auth.tokens[ci].limits", so a refusal tells
	// the operator which one to change.
	Where string
	// PerReplica says the bounds protect something every replica has its
	// own of (a stdio server: a child process per replica), so each
	// replica applies them whole instead of its share.
	PerReplica bool
}

// Share is the part of l one of n replicas applies, so that the n shares
// add up to l across a fleet whose balancer spreads calls evenly:
//
//   - Rate is Rate/n: the fleet refills at Rate exactly.
//   - Burst is ceil(burst/n) and MaxInFlight ceil(MaxInFlight/n): whole
//     calls, at least 1, since a share of 0 would refuse every call. The
//     fleet may so admit up to n-1 calls more than configured at once
//     (10 across 3 replicas: 4+4+4), never fewer.
//
// With n <= 1 or PerReplica, the share is l.
func (l Limits) Share(n int) Limits {
	if n <= 1 || l.PerReplica {
		return l
	}
	s := l
	if l.Rate > 0 {
		s.Rate = l.Rate / float64(n)
		s.Burst = ceilDiv(l.burst(), n)
	}
	if l.MaxInFlight > 0 {
		s.MaxInFlight = ceilDiv(l.MaxInFlight, n)
	}
	return s
}

// ceilDiv is ceil(a/n) for a, n >= 1.
func ceilDiv(a, n int) int { return (a + n - 1) / n }

// Zero reports whether l bounds nothing.
func (l Limits) Zero() bool { return l.Rate <= 0 && l.MaxInFlight <= 0 }

// burst is the bucket size Limits mean.
func (l Limits) burst() int {
	if l.Burst >= 1 {
		return l.Burst
	}
	return max(1, int(math.Ceil(l.Rate)))
}

// Kind says which bound refused a call.
type Kind string

// The bounds a call can be refused by.
const (
	KindRate     Kind = "rate"
	KindInFlight Kind = "inFlight"
)

// Refusal is a call refused under a key: which bound, its configured
// value, and when a retry may succeed. It is an error whose text is meant
// for the caller.
type Refusal struct {
	// Limit is what the key is ("caller", "upstream"), from Options.Name.
	Limit string
	// Key is what was refused: a caller's key, a server's name.
	Key  string
	Kind Kind
	// Limits are the key's bounds when it was refused, as configured
	// (fleet-wide).
	Limits Limits
	// Replicas is the number of replicas the bounds were shared by (1: a
	// single replica), and Share the part this replica applied.
	Replicas int
	Share    Limits
	// InFlight is the number of calls running under the key (KindInFlight).
	InFlight int
	// RetryAfter is when the bucket has a token again (KindRate), or
	// Options.InFlightRetryAfter (KindInFlight: nobody knows when a
	// running call ends).
	RetryAfter time.Duration
	// Text, when set, is all Error says: the refusal of a bound that is
	// no key's own (the pipeline's calls in flight across callers), told
	// in its own words with its settings.
	Text string
}

// Field is the setting that refused the call, such as
// "limits.perCaller.rate".
func (r *Refusal) Field() string {
	name := "rate"
	if r.Kind == KindInFlight {
		name = "maxInFlight"
	}
	if r.Limits.Where == "" {
		return name
	}
	return r.Limits.Where + "." + name
}

// Error names the configured bound and, when replicas share it, this
// replica's share, so the operator sees both the setting to change and why
// a replica refused below it.
func (r *Refusal) Error() string {
	if r.Text != "" {
		return r.Text
	}
	retry := strconv.FormatFloat(r.RetryAfter.Seconds(), 'f', -1, 64) + "s"
	shared := r.Replicas > 1 && !r.Limits.PerReplica
	if r.Kind == KindInFlight {
		if shared {
			return fmt.Sprintf("rate limit: %s %q has %d calls in flight, its limit here (%s %d across %d replicas, %d here): retry after %s",
				r.Limit, r.Key, r.InFlight, r.Field(), r.Limits.MaxInFlight, r.Replicas, r.Share.MaxInFlight, retry)
		}
		return fmt.Sprintf("rate limit: %s %q has %d calls in flight, its limit (%s): retry after %s",
			r.Limit, r.Key, r.InFlight, r.Field(), retry)
	}
	if shared {
		return fmt.Sprintf("rate limit: %s %q is over its limit of %s calls/s across %d replicas, %s/s here (%s): retry after %s",
			r.Limit, r.Key, formatRate(r.Limits.Rate), r.Replicas, formatRate(r.Share.Rate), r.Field(), retry)
	}
	return fmt.Sprintf("rate limit: %s %q is over its limit of %s calls/s (%s): retry after %s",
		r.Limit, r.Key, formatRate(r.Limits.Rate), r.Field(), retry)
}

// formatRate is a rate to two decimals at most: a share such as 10/3 reads
// 3.33.
func formatRate(r float64) string {
	return strconv.FormatFloat(math.Round(r*100)/100, 'f', -1, 64)
}

// Defaults of Options.
const (
	DefaultMaxKeys            = 10000
	DefaultInFlightRetryAfter = time.Second
)

// Options configure a Limiter.
type Options struct {
	// Name says what a key is, for refusals: "caller", "upstream".
	Name string
	// MaxKeys bounds the keys whose state is kept (least recently admitted
	// dropped first), so a flood of distinct keys cannot grow memory
	// without bound. A key dropped with calls in flight starts counting
	// afresh, so keep it well above the keys active at once; default 10000.
	MaxKeys int
	// InFlightRetryAfter is the retry hint of an in-flight refusal;
	// default 1s.
	InFlightRetryAfter time.Duration
	// Now is the clock; default time.Now (tests set their own).
	Now func() time.Time
	// Replicas is the number of replicas that share every key's bounds,
	// read on every Acquire (so it must be cheap: an atomic load); nil or
	// a value below 1 means one.
	Replicas func() int
}

// Limiter keeps the bucket and in-flight count of each key. It is safe for
// concurrent use.
type Limiter struct {
	name       string
	retryAfter time.Duration
	now        func() time.Time
	replicas   func() int
	keys       *lru.Cache[string, *state]
}

// state is one key's bucket and count.
type state struct {
	mu       sync.Mutex
	limits   Limits        // what bucket was built for
	bucket   *rate.Limiter // nil without a rate
	inFlight int
}

// New returns a Limiter with no keys yet.
func New(opts Options) *Limiter {
	l := &Limiter{name: opts.Name, retryAfter: opts.InFlightRetryAfter, now: opts.Now, replicas: opts.Replicas}
	if l.retryAfter <= 0 {
		l.retryAfter = DefaultInFlightRetryAfter
	}
	if l.now == nil {
		l.now = time.Now
	}
	if l.replicas == nil {
		l.replicas = one
	}
	size := opts.MaxKeys
	if size <= 0 {
		size = DefaultMaxKeys
	}
	l.keys, _ = lru.New[string, *state](size) // fails only for size <= 0
	return l
}

func noRelease() {}

func one() int { return 1 }

// Acquire admits one call under key with limits lim, or refuses it. An
// admitted call holds an in-flight slot until release is called (exactly
// once, when the call has returned); a refused call takes nothing: no
// slot, no token. lim is the fleet-wide bound; this replica applies its
// share (Limits.Share) of the replicas counted now. lim and the count may
// change from call to call (a reloaded config, a replica come or gone):
// the key's state follows its share, keeping the tokens it has (at most
// the new burst).
func (l *Limiter) Acquire(key string, lim Limits) (release func(), refusal *Refusal) {
	if lim.Zero() {
		return noRelease, nil
	}
	replicas := max(1, l.replicas())
	share := lim.Share(replicas)
	st := l.state(key)
	now := l.now()
	st.mu.Lock()
	st.follow(share, now)
	if share.MaxInFlight > 0 && st.inFlight >= share.MaxInFlight {
		n := st.inFlight
		st.mu.Unlock()
		return nil, &Refusal{Limit: l.name, Key: key, Kind: KindInFlight, Limits: lim, Replicas: replicas, Share: share, InFlight: n, RetryAfter: l.retryAfter}
	}
	if st.bucket != nil && !st.bucket.AllowN(now, 1) {
		wait := untilToken(st.bucket.TokensAt(now), share.Rate)
		n := st.inFlight
		st.mu.Unlock()
		return nil, &Refusal{Limit: l.name, Key: key, Kind: KindRate, Limits: lim, Replicas: replicas, Share: share, InFlight: n, RetryAfter: wait}
	}
	st.inFlight++
	st.mu.Unlock()
	return func() {
		st.mu.Lock()
		st.inFlight--
		st.mu.Unlock()
	}, nil
}

// untilToken is how long a bucket holding tokens takes to hold one at r
// tokens per second, rounded up to the millisecond.
func untilToken(tokens, r float64) time.Duration {
	d := time.Duration(math.Ceil((1 - tokens) / r * 1000))
	return max(d, 1) * time.Millisecond
}

// state returns key's state, creating it.
func (l *Limiter) state(key string) *state {
	if st, ok := l.keys.Get(key); ok {
		return st
	}
	st := &state{}
	if prev, ok, _ := l.keys.PeekOrAdd(key, st); ok {
		return prev
	}
	return st
}

// follow makes the bucket fit lim. Called with st.mu held.
func (st *state) follow(lim Limits, now time.Time) {
	old := st.limits
	st.limits = lim
	switch {
	case lim.Rate <= 0:
		st.bucket = nil
	case st.bucket == nil:
		st.bucket = rate.NewLimiter(rate.Limit(lim.Rate), lim.burst())
	case old.Rate != lim.Rate || old.burst() != lim.burst():
		st.bucket.SetLimitAt(now, rate.Limit(lim.Rate))
		st.bucket.SetBurstAt(now, lim.burst())
	}
}

// len is the number of keys whose state is kept.
func (l *Limiter) len() int { return l.keys.Len() }
