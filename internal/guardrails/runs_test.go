package guardrails

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/purko-io/mcp-hub/internal/identity"
	"github.com/purko-io/mcp-hub/internal/toolspec"
)

const (
	tp1       = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	otherSpan = "00-4bf92f3577b34da6a3ce929d0e0e4736-11f067aa0ba902b7-00"
	tp2       = "00-5bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	podUID    = "0b8a3c2e-5d1f-4e7a-9c61-2f4d8e9b7a10"
)

// A pod-bound ServiceAccount caller, one bound to no pod, and an OAuth one.
var (
	podSubject   = identity.ServiceAccountSubject("sa-token").BoundToPod(podUID)
	noPodSubject = identity.ServiceAccountSubject("sa-token")
	oauthSubject = identity.OAuthSubject("at", "https://idp.example", time.Time{})
)

// clock is a test's wall clock, moved by hand.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newClock() *clock { return &clock{t: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)} }

// TestRunOf: a ServiceAccount caller's run is its pod (else all of its
// calls), whatever trace or session it sends, and it has no hour; any
// other caller's run is its trace, else its session, else all of its
// calls, and its hour is its own key. Runs of different callers never
// share a key.
func TestRunOf(t *testing.T) {
	tests := []struct {
		name                 string
		subject              identity.Subject
		traceparent, session string
		wantSays, wantHour   string
	}{
		{"trace", identity.Subject{}, tp1, "s1", "trace 4bf92f3577b34da6a3ce929d0e0e4736", "ci"},
		{"trace, another span", identity.Subject{}, otherSpan, "", "trace 4bf92f3577b34da6a3ce929d0e0e4736", "ci"},
		{"all-zero trace", identity.Subject{}, "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "s1", "session", "ci"},
		{"garbage trace", identity.Subject{}, "garbage", "s1", "session", "ci"},
		{"nothing sent", identity.Subject{}, "", "", "calls of ci", "ci"},
		{"OAuth", oauthSubject, tp1, "s1", "trace 4bf92f3577b34da6a3ce929d0e0e4736", "ci"},
		{"pod, with a trace", podSubject, tp1, "s1", "pod " + podUID, ""},
		{"pod, nothing sent", podSubject, "", "", "pod " + podUID, ""},
		{"ServiceAccount without a pod", noPodSubject, tp1, "s1", "calls of ci", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := RunOf("ci", tt.subject, tt.traceparent, tt.session)
			if r.Says != tt.wantSays || r.Hour != tt.wantHour {
				t.Errorf("RunOf(%q, %q) = %+v, want says %q, hour %q", tt.traceparent, tt.session, r, tt.wantSays, tt.wantHour)
			}
		})
	}
	keys := map[string]string{}
	for _, c := range []struct {
		name, caller string
		subject      identity.Subject
		tp, session  string
	}{
		{"a's trace", "a", identity.Subject{}, tp1, ""},
		{"b's trace", "b", identity.Subject{}, tp1, ""},
		{"a's calls", "a", identity.Subject{}, "", ""},
		{"a's pod", "a", podSubject, "", ""},
		{"b's pod", "b", podSubject, "", ""},
		{"a without a pod", "a", noPodSubject, "", ""},
	} {
		k := RunOf(c.caller, c.subject, c.tp, c.session).Key
		if other, ok := keys[k]; ok {
			t.Errorf("%s and %s share the run key %q", c.name, other, k)
		}
		keys[k] = c.name
	}
	if a, c := RunOf("a", identity.Subject{}, tp1, ""), RunOf("a", identity.Subject{}, otherSpan, "s"); a.Key != c.Key {
		t.Errorf("two spans of one trace are two runs: %q %q", a.Key, c.Key)
	}
}

// TestBudgetPodRun: a ServiceAccount caller bound to a pod counts every
// call against one budget, whatever session and traceparent each sends
// (a new session, a new trace, none); a new pod of the same caller has a
// budget of its own. Bound to no pod, all of its calls are the run.
func TestBudgetPodRun(t *testing.T) {
	g := New(Options{})
	spec := &toolspec.Guardrails{MaxIterations: 3, MaxIterationsPerHour: 1}
	const who = "agent purko/reviewer (pod purko/run-1-step-2)"
	for _, tt := range []struct {
		name    string
		subject identity.Subject
		want    string
	}{
		{"pod", podSubject, "this agent run (pod " + podUID + ") of " + who + " may make 3 tool calls (guardrails maxIterations) and has made 3."},
		{"no pod", noPodSubject, "this agent run (calls of " + who + ") of " + who + " may make 3 tool calls (guardrails maxIterations) and has made 3."},
	} {
		t.Run(tt.name, func(t *testing.T) {
			calls := []struct{ traceparent, session string }{{tp1, "s1"}, {tp2, "s2"}, {"", ""}, {otherSpan, "s3"}}
			for i, c := range calls {
				denial := g.Budget(context.Background(), spec, who, RunOf(who, tt.subject, c.traceparent, c.session))
				if i < 3 {
					if denial != "" {
						t.Fatalf("call %d (trace %q, session %q): %s", i+1, c.traceparent, c.session, denial)
					}
					continue
				}
				if !strings.Contains(denial, tt.want) {
					t.Fatalf("call %d in a new session and trace: %q, want %q", i+1, denial, tt.want)
				}
			}
		})
	}
	next := identity.ServiceAccountSubject("sa-token").BoundToPod("another-pod-uid")
	if denial := g.Budget(context.Background(), spec, who, RunOf(who, next, "", "")); denial != "" {
		t.Fatalf("the next pod of the caller: %s", denial)
	}
}

// TestBudgetPerHour: a token or OAuth caller's runs together are held to
// maxIterationsPerHour, however many runs it opens; the refusal names the
// setting and when calls are admitted again; the hour slides, freeing
// each call about an hour after it was made (never before); the hour of
// one caller is not another's.
func TestBudgetPerHour(t *testing.T) {
	clk := newClock()
	g := New(Options{Runs: NewRunsAt(nil, clk.now)})
	spec := &toolspec.Guardrails{MaxIterations: 2, MaxIterationsPerHour: 5}
	nextRun := 0
	call := func(caller string, subject identity.Subject) string {
		nextRun++ // a new session and a new trace each time: a new run
		tp := fmt.Sprintf("00-%032x-00f067aa0ba902b7-01", nextRun)
		return g.Budget(context.Background(), spec, caller, RunOf(caller, subject, tp, fmt.Sprintf("s%d", nextRun)))
	}
	// 09:00 three calls, 09:20 two: five, each in a run of its own.
	steps := []struct {
		at      time.Duration // after 09:00
		caller  string
		subject identity.Subject
		want    string // "" admitted, else in the refusal
	}{
		{0, "bot", identity.Subject{}, ""},
		{0, "bot", identity.Subject{}, ""},
		{time.Minute, "bot", identity.Subject{}, ""},
		{20 * time.Minute, "bot", identity.Subject{}, ""},
		{21 * time.Minute, "bot", identity.Subject{}, ""},
		{22 * time.Minute, "bot", identity.Subject{}, "BLOCKED: tool call budget used up: bot may make 5 tool calls an hour across all of its agent runs (guardrails maxIterationsPerHour) and has made 5 within the last hour; calls are admitted again from 2026-03-01T10:05:00Z."},
		{22 * time.Minute, "idp/alice", oauthSubject, ""}, // another caller's hour
		{22 * time.Minute, "pod", podSubject, ""},         // a pod's run has no hour
		{59 * time.Minute, "bot", identity.Subject{}, "has made 5 within the last hour"},
		{time.Hour, "bot", identity.Subject{}, "has made 5"}, // 09:00-09:05 is still in the window
		{time.Hour + 5*time.Minute - time.Second, "bot", identity.Subject{}, "has made 5"},
		{time.Hour + 5*time.Minute, "bot", identity.Subject{}, ""}, // 09:00-09:05 left: 3 free, 2 + this one
		{time.Hour + 6*time.Minute, "bot", identity.Subject{}, ""},
		{time.Hour + 7*time.Minute, "bot", identity.Subject{}, ""},
		{time.Hour + 8*time.Minute, "bot", identity.Subject{}, "calls are admitted again from 2026-03-01T10:25:00Z."},
		{time.Hour + 25*time.Minute, "bot", identity.Subject{}, ""}, // the 09:20 slot left
		{3 * time.Hour, "bot", identity.Subject{}, ""},              // an idle hour empties the window
	}
	for i, s := range steps {
		clk.t = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC).Add(s.at)
		denial := call(s.caller, s.subject)
		if s.want == "" && denial != "" || s.want != "" && !strings.Contains(denial, s.want) {
			t.Fatalf("step %d (%s at +%v): %q, want %q", i+1, s.caller, s.at, denial, s.want)
		}
	}
	if n := g.runs.hour("bot", clk.t).total(); n != 1 {
		t.Fatalf("bot's hour at +3h holds %d calls, want 1", n)
	}
}

// replicaRuns are the runs of replicas whose owner of every caller is
// owner (an index; -1 for none): a call on another replica is counted by
// asking it (Take, through JSON as on the wire), one request per call.
type replicaRuns struct {
	runs  []*Runs
	owner atomic.Int32
	asked atomic.Int32
}

func newReplicaRuns(n int) *replicaRuns {
	rr := &replicaRuns{}
	for i := range n {
		rr.runs = append(rr.runs, NewRuns(func(_ context.Context, _ string, c Charge) (Spent, bool) {
			o := int(rr.owner.Load())
			if o < 0 || o == i {
				return Spent{}, true
			}
			rr.asked.Add(1)
			var wire Charge
			if b, err := json.Marshal(c); err != nil || json.Unmarshal(b, &wire) != nil {
				panic("a charge does not survive JSON")
			}
			var s Spent
			b, _ := json.Marshal(rr.runs[o].Take(wire))
			_ = json.Unmarshal(b, &s)
			return s, false
		}))
	}
	return rr
}

// TestBudgetAtOwner: a caller's calls on any replica are counted by its
// owner, one request per call on the others and none on the owner, against
// both its run and its hour; when the owner moves to a replica that knew
// nothing, the budget is passed by at most the calls the replica asking
// had not heard of; and an owner that cannot be asked leaves each
// replica counting alone from what it knew.
func TestBudgetAtOwner(t *testing.T) {
	rr := newReplicaRuns(4) // replica 3 takes no calls: it becomes the owner below
	g := []*Guard{New(Options{Runs: rr.runs[0]}), New(Options{Runs: rr.runs[1]}), New(Options{Runs: rr.runs[2]})}
	rr.owner.Store(1)
	spec := &toolspec.Guardrails{MaxIterations: 4, MaxIterationsPerHour: 6}
	run := RunOf("ci", identity.Subject{}, "", "s1")
	for i := range 4 {
		if denial := g[i%3].Budget(context.Background(), spec, "ci", run); denial != "" {
			t.Fatalf("call %d: %s", i+1, denial)
		}
	}
	for i, gi := range g {
		if denial := gi.Budget(context.Background(), spec, "ci", run); !strings.Contains(denial, "may make 4 tool calls (guardrails maxIterations) and has made 4") {
			t.Fatalf("call 5 on replica %d: %q", i, denial)
		}
	}
	if n := rr.asked.Load(); n != 5 { // calls 1 and 4 on replica 0, 3 on 2, and the refused on 0 and 2
		t.Fatalf("%d requests of the owner, want one per call on another replica (5)", n)
	}
	for i := range 3 { // new runs: the hour has two calls left
		denial := g[i%3].Budget(context.Background(), spec, "ci", RunOf("ci", identity.Subject{}, "", fmt.Sprintf("s%d", i+2)))
		if i < 2 && denial != "" || i >= 2 && !strings.Contains(denial, "may make 6 tool calls an hour across all of its agent runs (guardrails maxIterationsPerHour) and has made 6") {
			t.Fatalf("call %d of the hour: %q", i+5, denial)
		}
	}

	// The owner moves to replica 3, which knew nothing of the run: it
	// counts on from what each asker knew.
	move := RunOf("ci", identity.Subject{}, tp1, "")
	spec = &toolspec.Guardrails{MaxIterations: 6}
	rr.owner.Store(1)
	for i := range 3 {
		if denial := g[i%3].Budget(context.Background(), spec, "ci", move); denial != "" {
			t.Fatalf("call %d of the run before the move: %s", i+1, denial)
		}
	}
	rr.owner.Store(3)
	admitted := 3
	for i := range 6 {
		if g[i%3].Budget(context.Background(), spec, "ci", move) == "" {
			admitted++
		}
	}
	// Replica 0 asks first and had heard of 1 call of 3 (the old owner,
	// replica 1, then brings the new one up to date): one call more than
	// the budget, within the bound of the calls the askers had not heard of.
	if admitted != 6+1 {
		t.Fatalf("%d calls admitted across the move, want 7: the budget of 6, passed once while the new owner knew only what replica 0 had heard", admitted)
	}

	// No owner to ask: each replica counts alone, from what it knew.
	rr.owner.Store(-1)
	if denial := g[0].Budget(context.Background(), spec, "ci", move); !strings.Contains(denial, "has made") {
		t.Fatalf("replica 0 alone forgot what the owner told it: %q", denial)
	}
	if denial := g[0].Budget(context.Background(), &toolspec.Guardrails{}, "ci", run); denial != "" {
		t.Fatal("a caller without budgets was refused")
	}
}

// TestCountsMerge: what an asker knew raises an owner's counts, never
// lowers them, slot by slot of the hour, and an idle run's count is not
// brought back.
func TestCountsMerge(t *testing.T) {
	clk := newClock()
	r := NewRunsAt(nil, clk.now)
	c := Charge{Run: "ci\x00session\x00s", PerRun: 10, Hour: "ci", PerHour: 10}
	for range 2 {
		r.Take(c)
	}
	slot := slotOf(clk.t)
	theirs := make([]int, hourSlots)
	theirs[ring(slot-1)], theirs[ring(slot)] = 4, 1
	c.Known = Counts{Run: 5, RunLast: clk.t, HourSlot: slot, Hour: theirs}
	s := r.Take(c)
	if !s.Admitted || s.N != 5 || s.Counts.Run != 6 {
		t.Fatalf("after an asker's 5: %+v, want 5 counted before, 6 after", s)
	}
	if h := r.hour("ci", clk.t); h.n[ring(slot)] != 3 || h.n[ring(slot-1)] != 4 {
		t.Fatalf("hour slots %d and %d, want 3 (2 here + this one, more than their 1) and 4", h.n[ring(slot)], h.n[ring(slot-1)])
	}
	c.Known = Counts{Run: 1, RunLast: clk.t}
	if s := r.Take(c); s.N != 6 {
		t.Fatalf("a lower count lowered the owner's: %+v", s)
	}
	stale := Charge{Run: "ci\x00session\x00old", PerRun: 3, Known: Counts{Run: 3, RunLast: clk.t.Add(-runIdle - time.Minute)}}
	if s := r.Take(stale); !s.Admitted || s.N != 0 {
		t.Fatalf("an idle run's count came back: %+v", s)
	}
}

// TestRunsForgetIdleRuns: a run idle for runIdle starts afresh; a run
// pinned to a pod is kept for pinnedIdle, and runs other callers open
// without end do not push it out.
func TestRunsForgetIdleRuns(t *testing.T) {
	clk := newClock()
	r := NewRunsAt(nil, clk.now)
	pod := RunOf("agent", podSubject, "", "").Key
	for _, tt := range []struct {
		name string
		run  string
		idle time.Duration
	}{
		{"session", RunOf("ci", identity.Subject{}, "", "s1").Key, runIdle},
		{"pod", pod, pinnedIdle},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for range 2 {
				if s := r.Take(Charge{Run: tt.run, PerRun: 2}); !s.Admitted {
					t.Fatal("refused under the budget")
				}
			}
			if s := r.Take(Charge{Run: tt.run, PerRun: 2}); s.Admitted || s.N != 2 {
				t.Fatalf("third call: %+v, want refused after 2", s)
			}
			clk.t = clk.t.Add(tt.idle)
			if s := r.Take(Charge{Run: tt.run, PerRun: 2}); s.Admitted {
				t.Fatalf("admitted after %v idle, want the count kept until more than that", tt.idle)
			}
			clk.t = clk.t.Add(tt.idle + time.Second)
			if s := r.Take(Charge{Run: tt.run, PerRun: 2}); !s.Admitted || s.N != 0 {
				t.Fatalf("after more than %v idle: %+v, want a fresh count", tt.idle, s)
			}
		})
	}
	r.Take(Charge{Run: pod, PerRun: 2}) // the pod's second call
	for i := range runsKept + 1 {
		r.Take(Charge{Run: fmt.Sprintf("flood\x00session\x00%d", i), PerRun: 1})
	}
	if s := r.Take(Charge{Run: pod, PerRun: 2}); s.Admitted || s.N != 2 {
		t.Fatalf("the pod's run after a flood of other runs: %+v, want its count kept", s)
	}
}

// TestHourFreeAt: when an hour window that refused admits again, for
// budgets that need one slot or several to leave it.
func TestHourFreeAt(t *testing.T) {
	base := slotOf(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	h := hourCount{newest: base}
	h.n[ring(base)] = 1 // 09:00
	h = h.at(base + 4)  // 09:20
	h.n[ring(base+4)] = 2
	h = h.at(base + 12) // 10:00, the last slot 09:00 is in
	h.n[ring(base+12)] = 1
	for _, tt := range []struct {
		max  int
		want string
	}{
		{4, "10:05"}, // 09:00's call leaves: 3 < 4
		{3, "10:25"}, // and 09:20's two: 1 < 3
		{1, "11:05"}, // and 10:00's
	} {
		if got := h.freeAt(tt.max).UTC().Format("15:04"); got != tt.want {
			t.Errorf("freeAt(%d) = %s, want %s", tt.max, got, tt.want)
		}
	}
	if n := h.at(base + 13).total(); n != 3 {
		t.Errorf("at 10:05 the window holds %d calls, want 3", n)
	}
	if back := h.at(base); back.newest != base+12 || back.total() != 4 {
		t.Errorf("a clock stepped back moved the window: %+v", back)
	}
}
