package guardrails

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/purko-io/mcp-hub/internal/toolspec"
)

// TestRunOf: a valid traceparent names the run by its trace id, whatever
// the span; without one the session does, else the caller's calls; runs
// of different callers never share a key.
func TestRunOf(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	const otherSpan = "00-4bf92f3577b34da6a3ce929d0e0e4736-11f067aa0ba902b7-00"
	tests := []struct {
		traceparent, session, wantSays string
	}{
		{tp, "s1", "trace 4bf92f3577b34da6a3ce929d0e0e4736"},
		{otherSpan, "", "trace 4bf92f3577b34da6a3ce929d0e0e4736"},
		{"00-00000000000000000000000000000000-00f067aa0ba902b7-01", "s1", "session"},
		{"garbage", "s1", "session"},
		{"", "", "calls of ci"},
	}
	for _, tt := range tests {
		if _, says := RunOf("ci", tt.traceparent, tt.session); says != tt.wantSays {
			t.Errorf("RunOf(%q, %q) says %q, want %q", tt.traceparent, tt.session, says, tt.wantSays)
		}
	}
	a, _ := RunOf("a", tp, "")
	b, _ := RunOf("b", tp, "")
	c, _ := RunOf("a", otherSpan, "s")
	if a == b || a != c {
		t.Fatalf("run keys %q %q %q", a, b, c)
	}
}

// TestBudgetAcrossReplicas: each admitted call is told to the peers before
// its wait returns, and a peer's calls count against the budget here.
func TestBudgetAcrossReplicas(t *testing.T) {
	var here, there *Runs
	var told atomic.Int32
	here = NewRuns(func(_ context.Context, run string) { told.Add(1); there.Heard(run) })
	there = NewRuns(func(_ context.Context, run string) { told.Add(1); here.Heard(run) })
	g1, g2 := New(Options{Runs: here}), New(Options{Runs: there})
	spec := &toolspec.Guardrails{MaxIterations: 4}
	run, says := RunOf("ci", "", "s1")
	for i := range 4 {
		g := g1
		if i%2 == 1 {
			g = g2
		}
		denial, wait := g.Budget(context.Background(), spec, "ci", run, says)
		if denial != "" {
			t.Fatalf("call %d: %s", i+1, denial)
		}
		wait()
	}
	for _, g := range []*Guard{g1, g2} {
		denial, _ := g.Budget(context.Background(), spec, "ci", run, says)
		if !strings.Contains(denial, "may make 4 tool calls (guardrails maxIterations) and has made 4") {
			t.Fatalf("call 5: %q", denial)
		}
	}
	if told.Load() != 4 {
		t.Fatalf("told the peer %d times, want once per admitted call (4)", told.Load())
	}
	if denial, wait := g1.Budget(context.Background(), &toolspec.Guardrails{}, "ci", run, says); denial != "" || wait == nil {
		t.Fatal("a caller without maxIterations was refused")
	}
}

// TestRunsForgetIdleRuns: a run idle for runIdle starts afresh.
func TestRunsForgetIdleRuns(t *testing.T) {
	r := NewRuns(nil)
	now := time.Unix(1_700_000_000, 0)
	r.now = func() time.Time { return now }
	for range 2 {
		if _, ok := r.take("run", 2); !ok {
			t.Fatal("refused under the budget")
		}
	}
	if n, ok := r.take("run", 2); ok || n != 2 {
		t.Fatalf("third call: %d %v, want refused after 2", n, ok)
	}
	now = now.Add(runIdle + time.Second)
	if n, ok := r.take("run", 2); !ok || n != 0 {
		t.Fatalf("after runIdle: %d %v, want a fresh count", n, ok)
	}
}
