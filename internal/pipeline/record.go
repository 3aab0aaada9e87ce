package pipeline

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/callfeed"
	"github.com/purko-io/mcp-hub/internal/identity"
	"github.com/purko-io/mcp-hub/internal/registry"
	"github.com/purko-io/mcp-hub/internal/resultcap"
	"github.com/purko-io/mcp-hub/internal/tracing"
)

// The record of a call: its metrics, the console feed's entry, the audit
// line and the end of its span (nil when tracing is off), never its
// arguments: they may hold secrets. The audit line carries the trace id of
// a traced call. One function per way a call can end, so each line holds
// what explains that end (the reason of a denial, the limit of a refusal,
// the diff of a quarantined tool).

// record records a call that was looked up and called, or failed its
// lookup (srv ""). It returns the outcome.
// guard, when not "", says what the content filters did (guardrails
// Report.Summary); seen, when not nil, who an upstream with token exchange
// saw call.
func (p *Pipeline) record(ctx context.Context, span trace.Span, session string, caller callers.Caller, tool, srv string, start time.Time, toolError bool, err error, cut *resultcap.Report, guard string, seen *identity.Seen) Outcome {
	elapsed := time.Since(start)
	outcome := outcomeOf(ctx, toolError, err)
	metricTool := tool
	if outcome == Unknown {
		// A name no server offers is the caller's text: as a label it
		// would let any caller grow the series without bound.
		metricTool = ""
	}
	p.metrics.observeCall(srv, metricTool, outcome, elapsed)
	p.feed.Add(callfeed.Call{Time: start, Caller: caller.Name, Address: caller.Address(), Level: caller.Level.String(), Tool: tool, Server: srv,
		Decision: "allowed", Outcome: outcome, Duration: elapsed, Guardrail: guard})
	ev := p.log.Info()
	if outcome != OK && outcome != ToolError {
		ev = p.log.Warn().Str("error", err.Error())
	}
	if cut != nil {
		ev = ev.Int("result_chars", cut.TextTotal).Int("result_chars_kept", cut.TextKept)
		if cut.StructuredChars > 0 {
			ev = ev.Int("structured_chars_dropped", cut.StructuredChars)
		}
	}
	if guard != "" {
		ev = ev.Str("guardrail", guard)
	}
	if seen != nil && seen.Subject != "" {
		ev = ev.Str("upstream_subject", seen.Subject)
		if seen.Actor != "" {
			ev = ev.Str("upstream_actor", seen.Actor)
		}
		if span != nil {
			span.SetAttributes(tracing.UpstreamSubject.String(seen.Subject))
			if seen.Actor != "" {
				span.SetAttributes(tracing.UpstreamActor.String(seen.Actor))
			}
		}
	}
	ev = traced(ev, span, srv, "allowed", outcome, err)
	ev.Str("audit", "tools/call").Str("session", session).Str("caller", caller.Name).Str("autonomy", caller.Level.String()).
		Str("tool", tool).Str("server", srv).Str("decision", "allowed").
		Dur("duration", elapsed).Str("outcome", outcome).Func(caller.AuditFace).Msg("tool call")
	return outcome
}

// recordDenial records a call the decision or a guardrail refused (guard
// says which, "" for the decision).
func (p *Pipeline) recordDenial(span trace.Span, session string, caller callers.Caller, tool string, rt registry.Route, reason, guard string) {
	p.metrics.observeCall(rt.Server(), tool, Denied, 0)
	p.feed.Add(callfeed.Call{Time: time.Now(), Caller: caller.Name, Address: caller.Address(), Level: caller.Level.String(), Tool: tool, Server: rt.Server(),
		Decision: "denied", Outcome: Denied, Guardrail: guard})
	ev := traced(p.log.Warn(), span, rt.Server(), "denied", Denied, nil)
	ev.Str("audit", "tools/call").Str("session", session).Str("caller", caller.Name).Str("autonomy", caller.Level.String()).
		Str("tool", tool).Str("server", rt.Server()).Str("decision", "denied").Str("reason", reason).
		Str("class", rt.Class.Reason).Str("outcome", Denied).Func(caller.AuditFace).Msg("tool call denied")
}

// recordQuarantined records a refused call of a quarantined tool: its
// definition changed since it was pinned, or its screening found a prompt
// injection (registry.Lookup refuses it); held says which.
func (p *Pipeline) recordQuarantined(span trace.Span, session string, caller callers.Caller, e *registry.QuarantinedError) {
	p.metrics.observeCall(e.Server, e.Name, Quarantined, 0)
	p.feed.Add(callfeed.Call{Time: time.Now(), Caller: caller.Name, Address: caller.Address(), Level: caller.Level.String(), Tool: e.Name, Server: e.Server,
		Decision: "denied", Outcome: Quarantined})
	traced(p.log.Warn(), span, e.Server, "denied", Quarantined, nil).Str("audit", "tools/call").Str("session", session).Str("caller", caller.Name).Str("autonomy", caller.Level.String()).
		Str("tool", e.Name).Str("server", e.Server).Str("decision", "denied").Str("reason", "quarantined").
		Str("diff", e.Quarantine.Diff).Str("held", e.Quarantine.Reason()).Str("outcome", Quarantined).Func(caller.AuditFace).Msg("tool call denied")
}
