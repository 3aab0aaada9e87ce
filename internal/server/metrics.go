package server

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/purko-io/mcp-hub/internal/registry"
)

// metrics are the hub's Prometheus series. They live in their own registry
// (not the global default) so two hubs in one test process do not collide.
type metrics struct {
	reg      *prometheus.Registry
	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
	refused  *prometheus.CounterVec
	// resultsCut counts results cut to their cap (resultcap).
	resultsCut *prometheus.CounterVec
	// pinChanges counts tool definitions found changed since pinned.
	pinChanges *prometheus.CounterVec
}

func newMetrics(cat *registry.Registry) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
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
			Help: "Tool calls refused by a rate or concurrency limit, by limit (caller, upstream), kind (rate, inFlight) and owning server (empty for a caller's limit, met before the lookup). Callers are no label: anonymous ones would grow the series without bound.",
		}, []string{"limit", "kind", "server"}),
		resultsCut: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcphub_tool_results_cut_total",
			Help: "Tool results cut to the result cap (upstream.maxResultChars), by owning server.",
		}, []string{"server"}),
		pinChanges: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcphub_pinning_changes_total",
			Help: "Tool definitions found changed since they were pinned (each changed definition once), by server.",
		}, []string{"server"}),
	}
	m.reg.MustRegister(m.calls, m.duration, m.refused, m.resultsCut, m.pinChanges, catalogCollector{cat},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

func (m *metrics) observeRefusal(limit, kind, server string) {
	m.refused.WithLabelValues(limit, kind, server).Inc()
}

func (m *metrics) observeCall(server, tool, outcome string, d time.Duration) {
	m.calls.WithLabelValues(server, tool, outcome).Inc()
	m.duration.WithLabelValues(server).Observe(d.Seconds())
}

var (
	upDesc = prometheus.NewDesc("mcphub_upstream_up",
		"1 when the upstream is connected, else 0.", []string{"server", "transport"}, nil)
	stateDesc = prometheus.NewDesc("mcphub_upstream_state",
		"Upstreams by connection state.", []string{"state"}, nil)
	upstreamToolsDesc = prometheus.NewDesc("mcphub_upstream_tools",
		"Tools last listed by each upstream.", []string{"server"}, nil)
	catalogDesc = prometheus.NewDesc("mcphub_catalog_tools",
		"Tools published in the catalog (callable now).", nil, nil)
	quarantinedDesc = prometheus.NewDesc("mcphub_pinning_quarantined_tools",
		"Tools whose definition changed since it was pinned, by server (refused in pinning mode enforce, reported in warn).", []string{"server"}, nil)
)

// catalogCollector reads the catalog at scrape time, so the request path
// never updates gauges.
type catalogCollector struct{ reg *registry.Registry }

func (c catalogCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- upDesc
	ch <- stateDesc
	ch <- upstreamToolsDesc
	ch <- catalogDesc
	ch <- quarantinedDesc
}

func (c catalogCollector) Collect(ch chan<- prometheus.Metric) {
	cat := c.reg.Catalog()
	states := map[registry.State]int{registry.StateConnected: 0, registry.StateConnecting: 0, registry.StateError: 0}
	for _, sv := range cat.Servers {
		up := 0.0
		if sv.Status.State == registry.StateConnected {
			up = 1
		}
		states[sv.Status.State]++
		ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, up, sv.Name, string(sv.Transport))
		ch <- prometheus.MustNewConstMetric(upstreamToolsDesc, prometheus.GaugeValue, float64(len(sv.Tools)), sv.Name)
		ch <- prometheus.MustNewConstMetric(quarantinedDesc, prometheus.GaugeValue, float64(quarantinedTools(sv)), sv.Name)
	}
	for st, n := range states {
		ch <- prometheus.MustNewConstMetric(stateDesc, prometheus.GaugeValue, float64(n), string(st))
	}
	ch <- prometheus.MustNewConstMetric(catalogDesc, prometheus.GaugeValue, float64(len(cat.Tools)))
}
