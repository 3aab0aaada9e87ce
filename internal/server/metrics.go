package server

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/purko-io/mcp-hub/internal/registry"
)

// registerMetrics adds the faces' series to m, the hub's Prometheus
// registry (its own, not the global default, so two hubs in one test
// process do not collide; the pipeline's series are in it too): the
// catalog's and its upstreams' states, the count of replicas the rate
// limits are shared by (replicas, peers.Replicas), and the Go runtime's.
func registerMetrics(m *prometheus.Registry, cat *registry.Registry, replicas func() int) {
	count := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "mcphub_replicas",
		Help: "Replicas of the hub counted from replicas.peers (this one included; 1 without peers), by which every rate limit is shared.",
	}, func() float64 { return float64(replicas()) })
	m.MustRegister(count, catalogCollector{cat}, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
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
	exchangesDesc = prometheus.NewDesc("mcphub_token_exchanges_total",
		"Callers' tokens exchanged for a server's (RFC 8693), by server and result: exchanged (a new token), failed (refused or unreachable), cached (a call served by a token exchanged before).", []string{"server", "result"}, nil)
	quarantinedDesc = prometheus.NewDesc("mcphub_pinning_quarantined_tools",
		"Tools whose definition changed since it was pinned or looks like a prompt injection, by server (refused in mode enforce, reported in warn).", []string{"server"}, nil)
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
	ch <- exchangesDesc
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
		if sv.Exchanges != nil {
			x, f, c := sv.Exchanges()
			ch <- prometheus.MustNewConstMetric(exchangesDesc, prometheus.CounterValue, float64(x), sv.Name, "exchanged")
			ch <- prometheus.MustNewConstMetric(exchangesDesc, prometheus.CounterValue, float64(f), sv.Name, "failed")
			ch <- prometheus.MustNewConstMetric(exchangesDesc, prometheus.CounterValue, float64(c), sv.Name, "cached")
		}
	}
	for st, n := range states {
		ch <- prometheus.MustNewConstMetric(stateDesc, prometheus.GaugeValue, float64(n), string(st))
	}
	ch <- prometheus.MustNewConstMetric(catalogDesc, prometheus.GaugeValue, float64(len(cat.Tools)))
}
