package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/config"
)

// statsSeries is a series of GET /api/mcp/stats.
type statsSeries struct {
	Name                                         string
	Calls, Errors, Refused, Guardrail, Approvals []int
	P50Ms, P95Ms                                 []*float64
}

// statsReport is the body of GET /api/mcp/stats.
type statsReport struct {
	Window      string
	StepSeconds int
	Buckets     []string
	Hub         statsSeries
	Servers     []statsSeries
}

// getStats GETs /api/mcp/stats with query as the caller of token (""
// none) and returns the status and the body.
func getStats(t *testing.T, h *testHub, query, token, origin string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, h.url("/api/mcp/stats"+query), nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }()
	var body json.RawMessage
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		t.Fatalf("GET /api/mcp/stats%s: %d, no JSON: %v", query, res.StatusCode, err)
	}
	return res.StatusCode, body
}

func statsSum(n []int) int {
	total := 0
	for _, v := range n {
		total += v
	}
	return total
}

// TestStatsCountCallsPerServer: GET /api/mcp/stats counts the calls made
// through the hub per server and for the hub (an unknown tool's and a
// denied call's included), with their latencies; it needs an admin
// caller and the MCP faces' Origin check; a bad window is a 400 naming the
// parameter; a server taken out of the catalog loses its series.
func TestStatsCountCallsPerServer(t *testing.T) {
	a, b := newFakeUpstream(t, "alpha"), newFakeUpstream(t, "beta")
	h := newTestHubAuth(t, []config.ServerSpec{a.spec(), b.spec()}, authFor(
		callers.TokenCaller{Name: "ops", Token: "tok-ops", Ceiling: autonomy.Full, Admin: true},
		callers.TokenCaller{Name: "bot", Token: "tok-bot", Ceiling: autonomy.Manual}))
	h.waitConnected("alpha", "beta")

	for _, tc := range []struct {
		query, token, origin string
		status               int
		says                 string
	}{
		{"", "", "", http.StatusUnauthorized, ""},
		{"", "tok-ops", "http://evil.example", http.StatusForbidden, ""},
		{"", "tok-bot", "", http.StatusForbidden, "admin"},
		{"?window=2h", "tok-ops", "", http.StatusBadRequest, "window"},
		{"?window=24h", "tok-ops", "", http.StatusOK, `"stepSeconds": 900`},
	} {
		status, body := getStats(t, h, tc.query, tc.token, tc.origin)
		if status != tc.status || !strings.Contains(string(body), tc.says) {
			t.Errorf("GET /api/mcp/stats%s as %q from %q: %d %s, want %d saying %s", tc.query, tc.token, tc.origin, status, body, tc.status, tc.says)
		}
		var e struct{ Error string }
		if tc.status >= 400 && tc.says != "" && (json.Unmarshal(body, &e) != nil || !strings.Contains(e.Error, tc.says)) {
			t.Errorf("GET /api/mcp/stats%s: %s, not the REST API's error body {\"error\"}", tc.query, body)
		}
	}

	ops, bot := h.dialAs(t, "mcp", "tok-ops"), h.dialAs(t, "mcp", "tok-bot")
	for _, name := range []string{"whoami_alpha", "whoami_alpha", "whoami_alpha", "whoami_beta", "whoami_beta"} {
		if text, isErr := call(t, ops, name, nil); isErr {
			t.Fatalf("%s: %s", name, text)
		}
	}
	if text, isErr := call(t, bot, "whoami_alpha", nil); !isErr || !strings.Contains(text, "BLOCKED") {
		t.Fatalf("a manual caller's call: %q, want BLOCKED", text)
	}
	unknown := mcp.CallToolRequest{}
	unknown.Params.Name = "no_such_tool"
	if _, err := ops.CallTool(t.Context(), unknown); err == nil {
		t.Fatal("an unknown tool answered")
	}

	status, body := getStats(t, h, "?window=1h", "tok-ops", "")
	var r statsReport
	if err := json.Unmarshal(body, &r); status != http.StatusOK || err != nil {
		t.Fatalf("GET /api/mcp/stats?window=1h: %d %v %s", status, err, body)
	}
	if r.Window != "1h" || r.StepSeconds != 60 || len(r.Buckets) != 60 || len(r.Hub.Calls) != 60 || len(r.Hub.P95Ms) != 60 {
		t.Fatalf("window %s, step %d, %d buckets, %d hub calls, %d p95", r.Window, r.StepSeconds, len(r.Buckets), len(r.Hub.Calls), len(r.Hub.P95Ms))
	}
	if statsSum(r.Hub.Calls) != 7 || statsSum(r.Hub.Refused) != 1 || statsSum(r.Hub.Errors) != 1 {
		t.Errorf("hub: %d calls, %d refused, %d errors; want 7, 1 (the denial), 1 (the unknown tool)", statsSum(r.Hub.Calls), statsSum(r.Hub.Refused), statsSum(r.Hub.Errors))
	}
	got := map[string]int{}
	for _, s := range r.Servers {
		got[s.Name] = statsSum(s.Calls)
		latencies := 0
		for _, p := range s.P95Ms {
			if p != nil {
				latencies++
				if *p <= 0 {
					t.Errorf("%s: p95 %v ms", s.Name, *p)
				}
			}
		}
		if latencies == 0 {
			t.Errorf("%s: no p95 in any bucket", s.Name)
		}
	}
	if len(got) != 2 || got["alpha"] != 4 || got["beta"] != 2 {
		t.Errorf("calls per server %v, want alpha 4 (one denied), beta 2", got)
	}

	h.set(a.spec())
	waitFor(t, "beta out of the stats", func() bool {
		_, body := getStats(t, h, "", "tok-ops", "")
		var r statsReport
		return json.Unmarshal(body, &r) == nil && len(r.Servers) == 1 && r.Servers[0].Name == "alpha" && statsSum(r.Hub.Calls) == 7
	})
}
