package pipeline

import (
	"context"
	"encoding/json"

	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"

	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/guardrails"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/registry"
)

// The guardrails of a call (internal/guardrails), for a caller that has
// them: the content filters on the arguments right after the decision,
// before anything reaches the upstream, and on the result before the cap
// (a cut must not leave half a secret unrecognised); the budget of calls
// per run. Every finding is an audit line of its own (rule ids and
// counts, never the text) besides the call's.

// guardCall filters call's arguments, and a 2026-07-28 caller's answers
// to the upstream's input requests (inputResponses: what a person or a
// model wrote for the upstream) with them. It returns the call to send
// (redacted), what the filters did (nil for nothing), or the Result that
// refuses it.
func (p *Pipeline) guardCall(ctx context.Context, span trace.Span, session string, caller callers.Caller, call jsonrpc.ToolCall, rt registry.Route) (jsonrpc.ToolCall, *guardrails.Report, *Result) {
	if len(caller.Guardrails.ContentFilters) == 0 || len(call.Arguments) == 0 && call.InputResponses == nil {
		return call, nil, nil
	}
	type sent struct {
		Arguments      json.RawMessage `json:"arguments,omitempty"`
		InputResponses json.RawMessage `json:"inputResponses,omitempty"`
	}
	in := call.Arguments
	if call.InputResponses != nil {
		in, _ = json.Marshal(sent{call.Arguments, call.InputResponses})
	}
	args, rep, err := p.guard.Filter(ctx, caller.Guardrails, guardrails.Arguments, in)
	if err == nil && call.InputResponses != nil {
		var out sent
		if err = json.Unmarshal(args, &out); err == nil {
			args, call.InputResponses = out.Arguments, out.InputResponses
		}
	}
	if err != nil {
		denial := "BLOCKED: the arguments of tool '" + call.Name + "' could not be checked by the content filters: " + err.Error()
		p.recordDenial(span, session, caller, call.Name, rt, denial, "filter failed")
		return call, nil, &Result{Result: ErrorResult(denial), Outcome: Denied}
	}
	if !rep.Found() {
		return call, nil, nil
	}
	p.auditGuard(session, caller, methodToolsCall, call.Name, rt.Server(), rep)
	if rep.Blocked {
		denial := rep.Denial(call.Name)
		p.recordDenial(span, session, caller, call.Name, rt, denial, rep.Summary())
		return call, nil, &Result{Result: ErrorResult(denial), Outcome: Denied}
	}
	call.Arguments = args
	return call, &rep, nil
}

// guardResult filters a result. It returns the result to answer with and
// the summary of what the filters did to the call (guard, the
// arguments', with the result's added), or the Result that withholds it.
func (p *Pipeline) guardResult(ctx context.Context, span trace.Span, session string, caller callers.Caller, tool string, rt registry.Route, result json.RawMessage, guard string) (json.RawMessage, string, *Result) {
	out, rep, err := p.guard.Filter(ctx, caller.Guardrails, guardrails.Result, result)
	if err != nil {
		denial := "BLOCKED: the result of tool '" + tool + "' could not be checked by the content filters: " + err.Error()
		p.recordDenial(span, session, caller, tool, rt, denial, "filter failed")
		return nil, "", &Result{Result: ErrorResult(denial), Outcome: Denied}
	}
	if !rep.Found() {
		return result, guard, nil
	}
	p.auditGuard(session, caller, methodToolsCall, tool, rt.Server(), rep)
	if guard != "" {
		guard += "; "
	}
	guard += rep.Summary()
	if rep.Blocked {
		denial := rep.Denial(tool)
		p.recordDenial(span, session, caller, tool, rt, denial, guard)
		return nil, "", &Result{Result: ErrorResult(denial), Outcome: Denied}
	}
	return out, guard, nil
}

// screenedError passes an upstream's JSON-RPC error through filter (the
// caller's content filters on what comes back, which return the text to
// pass, or nil when it must not pass): its message and data are text an
// upstream wrote, which reach the model as a result's do. The data goes
// as "detail", since the filters' walker takes a member named data for an
// image's bytes. It returns the error to answer with, nil when the filter
// withheld it.
func screenedError(e *jsonrpc.Error, filter func(json.RawMessage) json.RawMessage) *jsonrpc.Error {
	type screened struct {
		Message string          `json:"message"`
		Detail  json.RawMessage `json:"detail,omitempty"`
	}
	raw, err := json.Marshal(screened{e.Message, e.Data})
	if err != nil {
		return &jsonrpc.Error{Code: e.Code, Message: "the upstream's error could not be checked by the content filters"}
	}
	out := filter(raw)
	if out == nil {
		return nil
	}
	var s screened
	if json.Unmarshal(out, &s) != nil {
		return &jsonrpc.Error{Code: e.Code, Message: "the upstream's error could not be checked by the content filters"}
	}
	return &jsonrpc.Error{Code: e.Code, Message: s.Message, Data: s.Detail}
}

// auditGuard writes the audit line of what the content filters found in
// one direction of a request: a tools/call names its tool ("tool"), any
// other request or relayed message its method and target.
func (p *Pipeline) auditGuard(session string, caller callers.Caller, method, target, srv string, rep guardrails.Report) {
	rules := zerolog.Dict()
	for _, h := range rep.Hits {
		rules = rules.Int(h.Rule, h.Count)
	}
	ev := p.log.Warn().Str("audit", "guardrail")
	if method == methodToolsCall {
		ev = ev.Str("session", session).Str("caller", caller.Name).Str("tool", target)
	} else {
		ev = ev.Str("method", method).Str("session", session).Str("caller", caller.Name).Str("target", target)
	}
	ev.Str("server", srv).Str("direction", rep.Direction).Str("action", rep.Action()).
		Dict("rules", rules).Func(caller.AuditFace).Msg("content filter hit")
}
