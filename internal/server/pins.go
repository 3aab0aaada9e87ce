package server

import (
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/callfeed"
	"github.com/purko-io/mcp-hub/internal/registry"
)

// Tool pinning on the hub's face: the refusal of a quarantined tool's call
// (runCall asks Lookup, which refuses it) and the signals of a change (a
// metric, an audit line). The operator's endpoints are internal/adminapi's.

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

// recordQuarantined writes the audit line and metric of a refused call of
// a quarantined tool.
func (s *Server) recordQuarantined(span trace.Span, session string, caller callers.Caller, e *registry.QuarantinedError) {
	s.metrics.observeCall(e.Server, e.Name, outcomeQuarantined, 0)
	s.feed.Add(callfeed.Call{Time: time.Now(), Caller: caller.Name, Address: caller.Address(), Level: caller.Level.String(), Tool: e.Name, Server: e.Server,
		Decision: "denied", Outcome: outcomeQuarantined})
	traced(s.log.Warn(), span, e.Server, "denied", outcomeQuarantined, nil).Str("audit", "tools/call").Str("session", session).Str("caller", caller.Name).Str("autonomy", caller.Level.String()).
		Str("tool", e.Name).Str("server", e.Server).Str("decision", "denied").Str("reason", "quarantined").
		Str("diff", e.Quarantine.Diff).Str("outcome", outcomeQuarantined).Func(caller.AuditFace).Msg("tool call denied")
}
