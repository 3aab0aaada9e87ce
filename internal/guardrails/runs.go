package guardrails

import (
	"context"
	"fmt"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"go.opentelemetry.io/otel/trace"

	"github.com/purko-io/mcp-hub/internal/toolspec"
)

// The budget of tool calls per agent run (maxIterations). A run is the
// trace of the caller's W3C traceparent (Purko sets TRACEPARENT per step,
// and the executor sends it on every call), else the caller's MCP session,
// else all of the caller's calls: a caller's run is never "none", so a
// caller that sends neither cannot escape its budget.
//
// Replicas share no store: a replica that admits a call of a run tells its
// peers (Share), and its result waits for that (bounded by shareTimeout),
// so an agent loop's next call (sent after the result) is counted against
// every call before it on whichever replica it lands. Calls of one run in
// flight at once on different replicas can each pass the last slot: the
// bound is then maxIterations plus the calls in flight elsewhere. A peer
// that cannot be reached counts only what it saw itself (a partition).

// Run counts are kept while calls come: runIdle after a run's last call it
// is forgotten; runsKept bounds how many are kept (the oldest go first).
const (
	runIdle  = time.Hour
	runsKept = 1 << 16
)

// shareTimeout bounds how long a call's result waits for its count to
// reach the peers.
const shareTimeout = time.Second

// Runs counts the calls of agent runs. Safe for concurrent use.
type Runs struct {
	mu sync.Mutex
	// counts are forgotten lazily, when read runIdle after the last call
	// (an LRU with its own expiry would run a goroutine nothing stops).
	counts *lru.Cache[string, runCount]
	now    func() time.Time
	// share tells the peers of one admitted call of run; nil without peers.
	share func(ctx context.Context, run string)
}

// NewRuns returns the counts. share, when not nil, tells the other
// replicas of each admitted call (they call Heard).
func NewRuns(share func(ctx context.Context, run string)) *Runs {
	counts, _ := lru.New[string, runCount](runsKept)
	return &Runs{counts: counts, now: time.Now, share: share}
}

// runCount is the calls of a run and when it last called.
type runCount struct {
	n    int
	last time.Time
}

// count returns the calls of run, 0 when it has been idle for runIdle.
// The caller holds mu.
func (r *Runs) count(run string, now time.Time) int {
	c, ok := r.counts.Get(run)
	if !ok || now.Sub(c.last) > runIdle {
		return 0
	}
	return c.n
}

// Heard counts a call of run a peer admitted.
func (r *Runs) Heard(run string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	r.counts.Add(run, runCount{n: r.count(run, now) + 1, last: now})
}

// take admits one more call of run under max, and reports the calls
// counted before it.
func (r *Runs) take(run string, max int) (int, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	n := r.count(run, now)
	if n >= max {
		return n, false
	}
	r.counts.Add(run, runCount{n: n + 1, last: now})
	return n, true
}

// RunOf is the run a call belongs to: the trace of traceparent (a W3C
// header value, from the request or the call's _meta), else the MCP
// session, else the caller's calls. callerKey keeps the runs of callers
// apart (a trace id is the caller's to choose).
func RunOf(callerKey, traceparent, session string) (run, says string) {
	if id, ok := traceID(traceparent); ok {
		return callerKey + "\x00trace\x00" + id, "trace " + id
	}
	if session != "" {
		return callerKey + "\x00session\x00" + session, "session"
	}
	return callerKey + "\x00caller", "calls of " + callerKey
}

// traceID reads the trace id of a version-00 traceparent:
// 00-<32 hex>-<16 hex>-<2 hex>, not all zero.
func traceID(tp string) (string, bool) {
	if len(tp) != 55 || tp[:3] != "00-" || tp[35] != '-' || tp[52] != '-' {
		return "", false
	}
	id, err := trace.TraceIDFromHex(tp[3:35])
	if err != nil || !id.IsValid() {
		return "", false
	}
	return id.String(), true
}

// Budget admits one call of a run of a caller held to spec.MaxIterations,
// or returns the BLOCKED text that refuses it. who names the caller in
// that text. When admitted, wait must be called before the call's result
// is returned: it waits (briefly) for the peers to have counted the call.
func (g *Guard) Budget(ctx context.Context, spec *toolspec.Guardrails, who, run, says string) (denial string, wait func()) {
	if spec == nil || spec.MaxIterations <= 0 {
		return "", noWait
	}
	n, ok := g.runs.take(run, spec.MaxIterations)
	if !ok {
		g.refused.Inc()
		return fmt.Sprintf("BLOCKED: tool call budget used up: this agent run (%s) of %s may make %d tool calls (guardrails maxIterations) and has made %d.",
			says, who, spec.MaxIterations, n), nil
	}
	if g.runs.share == nil {
		return "", noWait
	}
	done := make(chan struct{})
	// The count goes out while the call runs; the caller is answered
	// after it arrived, or after shareTimeout.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shareTimeout)
	go func() {
		defer close(done)
		defer cancel()
		g.runs.share(sctx, run)
	}()
	return "", func() { <-done }
}

func noWait() {}
