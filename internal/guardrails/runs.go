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
// Replicas share no store: the counts of a caller's runs and hour are
// kept by one replica, its owner (rendezvous hashing over the replicas,
// internal/peers), and a replica that gets a call asks the owner to
// count it (Owner): one internal request, none when it is the owner,
// whatever the number of replicas. So an agent loop's calls are counted
// in one place on whichever replica each lands, and its budget holds
// exactly (calls in flight at once are counted one by one at the owner).
//
// Each replica keeps what it last heard from an owner, and sends it with
// each count (Counts, merged by maximum): when a replica joins or leaves
// and a caller's owner changes, the new owner starts from what the
// replica asking knew, not from zero. During such a move a budget can
// be passed by the calls the replica asking had not heard of (at most
// those admitted through other replicas since its own last call of that
// caller). An owner that cannot be reached is a partition: the replica
// counts alone from what it knew.

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

// ownerTimeout bounds how long a call waits for its owner to count it
// before its replica counts it alone.
const ownerTimeout = time.Second

// pinnedMark begins the key of a run pinned to the caller's identity,
// which the runs others open must not push out of the counts. Other keys
// begin with the caller's key: a caller name (config, an OAuth issuer's
// host, "agent ...", "anonymous@...") never begins with a NUL.
const pinnedMark = "\x00pinned\x00"

// Owner has the owner of the caller whose key is caller count c, and
// returns its verdict. local is true when this replica is the owner (or
// none could be asked): it then counts c itself.
type Owner func(ctx context.Context, caller string, c Charge) (s Spent, local bool)

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
	// owner counts a call at its caller's owner; nil without peers.
	owner Owner
}

// NewRuns returns the counts on the wall clock. owner, when not nil, has
// each call counted by its caller's owner (which calls Take).
func NewRuns(owner Owner) *Runs { return NewRunsAt(owner, time.Now) }

// NewRunsAt is NewRuns on the clock now, which tests move to see a run
// forgotten and an hour's calls freed without waiting for them.
func NewRunsAt(owner Owner, now func() time.Time) *Runs {
	counts, _ := lru.New[string, runCount](runsKept)
	pinned, _ := lru.New[string, runCount](runsKept)
	hours, _ := lru.New[string, hourCount](runsKept)
	return &Runs{counts: counts, pinned: pinned, hours: hours, now: now, owner: owner}
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

// Charge is one call to count: of Run under PerRun, and of the hour of
// the caller whose key is Hour under PerHour; an empty name is not
// counted. Known is what the replica asking knew of both.
type Charge struct {
	Run     string `json:"run,omitempty"`
	PerRun  int    `json:"perRun,omitempty"`
	Hour    string `json:"hour,omitempty"`
	PerHour int    `json:"perHour,omitempty"`
	Known   Counts `json:"known"`
}

// Counts are a run's and an hour's counts as one replica knows them; two
// replicas' merge by maximum (merge).
type Counts struct {
	Run      int       `json:"run,omitempty"`
	RunLast  time.Time `json:"runLast,omitzero"`
	HourSlot int64     `json:"hourSlot,omitempty"`
	Hour     []int     `json:"hour,omitempty"` // calls per slot, slot s at s%hourSlots
}

// Spent is an owner's verdict on a Charge: admitted or not, how far the
// budget that refused it was used, and the counts after it.
type Spent struct {
	Admitted bool      `json:"admitted"`
	Hour     bool      `json:"hour,omitempty"` // the hour refused it, not the run
	N        int       `json:"n"`              // the calls counted before it
	Free     time.Time `json:"free,omitzero"`  // for the hour: when a call is admitted again
	Counts   Counts    `json:"counts"`
}

// known is what this replica counts of c's run and hour. The caller holds
// mu.
func (r *Runs) known(c Charge, now time.Time) Counts {
	var k Counts
	if c.Run != "" {
		counts, _ := r.runsOf(c.Run)
		if rc, ok := counts.Get(c.Run); ok && now.Sub(rc.last) <= r.idleOf(c.Run) {
			k.Run, k.RunLast = rc.n, rc.last
		}
	}
	if c.Hour != "" {
		h := r.hour(c.Hour, now)
		k.HourSlot, k.Hour = h.newest, h.n[:]
	}
	return k
}

// merge raises this replica's counts of c's run and hour to k where k
// counts more. The caller holds mu.
func (r *Runs) merge(c Charge, k Counts, now time.Time) {
	if c.Run != "" && k.Run > 0 {
		counts, _ := r.runsOf(c.Run)
		rc, _ := counts.Get(c.Run)
		if now.Sub(rc.last) > r.idleOf(c.Run) {
			rc = runCount{}
		}
		if k.Run > rc.n && now.Sub(k.RunLast) <= r.idleOf(c.Run) {
			counts.Add(c.Run, runCount{n: k.Run, last: later(rc.last, k.RunLast)})
		}
	}
	if c.Hour != "" && len(k.Hour) == hourSlots {
		theirs := hourCount{newest: k.HourSlot}
		copy(theirs.n[:], k.Hour)
		slot := max(slotOf(now), k.HourSlot)
		mine, theirs := r.hour(c.Hour, now).at(slot), theirs.at(slot)
		for i := range mine.n {
			mine.n[i] = max(mine.n[i], theirs.n[i])
		}
		r.hours.Add(c.Hour, mine)
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// idleOf is how long run is kept after its last call.
func (r *Runs) idleOf(run string) time.Duration {
	_, idle := r.runsOf(run)
	return idle
}

// Take counts c here: with what the replica asking knew merged in, it
// admits one more call under both budgets of c, or neither counts it. An
// owner answers its peers with it (internal/peers RunPath).
func (r *Runs) Take(c Charge) Spent {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	r.merge(c, c.Known, now)
	s := r.take(c, now)
	s.Counts = r.known(c, now)
	return s
}

// take admits one more call under both budgets of c, or neither counts
// it. The caller holds mu.
func (r *Runs) take(c Charge, now time.Time) Spent {
	n, h := 0, hourCount{}
	if c.Run != "" {
		if n = r.count(c.Run, now); n >= c.PerRun {
			return Spent{N: n}
		}
	}
	if c.Hour != "" {
		h = r.hour(c.Hour, now)
		if t := h.total(); t >= c.PerHour {
			return Spent{Hour: true, N: t, Free: h.freeAt(c.PerHour)}
		}
	}
	r.add(c.Run, n, c.Hour, h, now)
	return Spent{Admitted: true, N: n}
}

// charge counts c at its caller's owner, or here when this replica owns
// it or the owner cannot be reached, and keeps what the owner answered.
func (r *Runs) charge(ctx context.Context, caller string, c Charge) Spent {
	if r.owner == nil {
		return r.Take(c)
	}
	r.mu.Lock()
	c.Known = r.known(c, r.now())
	r.mu.Unlock()
	octx, cancel := context.WithTimeout(ctx, ownerTimeout)
	s, local := r.owner(octx, caller, c)
	cancel()
	if local {
		return r.Take(c)
	}
	r.mu.Lock()
	r.merge(c, s.Counts, r.now())
	r.mu.Unlock()
	return s
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
	// Caller is the caller's key: its owner counts its runs and hour.
	Caller string
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
			return Run{Key: pinnedMark + "pod\x00" + pod + "\x00" + callerKey, Says: "pod " + pod, Caller: callerKey}
		}
		return Run{Key: pinnedMark + "caller\x00" + callerKey, Says: "calls of " + callerKey, Caller: callerKey}
	}
	if id, ok := traceID(traceparent); ok {
		return Run{Key: callerKey + "\x00trace\x00" + id, Says: "trace " + id, Hour: callerKey, Caller: callerKey}
	}
	if session != "" {
		return Run{Key: callerKey + "\x00session\x00" + session, Says: "session", Hour: callerKey, Caller: callerKey}
	}
	return Run{Key: callerKey + "\x00caller", Says: "calls of " + callerKey, Hour: callerKey, Caller: callerKey}
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
// BLOCKED text that refuses it. who names the caller in that text. With
// peers the count is its caller's owner's (Owner).
func (g *Guard) Budget(ctx context.Context, spec *toolspec.Guardrails, who string, run Run) (denial string) {
	if spec == nil {
		return ""
	}
	var c Charge
	if spec.MaxIterations > 0 {
		c.Run, c.PerRun = run.Key, spec.MaxIterations
	}
	if spec.MaxIterationsPerHour > 0 && run.Hour != "" {
		c.Hour, c.PerHour = run.Hour, spec.MaxIterationsPerHour
	}
	if c.Run == "" && c.Hour == "" {
		return ""
	}
	s := g.runs.charge(ctx, run.Caller, c)
	switch {
	case !s.Admitted && s.Hour:
		g.refused.Inc()
		return fmt.Sprintf("BLOCKED: tool call budget used up: %s may make %d tool calls an hour across all of its agent runs (guardrails maxIterationsPerHour) and has made %d within the last hour; calls are admitted again from %s.",
			who, c.PerHour, s.N, s.Free.UTC().Format(time.RFC3339))
	case !s.Admitted:
		g.refused.Inc()
		return fmt.Sprintf("BLOCKED: tool call budget used up: this agent run (%s) of %s may make %d tool calls (guardrails maxIterations) and has made %d.",
			run.Says, who, c.PerRun, s.N)
	}
	return ""
}
