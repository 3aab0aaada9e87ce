package leaderelection

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ErrNotRenewed is the cause (context.Cause) of a term that ended because
// the leader could not renew the Lease within RenewDeadline of its last
// renewal: the others may take over once LeaseDuration has passed, so it
// must not write any more.
var ErrNotRenewed = errors.New("leader election: lease not renewed within the renew deadline")

// term is the context a leader writes under (OnStartedLeading's). It lasts
// until RenewDeadline after the start of the last Lease write that
// succeeded, by this process's monotonic clock, and is extended by every
// renewal. The end is checked on every Done and Err, which every request
// made with it calls before it is sent (client-go's rate limiter, net/http's
// transport, context.WithCancel of a child), so a write is refused once the
// term is over even when the timer that ends it fires late on a loaded
// machine; the timer closes Done for those waiting on it.
//
// Its Deadline reports none: the end moves with every renewal, and a
// context's deadline may not change.
type term struct {
	ctx    context.Context // ends with the term
	cancel context.CancelCauseFunc

	mu    sync.Mutex
	until time.Time // monotonic: the end, unless renewed before it
	timer *time.Timer
}

// newTerm starts a term under parent that ends at until unless extended.
func newTerm(parent context.Context, until time.Time) *term {
	ctx, cancel := context.WithCancelCause(parent)
	t := &term{ctx: ctx, cancel: cancel, until: until}
	t.mu.Lock()
	defer t.mu.Unlock()
	// The timer's function only closes Done when the end has come; it
	// holds nothing and is stopped with the term (end).
	t.timer = time.AfterFunc(time.Until(until), t.fire)
	return t
}

// fire runs on the timer: it ends the term if its end has come, else it
// waits for the end as extended meanwhile.
func (t *term) fire() {
	if !t.check() {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.timer.Reset(time.Until(t.until))
}

// check ends the term if its end has passed and reports whether it lasts.
func (t *term) check() bool {
	if t.ctx.Err() != nil {
		return false
	}
	if time.Now().Before(t.end()) {
		return true
	}
	t.cancel(ErrNotRenewed)
	return false
}

// end returns when the term ends, unless it is extended.
func (t *term) end() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.until
}

// unexpired reports whether the term's end has not passed and it was not
// ended for want of a renewal: whether the Lease is still this client's
// to release, whatever else ended the term.
func (t *term) unexpired() bool {
	return time.Now().Before(t.end()) && !errors.Is(context.Cause(t.ctx), ErrNotRenewed)
}

// extend moves the end to until, after a renewal, and reports whether the
// term still lasts: once over (ended, or its end passed) it stays over.
func (t *term) extend(until time.Time) bool {
	if !t.check() {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if until.After(t.until) {
		t.until = until
		t.timer.Reset(time.Until(until))
	}
	return true
}

// stop ends the term with cause (if it has not ended yet) and its timer.
func (t *term) stop(cause error) {
	t.cancel(cause)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.timer.Stop()
}

// Deadline reports no deadline: the end moves with every renewal.
func (t *term) Deadline() (time.Time, bool) { return time.Time{}, false }

// Done is closed when the term is over; asking ends a term whose end has
// passed, so the channel is closed then even if the timer is late.
func (t *term) Done() <-chan struct{} {
	t.check()
	return t.ctx.Done()
}

// Err is non-nil once the term is over (context.Canceled; context.Cause
// says why: ErrNotRenewed, or the cause of the parent's end).
func (t *term) Err() error {
	t.check()
	return t.ctx.Err()
}

// Value is the parent's (and context.Cause's answer).
func (t *term) Value(key any) any { return t.ctx.Value(key) }

// AfterFunc lets context.WithCancel and friends follow the term without a
// goroutine of their own.
func (t *term) AfterFunc(f func()) func() bool { return context.AfterFunc(t.ctx, f) }
