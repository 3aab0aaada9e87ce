package guardrails

import (
	"context"
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
				denial, wait := g.Budget(context.Background(), spec, who, RunOf(who, tt.subject, c.traceparent, c.session))
				if i < 3 {
					if denial != "" {
						t.Fatalf("call %d (trace %q, session %q): %s", i+1, c.traceparent, c.session, denial)
					}
					wait()
					continue
				}
				if !strings.Contains(denial, tt.want) {
					t.Fatalf("call %d in a new session and trace: %q, want %q", i+1, denial, tt.want)
				}
			}
		})
	}
	next := identity.ServiceAccountSubject("sa-token").BoundToPod("another-pod-uid")
	if denial, _ := g.Budget(context.Background(), spec, who, RunOf(who, next, "", "")); denial != "" {
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
		denial, wait := g.Budget(context.Background(), spec, caller, RunOf(caller, subject, tp, fmt.Sprintf("s%d", nextRun)))
		if denial == "" {
			wait()
		}
		return denial
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

// TestBudgetAcrossReplicas: each admitted call is told to the peers before
// its wait returns, with its run and its caller's hour, and a peer's calls
// count against both budgets here.
func TestBudgetAcrossReplicas(t *testing.T) {
	var here, there *Runs
	var told atomic.Int32
	here = NewRuns(func(_ context.Context, run, hour string) { told.Add(1); there.Heard(run, hour) })
	there = NewRuns(func(_ context.Context, run, hour string) { told.Add(1); here.Heard(run, hour) })
	g1, g2 := New(Options{Runs: here}), New(Options{Runs: there})
	spec := &toolspec.Guardrails{MaxIterations: 4, MaxIterationsPerHour: 6}
	each := func(i int) *Guard { return []*Guard{g1, g2}[i%2] }
	run := RunOf("ci", identity.Subject{}, "", "s1")
	for i := range 4 {
		denial, wait := each(i).Budget(context.Background(), spec, "ci", run)
		if denial != "" {
			t.Fatalf("call %d: %s", i+1, denial)
		}
		wait()
	}
	for _, g := range []*Guard{g1, g2} {
		denial, _ := g.Budget(context.Background(), spec, "ci", run)
		if !strings.Contains(denial, "may make 4 tool calls (guardrails maxIterations) and has made 4") {
			t.Fatalf("call 5: %q", denial)
		}
	}
	for i := range 2 { // new runs: the hour has two calls left
		denial, wait := each(i).Budget(context.Background(), spec, "ci", RunOf("ci", identity.Subject{}, "", fmt.Sprintf("s%d", i+2)))
		if denial != "" {
			t.Fatalf("call %d of the hour: %s", i+5, denial)
		}
		wait()
	}
	for _, g := range []*Guard{g1, g2} {
		denial, _ := g.Budget(context.Background(), spec, "ci", RunOf("ci", identity.Subject{}, tp1, "s9"))
		if !strings.Contains(denial, "may make 6 tool calls an hour across all of its agent runs (guardrails maxIterationsPerHour) and has made 6") {
			t.Fatalf("call 7 of the hour, in a new run: %q", denial)
		}
	}
	if told.Load() != 6 {
		t.Fatalf("told the peer %d times, want once per admitted call (6)", told.Load())
	}
	if denial, wait := g1.Budget(context.Background(), &toolspec.Guardrails{}, "ci", run); denial != "" || wait == nil {
		t.Fatal("a caller without budgets was refused")
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
				if _, ok := r.take(charge{run: tt.run, perRun: 2}); !ok {
					t.Fatal("refused under the budget")
				}
			}
			if s, ok := r.take(charge{run: tt.run, perRun: 2}); ok || s.n != 2 {
				t.Fatalf("third call: %+v %v, want refused after 2", s, ok)
			}
			clk.t = clk.t.Add(tt.idle)
			if _, ok := r.take(charge{run: tt.run, perRun: 2}); ok {
				t.Fatalf("admitted after %v idle, want the count kept until more than that", tt.idle)
			}
			clk.t = clk.t.Add(tt.idle + time.Second)
			if s, ok := r.take(charge{run: tt.run, perRun: 2}); !ok || s.n != 0 {
				t.Fatalf("after more than %v idle: %+v %v, want a fresh count", tt.idle, s, ok)
			}
		})
	}
	r.take(charge{run: pod, perRun: 2}) // the pod's second call
	for i := range runsKept + 1 {
		r.Heard(fmt.Sprintf("flood\x00session\x00%d", i), "")
	}
	if s, ok := r.take(charge{run: pod, perRun: 2}); ok || s.n != 2 {
		t.Fatalf("the pod's run after a flood of other runs: %+v %v, want its count kept", s, ok)
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
