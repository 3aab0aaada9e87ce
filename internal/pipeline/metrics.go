package pipeline

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the Prometheus series of tool calls. Their names and labels
// are what dashboards and alerts read: keep them.
type metrics struct {
	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
	refused  *prometheus.CounterVec
	// resultsCut counts results cut to their cap (resultcap).
	resultsCut *prometheus.CounterVec
	// requests and requestDuration count every request the pipeline
	// serves, tools/call included, by method (request.go).
	requests        *prometheus.CounterVec
	requestDuration *prometheus.HistogramVec
}

// newMetrics makes the series and registers them with reg (nil: they are
// kept but not exported).
func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcphub_tool_calls_total",
			Help: "Tool calls by owning server, published tool name and outcome.",
		}, []string{"server", "tool", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mcphub_tool_call_duration_seconds",
			Help:    "Tool call latency through the hub, by owning server.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"server"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcphub_rate_limited_total",
			Help: "Tool calls refused by a rate or concurrency limit, by limit (caller, upstream; hub and anonymous: limits.maxInFlight and http.anonymousShare of it), kind (rate, inFlight) and owning server (empty for a caller's limit, met before the lookup). Callers are no label: anonymous ones would grow the series without bound.",
		}, []string{"limit", "kind", "server"}),
		resultsCut: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcphub_tool_results_cut_total",
			Help: "Tool results cut to the result cap (upstream.maxResultChars), by owning server.",
		}, []string{"server"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcphub_requests_total",
			Help: "MCP requests the pipeline served (tools/call, resources/read, prompts/get, completion/complete, subscriptions, tasks, lists) by method, owning server (empty when none) and outcome.",
		}, []string{"method", "server", "outcome"}),
		requestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mcphub_request_duration_seconds",
			Help:    "Latency through the hub of the MCP requests the pipeline served, by method.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"method"}),
	}
	if reg != nil {
		reg.MustRegister(m.calls, m.duration, m.refused, m.resultsCut, m.requests, m.requestDuration)
	}
	return m
}

func (m *metrics) observeRefusal(limit, kind, server string) {
	m.refused.WithLabelValues(limit, kind, server).Inc()
}

func (m *metrics) observeCall(server, tool string, outcome Outcome, d time.Duration) {
	m.calls.WithLabelValues(server, tool, outcome).Inc()
	m.duration.WithLabelValues(server).Observe(d.Seconds())
	m.observeRequest(methodToolsCall, server, outcome, d)
}

// observeRequest counts one request of method.
func (m *metrics) observeRequest(method, server string, outcome Outcome, d time.Duration) {
	m.requests.WithLabelValues(method, server, outcome).Inc()
	m.requestDuration.WithLabelValues(method).Observe(d.Seconds())
}
