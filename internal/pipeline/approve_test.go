package pipeline

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/purko-io/mcp-hub/internal/approvals"
	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/ratelimit"
	"github.com/purko-io/mcp-hub/internal/registry"
	"github.com/purko-io/mcp-hub/internal/toolspec"
)

// TestWritesWaitForAPerson: a caller with humanApprovalRequired waits at
// a write tool until an approver approves, and the upstream then gets the
// call once, with the arguments the content filters left (those the
// approver was shown); meanwhile its reads run (the wait gives its
// in-flight slot back). A read tool, a write tool outside approvalFor and a
// caller without the guardrail never wait; a pipeline without approvals
// refuses what needs one.
func TestWritesWaitForAPerson(t *testing.T) {
	var ran atomic.Int32
	var gotArgs atomic.Value
	b := backendFunc(func(_ context.Context, c registry.Call) (json.RawMessage, error) {
		ran.Add(1)
		gotArgs.Store(string(c.Arguments))
		return json.RawMessage(`{"content":[{"type":"text","text":"done"}]}`), nil
	})
	write := registry.HubRoute(b, "merge_pull_request", autonomy.Class{})
	read := registry.HubRoute(b, "get_pull_request", autonomy.Class{ReadOnly: true})
	gate := approvals.New(approvals.Options{})
	defer gate.Close()
	limits := Options{Approvals: gate, PerCaller: ratelimit.Limits{MaxInFlight: 1, Where: "limits.perCaller"}}
	bot := callers.Caller{Name: "bot", Ceiling: autonomy.Supervised, Level: autonomy.Supervised,
		Guardrails: &toolspec.Guardrails{HumanApprovalRequired: true, ContentFilters: []string{"pii"}}}
	ops := callers.Caller{Name: "ops", Admin: true}
	call := jsonrpc.ToolCall{Name: "merge_pull_request", Arguments: json.RawMessage(`{"note":"ping bob.jones@corp-mail.de"}`)}

	tp := newTestPipeline(t, limits, write, nil)
	done := make(chan Result, 1)
	go func() { done <- tp.Run(context.Background(), bot, "s1", call, nil) }()
	var held approvals.Pending
	deadline := time.Now().Add(5 * time.Second)
	for held.ID == "" && time.Now().Before(deadline) {
		if l := gate.List(ops); len(l) == 1 {
			held = l[0]
		}
		time.Sleep(time.Millisecond)
	}
	if held.ID == "" || ran.Load() != 0 {
		t.Fatalf("held %+v, upstream ran %d times", held, ran.Load())
	}
	if string(held.Arguments) != `{"note":"ping [redacted: email]"}` {
		t.Errorf("the approver is shown %s, not what the upstream would get", held.Arguments)
	}
	// The caller's one in-flight slot is free while it waits.
	readPipe := newTestPipeline(t, limits, read, nil)
	readPipe.Pipeline.limits = tp.Pipeline.limits
	if out := readPipe.Run(context.Background(), bot, "s1", jsonrpc.ToolCall{Name: "get_pull_request"}, nil); out.Outcome != OK {
		t.Fatalf("a read while a write waits: %q %s %+v", out.Outcome, out.Result, out.Error)
	}
	if _, err := gate.Decide(ops, held.ID, true, "", held.ArgumentsSHA256); err != nil {
		t.Fatal(err)
	}
	out := <-done
	if out.Outcome != OK || ran.Load() != 2 || gotArgs.Load() != `{"note":"ping [redacted: email]"}` {
		t.Fatalf("approved: %q %s, upstream ran %d times with %v", out.Outcome, out.Result, ran.Load(), gotArgs.Load())
	}
	if a := tp.audit(t); !strings.HasPrefix(a["guardrail"].(string), "redacted email in arguments; approval "+held.ID+" approved by ops after ") {
		t.Errorf("the call's audit line: %v", a)
	}

	for _, tc := range []struct {
		name   string
		route  registry.Route
		caller callers.Caller
	}{
		{"a read tool", read, bot},
		{"outside approvalFor", write, callers.Caller{Name: "bot", Level: autonomy.Supervised,
			Guardrails: &toolspec.Guardrails{HumanApprovalRequired: true, ApprovalFor: []string{"delete_*"}}}},
		{"no guardrail", write, callers.Caller{Name: "bot", Level: autonomy.Supervised}},
	} {
		before := ran.Load()
		p := newTestPipeline(t, Options{Approvals: gate}, tc.route, nil)
		if out := p.Run(context.Background(), tc.caller, "s1", jsonrpc.ToolCall{Name: tc.route.Original}, nil); out.Outcome != OK || ran.Load() != before+1 {
			t.Errorf("%s: %q %s (upstream ran %d more)", tc.name, out.Outcome, out.Result, ran.Load()-before)
		}
	}

	none := newTestPipeline(t, Options{}, write, nil)
	before := ran.Load()
	out = none.Run(context.Background(), bot, "s1", call, nil)
	if out.Outcome != Denied || !strings.Contains(string(out.Result), "needs a person's approval, and this hub has no way to ask for one") || ran.Load() != before {
		t.Fatalf("without approvals: %q %s", out.Outcome, out.Result)
	}
}

// TestDeniedCallTellsWhy: a denial reaches the caller as BLOCKED with the
// approver and the reason, and the upstream never.
func TestDeniedCallTellsWhy(t *testing.T) {
	var ran atomic.Int32
	b := backendFunc(func(context.Context, registry.Call) (json.RawMessage, error) {
		ran.Add(1)
		return json.RawMessage(`{"content":[]}`), nil
	})
	gate := approvals.New(approvals.Options{})
	defer gate.Close()
	tp := newTestPipeline(t, Options{Approvals: gate}, registry.HubRoute(b, "delete_file", autonomy.Class{}), nil)
	bot := callers.Caller{Name: "bot", Level: autonomy.Full, Guardrails: &toolspec.Guardrails{HumanApprovalRequired: true}}
	done := make(chan Result, 1)
	go func() { done <- tp.Run(context.Background(), bot, "s1", jsonrpc.ToolCall{Name: "delete_file"}, nil) }()
	ops := callers.Caller{Name: "ops", Admin: true}
	for len(gate.List(ops)) == 0 {
		time.Sleep(time.Millisecond)
	}
	id := gate.List(ops)[0].ID
	if _, err := gate.Decide(ops, id, false, "keep it", ""); err != nil {
		t.Fatal(err)
	}
	out := <-done
	want := "BLOCKED: tool 'delete_file' on server 'hub' needs a person's approval (approval " + id + "), and ops denied it: keep it"
	if out.Outcome != Denied || !strings.Contains(string(out.Result), want) || ran.Load() != 0 {
		t.Fatalf("denied: %q %s (upstream ran %d)", out.Outcome, out.Result, ran.Load())
	}
	if a := tp.audit(t); a["decision"] != "denied" || !strings.Contains(a["reason"].(string), "ops denied it: keep it") {
		t.Errorf("audit %v", a)
	}
}
