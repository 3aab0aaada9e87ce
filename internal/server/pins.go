package server

import (
	"github.com/purko-io/mcp-hub/internal/registry"
)

// Tool pinning on the hub's face: the signals of a change (a metric, an
// audit line). The refusal of a quarantined tool's call is the pipeline's
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

// quarantined hears of a newly changed tool definition: a counter and a
// warn audit line (the diff and both digests; definitions hold no
// secrets of the hub).
func (s *Server) quarantined(ev registry.QuarantineEvent) {
	s.metrics.pinChanges.WithLabelValues(ev.Server).Inc()
	action := "quarantined: not listed, calls refused"
	if !ev.Quarantine.Enforced {
		action = "changed (pinning mode warn: still listed and callable)"
	}
	s.log.Warn().Str("audit", "pinning").Str("server", ev.Server).Str("tool", ev.Tool).Str("published", ev.Published).
		Str("diff", ev.Quarantine.Diff).Str("pinnedSha256", ev.Quarantine.PinnedSHA256).
		Str("currentSha256", ev.Quarantine.CurrentSHA256).Bool("enforced", ev.Quarantine.Enforced).
		Msg("tool definition changed since it was pinned; " + action)
}
