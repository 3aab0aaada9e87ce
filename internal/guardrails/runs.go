package guardrails

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"go.opentelemetry.io/otel/trace"

	"github.com/purko-io/mcp-hub/internal/identity"
	"github.com/purko-io/mcp-hub/internal/toolspec"
)

// The budgets of tool calls: per agent run (maxIterations), and for the
// callers that choose when a run starts, per hour across all their runs
// (maxIterationsPerHour).
//
// A run is what the caller cannot choose where the hub knows of such a
// thing: a ServiceAccount caller's pod (Purko runs each workflow step as
// its own Job pod; the token is bound to it), whatever session or
// traceparent it sends. A ServiceAccount token bound to no pod has no
// narrower run than all of the caller's calls, which it cannot reset
// either. Token and OAuth callers have nothing of the kind: their run is
// the trace of their W3C traceparent (Purko sets TRACEPARENT per step,
// and the executor sends it on every call), else their MCP session, else
// all of their calls; a caller's run is never "none", so a caller that
// sends neither cannot escape its budget. A new trace or session starts a
// new run, which is why such a caller's runs together are held to an
// hour's budget.
//
// Replicas share no store: a replica that admits a call tells its peers
// (Share), and its result waits for that (bounded by shareTimeout), so an
// agent loop's next call (sent after the result) is counted against every
// call before it on whichever replica it lands, in its run and its hour.
// Calls in flight at once on different replicas can each pass the last
// slot: the bound is then the budget plus the calls in flight elsewhere.
// A peer that cannot be reached counts only what it saw itself (a
// partition).

// Run counts are kept while calls come: runIdle after a run's last call it
// is forgotten (pinnedIdle for a run pinned to the caller's identity: a
// pod that waits out an hour must not come back to a fresh budget);
// runsKept bounds how many are kept of each (the oldest go first), and of
// the callers' hours.
const (
	runIdle    = time.Hour
	pinnedIdle = 24 * time.Hour
	runsKept   = 1 << 16
)

// The hour of maxIterationsPerHour is a sliding window over fixed slots:
// a call counts in the slot it was made in, and a slot leaves the window
// when hourSlots slots have begun after it. So a call counts for at least
// an hour and at most an hour and one slot, and no hour of the wall clock
// holds more admitted calls than the budget (on one replica, with peers
// as above). A slot is a small fixed cost per caller; a slot of five
// minutes frees calls at most five minutes late.
const (
	hourSlot  = 5 * time.Minute
	hourSlots = int(time.Hour/hourSlot) + 1
)

// shareTimeout bounds how long a call's result waits for its count to
// reach the peers.
const shareTimeout = time.Second

// pinnedMark begins the key of a run pinned to the caller's identity,
// which the runs others open must not push out of the counts. Other keys
// begin with the caller's key: a caller name (config, an OAuth issuer's
// host, "agent ...", "anonymous@...") never begins with a NUL.
const pinnedMark = "\x00pinned\x00"

// Share tells the other replicas of one admitted call: of run (its key;
// "" when no run budget counted it) and of the hour of the caller whose
// key is hour ("" when no hour budget counted it). They call Heard.
type Share func(ctx context.Context, run, hour string)

// Runs counts the calls of agent runs, and of callers' hours. Safe for
// concurrent use.
type Runs struct {
	mu sync.Mutex
	// counts are forgotten lazily, when read runIdle after the last call
	// (an LRU with its own expiry would run a goroutine nothing stops).
	counts *lru.Cache[string, runCount]
	// pinned are the runs pinned to a caller's identity (pods), kept
	// apart from counts so that no caller opening runs without end can
	// make the hub forget another's.
	pinned *lru.Cache[string, runCount]
	// hours are the callers' hour windows, by caller key.
	hours *lru.Cache[string, hourCount]
	now   func() time.Time
	// share tells the peers of one admitted call; nil without peers.
	share Share
}

// NewRuns returns the counts on the wall clock. share, when not nil, tells
// the other replicas of each admitted call (they call Heard).
func NewRuns(share Share) *Runs { return NewRunsAt(share, time.Now) }

// NewRunsAt is NewRuns on the clock now, which tests move to see a run
// forgotten and an hour's calls freed without waiting for them.
func NewRunsAt(share Share, now func() time.Time) *Runs {
	counts, _ := lru.New[string, runCount](runsKept)
	pinned, _ := lru.New[string, runCount](runsKept)
	hours, _ := lru.New[string, hourCount](runsKept)
	return &Runs{counts: counts, pinned: pinned, hours: hours, now: now, share: share}
}

// runCount is the calls of a run and when it last called.
type runCount struct {
	n    int
	last time.Time
}

// hourCount is a caller's calls per slot of its hour window.
type hourCount struct {
	// newest is the newest slot (hourSlots since the Unix epoch) the
	// window was moved to.
	newest int64
	// n are the calls per slot, slot s at n[s%hourSlots].
	n [hourSlots]int
}

// slotOf is the slot of the hour window t falls in.
func slotOf(t time.Time) int64 { return t.Unix() / int64(hourSlot/time.Second) }

// slotStart is when slot s begins.
func slotStart(s int64) time.Time { return time.Unix(s*int64(hourSlot/time.Second), 0) }

func ring(s int64) int { return int(s % int64(hourSlots)) }

// at is the window moved to slot: the slots that left it are emptied. A
// slot before the newest (the clock stepped back) counts as the newest,
// which holds its calls a little longer, never shorter.
func (h hourCount) at(slot int64) hourCount {
	switch gap := slot - h.newest; {
	case gap <= 0:
		return h
	case gap >= int64(hourSlots):
		return hourCount{newest: slot}
	}
	for s := h.newest + 1; s <= slot; s++ {
		h.n[ring(s)] = 0
	}
	h.newest = slot
	return h
}

// total is the calls in the window.
func (h hourCount) total() int {
	t := 0
	for _, n := range h.n {
		t += n
	}
	return t
}

// freeAt is when enough calls will have left the window for it to hold
// fewer than max: the oldest slots leave first.
func (h hourCount) freeAt(max int) time.Time {
	n := h.total()
	for s := h.newest - int64(hourSlots) + 1; s < h.newest; s++ {
		if n -= h.n[ring(s)]; n < max {
			return slotStart(s + int64(hourSlots))
		}
	}
	return slotStart(h.newest + int64(hourSlots))
}

// runsOf is where run is counted. The caller holds mu.
func (r *Runs) runsOf(run string) (counts *lru.Cache[string, runCount], idle time.Duration) {
	if strings.HasPrefix(run, pinnedMark) {
		return r.pinned, pinnedIdle
	}
	return r.counts, runIdle
}

// count returns the calls of run, 0 when it has been idle for its idle
// time. The caller holds mu.
func (r *Runs) count(run string, now time.Time) int {
	counts, idle := r.runsOf(run)
	c, ok := counts.Get(run)
	if !ok || now.Sub(c.last) > idle {
		return 0
	}
	return c.n
}

// hour returns the hour window of caller, moved to now. The caller holds
// mu.
func (r *Runs) hour(caller string, now time.Time) hourCount {
	h, _ := r.hours.Get(caller)
	return h.at(slotOf(now))
}

// add counts one call more: of run, which had n calls, and of the hour
// h of caller hour; an empty name is not counted. The caller holds mu.
func (r *Runs) add(run string, n int, hour string, h hourCount, now time.Time) {
	if run != "" {
		counts, _ := r.runsOf(run)
		counts.Add(run, runCount{n: n + 1, last: now})
	}
	if hour != "" {
		h.n[ring(h.newest)]++
		r.hours.Add(hour, h)
	}
}

// Heard counts a call a peer admitted: of run, and of the hour of the
// caller whose key is hour; an empty name is not counted.
func (r *Runs) Heard(run, hour string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	n, h := 0, hourCount{}
	if run != "" {
		n = r.count(run, now)
	}
	if hour != "" {
		h = r.hour(hour, now)
	}
	r.add(run, n, hour, h, now)
}

// charge is one call to count: of run under perRun, and of the hour of
// the caller whose key is hour under perHour; an empty name is not
// counted.
type charge struct {
	run     string
	perRun  int
	hour    string
	perHour int
}

// spent is how far the budget that refused a call was used.
type spent struct {
	hour bool      // the hour refused it, not the run
	n    int       // the calls counted before it
	free time.Time // for the hour: when a call is admitted again
}

// take admits one more call under both budgets of c, or neither counts
// it.
func (r *Runs) take(c charge) (spent, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	n, h := 0, hourCount{}
	if c.run != "" {
		if n = r.count(c.run, now); n >= c.perRun {
			return spent{n: n}, false
		}
	}
	if c.hour != "" {
		h = r.hour(c.hour, now)
		if t := h.total(); t >= c.perHour {
			return spent{hour: true, n: t, free: h.freeAt(c.perHour)}, false
		}
	}
	r.add(c.run, n, c.hour, h, now)
	return spent{n: n}, true
}

// A Run is what a call is counted against.
type Run struct {
	// Key names the run among every caller's runs.
	Key string
	// Says names the run in a refusal: "pod <uid>", "trace <id>",
	// "session", "calls of <caller>".
	Says string
	// Hour is the key of the caller whose runs together an hour's budget
	// (maxIterationsPerHour) holds; "" for a caller whose run is pinned
	// to its identity, which needs none.
	Hour string
}

// RunOf is the run of a call of the caller whose key is callerKey (which
// keeps the runs of callers apart: a trace id is the caller's to choose)
// and whose token is subject. A ServiceAccount caller's run is its pod,
// else all of its calls: what it sends cannot change it. Any other
// caller's run is the trace of traceparent (a W3C header value, from the
// request or the call's _meta), else the MCP session, else all of its
// calls, and its hour is its own.
func RunOf(callerKey string, subject identity.Subject, traceparent, session string) Run {
	if subject.Kind() == identity.ServiceAccount {
		if pod := subject.Pod(); pod != "" {
			return Run{Key: pinnedMark + "pod\x00" + pod + "\x00" + callerKey, Says: "pod " + pod}
		}
		return Run{Key: pinnedMark + "caller\x00" + callerKey, Says: "calls of " + callerKey}
	}
	if id, ok := traceID(traceparent); ok {
		return Run{Key: callerKey + "\x00trace\x00" + id, Says: "trace " + id, Hour: callerKey}
	}
	if session != "" {
		return Run{Key: callerKey + "\x00session\x00" + session, Says: "session", Hour: callerKey}
	}
	return Run{Key: callerKey + "\x00caller", Says: "calls of " + callerKey, Hour: callerKey}
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

// Budget admits one call of run of a caller held to spec.MaxIterations
// and, when run has an hour, spec.MaxIterationsPerHour, or returns the
// BLOCKED text that refuses it. who names the caller in that text. When
// admitted, wait must be called before the call's result is returned: it
// waits (briefly) for the peers to have counted the call.
func (g *Guard) Budget(ctx context.Context, spec *toolspec.Guardrails, who string, run Run) (denial string, wait func()) {
	if spec == nil {
		return "", noWait
	}
	var c charge
	if spec.MaxIterations > 0 {
		c.run, c.perRun = run.Key, spec.MaxIterations
	}
	if spec.MaxIterationsPerHour > 0 && run.Hour != "" {
		c.hour, c.perHour = run.Hour, spec.MaxIterationsPerHour
	}
	if c.run == "" && c.hour == "" {
		return "", noWait
	}
	s, ok := g.runs.take(c)
	switch {
	case !ok && s.hour:
		g.refused.Inc()
		return fmt.Sprintf("BLOCKED: tool call budget used up: %s may make %d tool calls an hour across all of its agent runs (guardrails maxIterationsPerHour) and has made %d within the last hour; calls are admitted again from %s.",
			who, c.perHour, s.n, s.free.UTC().Format(time.RFC3339)), nil
	case !ok:
		g.refused.Inc()
		return fmt.Sprintf("BLOCKED: tool call budget used up: this agent run (%s) of %s may make %d tool calls (guardrails maxIterations) and has made %d.",
			run.Says, who, c.perRun, s.n), nil
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
		g.runs.share(sctx, c.run, c.hour)
	}()
	return "", func() { <-done }
}

func noWait() {}
