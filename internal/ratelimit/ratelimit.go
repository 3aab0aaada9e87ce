// Package ratelimit bounds the calls made under one key (a caller, an
// upstream server): how often (a token bucket) and how many at once (a
// count of calls in flight). A call over either bound is refused at once
// with how long to wait before trying again, never queued: nothing waits
// without bound, and a key at its bounds takes nothing from the others.
//
// It imports nothing of the hub's: the server decides which key and which
// Limits a call runs under.
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
}

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
	// Limits are the key's bounds when it was refused.
	Limits Limits
	// InFlight is the number of calls running under the key (KindInFlight).
	InFlight int
	// RetryAfter is when the bucket has a token again (KindRate), or
	// Options.InFlightRetryAfter (KindInFlight: nobody knows when a
	// running call ends).
	RetryAfter time.Duration
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

func (r *Refusal) Error() string {
	retry := strconv.FormatFloat(r.RetryAfter.Seconds(), 'f', -1, 64) + "s"
	if r.Kind == KindInFlight {
		return fmt.Sprintf("rate limit: %s %q has %d calls in flight, its limit (%s): retry after %s",
			r.Limit, r.Key, r.InFlight, r.Field(), retry)
	}
	return fmt.Sprintf("rate limit: %s %q is over its limit of %s calls/s (%s): retry after %s",
		r.Limit, r.Key, strconv.FormatFloat(r.Limits.Rate, 'f', -1, 64), r.Field(), retry)
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
}

// Limiter keeps the bucket and in-flight count of each key. It is safe for
// concurrent use.
type Limiter struct {
	name       string
	retryAfter time.Duration
	now        func() time.Time
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
	l := &Limiter{name: opts.Name, retryAfter: opts.InFlightRetryAfter, now: opts.Now}
	if l.retryAfter <= 0 {
		l.retryAfter = DefaultInFlightRetryAfter
	}
	if l.now == nil {
		l.now = time.Now
	}
	size := opts.MaxKeys
	if size <= 0 {
		size = DefaultMaxKeys
	}
	l.keys, _ = lru.New[string, *state](size) // fails only for size <= 0
	return l
}

func noRelease() {}

// Acquire admits one call under key with limits lim, or refuses it. An
// admitted call holds an in-flight slot until release is called (exactly
// once, when the call has returned); a refused call takes nothing: no
// slot, no token. lim may change from call to call (a reloaded config):
// the key's state follows it, keeping the tokens it has.
func (l *Limiter) Acquire(key string, lim Limits) (release func(), refusal *Refusal) {
	if lim.Zero() {
		return noRelease, nil
	}
	st := l.state(key)
	now := l.now()
	st.mu.Lock()
	st.follow(lim, now)
	if lim.MaxInFlight > 0 && st.inFlight >= lim.MaxInFlight {
		n := st.inFlight
		st.mu.Unlock()
		return nil, &Refusal{Limit: l.name, Key: key, Kind: KindInFlight, Limits: lim, InFlight: n, RetryAfter: l.retryAfter}
	}
	if st.bucket != nil && !st.bucket.AllowN(now, 1) {
		wait := untilToken(st.bucket.TokensAt(now), lim.Rate)
		n := st.inFlight
		st.mu.Unlock()
		return nil, &Refusal{Limit: l.name, Key: key, Kind: KindRate, Limits: lim, InFlight: n, RetryAfter: wait}
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
