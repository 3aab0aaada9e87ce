package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/ratelimit"
	"github.com/purko-io/mcp-hub/internal/registry"
)

// anonymousAt is an anonymous caller at ip.
func anonymousAt(ip string) callers.Caller { return callers.Anonymous(ip+":40000", autonomy.Full) }

// admissionStep is one call admitted or refused by a callLimits: refused
// names the refusing limit ("" to admit), says what its text holds.
type admissionStep struct {
	who           callers.Caller
	refused, says string
}

// admitAll runs steps against l and fails at the first that goes
// otherwise; the calls admitted stay in flight.
func admitAll(t *testing.T, l *callLimits, steps []admissionStep) {
	t.Helper()
	for i, s := range steps {
		_, r := l.admit(s.who)
		switch {
		case s.refused == "" && r != nil:
			t.Fatalf("step %d (%s): refused: %v", i, s.who.Key(), r)
		case s.refused != "" && r == nil:
			t.Fatalf("step %d (%s): admitted, want a refusal by %s", i, s.who.Key(), s.refused)
		case r != nil && (r.Limit != s.refused || !strings.Contains(r.Error(), s.says)):
			t.Fatalf("step %d (%s): refused by %s with %q, want %s with %q", i, s.who.Key(), r.Limit, r.Error(), s.refused, s.says)
		}
	}
}

// TestPerCallerLimitsByNetwork (issue 41): anonymous callers count against
// limits.perCaller by network, so many addresses of one /24 (or /64) share
// one budget while the next network has its own; callers with a token
// count by name.
func TestPerCallerLimitsByNetwork(t *testing.T) {
	inFlight := ratelimit.Limits{MaxInFlight: 2, Where: "limits.perCaller"}
	for _, tc := range []struct {
		name  string
		lim   ratelimit.Limits
		steps []admissionStep
	}{
		{"in flight: one /24, many addresses", inFlight, []admissionStep{
			{who: anonymousAt("192.0.2.1")}, {who: anonymousAt("192.0.2.200")},
			{anonymousAt("192.0.2.77"), "caller", `caller "anonymous@192.0.2.0/24" has 2 calls in flight`},
			{who: anonymousAt("192.0.3.1")}, {who: anonymousAt("192.0.3.2")},
			{anonymousAt("192.0.3.3"), "caller", `"anonymous@192.0.3.0/24"`},
		}},
		{"in flight: IPv6 by /64", inFlight, []admissionStep{
			{who: anonymousAt("[2001:db8::1]")}, {who: anonymousAt("[2001:db8::ffff:2]")},
			{anonymousAt("[2001:db8::3]"), "caller", `"anonymous@2001:db8::/64"`},
			{who: anonymousAt("[2001:db8:0:1::1]")},
		}},
		{"rate: a neighbour spends the same bucket", ratelimit.Limits{Rate: 0.001, Burst: 1, Where: "limits.perCaller"}, []admissionStep{
			{who: anonymousAt("198.51.100.1")},
			{anonymousAt("198.51.100.2"), "caller", `caller "anonymous@198.51.100.0/24" is over its limit`},
			{who: anonymousAt("198.51.101.1")},
		}},
		{"callers with a token count by name", inFlight, []admissionStep{
			{who: callers.Caller{Name: "ci"}}, {who: callers.Caller{Name: "ci"}},
			{callers.Caller{Name: "ci"}, "caller", `caller "ci" has 2 calls in flight`},
			{who: callers.Caller{Name: "bot"}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			admitAll(t, newCallLimits(Options{PerCaller: tc.lim}), tc.steps)
		})
	}
}

// TestHubCallsAnonymousShare (issue 41): the hub's bound of calls in
// flight (limits.maxInFlight) holds all callers together; anonymous
// callers from many networks, each under its own limits, are refused at
// their share (http.anonymousShare) while callers with a token still get
// in, up to the bound, and admins 16 past it. Each refusal names its
// setting; the calls in flight are a gauge by class.
func TestHubCallsAnonymousShare(t *testing.T) {
	networks := func(n int) []admissionStep {
		var s []admissionStep
		for i := range n {
			s = append(s, admissionStep{who: anonymousAt(fmt.Sprintf("203.0.%d.9", i))})
		}
		return s
	}
	token := callers.Caller{Name: "executor"}
	admin := func(i int) callers.Caller { return callers.Caller{Name: fmt.Sprint("ops", i), Admin: true} }
	for _, tc := range []struct {
		name            string
		maxInFlight     int
		share           int
		steps           []admissionStep
		anon, auth, adm float64 // the gauge's values after the steps
	}{
		{"many networks are refused at the share, a token caller gets in", 8, 25, append(networks(2),
			admissionStep{anonymousAt("198.51.100.1"), "anonymous",
				"rate limit: anonymous callers hold 2 of their 2 calls in flight (http.anonymousShare 25% of limits.maxInFlight 8): authenticate, or retry after 1s"},
			admissionStep{who: token}, admissionStep{who: callers.Caller{Name: "bot"}}), 2, 2, 0},
		{"the share rounds up", 10, 25, append(networks(3),
			admissionStep{anonymousAt("198.51.100.1"), "anonymous", "hold 3 of their 3 calls in flight (http.anonymousShare 25%"}), 3, 0, 0},
		{"no share: no anonymous call", 8, 0, []admissionStep{
			{anonymousAt("192.0.2.1"), "anonymous", "hold 0 of their 0 calls in flight (http.anonymousShare 0%"}, {who: token}}, 0, 1, 0},
		{"at the bound a token caller is refused, an admin gets in up to the reserve", 4, 50, func() []admissionStep {
			s := append(networks(2), admissionStep{who: token}, admissionStep{who: token},
				admissionStep{token, "hub", "rate limit: the hub has 4 calls in flight, its limit (limits.maxInFlight 4): retry after 1s"},
				admissionStep{anonymousAt("198.51.100.1"), "hub", "the hub has 4 calls in flight"})
			for i := range adminCallReserve {
				s = append(s, admissionStep{who: admin(i)})
			}
			return append(s, admissionStep{admin(99), "hub",
				"rate limit: the hub has 20 calls in flight, its limit (limits.maxInFlight 4) and the 16 kept for admins: retry after 1s"})
		}(), 2, 2, adminCallReserve},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			l := newCallLimits(Options{MaxInFlight: tc.maxInFlight, AnonymousShare: tc.share, Metrics: reg})
			admitAll(t, l, tc.steps)
			got := gauges(t, reg, "mcphub_calls_in_flight", "class")
			want := map[string]float64{"anonymous": tc.anon, "authenticated": tc.auth, "admin": tc.adm}
			for class, n := range want {
				if got[class] != n {
					t.Errorf("mcphub_calls_in_flight{class=%q} = %v, want %v (all: %v)", class, got[class], n, got)
				}
			}
		})
	}
}

// TestHubCallsGivenBack: a call refused by its caller's own limit gives
// back its place under the hub's bound, and a call that ends gives back
// both, so the share frees up for the next network.
func TestHubCallsGivenBack(t *testing.T) {
	l := newCallLimits(Options{MaxInFlight: 4, AnonymousShare: 25, PerCaller: ratelimit.Limits{Rate: 0.001, Burst: 1, Where: "limits.perCaller"}})
	first, r := l.admit(anonymousAt("192.0.2.1"))
	check(t, r == nil, "first anonymous call: %v", r)
	_, r = l.admit(anonymousAt("192.0.2.2"))
	check(t, r != nil && r.Limit == "anonymous", "a second anonymous call at the share of 1: %v", r)
	first.release()
	first.release() // twice gives back once
	_, r = l.admit(anonymousAt("192.0.2.3"))
	check(t, r != nil && r.Limit == "caller", "the /24 after its call ended: %v, want its rate's refusal", r)
	_, r = l.admit(anonymousAt("192.0.9.1"))
	check(t, r == nil, "another network after the refused call gave back its place: %v", r)
	check(t, l.hub.total == 1 && l.hub.held[callers.ClassAnonymous] == 1, "%d in flight, %v by class", l.hub.total, l.hub.held)
}

// TestRunRefusedAtTheAnonymousShare: through Run and Serve, an anonymous
// call past the share is answered with CodeServerBusy naming the share,
// counted in mcphub_rate_limited_total{limit="anonymous"}, while a caller
// with a token is served beside the anonymous call in flight.
func TestRunRefusedAtTheAnonymousShare(t *testing.T) {
	entered, leave := make(chan struct{}), make(chan struct{})
	b := backendFunc(func(_ context.Context, c registry.Call) (json.RawMessage, error) {
		if c.Bindings.Caller == "anonymous" {
			entered <- struct{}{}
			<-leave
		}
		return json.RawMessage(`{"content":[]}`), nil
	})
	tp := newTestPipeline(t, Options{MaxInFlight: 4, AnonymousShare: 25}, registry.HubRoute(b, "t", autonomy.Class{ReadOnly: true}), nil)
	done := make(chan Result)
	go func() {
		done <- tp.Run(context.Background(), anonymousAt("192.0.2.1"), "", jsonrpc.ToolCall{Name: "t"}, nil)
	}()
	<-entered
	check(t, gauges(t, tp.reg, "mcphub_calls_in_flight", "class")["anonymous"] == 1, "the anonymous call in flight is not in the gauge")

	out := tp.Run(context.Background(), anonymousAt("198.51.100.7"), "", jsonrpc.ToolCall{Name: "t"}, nil)
	want := "rate limit: anonymous callers hold 1 of their 1 calls in flight (http.anonymousShare 25% of limits.maxInFlight 4): authenticate, or retry after 1s"
	check(t, out.Outcome == RateLimited && out.Error != nil && out.Error.Code == jsonrpc.CodeServerBusy && out.Error.Message == want,
		"an anonymous call past the share: %+v", out.Error)
	var data struct {
		RetryAfterMs int64  `json:"retryAfterMs"`
		Limit        string `json:"limit"`
		Kind         string `json:"kind"`
	}
	check(t, json.Unmarshal(out.Error.Data, &data) == nil && data.RetryAfterMs == 1000 && data.Limit == "anonymous" && data.Kind == "inFlight",
		"data %s", out.Error.Data)
	check(t, tp.audit(t)["key"] == "anonymous@198.51.100.0/24", "audit line %v", tp.audit(t))
	res := tp.Serve(context.Background(), anonymousAt("198.51.100.8"), "", Request{Method: "resources/read", Target: "file:///x", Server: "files", Original: "file:///x"},
		func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{"contents":[]}`), nil
		})
	check(t, res.Outcome == RateLimited && res.Error != nil && strings.Contains(res.Error.Message, "http.anonymousShare"), "a read past the share: %+v", res.Error)
	n := tp.counter(t, "mcphub_rate_limited_total", map[string]string{"limit": "anonymous", "kind": "inFlight", "server": ""})
	check(t, n == 2, "mcphub_rate_limited_total{limit=anonymous} = %v, want 2", n)

	out = tp.Run(context.Background(), fullCaller, "", jsonrpc.ToolCall{Name: "t"}, nil)
	check(t, out.Outcome == OK, "a token caller beside the anonymous share: %+v", out)
	close(leave)
	check(t, (<-done).Outcome == OK, "the anonymous call in flight")
	got := gauges(t, tp.reg, "mcphub_calls_in_flight", "class")
	check(t, got["anonymous"] == 0 && got["authenticated"] == 0, "calls in flight after every call ended: %v", got)
}

// gauges are the values of the gauge name in reg by its label.
func gauges(t *testing.T, reg *prometheus.Registry, name, label string) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, p := range m.GetLabel() {
				if p.GetName() == label {
					out[p.GetValue()] = m.GetGauge().GetValue()
				}
			}
		}
	}
	return out
}
