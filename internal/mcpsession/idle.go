package mcpsession

import (
	"context"
	"sync/atomic"
	"time"
)

// The idle sweep. mcp-go has one (server.WithSessionIdleTTL), but it counts
// only what mcp-go itself sees, and the hub answers most requests (the fast
// path) and serves the GET streams itself: the sweep is the hub's.

// Track counts session id as active now, and from now on until the sweep
// forgets it: a session registered with mcp-go, or an id mcp-go served a
// request of (it may keep state for it, a log level say, that only
// forgetting the session frees).
func (ss *Sessions) Track(id string) {
	now := time.Now().UnixNano()
	if v, ok := ss.active.Load(id); ok {
		v.(*atomic.Int64).Store(now)
		return
	}
	t := new(atomic.Int64)
	t.Store(now)
	if v, loaded := ss.active.LoadOrStore(id, t); loaded {
		v.(*atomic.Int64).Store(now)
	}
}

// Touch counts session id as active now if it is tracked; it allocates
// nothing, for the requests the hub answers itself.
func (ss *Sessions) Touch(id string) {
	if v, ok := ss.active.Load(id); ok {
		v.(*atomic.Int64).Store(time.Now().UnixNano())
	}
}

// Run serves the streams taken over from net/http (ServeStream) and
// forgets idle sessions every IdleTTL/2 (at least every second), until ctx
// ends; then it closes those streams and returns once they are closed. An
// abandoned session is gone between IdleTTL and 1.5 x IdleTTL after its
// last activity.
func (ss *Sessions) Run(ctx context.Context) {
	ctx, stop := context.WithCancel(ctx)
	ss.runMu.Lock()
	ss.running = ctx
	ss.runMu.Unlock()
	defer func() {
		ss.runMu.Lock()
		ss.running = nil
		ss.runMu.Unlock()
		stop()
		ss.streams.Wait()
	}()
	var sweep <-chan time.Time
	if ss.opts.IdleTTL > 0 {
		t := time.NewTicker(max(ss.opts.IdleTTL/2, time.Second))
		defer t.Stop()
		sweep = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-sweep:
			ss.sweep(now)
		}
	}
}

// sweep forgets the sessions idle at now.
func (ss *Sessions) sweep(now time.Time) {
	deadline := now.Add(-ss.opts.IdleTTL).UnixNano()
	ss.active.Range(func(k, v any) bool {
		id, last := k.(string), v.(*atomic.Int64)
		seen := last.Load()
		if seen > deadline {
			return true
		}
		if ss.streaming(id) {
			last.Store(now.UnixNano())
			return true
		}
		// Touched meanwhile: not idle.
		if last.Load() != seen || !ss.active.CompareAndDelete(id, v) {
			return true
		}
		ss.opts.Forget(id)
		return true
	})
}

// streaming reports whether session id has a stream open on this replica.
func (ss *Sessions) streaming(id string) bool {
	if ss.opts.Busy != nil && ss.opts.Busy(id) {
		return true
	}
	s := ss.Get(id)
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stream != nil
}
