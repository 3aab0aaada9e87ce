package pipeline

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/ratelimit"
	"github.com/purko-io/mcp-hub/internal/registry"
	"github.com/purko-io/mcp-hub/internal/resultcap"
	"github.com/purko-io/mcp-hub/internal/toolspec"
)

// A resource whose text holds an e-mail address and an AWS key (the
// example key of AWS's own documentation).
const leakyResource = `{"contents":[{"uri":"file:///notes","mimeType":"text/plain","text":"mail olga@fabrikam.de, key AKIAZ3MSJV5WKQ7TYRXB"}]}`

// TestServe: every request besides tools/call takes the steps of a call:
// the decision (level, endpoint scope, allow-list), the caller's content
// filters both ways, the caller's limits, the cap, and the record (an
// audit line named by the method, the method's metrics).
func TestServe(t *testing.T) {
	guarded := fullCaller
	guarded.Guardrails = &toolspec.Guardrails{ContentFilters: []string{"no-pii", "no-secrets-in-output"}}
	blocking := fullCaller
	blocking.Guardrails = &toolspec.Guardrails{ContentFilters: []string{"no-secrets-in-output"}, ContentFilterMode: "block"}
	manual := fullCaller
	manual.Level = autonomy.Manual
	listed := fullCaller
	listed.Allow = autonomy.NewAllowlist([]string{"search"})
	read := Request{Method: "resources/read", Target: "file:///notes", Server: "files", Original: "file:///notes", Shape: resultcap.Resource}
	for _, tc := range []struct {
		name    string
		caller  callers.Caller
		req     Request
		answer  string
		outcome Outcome
		// want and hide are what the answer's bytes must and must not hold.
		want, hide []string
		// reached says whether the upstream was asked.
		reached bool
	}{
		{"plain read", fullCaller, read, leakyResource, OK, []string{"AKIAZ3MSJV5WKQ7TYRXB", "olga@fabrikam.de"}, nil, true},
		{"guarded read is redacted", guarded, read, leakyResource, OK, []string{"[redacted"}, []string{"AKIAZ3MSJV5WKQ7TYRXB", "olga@fabrikam.de"}, true},
		{"blocking filter withholds", blocking, read, leakyResource, Denied, []string{"BLOCKED", "resources/read of 'file:///notes'"}, []string{"AKIAZ3MSJV5WKQ7TYRXB"}, true},
		{"manual is denied", manual, read, leakyResource, Denied, []string{"BLOCKED: Manual autonomy"}, nil, false},
		{"allow-list not naming it", listed, read, leakyResource, Denied, []string{"not in the tool list"}, nil, false},
		{"guarded prompt arguments are screened going up", guarded,
			Request{Method: "prompts/get", Target: "review", Server: "files", Original: "review", Params: json.RawMessage(`{"who":"olga@fabrikam.de"}`), Shape: resultcap.Prompt},
			`{"messages":[]}`, OK, nil, nil, true},
		{"cut to the server's cap", fullCaller,
			Request{Method: "resources/read", Target: "file:///big", Server: "files", Original: "file:///big", Shape: resultcap.Resource,
				Cap: registry.ResultCap{Chars: 100, Setting: "upstream.maxResultChars"}},
			`{"contents":[{"uri":"file:///big","text":"` + strings.Repeat("x", 500) + `"}]}`, OK, []string{"result cut to its first", "upstream.maxResultChars"}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tp := newTestPipeline(t, Options{}, registry.Route{}, nil)
			reached := false
			var sent json.RawMessage
			out := tp.Serve(context.Background(), tc.caller, "s1", tc.req, func(_ context.Context, params json.RawMessage) (json.RawMessage, error) {
				reached, sent = true, params
				return json.RawMessage(tc.answer), nil
			})
			if out.Outcome != tc.outcome || reached != tc.reached {
				t.Fatalf("outcome %q, upstream reached %v: want %q, %v (%+v)", out.Outcome, reached, tc.outcome, tc.reached, out.Error)
			}
			answer := string(out.Result)
			if out.Error != nil {
				answer = out.Error.Message
				if out.Outcome == Denied && out.Error.Code != CodeDenied {
					t.Errorf("denial code %d, want %d", out.Error.Code, CodeDenied)
				}
			}
			for _, w := range tc.want {
				if !strings.Contains(answer, w) {
					t.Errorf("answer %s: want %q", answer, w)
				}
			}
			for _, h := range tc.hide {
				if strings.Contains(answer, h) {
					t.Errorf("answer %s: holds %q", answer, h)
				}
			}
			if tc.req.Params != nil && tc.caller.Guardrails != nil && strings.Contains(string(sent), "olga@fabrikam.de") {
				t.Errorf("the upstream got %s: the caller's filters did not screen it", sent)
			}
			a := tp.audit(t)
			if a["audit"] != tc.req.Method || a["outcome"] != tc.outcome || a["target"] != tc.req.Target {
				t.Errorf("audit line %v: want audit %q, outcome %q, target %q", a, tc.req.Method, tc.outcome, tc.req.Target)
			}
			if n := tp.counter(t, "mcphub_requests_total", map[string]string{"method": tc.req.Method, "server": "files", "outcome": tc.outcome}); n != 1 {
				t.Errorf("mcphub_requests_total = %v, want 1", n)
			}
		})
	}
}

// TestServeLimited: a caller limited to one request a second is refused
// its second read at once, as its second call would be: requests of every
// method count against the same limit.
func TestServeLimited(t *testing.T) {
	tp := newTestPipeline(t, Options{PerCaller: ratelimit.Limits{Rate: 1, Burst: 1, Where: "limits.perCaller"}}, registry.Route{}, nil)
	req := Request{Method: "resources/read", Target: "file:///a", Server: "files", Original: "file:///a"}
	do := func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"contents":[]}`), nil
	}
	outcomes := map[Outcome]int{}
	for range 8 {
		outcomes[tp.Serve(context.Background(), fullCaller, "", req, do).Outcome]++
	}
	if outcomes[OK] != 1 || outcomes[RateLimited] != 7 {
		t.Fatalf("outcomes %v: want 1 ok, 7 rate_limited", outcomes)
	}
	if a := tp.audit(t); a["audit"] != "resources/read" || a["decision"] != "limited" {
		t.Fatalf("audit line %v", a)
	}
}

// A tools/list whose one definition holds an e-mail address and an AWS
// key, as an upstream's description might.
const leakyList = `{"tools":[{"name":"notes","description":"ask olga@fabrikam.de, key AKIAZ3MSJV5WKQ7TYRXB","inputSchema":{"type":"object"}}]}`

// TestServeList: a list the hub answers from its catalog takes the
// caller's limits, its filters on what it returns and the record, but no
// decision of its own (its items are each decided) and no upstream limit
// (it reaches no upstream).
func TestServeList(t *testing.T) {
	guarded := fullCaller
	guarded.Guardrails = &toolspec.Guardrails{ContentFilters: []string{"no-pii", "no-secrets-in-output"}}
	manual := fullCaller
	manual.Level = autonomy.Manual
	list := Request{Method: "tools/list", List: true}
	do := func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(leakyList), nil
	}
	for _, tc := range []struct {
		name   string
		opts   Options
		caller callers.Caller
		// outcomes are those of four lists in a row.
		outcomes   []Outcome
		want, hide []string
	}{
		{"plain", Options{}, fullCaller, []Outcome{OK, OK, OK, OK}, []string{"olga@fabrikam.de"}, nil},
		{"guarded is redacted", Options{}, guarded, []Outcome{OK, OK, OK, OK}, []string{"[redacted"}, []string{"olga@fabrikam.de", "AKIAZ3MSJV5WKQ7TYRXB"}},
		{"manual lists what its items' decisions keep", Options{}, manual, []Outcome{OK, OK, OK, OK}, nil, nil},
		{"the caller's limits count it", Options{PerCaller: ratelimit.Limits{Rate: 0.01, Burst: 2, Where: "limits.perCaller"}}, fullCaller,
			[]Outcome{OK, OK, RateLimited, RateLimited}, nil, nil},
		{"no upstream limit", Options{PerUpstream: ratelimit.Limits{Rate: 0.01, Burst: 1, Where: "limits.perUpstream"}}, fullCaller,
			[]Outcome{OK, OK, OK, OK}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tp := newTestPipeline(t, tc.opts, registry.Route{}, nil)
			tp.Follow(&registry.Catalog{})
			var last Result
			for i, want := range tc.outcomes {
				if last = tp.Serve(context.Background(), tc.caller, "s1", list, do); last.Outcome != want {
					t.Fatalf("list %d: outcome %q, want %q (%+v)", i+1, last.Outcome, want, last.Error)
				}
				if a := tp.audit(t); a["audit"] != "tools/list" {
					t.Fatalf("list %d: audit line %v", i+1, a)
				}
			}
			for _, w := range tc.want {
				if !strings.Contains(string(last.Result), w) {
					t.Errorf("list %s: want %q", last.Result, w)
				}
			}
			for _, h := range tc.hide {
				if strings.Contains(string(last.Result), h) {
					t.Errorf("list %s: holds %q", last.Result, h)
				}
			}
			if tc.outcomes[0] == OK {
				if n := tp.counter(t, "mcphub_requests_total", map[string]string{"method": "tools/list", "server": "", "outcome": OK}); n < 1 {
					t.Errorf("mcphub_requests_total{method=tools/list,outcome=ok} = %v", n)
				}
			}
			if n := tp.fed(t); n != 0 {
				t.Errorf("%d lists in the console's feed of calls", n)
			}
		})
	}
}

// TestScreen: a message relayed outside a request passes the caller's
// filters; a caller without filters gets it as it is.
func TestScreen(t *testing.T) {
	tp := newTestPipeline(t, Options{}, registry.Route{}, nil)
	msg := json.RawMessage(`{"level":"info","message":"mail olga@fabrikam.de, key AKIAZ3MSJV5WKQ7TYRXB"}`)
	if out, denial := tp.Screen(context.Background(), fullCaller, "", "notifications/message", "", "result", msg); denial != "" || string(out) != string(msg) {
		t.Fatalf("unguarded: %s %q", out, denial)
	}
	guarded := fullCaller
	guarded.Guardrails = &toolspec.Guardrails{ContentFilters: []string{"no-secrets-in-output"}}
	out, denial := tp.Screen(context.Background(), guarded, "", "notifications/message", "", "result", msg)
	if denial != "" || strings.Contains(string(out), "AKIAZ3MSJV5WKQ7TYRXB") {
		t.Fatalf("guarded: %s %q", out, denial)
	}
}
