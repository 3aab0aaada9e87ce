package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/callfeed"
	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/identity"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/ratelimit"
	"github.com/purko-io/mcp-hub/internal/registry"
	"github.com/purko-io/mcp-hub/internal/toolspec"
	"github.com/purko-io/mcp-hub/internal/upstream/tokenexchange"
)

// backendFunc is a registry.Backend of a function.
type backendFunc func(context.Context, registry.Call) (json.RawMessage, error)

func (f backendFunc) Call(ctx context.Context, c registry.Call) (json.RawMessage, error) {
	return f(ctx, c)
}

// testPipeline is a Pipeline routing every name to route (or failing with
// routeErr), with its audit lines in log and its metrics in reg.
type testPipeline struct {
	*Pipeline
	log  *bytes.Buffer
	reg  *prometheus.Registry
	feed *callfeed.Feed
}

func newTestPipeline(t *testing.T, opts Options, route registry.Route, routeErr error) testPipeline {
	t.Helper()
	tp := testPipeline{log: &bytes.Buffer{}, reg: prometheus.NewRegistry(), feed: callfeed.New(100)}
	opts.Route = func(callers.Caller, string, string) (registry.Route, error) { return route, routeErr }
	opts.Metrics, opts.Feed, opts.Log = tp.reg, tp.feed, zerolog.New(tp.log)
	tp.Pipeline = New(opts)
	return tp
}

// fed is how many calls the console's feed shows an admin.
func (tp testPipeline) fed(t *testing.T) int {
	t.Helper()
	w := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodGet, "/api/mcp/calls", nil)
	tp.feed.HandleCalls(w, r.WithContext(callers.With(r.Context(), callers.Caller{Name: "op", Admin: true})))
	var got struct{ Calls []json.RawMessage }
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
		t.Fatalf("the feed's calls %q: %v", w.Body, err)
	}
	return len(got.Calls)
}

// audit is the last audit line.
func (tp testPipeline) audit(t *testing.T) map[string]any {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(tp.log.String()), "\n")
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &m); err != nil {
		t.Fatalf("audit line %q: %v", lines[len(lines)-1], err)
	}
	return m
}

func (tp testPipeline) calls(t *testing.T, srv, tool, outcome string) float64 {
	t.Helper()
	return tp.counter(t, "mcphub_tool_calls_total", map[string]string{"server": srv, "tool": tool, "outcome": outcome})
}

// counter is the value of the counter name with labels, 0 when absent.
func (tp testPipeline) counter(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := tp.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			if maps.Equal(l, labels) {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

var fullCaller = callers.Caller{Name: "ci", Ceiling: autonomy.Full, Level: autonomy.Full}

// TestRunOutcomes: every way a call can end comes back as one Result (a
// result or a JSON-RPC error, never both), counted and audited with its
// outcome; a denied call never reaches the backend.
func TestRunOutcomes(t *testing.T) {
	ok := json.RawMessage(`{"content":[{"type":"text","text":"hi"}]}`)
	toolErr := json.RawMessage(`{"content":[{"type":"text","text":"no"}],"isError":true}`)
	upstreamErr := &jsonrpc.Error{Code: -32099, Message: "upstream says no", Data: json.RawMessage(`{"why":"x"}`)}
	write := autonomy.Class{ReadOnly: false, Reason: "writes"}
	read := autonomy.Class{ReadOnly: true, Reason: "reads"}
	restricted := callers.Caller{Name: "ro", Ceiling: autonomy.Restricted, Level: autonomy.Restricted}
	tests := []struct {
		name     string
		caller   callers.Caller
		class    autonomy.Class
		routeErr error
		result   json.RawMessage
		err      error
		want     Outcome
		wantText string // the error result's text prefix, "" for none
		wantRPC  int    // the JSON-RPC error's code, 0 for none
		called   bool
	}{
		{name: "ok", caller: fullCaller, class: read, result: ok, want: OK, called: true},
		{name: "tool error", caller: fullCaller, class: read, result: toolErr, want: ToolError, called: true},
		{name: "upstream JSON-RPC error", caller: fullCaller, class: read, err: upstreamErr, want: RPCError, wantRPC: -32099, called: true},
		{name: "transport failure", caller: fullCaller, class: read, err: errors.New("connection reset"), want: Error, wantText: "ERROR: connection reset", called: true},
		{name: "unavailable", caller: fullCaller, class: read, err: &registry.UnavailableError{Server: registry.ServerBuiltin, Reason: "down"}, want: Unavailable, wantText: "ERROR:", called: true},
		{name: "denied", caller: restricted, class: write, result: ok, want: Denied, wantText: "BLOCKED:"},
		{name: "unknown", caller: fullCaller, routeErr: &registry.UnknownToolError{Name: "t"}, want: Unknown, wantRPC: jsonrpc.CodeInvalidParams},
		{name: "quarantined", caller: fullCaller, routeErr: &registry.QuarantinedError{Name: "t", Server: "gh", Original: "t"}, want: Quarantined, wantText: "BLOCKED: tool 't' is quarantined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			called := false
			b := backendFunc(func(_ context.Context, c registry.Call) (json.RawMessage, error) {
				called = true
				if c.Name != "t" {
					t.Errorf("backend called with %q, want the route's original name", c.Name)
				}
				return tt.result, tt.err
			})
			tp := newTestPipeline(t, Options{}, registry.HubRoute(b, "t", tt.class), tt.routeErr)
			out := tp.Run(context.Background(), tt.caller, "s1", jsonrpc.ToolCall{Name: "t"}, nil)
			if out.Outcome != tt.want || called != tt.called {
				t.Fatalf("outcome %q, backend called %v; want %q, %v", out.Outcome, called, tt.want, tt.called)
			}
			if (out.Result == nil) == (out.Error == nil) {
				t.Fatalf("result %s and error %v: want exactly one", out.Result, out.Error)
			}
			switch {
			case tt.wantRPC != 0:
				if out.Error == nil || out.Error.Code != tt.wantRPC {
					t.Fatalf("error %+v, want code %d", out.Error, tt.wantRPC)
				}
				if tt.err != nil && string(out.Error.Data) != string(upstreamErr.Data) {
					t.Fatalf("the upstream's data %s was not kept", out.Error.Data)
				}
			case tt.wantText != "":
				var r struct {
					Content []struct{ Text string } `json:"content"`
					IsError bool                    `json:"isError"`
				}
				if json.Unmarshal(out.Result, &r) != nil || !r.IsError || len(r.Content) != 1 || !strings.HasPrefix(r.Content[0].Text, tt.wantText) {
					t.Fatalf("result %s, want an error result starting %q", out.Result, tt.wantText)
				}
			default:
				if string(out.Result) != string(tt.result) {
					t.Fatalf("result %s, want the backend's %s unchanged", out.Result, tt.result)
				}
			}
			a := tp.audit(t)
			if a["audit"] != "tools/call" || a["outcome"] != string(tt.want) || a["session"] != "s1" || a["caller"] != "ci" && a["caller"] != "ro" {
				t.Fatalf("audit line %v", a)
			}
			srv, tool := registry.ServerBuiltin, "t"
			switch tt.want {
			case Unknown:
				srv, tool = "", "" // the caller's text is no label
			case Quarantined:
				srv = "gh"
			}
			if n := tp.calls(t, srv, tool, tt.want); n != 1 {
				t.Fatalf("mcphub_tool_calls_total{server=%q,tool=%q,outcome=%q} = %v, want 1", srv, tool, tt.want, n)
			}
		})
	}
}

// TestRunRateLimited: a caller over its limit is refused before the
// lookup with CodeServerBusy and data that says when to retry; the
// refusal is counted with no tool label (the name was not looked up).
func TestRunRateLimited(t *testing.T) {
	b := backendFunc(func(context.Context, registry.Call) (json.RawMessage, error) {
		return json.RawMessage(`{"content":[]}`), nil
	})
	tp := newTestPipeline(t, Options{PerCaller: ratelimit.Limits{Rate: 0.001, Burst: 1, Where: "limits.perCaller"}},
		registry.HubRoute(b, "t", autonomy.Class{ReadOnly: true}), nil)
	if out := tp.Run(context.Background(), fullCaller, "", jsonrpc.ToolCall{Name: "t"}, nil); out.Outcome != OK {
		t.Fatalf("first call: %+v", out)
	}
	out := tp.Run(context.Background(), fullCaller, "", jsonrpc.ToolCall{Name: "t"}, nil)
	if out.Outcome != RateLimited || out.Error == nil || out.Error.Code != jsonrpc.CodeServerBusy || out.Result != nil {
		t.Fatalf("second call: %+v, want a refusal", out)
	}
	var data struct {
		RetryAfterMs int64  `json:"retryAfterMs"`
		Limit, Kind  string `json:"-"`
	}
	if json.Unmarshal(out.Error.Data, &data) != nil || data.RetryAfterMs <= 0 {
		t.Fatalf("data %s", out.Error.Data)
	}
	if n := tp.calls(t, "", "", RateLimited); n != 1 {
		t.Fatalf("refusals counted %v, want 1", n)
	}
	if n := tp.counter(t, "mcphub_rate_limited_total", map[string]string{"limit": "caller", "kind": "rate", "server": ""}); n != 1 {
		t.Fatalf("mcphub_rate_limited_total = %v, want 1", n)
	}
}

// TestRunCutsResults: a result over the route's cap is cut and counted.
func TestRunCutsResults(t *testing.T) {
	long := strings.Repeat("x", 500)
	b := backendFunc(func(context.Context, registry.Call) (json.RawMessage, error) {
		return json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "text": long}}})
	})
	rt := registry.HubRoute(b, "t", autonomy.Class{ReadOnly: true})
	rt.ResultCap = registry.ResultCap{Chars: 100, Setting: "upstream.maxResultChars"}
	tp := newTestPipeline(t, Options{}, rt, nil)
	out := tp.Run(context.Background(), fullCaller, "", jsonrpc.ToolCall{Name: "t"}, nil)
	if out.Outcome != OK || len(out.Result) > 400 {
		t.Fatalf("outcome %q, %d bytes: want a result cut to about 100 characters", out.Outcome, len(out.Result))
	}
	if n := tp.counter(t, "mcphub_tool_results_cut_total", map[string]string{"server": registry.ServerBuiltin}); n != 1 {
		t.Fatalf("mcphub_tool_results_cut_total = %v, want 1", n)
	}
	if a := tp.audit(t); a["result_chars"] != float64(500) {
		t.Fatalf("audit line %v: want result_chars 500", a)
	}
}

// TestWaitForCallsInFlight: Wait returns when the last running call ends,
// or false when its context ends first.
func TestWaitForCallsInFlight(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	b := backendFunc(func(context.Context, registry.Call) (json.RawMessage, error) {
		close(started)
		<-release
		return json.RawMessage(`{"content":[]}`), nil
	})
	tp := newTestPipeline(t, Options{}, registry.HubRoute(b, "t", autonomy.Class{ReadOnly: true}), nil)
	if !tp.Wait(context.Background()) {
		t.Fatal("Wait with no call running")
	}
	done := make(chan struct{})
	go func() {
		tp.Run(context.Background(), fullCaller, "", jsonrpc.ToolCall{Name: "t"}, nil)
		close(done)
	}()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if tp.Wait(ctx) {
		t.Fatal("Wait returned true with a call running")
	}
	close(release)
	if !tp.Wait(context.Background()) {
		t.Fatal("Wait after the call ended")
	}
	<-done
}

// TestDecide: the one decision, for listing and calling.
func TestDecide(t *testing.T) {
	write := autonomy.Class{ReadOnly: false}
	read := autonomy.Class{ReadOnly: true}
	exch := tokenexchange.New(tokenexchange.Options{Server: "notes", Exchange: config.TokenExchange{Issuer: "https://idp.example"}})
	oauthCaller := fullCaller
	oauthCaller.Subject = identity.OAuthSubject("tok", "https://idp.example", time.Now().Add(time.Hour))
	foreign := fullCaller
	foreign.Subject = identity.OAuthSubject("tok", "https://other.example", time.Now().Add(time.Hour))
	scoped := func(c callers.Caller, s *autonomy.Scope) callers.Caller { c.Scope = s; return c }
	restricted := callers.Caller{Name: "r", Level: autonomy.Restricted}
	tests := []struct {
		name   string
		caller callers.Caller
		class  autonomy.Class
		agent  string
		exch   registry.Exchange
		want   string // prefix of the denial, "" allowed
	}{
		{"full writes", fullCaller, write, "", nil, ""},
		{"restricted reads", callers.Caller{Name: "r", Level: autonomy.Restricted}, read, "", nil, ""},
		{"restricted may not write", callers.Caller{Name: "r", Level: autonomy.Restricted}, write, "", nil, "BLOCKED"},
		{"another agent's tool", fullCaller, read, "other", nil, "BLOCKED: tool 't' belongs to agent other."},
		{"token exchange, an OAuth caller of its issuer", oauthCaller, read, "", exch, ""},
		{"token exchange, a caller without a token", fullCaller, read, "", exch,
			"BLOCKED: tool 't': upstream notes is reached with each caller's own identity (token exchange), and this caller has no token to exchange"},
		{"token exchange, another issuer's caller", foreign, read, "", exch, "BLOCKED: tool 't': upstream notes exchanges tokens of https://idp.example"},
		{"its server's endpoint", scoped(fullCaller, autonomy.ServerScope("notes")), write, "", nil, ""},
		{"another server's endpoint", scoped(fullCaller, autonomy.ServerScope("wiki")), read, "", nil, "BLOCKED: tool 't' is not published by the endpoint /servers/wiki."},
		{"a virtual server naming the tool", scoped(fullCaller, autonomy.VirtualScope(toolspec.VirtualServer{Name: "v", Tools: []string{"T"}})), write, "", nil, ""},
		{"a virtual server naming others", scoped(fullCaller, autonomy.VirtualScope(toolspec.VirtualServer{Name: "v", Servers: []string{"wiki"}, Tools: []string{"t?*"}})), read, "", nil, "BLOCKED: tool 't' is not published by the endpoint /servers/v."},
		{"an endpoint never widens the level", scoped(restricted, autonomy.ServerScope("notes")), write, "", nil, "BLOCKED"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Decide(tt.caller, "notes", "t", "t", tt.class, tt.agent, tt.exch)
			if (tt.want == "") != (got == "") || !strings.HasPrefix(got, tt.want) {
				t.Fatalf("Decide = %q, want %q", got, tt.want)
			}
			if v := Visible(tt.caller, registry.Tool{Name: "t", Original: "t", Server: "notes", Class: tt.class, Agent: tt.agent, Exchange: tt.exch}); v != (got == "") {
				t.Fatalf("Visible = %v, Decide = %q: they disagree", v, got)
			}
		})
	}
}

// BenchmarkRun is the pipeline's own cost of an allowed call with no
// limits and tracing off: what every face pays on top of the backend.
func BenchmarkRun(b *testing.B) {
	result := json.RawMessage(`{"content":[{"type":"text","text":"hi"}]}`)
	backend := backendFunc(func(context.Context, registry.Call) (json.RawMessage, error) { return result, nil })
	rt := registry.HubRoute(backend, "t", autonomy.Class{ReadOnly: true})
	p := New(Options{
		Route:   func(callers.Caller, string, string) (registry.Route, error) { return rt, nil },
		Metrics: prometheus.NewRegistry(), Feed: callfeed.New(100), Log: zerolog.Nop(),
	})
	call := jsonrpc.ToolCall{Name: "t"}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if out := p.Run(ctx, fullCaller, "s1", call, nil); out.Outcome != OK {
			b.Fatal(out)
		}
	}
}
