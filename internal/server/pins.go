package server

import (
	"cmp"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/pinning"
	"github.com/purko-io/mcp-hub/internal/registry"
	"github.com/purko-io/mcp-hub/internal/registry/quarantine"
	"github.com/purko-io/mcp-hub/internal/toolscreen"
)

// Tool pinning and screening on the hub's face: the signals of a change
// or a screening hit (metrics, an audit line). The refusal of a quarantined tool's call is the pipeline's
// (its route is Lookup, which refuses it). The operator's endpoints are internal/adminapi's.

// quarantinedTools counts a server's tools whose definition changed.
func quarantinedTools(sv registry.ServerView) int {
	n := len(sv.Quarantined)
	for _, t := range sv.Tools {
		if t.Quarantine != nil {
			n++
		}
	}
	return n
}

// pinSignals are the signals of a changed or screened tool definition:
// its counters, registered with the hub's metrics, and the audit lines.
type pinSignals struct {
	log zerolog.Logger
	// changes counts tool definitions found changed since pinned.
	changes *prometheus.CounterVec
	// screened counts tool definitions the screening found hits in.
	screened *prometheus.CounterVec
}

func newPinSignals(m *prometheus.Registry, log zerolog.Logger) *pinSignals {
	p := &pinSignals{
		log: log,
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcphub_pinning_changes_total",
			Help: "Tool definitions found changed since they were pinned (each changed definition once), by server.",
		}, []string{"server"}),
		screened: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcphub_tools_screened_total",
			Help: "Definitions (tools, and prompts, resources, resource templates and server instructions) whose screening found a prompt-injection marker (each such definition once, by each rule it hit), by server and rule.",
		}, []string{"server", "rule"}),
	}
	m.MustRegister(p.changes, p.screened)
	return p
}

// heard hears of a newly changed or screened tool definition:
// counters and a warn audit line (the diff, the screening's hits and the
// digests; definitions hold no secrets of the hub). Each definition is
// heard of once, so the counters count definitions, not rebuilds.
func (s *pinSignals) heard(ev quarantine.Event) {
	q := ev.Quarantine
	if q.Changed() {
		s.changes.WithLabelValues(ev.Server).Inc()
	}
	var rules []string
	for _, h := range q.Screened {
		if !slices.Contains(rules, h.Rule) {
			rules = append(rules, h.Rule)
			s.screened.WithLabelValues(ev.Server, h.Rule).Inc()
		}
	}
	kind := cmp.Or(ev.Kind, "tool")
	var what []string
	if q.Changed() {
		what = append(what, kind+" definition changed since it was pinned")
	}
	if len(q.Screened) > 0 {
		what = append(what, kind+" definition looks like a prompt injection")
	}
	action := "quarantined: not listed, calls refused"
	switch {
	case !q.Enforced:
		action = "reported (mode warn: still listed and callable)"
	case ev.Kind == pinning.KindInstructions:
		action = "reported (a server's instructions are never passed on)"
	case ev.Kind != "":
		action = "quarantined: not listed, not served"
	}
	audit := "pinning"
	if !q.Changed() {
		audit = "screening"
	}
	l := s.log.Warn().Str("audit", audit).Str("server", ev.Server).Str("tool", ev.Tool).Str("published", ev.Published)
	if ev.Kind != "" {
		l = l.Str("kind", ev.Kind)
	}
	if q.Changed() {
		l = l.Str("diff", q.Diff).Str("pinnedSha256", q.PinnedSHA256)
	}
	if len(q.Screened) > 0 {
		l = l.Strs("rules", rules).Str("screened", toolscreen.Summary(q.Screened))
	}
	l.Str("currentSha256", q.CurrentSHA256).Bool("enforced", q.Enforced).Msg(strings.Join(what, ", and ") + "; " + action)
}
