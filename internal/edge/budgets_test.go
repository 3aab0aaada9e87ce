package edge

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
)

// TestBudgetOf: a session counts against its caller's budget key
// (callers.Caller.BudgetKey: an anonymous caller's network) and class.
func TestBudgetOf(t *testing.T) {
	local := callers.Anonymous("127.0.0.1:5000", autonomy.Full)
	local.Admin = true // the local user of a laptop hub
	for _, tc := range []struct {
		c    callers.Caller
		want budget
	}{
		{anon("192.0.2.7"), budget{"anonymous@192.0.2.0/24", callers.ClassAnonymous}},
		{anon("[2001:db8::ffff:1]"), budget{"anonymous@2001:db8::/64", callers.ClassAnonymous}},
		{callers.Caller{Name: "anonymous@192.0.2.7"}, budget{"anonymous@192.0.2.7", callers.ClassAuthenticated}},
		{admin, budget{"ops", callers.ClassAdmin}},
		{local, budget{"anonymous@127.0.0.0/24", callers.ClassAdmin}},
	} {
		if got := budgetOf(tc.c); got != tc.want {
			t.Errorf("budget of %s: %+v, want %+v", tc.c.Key(), got, tc.want)
		}
	}
}

// sessionsFixture reserves sessions for callers on one Edge and reads its
// metrics.
type sessionsFixture struct {
	t   *testing.T
	e   *Edge
	reg *prometheus.Registry
}

func newSessionsFixture(t *testing.T, opts Options) *sessionsFixture {
	reg := prometheus.NewRegistry()
	opts.Metrics = reg
	return &sessionsFixture{t: t, e: New(opts), reg: reg}
}

// reserve takes a slot for c, kept until the test ends, and returns the
// refusal's status and message (200 and "" when admitted).
func (f *sessionsFixture) reserve(c callers.Caller) (int, string) {
	f.t.Helper()
	w := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil).WithContext(callers.With(context.Background(), c))
	_, _, ok := f.e.ReserveSession(w, r, json.RawMessage(`1`))
	if ok {
		return http.StatusOK, ""
	}
	_, _, msg := refusal(f.t, w)
	return w.Code, msg
}

// metrics are the session series, "name{label}" -> value.
func (f *sessionsFixture) metrics() map[string]float64 {
	f.t.Helper()
	families, err := f.reg.Gather()
	if err != nil {
		f.t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range families {
		for _, m := range mf.GetMetric() {
			v := m.GetGauge().GetValue() + m.GetCounter().GetValue()
			out[fmt.Sprintf("%s{%s}", mf.GetName(), m.GetLabel()[0].GetValue())] = v
		}
	}
	return out
}

func anon(ip string) callers.Caller { return callers.Anonymous(ip+":40000", autonomy.Restricted) }

var (
	token = callers.Caller{Name: "executor", Ceiling: autonomy.Full}
	admin = callers.Caller{Name: "ops", Ceiling: autonomy.Full, Admin: true}
)

// TestAnonymousShare (issue 41): anonymous callers from distinct networks,
// each within its own cap, together hold at most http.anonymousShare of
// http.maxSessions; callers that authenticate and admins still get in;
// admins get in even at the total.
func TestAnonymousShare(t *testing.T) {
	type step struct {
		who    callers.Caller
		status int
		says   string // in the refusal
	}
	five := func(then ...step) []step {
		var s []step
		for i := range 5 {
			s = append(s, step{anon(fmt.Sprintf("198.51.%d.9", i)), http.StatusOK, ""})
		}
		return append(s, then...)
	}
	share := func(n int) *int { return &n }
	for _, tc := range []struct {
		name  string
		opts  Options
		steps []step
		want  map[string]float64
	}{
		{"five networks fill the share, a sixth is refused", Options{MaxSessions: 20, MaxSessionsPerCaller: 3},
			five(step{anon("203.0.113.1"), http.StatusServiceUnavailable,
				"anonymous callers hold 5 of their 5 sessions (http.anonymousShare 25% of http.maxSessions): authenticate, or try again later"}),
			map[string]float64{"mcphub_sessions{anonymous}": 5, "mcphub_sessions_refused_total{anonymous_share}": 1}},
		{"a token caller and an admin get in when anonymous callers are at their share", Options{MaxSessions: 20, MaxSessionsPerCaller: 3},
			five(step{token, http.StatusOK, ""}, step{admin, http.StatusOK, ""}, step{anon("198.51.0.10"), http.StatusServiceUnavailable, "http.anonymousShare 25%"}),
			map[string]float64{"mcphub_sessions{anonymous}": 5, "mcphub_sessions{authenticated}": 1, "mcphub_sessions{admin}": 1,
				"mcphub_sessions_refused_total{anonymous_share}": 1, "mcphub_sessions_refused_total{total}": 0}},
		{"two addresses of one /24 share one budget", Options{MaxSessions: 100, MaxSessionsPerCaller: 2},
			[]step{{anon("192.0.2.1"), http.StatusOK, ""}, {anon("192.0.2.200"), http.StatusOK, ""},
				{anon("192.0.2.77"), http.StatusTooManyRequests, `caller "anonymous@192.0.2.0/24" holds 2 live MCP sessions`},
				{anon("192.0.3.1"), http.StatusOK, ""}},
			map[string]float64{"mcphub_sessions{anonymous}": 3, "mcphub_sessions_refused_total{per_caller}": 1}},
		{"IPv6 by /64", Options{MaxSessions: 100, MaxSessionsPerCaller: 1},
			[]step{{anon("[2001:db8::1]"), http.StatusOK, ""},
				{anon("[2001:db8::2]"), http.StatusTooManyRequests, `"anonymous@2001:db8::/64"`},
				{anon("[2001:db8:0:1::1]"), http.StatusOK, ""}},
			map[string]float64{"mcphub_sessions{anonymous}": 2}},
		{"no share: anonymous callers get no session", Options{MaxSessions: 100, AnonymousShare: share(0)},
			[]step{{anon("192.0.2.1"), http.StatusServiceUnavailable, "anonymous callers hold 0 of their 0 sessions (http.anonymousShare 0%"},
				{token, http.StatusOK, ""}},
			map[string]float64{"mcphub_sessions{anonymous}": 0, "mcphub_sessions{authenticated}": 1}},
		{"the share rounds up", Options{MaxSessions: 3, MaxSessionsPerCaller: 3},
			[]step{{anon("192.0.2.1"), http.StatusOK, ""}, {anon("192.0.9.1"), http.StatusServiceUnavailable, "hold 1 of their 1"}},
			nil},
		{"an admin gets in at the total, up to the reserve", Options{MaxSessions: 2, MaxSessionsPerCaller: 2},
			func() []step {
				s := []step{{token, http.StatusOK, ""}, {token, http.StatusOK, ""},
					{callers.Caller{Name: "other"}, http.StatusServiceUnavailable, "the hub holds 2 live MCP sessions, its limit (http.maxSessions): try again later"}}
				for i := range adminReserve {
					s = append(s, step{callers.Caller{Name: fmt.Sprint("ops", i), Admin: true}, http.StatusOK, ""})
				}
				return append(s, step{callers.Caller{Name: "ops-late", Admin: true}, http.StatusServiceUnavailable, "and the 16 kept for admins"})
			}(),
			map[string]float64{"mcphub_sessions{authenticated}": 2, "mcphub_sessions{admin}": 16, "mcphub_sessions_refused_total{total}": 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newSessionsFixture(t, tc.opts)
			for i, s := range tc.steps {
				status, msg := f.reserve(s.who)
				if status != s.status || !strings.Contains(msg, s.says) {
					t.Fatalf("step %d (%s): %d %q, want %d with %q", i, s.who.Key(), status, msg, s.status, s.says)
				}
			}
			got := f.metrics()
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %v, want %v (all: %v)", k, got[k], v, got)
				}
			}
		})
	}
}

// TestSessionBoundToAddress: the budget is the network's, the session the
// address's: a neighbour in the same /24 does not own it, and registering
// and unregistering keep the class counts.
func TestSessionBoundToAddress(t *testing.T) {
	f := newSessionsFixture(t, Options{MaxSessions: 10})
	c := anon("192.0.2.1")
	w := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil).WithContext(callers.With(context.Background(), c))
	r, release, ok := f.e.ReserveSession(w, r, nil)
	if !ok {
		t.Fatal(w.Body)
	}
	f.e.sessions.registered(r.Context(), session{id: "s1"})
	release()
	if owner, _ := f.e.SessionOwner("s1"); owner != "anonymous@192.0.2.1" {
		t.Fatalf("owner %q, want the address's own key", owner)
	}
	if _, mine := f.e.SessionCount("anonymous@192.0.2.99"); mine != 1 {
		t.Fatalf("the /24's count: %d", mine)
	}
	f.e.sessions.registered(callers.With(context.Background(), admin), session{id: "s2"})
	if m := f.metrics(); m["mcphub_sessions{anonymous}"] != 1 || m["mcphub_sessions{admin}"] != 1 {
		t.Fatalf("metrics %v", m)
	}
	f.e.sessions.unregistered(context.Background(), session{id: "s1"})
	f.e.sessions.unregistered(context.Background(), session{id: "s2"})
	if m := f.metrics(); m["mcphub_sessions{anonymous}"] != 0 || m["mcphub_sessions{admin}"] != 0 {
		t.Fatalf("metrics after unregister %v", m)
	}
}
