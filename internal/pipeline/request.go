package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/callfeed"
	"github.com/purko-io/mcp-hub/internal/guardrails"
	"github.com/purko-io/mcp-hub/internal/identity"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/registry"
	"github.com/purko-io/mcp-hub/internal/resultcap"
	"github.com/purko-io/mcp-hub/internal/tracing"
)

// Every MCP request besides tools/call that reaches an upstream on a
// caller's behalf (resources/read, prompts/get, completion/complete,
// resources/subscribe, subscriptions/listen, tasks/get, tasks/cancel)
// takes the steps of a call, in the same order, in Serve: the caller's
// limits (counted like calls: a request is a request), the decision, the
// caller's content filters on what the caller sends the upstream, the
// owning server's limits, the upstream, the content filters on what comes
// back (every string of it, as for tool results), the result cap, and the
// record: metrics with the method, an audit line "audit":"<method>", the
// console's feed, a span. What a caller's policy promises holds for every
// method, not only for tools/call. Every list (tools/list, resources/list,
// resources/templates/list, prompts/list) takes them too, as a List: the
// hub answers it from its catalog, so no upstream and no upstream limit.

// methodToolsCall is the method of Run's requests, in the method label.
const methodToolsCall = "tools/call"

// CodeDenied is the JSON-RPC error code of a request (other than
// tools/call, whose denial is an error result a model reads) that the
// decision or a guardrail refused. Its message starts with "BLOCKED:", as
// a denied call's text does.
const CodeDenied = -32003

// Request is one MCP request other than tools/call, as Serve takes it.
type Request struct {
	// Method is the MCP method: the audit line's "audit", the metrics'
	// method label, the span's name.
	Method string
	// Target is what the request names, as the caller named it (a
	// resource's URI, a prompt's name, a task's id): the audit line's
	// "target". Never arguments.
	Target string
	// Server owns the target.
	Server string
	// Original is the target's name at its server: a caller's allow-list
	// may name either (Permits).
	Original string
	// Params, when not nil, is what of the request reaches the upstream
	// besides its target (a prompt's arguments, a completion's argument):
	// the caller's content filters screen it as they screen a call's
	// arguments, and Do receives it screened.
	Params json.RawMessage
	// Shape and Cap say how the result is cut to the server's result cap;
	// a zero Cap cuts nothing.
	Shape resultcap.Shape
	Cap   registry.ResultCap
	// Decided says the request was decided when what it names was made: a
	// task's handle is sealed for the caller whose call the pipeline
	// decided. It takes every other step.
	Decided bool
	// List says the request is a list the hub answers from its catalog:
	// Do keeps the items caller may use by the decisions of their use
	// (Visible, DecideRequest), so there is no decision of the request
	// itself, no upstream and no upstream limit. Its span is the face's
	// (the one of every request the dispatcher serves), and it is not a
	// call in the console's feed. The caller's limits, the content
	// filters on what it returns and the record are a call's.
	List bool
}

// Filters reports whether caller's content filters screen what it
// receives: a list written from the hub's cache is not what it may be
// sent then.
func Filters(caller callers.Caller) bool {
	return caller.Guardrails != nil && len(caller.Guardrails.ContentFilters) > 0
}

// Do is the backend step of a Request: it reaches the upstream with the
// request's params as screened, and returns the raw result.
type Do func(ctx context.Context, params json.RawMessage) (json.RawMessage, error)

// Serve runs one request of caller in session (its id, "" for none)
// through the pipeline; do reaches the upstream. A refusal, a denial and
// an upstream's JSON-RPC error are Result.Error; any other failure of do
// is a -32603 error naming the server.
func (p *Pipeline) Serve(ctx context.Context, caller callers.Caller, session string, req Request, do Do) Result {
	p.calls.start()
	defer p.calls.done()
	start := time.Now()
	var span trace.Span
	if p.tracer != nil && !req.List {
		ctx, span = p.startRequest(ctx, caller, session, req)
		defer span.End()
	}
	if p.limits.admits() {
		admitted, refused := p.limits.admit(caller)
		if refused != nil {
			return Result{Outcome: RateLimited, Error: p.refuse(span, session, caller, req, "", refused)}
		}
		defer admitted.release()
	}
	if !req.Decided && !req.List {
		if denial := DecideRequest(caller, req.Server, req.Target, req.Original); denial != "" {
			return p.denyRequest(span, session, caller, req, denial, "")
		}
	}
	params := req.Params
	var guard string
	if Filters(caller) {
		var denial string
		if params, guard, denial = p.screen(ctx, session, caller, req, guardrails.Arguments, params, ""); denial != "" {
			return p.denyRequest(span, session, caller, req, denial, guard)
		}
	}
	if policy := p.limits.policy.Load(); policy != nil && !req.List {
		release, refused := p.limits.acquireUpstream(policy, req.Server)
		if refused != nil {
			return Result{Outcome: RateLimited, Error: p.refuse(span, session, caller, req, req.Server, refused)}
		}
		defer release()
	}
	if caller.Subject.Kind() != identity.None {
		ctx = identity.WithSubject(ctx, caller.Subject)
	}
	// A server reached as each caller's own account (user OAuth) needs
	// to know who calls; a list is the hub's own request.
	if !req.List {
		ctx = identity.WithUser(ctx, caller.Key())
	}
	result, err := do(ctx, params)
	if err == nil && Filters(caller) {
		var denial string
		if result, guard, denial = p.screen(ctx, session, caller, req, guardrails.Result, result, guard); denial != "" {
			return p.denyRequest(span, session, caller, req, denial, guard)
		}
	}
	// An upstream's error, screened; the variable is declared here only,
	// where it may escape, so a call that did not fail allocates nothing.
	if err != nil && Filters(caller) {
		if rpcErr := (*jsonrpc.Error)(nil); errors.As(err, &rpcErr) {
			var denial string
			if e := screenedError(rpcErr, func(raw json.RawMessage) json.RawMessage {
				var out json.RawMessage
				out, guard, denial = p.screen(ctx, session, caller, req, guardrails.Result, raw, guard)
				if denial != "" {
					return nil
				}
				return out
			}); e != nil {
				err = e
			} else {
				return p.denyRequest(span, session, caller, req, denial, guard)
			}
		}
	}
	var cut *resultcap.Report
	if err == nil && req.Cap.Chars > 0 && len(result) > req.Cap.Chars {
		var cerr error
		if result, cut, cerr = resultcap.ApplyShape(req.Shape, result, req.Cap.Chars, req.Cap.Setting); cerr != nil {
			err = fmt.Errorf("cut the result of %s to %d characters: %w", req.Server, req.Cap.Chars, cerr)
		} else if cut != nil {
			p.metrics.resultsCut.WithLabelValues(req.Server).Inc()
		}
	}
	outcome := p.recordRequest(ctx, span, session, caller, req, start, err, cut, guard)
	if err == nil {
		return Result{Result: result, Outcome: outcome, Server: req.Server}
	}
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) {
		return Result{Outcome: outcome, Error: rpcErr, Server: req.Server}
	}
	return Result{Outcome: outcome, Server: req.Server,
		Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("%s on %s: %v", req.Method, req.Server, err)}}
}

// DecideRequest is the one decision for what a server offers besides
// tools (its resources, templates and prompts, their completions and
// subscriptions), for listing and for use: Purko's BLOCKED text when
// caller may not use target (published name or URI; original, its
// server's) of server, or "". Every level but manual may read them (they
// are reads; manual is "the agent does nothing on its own"); an endpoint
// (/servers/NAME) must publish the server whole; and a caller with an
// allow-list may use only what its list names: an agent given some of a
// server's tools is not given its resources and prompts with them.
func DecideRequest(caller callers.Caller, server, target, original string) string {
	switch {
	case caller.Level == autonomy.Manual:
		return "BLOCKED: Manual autonomy — no resources or prompts allowed"
	case !caller.Scope.PermitsServer(server):
		return fmt.Sprintf("BLOCKED: the endpoint /servers/%s does not publish the resources and prompts of server %s", caller.Scope.Name(), server)
	case caller.Allow != nil && !caller.Allow.Permits(target, original):
		return fmt.Sprintf("BLOCKED: '%s' is not in the tool list of %s", target, caller.Name)
	}
	return ""
}

// Screen passes raw, a message that crosses the hub between caller and
// an upstream outside any request of the caller's (what an upstream sends
// during a call: progress, log messages, sampling and elicitation
// requests; and the caller's answers to them), through the caller's
// content filters in direction (guardrails.Arguments toward the upstream,
// guardrails.Result toward the caller). method and server name the
// message in the audit line of a finding. It returns the message to pass,
// or a denial text when it must not pass (a blocking filter found
// something, or the filters could not read it).
func (p *Pipeline) Screen(ctx context.Context, caller callers.Caller, session, method, server, direction string, raw json.RawMessage) (json.RawMessage, string) {
	if !Filters(caller) {
		return raw, ""
	}
	out, _, denial := p.screen(ctx, session, caller, Request{Method: method, Server: server}, direction, raw, "")
	return out, denial
}

// screen filters raw in direction for req. It returns the text to pass,
// the summary of what the filters did (guard with this direction's
// added), and a denial text when it must not pass.
func (p *Pipeline) screen(ctx context.Context, session string, caller callers.Caller, req Request, direction string, raw json.RawMessage, guard string) (json.RawMessage, string, string) {
	if len(raw) == 0 {
		return raw, guard, ""
	}
	what := req.Method
	if req.Target != "" {
		what += " of '" + req.Target + "'"
	}
	out, rep, err := p.guard.Filter(ctx, caller.Guardrails, direction, raw)
	if err != nil {
		return nil, joinGuard(guard, "filter failed"), "BLOCKED: the " + direction + " of " + what + " could not be checked by the content filters: " + err.Error()
	}
	if !rep.Found() {
		return raw, guard, ""
	}
	p.auditGuard(session, caller, req.Method, req.Target, req.Server, rep)
	guard = joinGuard(guard, rep.Summary())
	if rep.Blocked {
		return nil, guard, rep.DenialOf(what)
	}
	return out, guard, ""
}

func joinGuard(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// denyRequest records and answers a request the decision or a guardrail
// (guard says which, "" for the decision) refused.
func (p *Pipeline) denyRequest(span trace.Span, session string, caller callers.Caller, req Request, denial, guard string) Result {
	p.metrics.observeRequest(req.Method, req.Server, Denied, 0)
	if !req.List {
		p.feed.Add(callfeed.Call{Time: time.Now(), Caller: caller.Name, Address: caller.Address(), Level: caller.Level.String(), Tool: req.Method + " " + req.Target, Server: req.Server,
			Decision: "denied", Outcome: Denied, Guardrail: guard})
	}
	traced(p.log.Warn(), span, req.Server, "denied", Denied, nil).Str("audit", req.Method).Str("session", session).Str("caller", caller.Name).
		Str("autonomy", caller.Level.String()).Str("target", req.Target).Str("server", req.Server).Str("decision", "denied").
		Str("reason", denial).Str("outcome", Denied).Func(caller.AuditFace).Msg("request denied")
	return Result{Outcome: Denied, Error: &jsonrpc.Error{Code: CodeDenied, Message: strings.TrimSuffix(denial, ".")}}
}

// recordRequest records a request that reached its upstream and returns
// its outcome.
func (p *Pipeline) recordRequest(ctx context.Context, span trace.Span, session string, caller callers.Caller, req Request, start time.Time, err error, cut *resultcap.Report, guard string) Outcome {
	elapsed := time.Since(start)
	outcome := outcomeOf(ctx, false, err)
	p.metrics.observeRequest(req.Method, req.Server, outcome, elapsed)
	if !req.List {
		p.feed.Add(callfeed.Call{Time: start, Caller: caller.Name, Address: caller.Address(), Level: caller.Level.String(), Tool: req.Method + " " + req.Target, Server: req.Server,
			Decision: "allowed", Outcome: outcome, Duration: elapsed, Guardrail: guard})
	}
	ev := p.log.Info()
	if err != nil {
		ev = p.log.Warn().Str("error", err.Error())
	}
	if cut != nil {
		ev = ev.Int("result_chars", cut.TextTotal).Int("result_chars_kept", cut.TextKept)
	}
	if guard != "" {
		ev = ev.Str("guardrail", guard)
	}
	traced(ev, span, req.Server, "allowed", outcome, err).Str("audit", req.Method).Str("session", session).Str("caller", caller.Name).
		Str("autonomy", caller.Level.String()).Str("target", req.Target).Str("server", req.Server).Str("decision", "allowed").
		Dur("duration", elapsed).Str("outcome", outcome).Func(caller.AuditFace).Msg("request")
	return outcome
}

// startRequest starts the SERVER span of one request.
func (p *Pipeline) startRequest(ctx context.Context, caller callers.Caller, session string, req Request) (context.Context, trace.Span) {
	attrs := make([]attribute.KeyValue, 0, 6)
	attrs = append(attrs,
		tracing.MethodName.String(req.Method),
		tracing.Caller.String(caller.Name),
		tracing.AutonomyLevel.String(caller.Level.String()),
	)
	if session != "" {
		attrs = append(attrs, tracing.SessionID.String(session))
	}
	if id, ok := ctx.Value(requestIDKey{}).(json.RawMessage); ok {
		attrs = append(attrs, tracing.RequestID.String(tracing.RequestIDText(id)))
	}
	return p.tracer.Start(ctx, tracing.SpanName(req.Method, req.Target),
		trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
}
