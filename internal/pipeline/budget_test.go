package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/guardrails"
	"github.com/purko-io/mcp-hub/internal/identity"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/registry"
	"github.com/purko-io/mcp-hub/internal/toolspec"
)

// budgetPipeline is a pipeline over one read-only tool "t" whose backend
// counts its calls, with guardrails on the clock now.
func budgetPipeline(t *testing.T, now func() time.Time) (testPipeline, *int) {
	t.Helper()
	calls := new(int)
	b := backendFunc(func(context.Context, registry.Call) (json.RawMessage, error) {
		*calls++
		return json.RawMessage(`{"content":[]}`), nil
	})
	guard := guardrails.New(guardrails.Options{Runs: guardrails.NewRunsAt(nil, now)})
	return newTestPipeline(t, Options{Guard: guard}, registry.HubRoute(b, "t", autonomy.Class{ReadOnly: true}), nil), calls
}

// traceparentOf is a valid W3C traceparent of trace number n.
func traceparentOf(n int) string { return fmt.Sprintf("00-%032x-00f067aa0ba902b7-01", n+1) }

// TestGuardrailsBudgetPodRun: a ServiceAccount caller's run is its pod:
// whether it changes its session, its traceparent header, the
// traceparent of the call's _meta, or sends none, every call counts
// against one maxIterations, and the refusal names the pod; the next pod
// (the workflow's next step) starts afresh. maxIterationsPerHour does not
// hold a pod.
func TestGuardrailsBudgetPodRun(t *testing.T) {
	tp, calls := budgetPipeline(t, time.Now)
	pod := fullCaller
	pod.Name = "agent purko/reviewer (pod purko/run-9-step-2)"
	pod.Guardrails = &toolspec.Guardrails{MaxIterations: 4, MaxIterationsPerHour: 1}
	pod.Subject = identity.ServiceAccountSubject("sa-token").BoundToPod("6f1c0d7e-93b4-4d0f-8a55-1e2f3a4b5c6d")
	steps := []struct {
		name, header, meta, session string
		want                        Outcome
	}{
		{"first call", traceparentOf(1), "", "s1", OK},
		{"new session", traceparentOf(1), "", "s2", OK},
		{"new traceparent header", traceparentOf(2), "", "s2", OK},
		{"neither", "", "", "", OK},
		{"new trace in _meta, new session", traceparentOf(1), traceparentOf(3), "s3", Denied},
		{"new everything", traceparentOf(4), "", "s4", Denied},
	}
	for _, s := range steps {
		c := pod
		c.Traceparent = s.header
		call := jsonrpc.ToolCall{Name: "t"}
		if s.meta != "" {
			call.Meta = map[string]json.RawMessage{jsonrpc.MetaTraceparent: json.RawMessage(`"` + s.meta + `"`)}
		}
		out := tp.Run(context.Background(), c, s.session, call, nil)
		if out.Outcome != s.want {
			t.Fatalf("%s: %v %s, want %v", s.name, out.Outcome, out.Result, s.want)
		}
		if s.want == Denied && !strings.Contains(string(out.Result), "this agent run (pod 6f1c0d7e-93b4-4d0f-8a55-1e2f3a4b5c6d) of "+pod.Name+" may make 4 tool calls (guardrails maxIterations) and has made 4.") {
			t.Fatalf("%s: refused with %s", s.name, out.Result)
		}
	}
	if *calls != 4 {
		t.Fatalf("the backend ran %d calls, want 4", *calls)
	}
	next := pod
	next.Subject = identity.ServiceAccountSubject("sa-token-2").BoundToPod("0e9d8c7b-6a5f-4e3d-2c1b-0a9f8e7d6c5b")
	if out := tp.Run(context.Background(), next, "s1", jsonrpc.ToolCall{Name: "t"}, nil); out.Outcome != OK {
		t.Fatalf("the next pod: %v %s", out.Outcome, out.Result)
	}
}

// TestGuardrailsBudgetPerHour: a token caller (and an OAuth caller) that
// opens a new run for every call, each far under maxIterations, is
// refused once its runs together reach maxIterationsPerHour, with a
// BLOCKED text naming the setting, and never reaches the backend then;
// when the hour has passed its calls are admitted again. One caller's
// hour is not another's.
func TestGuardrailsBudgetPerHour(t *testing.T) {
	start := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	now := start
	tp, calls := budgetPipeline(t, func() time.Time { return now })
	bot := fullCaller
	bot.Name = "support-bot"
	bot.Guardrails = &toolspec.Guardrails{MaxIterations: 10, MaxIterationsPerHour: 3}
	alice := bot
	alice.Name = "login.example.com/alice"
	alice.Subject = identity.OAuthSubject("access-token", "https://login.example.com", start.Add(24*time.Hour))
	run := 0
	steps := []struct {
		at     time.Duration
		caller callers.Caller
		want   Outcome
		says   string
	}{
		{0, bot, OK, ""},
		{10 * time.Minute, bot, OK, ""},
		{20 * time.Minute, bot, OK, ""},
		{30 * time.Minute, bot, Denied, "BLOCKED: tool call budget used up: support-bot may make 3 tool calls an hour across all of its agent runs (guardrails maxIterationsPerHour) and has made 3 within the last hour; calls are admitted again from 2026-03-01T10:05:00Z."},
		{30 * time.Minute, alice, OK, ""},
		{30 * time.Minute, alice, OK, ""},
		{30 * time.Minute, alice, OK, ""},
		{31 * time.Minute, alice, Denied, "login.example.com/alice may make 3 tool calls an hour across all of its agent runs (guardrails maxIterationsPerHour)"},
		{time.Hour + 4*time.Minute, bot, Denied, "has made 3 within the last hour"},
		{time.Hour + 5*time.Minute, bot, OK, ""}, // the 09:00 call left the hour
		{time.Hour + 6*time.Minute, bot, Denied, "calls are admitted again from 2026-03-01T10:15:00Z."},
		{time.Hour + 15*time.Minute, bot, OK, ""},
	}
	for i, s := range steps {
		now = start.Add(s.at)
		run++ // a new session and a new trace: a new run every time
		c := s.caller
		c.Traceparent = traceparentOf(run)
		out := tp.Run(context.Background(), c, fmt.Sprintf("session-%d", run), jsonrpc.ToolCall{Name: "t"}, nil)
		if out.Outcome != s.want || !strings.Contains(string(out.Result), s.says) {
			t.Fatalf("step %d (%s at +%v): %v %s, want %v with %q", i+1, c.Name, s.at, out.Outcome, out.Result, s.want, s.says)
		}
	}
	if *calls != 8 {
		t.Fatalf("the backend ran %d calls, want 8", *calls)
	}
}
