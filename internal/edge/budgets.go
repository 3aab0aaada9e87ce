package edge

import (
	"net/netip"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/purko-io/mcp-hub/internal/callers"
)

// Who a session is counted against (issue 41): the budget key its caller
// spends, and its class, for the anonymous callers' share, the admins'
// reserve and the metrics.
//
// An anonymous caller's budget is its network's, not its address's: a /24
// for IPv4 and a /64 for IPv6 (callers.Caller.Key already counts an IPv6
// address by its /64), because whoever has one address of a network
// usually has its neighbours too. Only the budgets group this way: a
// session stays bound to the caller's own key (SessionOwner), so a
// neighbour cannot use it. Per-call rate limits (internal/ratelimit,
// counted by the pipeline under callers.Caller.Key) are not grouped here.

// class is the kind of caller a session slot is held for.
type class int

const (
	classAnonymous class = iota
	classAuthenticated
	classAdmin
	classes // the number of classes
)

func (c class) String() string {
	switch c {
	case classAnonymous:
		return "anonymous"
	case classAuthenticated:
		return "authenticated"
	}
	return "admin"
}

// budget is what a session slot is counted against.
type budget struct {
	key   string // the per-caller cap's key: callers.Caller.Key, anonymous IPv4 by its /24
	class class
}

// budgetOf is the budget c's sessions spend. An admin is an admin even
// without credentials (the local user of a laptop hub), counted by its
// network all the same.
func budgetOf(c callers.Caller) budget {
	key := c.Key()
	if c.Address() != "" {
		key = BudgetKey(key)
	}
	switch {
	case c.Admin:
		return budget{key, classAdmin}
	case c.Address() != "":
		return budget{key, classAnonymous}
	}
	return budget{key, classAuthenticated}
}

// anonymousPrefix is how callers.AnonymousKey begins.
const anonymousPrefix = "anonymous@"

// BudgetKey is the key the session budgets count a caller with limit key
// key (callers.Caller.Key) under: an anonymous IPv4 caller's is its /24
// (anonymous@192.0.2.0/24), every other caller's is its key.
func BudgetKey(key string) string {
	rest, ok := strings.CutPrefix(key, anonymousPrefix)
	if !ok {
		return key
	}
	ip, err := netip.ParseAddr(rest)
	if err != nil || !ip.Is4() {
		return key // an IPv6 /64 already, or not an address
	}
	p, _ := ip.Prefix(24)
	return anonymousPrefix + p.String()
}

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
	for c := range classes {
		ch <- prometheus.MustNewConstMetric(sessionsDesc, prometheus.GaugeValue, float64(held[c]), c.String())
	}
	for r := range reasons {
		ch <- prometheus.MustNewConstMetric(refusedDesc, prometheus.CounterValue, float64(refused[r]), r.String())
	}
}
