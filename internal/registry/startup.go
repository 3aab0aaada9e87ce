package registry

import (
	"context"
	"fmt"
	"time"
)

// Start-up: a hub that answers before its upstreams were tried lies about
// its catalog (a client sees the builtins, then the rest seconds later), and
// a client that lists once never sees the rest. So the registry says when
// every configured upstream was tried once, and the faces wait for that
// before their first answer (stdio) or before reporting ready (/readyz).
//
// Tried latches once: every discovery source sent its first snapshot, and
// every upstream of it connected or failed its first attempt, or
// upstream.connectTimeout passed since the sources synced (an upstream
// still connecting then counts as tried: its attempt outlived the bound of
// an attempt). Upstreams that appear later never take it back: readiness
// of every replica must not flap when someone adds an MCPServer.

// startup is the Run goroutine's view of start-up.
type startup struct {
	// boundPassed: connectTimeout passed since the sources synced.
	boundPassed bool
	giveUp      *time.Timer // nil until the sources synced
	began       time.Time
}

// Tried reports whether every configured upstream was tried once (see
// above); it never goes back to false.
func (r *Registry) Tried() bool {
	select {
	case <-r.tried:
		return true
	default:
		return false
	}
}

// WaitTried blocks until Tried or ctx ends. The registry's own bound
// (upstream.connectTimeout after the sources synced) ends it when Run is
// running; ctx bounds it when it is not.
func (r *Registry) WaitTried(ctx context.Context) error {
	select {
	case <-r.tried:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for every upstream to be tried once: %w", context.Cause(ctx))
	}
}

// sourcesSynced starts the bound once every source sent its first
// snapshot, and schedules a rebuild that decides whether start-up is over
// (a snapshot that changed nothing schedules none).
func (r *Registry) sourcesSynced(st *startup) {
	r.ready.Store(true)
	if d := r.opts.Upstream.ConnectTimeout; d > 0 {
		st.giveUp = time.NewTimer(d)
	} else {
		st.boundPassed = true
	}
	r.markDirty()
}

// giveUpC fires when the start-up bound passed; nil before the sources
// synced and after it fired.
func (st *startup) giveUpC() <-chan time.Time {
	if st.giveUp == nil || st.boundPassed {
		return nil
	}
	return st.giveUp.C
}

func (st *startup) stop() {
	if st.giveUp != nil {
		st.giveUp.Stop()
	}
}

// startupOver reports whether the catalog just built, whose upstreams in
// pending were still connecting, ends start-up now.
func (r *Registry) startupOver(st *startup, pending []string) bool {
	return !r.Tried() && r.ready.Load() && (len(pending) == 0 || st.boundPassed)
}

// markTried ends start-up. Call it after the catalog that ends it was
// announced, so a face that waited serves that catalog.
func (r *Registry) markTried(st *startup, pending []string) {
	st.stop()
	close(r.tried)
	took := time.Since(st.began).Round(time.Millisecond)
	if len(pending) > 0 {
		r.log.Warn().Strs("servers", pending).Dur("after", took).
			Msg("start-up goes on without servers still connecting after upstream.connectTimeout")
		return
	}
	r.log.Info().Dur("after", took).Msg("every upstream tried once")
}
