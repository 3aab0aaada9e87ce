package edge

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/purko-io/mcp-hub/internal/callers"
)

// Who a session is counted against (issue 41): the budget key its caller
// spends (callers.Caller.BudgetKey: an anonymous caller's network, a /24
// for IPv4 and a /64 for IPv6), and its class (callers.Class), for the
// anonymous callers' share, the admins' reserve and the metrics. A session
// stays bound to the caller's own key (SessionOwner), so a neighbour
// cannot use it.

// budget is what a session slot is counted against.
type budget struct {
	key   string // the per-caller cap's key: callers.Caller.BudgetKey
	class callers.Class
}

// budgetOf is the budget c's sessions spend.
func budgetOf(c callers.Caller) budget { return budget{c.BudgetKey(), c.Class()} }

// Reasons a session is refused, the label of mcphub_sessions_refused_total.
type reason int

const (
	refusedTotal reason = iota
	refusedPerCaller
	refusedAnonymousShare
	reasons // the number of reasons
)

func (r reason) String() string {
	switch r {
	case refusedTotal:
		return "total"
	case refusedPerCaller:
		return "per_caller"
	}
	return "anonymous_share"
}

var (
	sessionsDesc = prometheus.NewDesc("mcphub_sessions",
		"Live MCP sessions of this replica (reservations of requests that may register one included), by class of caller.",
		[]string{"class"}, nil)
	refusedDesc = prometheus.NewDesc("mcphub_sessions_refused_total",
		"Requests that would have made an MCP session, refused at a cap: total (http.maxSessions), per_caller (http.maxSessionsPerCaller), anonymous_share (http.anonymousShare).",
		[]string{"reason"}, nil)
)

// Describe and Collect make the session counts a Prometheus collector.
func (l *sessionLimits) Describe(ch chan<- *prometheus.Desc) {
	ch <- sessionsDesc
	ch <- refusedDesc
}

func (l *sessionLimits) Collect(ch chan<- prometheus.Metric) {
	l.mu.Lock()
	held, refused := l.byClass, l.refused
	l.mu.Unlock()
	for c := range callers.Classes {
		ch <- prometheus.MustNewConstMetric(sessionsDesc, prometheus.GaugeValue, float64(held[c]), c.String())
	}
	for r := range reasons {
		ch <- prometheus.MustNewConstMetric(refusedDesc, prometheus.CounterValue, float64(refused[r]), r.String())
	}
}
