package pipeline

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/registry"
	"github.com/purko-io/mcp-hub/internal/toolspec"
)

// awsKey is shaped as an AWS access key id the secrets filter knows (not a
// real key: gitleaks' rule, not AWS, decides).
const awsKey = "AKIAZ3MSJV5WKQ7TYRXB"

// TestGuardrailsFilterBothWays: a caller's content filters apply to what
// it sends (the upstream sees the redacted arguments, or nothing when
// blocked) and to what it gets (text, embedded resources, structured
// content, and base64 data that decodes to text: the image here is the
// key's base64; the result stays valid JSON), with an audit line per direction
// naming rules, never the text, and the console's feed told.
func TestGuardrailsFilterBothWays(t *testing.T) {
	result := json.RawMessage(`{"content":[{"type":"text","text":"mail alice.smith@corp-mail.de now"},` +
		`{"type":"resource","resource":{"uri":"file:///a","mimeType":"text/plain","text":"key ` + awsKey + `"}},` +
		`{"type":"image","data":"QUtJQVozTVNKVjVXS1E3VFlSWEI=","mimeType":"image/png"}],` +
		`"structuredContent":{"owner":{"mail":"alice.smith@corp-mail.de"},"n":3}}`)
	tests := []struct {
		name        string
		guardrails  toolspec.Guardrails
		args        string
		wantCalled  bool
		wantArgs    string // the arguments the backend got
		wantOutcome Outcome
		wantText    []string // in the answer
		wantNot     []string // not in the answer
	}{
		{
			name:       "redact",
			guardrails: toolspec.Guardrails{ContentFilters: []string{"no-pii", "secrets"}},
			args:       `{"body":"ping bob.jones@corp-mail.de","n":1}`,
			wantCalled: true, wantArgs: `{"body":"ping [redacted: email]","n":1}`,
			wantOutcome: OK,
			wantText:    []string{"mail [redacted: email] now", "key [redacted: aws-access-token]", `"mail":"[redacted: email]"`, `"data":"[redacted: aws-access-token]"`},
			wantNot:     []string{"alice.smith", awsKey},
		},
		{
			name:       "block arguments",
			guardrails: toolspec.Guardrails{ContentFilters: []string{"no-secrets-in-output"}, ContentFilterMode: "block"},
			args:       `{"body":"the key is ` + awsKey + `"}`,
			wantCalled: false, wantOutcome: Denied,
			wantText: []string{"BLOCKED: the arguments of tool 't' hold what the content filter secrets refuses (aws-access-token); the call was not sent."},
			wantNot:  []string{awsKey},
		},
		{
			name:       "block result",
			guardrails: toolspec.Guardrails{ContentFilters: []string{"pii"}, ContentFilterMode: "block"},
			args:       `{"body":"nothing personal"}`,
			wantCalled: true, wantArgs: `{"body":"nothing personal"}`, wantOutcome: Denied,
			wantText: []string{"BLOCKED: the result of tool 't' holds what the content filter pii refuses (email×2); it was withheld."},
			wantNot:  []string{"alice.smith"},
		},
		{
			name:       "regex with colons",
			guardrails: toolspec.Guardrails{ContentFilters: []string{`regex:\d{2}:\d{2}:[time]`}},
			args:       `{"at":"meet at 12:30"}`,
			wantCalled: true, wantArgs: `{"at":"meet at [time]"}`, wantOutcome: OK,
			wantText: []string{"alice.smith@corp-mail.de"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			called, gotArgs := false, ""
			b := backendFunc(func(_ context.Context, c registry.Call) (json.RawMessage, error) {
				called, gotArgs = true, string(c.Arguments)
				return result, nil
			})
			tp := newTestPipeline(t, Options{}, registry.HubRoute(b, "t", autonomy.Class{ReadOnly: true}), nil)
			caller := fullCaller
			caller.Guardrails = &tt.guardrails
			out := tp.Run(context.Background(), caller, "s1", jsonrpc.ToolCall{Name: "t", Arguments: json.RawMessage(tt.args)}, nil)
			if called != tt.wantCalled || out.Outcome != tt.wantOutcome {
				t.Fatalf("backend called %v, outcome %q; want %v, %q (result %s)", called, out.Outcome, tt.wantCalled, tt.wantOutcome, out.Result)
			}
			if called && gotArgs != tt.wantArgs {
				t.Fatalf("the backend got %s, want %s", gotArgs, tt.wantArgs)
			}
			if !json.Valid(out.Result) {
				t.Fatalf("the answer is not JSON: %s", out.Result)
			}
			for _, s := range tt.wantText {
				if !strings.Contains(string(out.Result), s) {
					t.Errorf("the answer %s lacks %q", out.Result, s)
				}
			}
			for _, s := range tt.wantNot {
				if strings.Contains(string(out.Result), s) || strings.Contains(tp.log.String(), s) {
					t.Errorf("%q is in the answer or the log", s)
				}
			}
			if tt.name != "regex with colons" && !strings.Contains(tp.log.String(), `"audit":"guardrail"`) {
				t.Errorf("no guardrail audit line in %s", tp.log.String())
			}
		})
	}
}

// TestInputResponsesAreScreened: a 2026-07-28 caller's answers to an
// upstream's input requests go up through its filters with the arguments.
func TestInputResponsesAreScreened(t *testing.T) {
	var got registry.Call
	b := backendFunc(func(_ context.Context, c registry.Call) (json.RawMessage, error) {
		got = c
		return json.RawMessage(`{"content":[]}`), nil
	})
	tp := newTestPipeline(t, Options{}, registry.HubRoute(b, "t", autonomy.Class{ReadOnly: true}), nil)
	caller := fullCaller
	caller.Guardrails = &toolspec.Guardrails{ContentFilters: []string{"no-pii"}}
	call := jsonrpc.ToolCall{Name: "t", Arguments: json.RawMessage(`{"q":"x"}`),
		InputResponses: json.RawMessage(`{"ask-1":{"action":"accept","content":{"mail":"bob.jones@corp-mail.de"}}}`)}
	if out := tp.Run(context.Background(), caller, "s1", call, nil); out.Outcome != OK {
		t.Fatalf("outcome %q: %s %+v", out.Outcome, out.Result, out.Error)
	}
	if string(got.Arguments) != `{"q":"x"}` || string(got.InputResponses) != `{"ask-1":{"action":"accept","content":{"mail":"[redacted: email]"}}}` {
		t.Fatalf("the upstream got arguments %s, inputResponses %s", got.Arguments, got.InputResponses)
	}
}

// TestUpstreamErrorsAreScreened: an upstream's JSON-RPC error is text it
// wrote, which reaches the caller as a result does: its message and data
// pass the caller's content filters on a call and on any other request,
// and a blocking filter withholds it.
func TestUpstreamErrorsAreScreened(t *testing.T) {
	upstreamErr := &jsonrpc.Error{Code: -32000, Message: "no access for alice.smith@corp-mail.de",
		Data: json.RawMessage(`{"hint":"use key ` + awsKey + `","n":2}`)}
	redact := toolspec.Guardrails{ContentFilters: []string{"no-pii", "secrets"}}
	block := toolspec.Guardrails{ContentFilters: []string{"pii"}, ContentFilterMode: "block"}
	for _, tc := range []struct {
		name    string
		g       *toolspec.Guardrails
		request bool // resources/read, else tools/call
		// want is in the answer (the error's message and data, or the
		// withheld text); code is the answer's error code, 0 for a result.
		want string
		code int
	}{
		{"call, no filters", nil, false, "alice.smith@corp-mail.de", -32000},
		{"call, redacted", &redact, false, "no access for [redacted: email]", -32000},
		{"call, withheld", &block, false, "BLOCKED: the result of tool 't'", 0},
		{"read, redacted", &redact, true, "no access for [redacted: email]", -32000},
		{"read, withheld", &block, true, "BLOCKED", CodeDenied},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := backendFunc(func(context.Context, registry.Call) (json.RawMessage, error) { return nil, upstreamErr })
			tp := newTestPipeline(t, Options{}, registry.HubRoute(b, "t", autonomy.Class{ReadOnly: true}), nil)
			caller := fullCaller
			caller.Guardrails = tc.g
			var out Result
			if tc.request {
				out = tp.Serve(context.Background(), caller, "s1", Request{Method: "resources/read", Target: "file:///a", Server: "files", Original: "file:///a"},
					func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, upstreamErr })
			} else {
				out = tp.Run(context.Background(), caller, "s1", jsonrpc.ToolCall{Name: "t", Arguments: json.RawMessage(`{}`)}, nil)
			}
			answer, code := string(out.Result), 0
			if out.Error != nil {
				b, _ := json.Marshal(out.Error)
				answer, code = string(b), out.Error.Code
			}
			if code != tc.code || !strings.Contains(answer, tc.want) {
				t.Fatalf("answer %s (code %d), want %q (code %d)", answer, code, tc.want, tc.code)
			}
			if tc.g != nil && (strings.Contains(answer, "alice.smith") || strings.Contains(answer, awsKey)) {
				t.Errorf("the answer %s holds what the filters look for", answer)
			}
			if tc.g == &redact && !strings.Contains(answer, `"data":{"hint":"use key [redacted: aws-access-token]","n":2}`) {
				t.Errorf("the error's data %s: not screened, or not kept as data", answer)
			}
		})
	}
}

// TestGuardrailsBudgetPerRun: maxIterations admits that many calls of one
// run (the trace of the traceparent, from the header or _meta, else the
// session); call N+1 is BLOCKED naming the budget and never reaches the
// backend; another run, or another caller's run of the same trace, has its
// own count; a reconnect (new session, same trace) keeps the count.
func TestGuardrailsBudgetPerRun(t *testing.T) {
	calls := 0
	b := backendFunc(func(context.Context, registry.Call) (json.RawMessage, error) {
		calls++
		return json.RawMessage(`{"content":[]}`), nil
	})
	tp := newTestPipeline(t, Options{}, registry.HubRoute(b, "t", autonomy.Class{ReadOnly: true}), nil)
	const tp1 = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	const tp2 = "00-5bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	agent := fullCaller
	agent.Guardrails = &toolspec.Guardrails{MaxIterations: 3}
	agent.Traceparent = tp1
	other := agent
	other.Name = "other"
	viaMeta := agent
	viaMeta.Traceparent = ""
	metaTP := map[string]json.RawMessage{jsonrpc.MetaTraceparent: json.RawMessage(`"` + tp1 + `"`)}
	run := func(c callers.Caller, session string, meta map[string]json.RawMessage) Result {
		return tp.Run(context.Background(), c, session, jsonrpc.ToolCall{Name: "t", Meta: meta}, nil)
	}
	for i, s := range []string{"s1", "s1", "s2"} { // a reconnect: same trace, new session
		if out := run(agent, s, nil); out.Outcome != OK {
			t.Fatalf("call %d: %+v", i+1, out)
		}
	}
	for _, c := range []struct {
		name   string
		caller callers.Caller
		meta   map[string]json.RawMessage
	}{{"header", agent, nil}, {"_meta", viaMeta, metaTP}} {
		out := run(c.caller, "s3", c.meta)
		if out.Outcome != Denied || !strings.Contains(string(out.Result), "BLOCKED: tool call budget used up: this agent run (trace 4bf92f3577b34da6a3ce929d0e0e4736) of ci may make 3 tool calls (guardrails maxIterations) and has made 3.") {
			t.Fatalf("call 4 by %s: %+v %s", c.name, out, out.Result)
		}
	}
	if calls != 3 {
		t.Fatalf("the backend ran %d calls, want 3", calls)
	}
	if a := tp.audit(t); a["decision"] != "denied" || !strings.Contains(a["reason"].(string), "maxIterations") {
		t.Fatalf("audit line %v", a)
	}
	if out := run(other, "s1", nil); out.Outcome != OK {
		t.Fatalf("another caller's run of the same trace: %+v", out)
	}
	second := agent
	second.Traceparent = tp2
	if out := run(second, "s1", nil); out.Outcome != OK {
		t.Fatalf("another run: %+v", out)
	}
	bySession := fullCaller
	bySession.Guardrails = &toolspec.Guardrails{MaxIterations: 1}
	if out := run(bySession, "s9", nil); out.Outcome != OK {
		t.Fatalf("first call of a session: %+v", out)
	}
	if out := run(bySession, "s9", nil); out.Outcome != Denied || !strings.Contains(string(out.Result), "(session)") {
		t.Fatalf("second call of a session with budget 1: %+v %s", out, out.Result)
	}
	if n := tp.counter(t, "mcphub_guardrail_budget_refusals_total", map[string]string{}); n != 3 {
		t.Fatalf("mcphub_guardrail_budget_refusals_total = %v, want 3", n)
	}
}
