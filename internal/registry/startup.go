package registry

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
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

// readiness is what the faces ask of start-up: Ready, Tried, WaitTried.
// It is a type of its own because it is read from every goroutine (a
// /readyz probe, a stdio face waiting for its first answer) while only the
// Run goroutine, through startup, moves it forward; and its two latches
// only ever go one way. Registry embeds it: its exported methods are the
// Registry's.
type readiness struct {
	// ready: every source sent its first snapshot.
	ready atomic.Bool
	// tried is closed once every configured upstream was tried once.
	tried chan struct{}
	// gaveUp: start-up stopped waiting for upstreams still connecting;
	// their names are claimed without them (naming.Claims).
	gaveUp atomic.Bool
}

func newReadiness() readiness { return readiness{tried: make(chan struct{})} }

// Ready reports whether every source has sent its first snapshot. Tried
// says more: also every upstream of those snapshots was tried once.
func (s *readiness) Ready() bool { return s.ready.Load() }

// Tried reports whether every configured upstream was tried once (see
// above); it never goes back to false.
func (s *readiness) Tried() bool {
	select {
	case <-s.tried:
		return true
	default:
		return false
	}
}

// WaitTried blocks until Tried or ctx ends. The registry's own bound
// (upstream.connectTimeout after the sources synced) ends it when Run is
// running; ctx bounds it when it is not.
func (s *readiness) WaitTried(ctx context.Context) error {
	select {
	case <-s.tried:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for every upstream to be tried once: %w", context.Cause(ctx))
	}
}

// startup is the Run goroutine's view of start-up: the bound and the
// moves of the readiness it reports to.
type startup struct {
	*readiness
	log zerolog.Logger
	// boundPassed: connectTimeout passed since the sources synced.
	boundPassed bool
	giveUp      *time.Timer // nil until the sources synced
	began       time.Time
}

// sourcesSynced starts the bound (connectTimeout; none when 0) once every
// source sent its first snapshot. The caller schedules a rebuild that
// decides whether start-up is over (a snapshot that changed nothing
// schedules none).
func (st *startup) sourcesSynced(bound time.Duration) {
	st.ready.Store(true)
	if bound > 0 {
		st.giveUp = time.NewTimer(bound)
	} else {
		st.boundPassed = true
	}
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

// over reports whether the catalog just built, whose upstreams in
// pending were still connecting, ends start-up now.
func (st *startup) over(pending []string) bool {
	return !st.Tried() && st.ready.Load() && (len(pending) == 0 || st.boundPassed)
}

// markTried ends start-up. Call it after the catalog that ends it was
// announced, so a face that waited serves that catalog.
func (st *startup) markTried(pending []string) {
	st.stop()
	close(st.tried)
	took := time.Since(st.began).Round(time.Millisecond)
	if len(pending) > 0 {
		st.log.Warn().Strs("servers", pending).Int64("elapsed_ms", took.Milliseconds()).
			Msg("ready, without these servers: still connecting after upstream.connectTimeout (they join when connected)")
		return
	}
	st.log.Info().Int64("elapsed_ms", took.Milliseconds()).Msg("ready: every server was tried once (see each server's line for how it went)")
}
