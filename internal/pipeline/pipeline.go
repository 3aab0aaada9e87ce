// Package pipeline is the way of one tool call, whatever face it came in
// on. Every face (the /mcp fast path, the router's handler behind mcp-go's
// Streamable HTTP, SSE, WebSocket and stdio, the REST run) reads a call
// once, strictly, and hands it to Run: the caller's limits, the route
// (the hub's own tools, then the registry's), the decision, the caller's
// guardrails (content filters on the arguments, the budget of its run;
// guard.go), the owning server's limits, the backend call with exactly the
// name and arguments decided on, the result filtered and cut to its cap,
// then the record: metrics, the audit line, the console's feed, the span. There is no other way to a
// backend, so a face cannot forget a step; each face only encodes the
// Result in its own way.
//
// The package knows nothing of HTTP or of mcp-go's sessions: the faces
// pass what it needs (the caller, the session id, the relay) as values.
package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"

	"github.com/purko-io/mcp-hub/internal/approvals"
	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/callfeed"
	"github.com/purko-io/mcp-hub/internal/guardrails"
	"github.com/purko-io/mcp-hub/internal/identity"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/ratelimit"
	"github.com/purko-io/mcp-hub/internal/registry"
	"github.com/purko-io/mcp-hub/internal/resultcap"
)

// Outcome is how a call ended, as counted in metrics (the outcome label),
// written in the audit line and set on the span; a face answers each kind
// in its own way (REST: a denial is 403, a refusal 429) without reading the
// result's text.
// An alias of string: the feed, the audit line and the labels take it as
// is, with no conversion on the call path.
type Outcome = string

// The outcomes of a call. They are label values of
// mcphub_tool_calls_total: renaming one breaks dashboards.
const (
	OK          Outcome = "ok"
	ToolError   Outcome = "tool_error"
	Unavailable Outcome = "unavailable"
	Unknown     Outcome = "unknown_tool"
	Canceled    Outcome = "canceled"
	RPCError    Outcome = "rpc_error"
	Denied      Outcome = "denied"
	RateLimited Outcome = "rate_limited"
	Quarantined Outcome = "quarantined"
	Error       Outcome = "error"
)

// Router finds the route of a published tool name for caller in session.
// The hub's own tools (find_tools, whose answer depends on the session)
// are the face's: a Router puts them ahead of the registry's Lookup. Its
// errors are the answers callers read.
type Router func(caller callers.Caller, session, name string) (registry.Route, error)

// Options configure a Pipeline.
type Options struct {
	// Registry routes calls (Lookup) and owns the backends.
	Registry *registry.Registry
	// Route, when not nil, routes instead of Registry.Lookup.
	Route Router
	// PerCaller and PerUpstream limit the tool calls of every caller and
	// to every owning server that has no limits of its own; zero: no limit
	// (limits.go).
	PerCaller, PerUpstream ratelimit.Limits
	// MaxInFlight bounds the requests in flight on this replica, whoever
	// makes them (limits.maxInFlight; 0: no bound), AnonymousShare percent
	// of them anonymous callers' together (http.anonymousShare; 0: none);
	// admins get 16 past it (hubcalls.go).
	MaxInFlight, AnonymousShare int
	// OwnCallerLimits says some caller has limits of its own
	// (callers.Auth.HasOwnLimits), so the callers' limiter is needed even
	// when PerCaller is zero.
	OwnCallerLimits bool
	// Replicas counts the replicas that share every limit (peers.Replicas):
	// each applies its share (ratelimit.Limits.Share); nil, one replica.
	Replicas func() int
	// Metrics registers the call metrics (metrics.go); nil, they are not
	// exported.
	Metrics prometheus.Registerer
	// Feed hears of every call, for the console (required).
	Feed *callfeed.Feed
	// Log receives the audit line of every call.
	Log zerolog.Logger
	// Tracer makes a span of every call; nil, tracing is off and costs
	// nothing.
	Tracer trace.Tracer
	// Guard holds the calls of callers with guardrails; nil, a Guard whose
	// run counts no peer hears of.
	Guard *guardrails.Guard
	// Approvals hold the write calls of callers whose guardrails require
	// a person's approval (approve.go); nil: such calls are refused.
	Approvals *approvals.Gate
}

// Pipeline runs tool calls. It is safe for concurrent use.
type Pipeline struct {
	route     Router
	limits    *callLimits
	metrics   *metrics
	feed      *callfeed.Feed
	log       zerolog.Logger
	tracer    trace.Tracer // nil when tracing is off
	calls     inflight
	reader    jsonrpc.Reader // reads the isError of results
	guard     *guardrails.Guard
	approvals *approvals.Gate // nil: calls that need one are refused
}

// New builds a Pipeline. Call Follow with each new catalog so the owning
// servers' own limits apply.
func New(opts Options) *Pipeline {
	p := &Pipeline{
		route:     opts.Route,
		limits:    newCallLimits(opts),
		metrics:   newMetrics(opts.Metrics),
		feed:      opts.Feed,
		log:       opts.Log,
		tracer:    opts.Tracer,
		guard:     opts.Guard,
		approvals: opts.Approvals,
	}
	if p.guard == nil {
		p.guard = guardrails.New(guardrails.Options{Metrics: opts.Metrics})
	}
	if p.route == nil {
		reg := opts.Registry
		p.route = func(_ callers.Caller, _, name string) (registry.Route, error) { return reg.Lookup(name) }
	}
	return p
}

// Result is how one call ended: exactly one of Result and Error is set.
// Failures a model should read are results (isError) whose text starts
// with "ERROR:" (or "BLOCKED:" for a denial), which Purko's executor
// treats as failure; Error is for what a JSON-RPC error answers (an
// unknown tool, a refusal over a limit, the upstream's own JSON-RPC error).
type Result struct {
	Result  json.RawMessage
	Outcome Outcome
	Error   *jsonrpc.Error
	// Server is the server that ran the call, "" when none did (a task's
	// handle names it).
	Server string
}

// Run runs one tools/call of caller. session is the MCP session's id (""
// for none); relay, when not nil, brings what the upstream sends during
// the call to the caller.
func (p *Pipeline) Run(ctx context.Context, caller callers.Caller, session string, call jsonrpc.ToolCall, relay registry.Relay) Result {
	return p.run(ctx, caller, session, call, relay, nil)
}

// Fetch stands in for the backend call when a call's result comes later:
// tasks/result fetches a task's result from the upstream that runs it (rt
// is the route of the tool the task runs).
type Fetch func(ctx context.Context, rt registry.Route) (json.RawMessage, error)

// RunResult is Run for the result of a task-augmented tools/call of
// call.Name (MCP Tasks), fetched by fetch. The decision (autonomy, tool
// list, argument filters, the run's budget) was made when the tool was
// called; the result takes every step a direct result takes: the caller's
// and the server's limits, the content filters, the cap, the record.
func (p *Pipeline) RunResult(ctx context.Context, caller callers.Caller, session string, call jsonrpc.ToolCall, fetch Fetch) Result {
	return p.run(ctx, caller, session, call, nil, fetch)
}

// run is Run, with fetch in place of the backend call when it is not nil.
func (p *Pipeline) run(ctx context.Context, caller callers.Caller, session string, call jsonrpc.ToolCall, relay registry.Relay, fetch Fetch) Result {
	p.calls.start()
	defer p.calls.done()
	start := time.Now()
	var span trace.Span // nil when tracing is off
	if p.tracer != nil {
		ctx, span = p.startCall(ctx, caller, session, call)
		defer span.End()
	}
	var admitted slots // the hub's place and the caller's slot, given back while a call waits for a person
	if p.limits.admits() {
		var refused *ratelimit.Refusal
		if admitted, refused = p.limits.admit(caller); refused != nil {
			return Result{Outcome: RateLimited, Error: p.refuse(span, session, caller, Request{Method: methodToolsCall, Target: call.Name}, "", refused)}
		}
		defer admitted.release()
	}
	rt, err := p.route(caller, session, call.Name)
	if err != nil {
		return p.lookupFailed(ctx, span, session, caller, call.Name, start, err)
	}
	if fetch != nil {
		return p.runResult(ctx, span, session, caller, call.Name, rt, start, fetch)
	}
	if denial := decide(caller, call.Name, rt); denial != "" {
		p.recordDenial(span, session, caller, call.Name, rt, denial, "")
		return Result{Result: ErrorResult(denial), Outcome: Denied}
	}
	var guarded *guardrails.Report // what the filters did to the arguments
	approval := ""                 // who approved the call, when it waited for a person
	if g := caller.Guardrails; !g.Empty() {
		var res *Result
		if call, guarded, res = p.guardCall(ctx, span, session, caller, call, rt); res != nil {
			return *res
		}
		if g.MaxIterations > 0 || g.MaxIterationsPerHour > 0 {
			// The call's trace: its _meta traceparent, else the request's
			// header (on WebSocket and SSE, the handshake's). A
			// ServiceAccount caller's run is its pod, whatever it sends.
			tp := call.Traceparent()
			if tp == "" {
				tp = caller.Traceparent
			}
			run := guardrails.RunOf(caller.Key(), caller.Subject, tp, session)
			if denial := p.guard.Budget(ctx, g, caller.Name, run); denial != "" {
				p.recordDenial(span, session, caller, call.Name, rt, denial, "budget")
				return Result{Result: ErrorResult(denial), Outcome: Denied}
			}
		}
		if needsApproval(g, call, rt) {
			// Waiting for a person is not running: the call gives back
			// its place and slot, and the caller's reads go on meanwhile
			// (approvals bounds what one caller holds).
			admitted.release()
			held := approvals.Call{Caller: caller, Session: session, Tool: call.Name, Server: rt.Server(),
				Arguments: call.Arguments, ProgressToken: call.ProgressToken()}
			if relay != nil {
				held.Notify, held.Elicit = relay.Notify, relay.Elicit
			}
			addEvent(span, "approval requested")
			var blocked string
			if approval, blocked = p.approvals.Wait(ctx, held); blocked != "" {
				addEvent(span, "approval refused")
				p.recordDenial(span, session, caller, call.Name, rt, blocked, approval)
				return Result{Result: ErrorResult(blocked), Outcome: Denied}
			}
			addEvent(span, "approval given")
		}
	}
	if policy := p.limits.policy.Load(); policy != nil {
		release, refused := p.limits.acquireUpstream(policy, rt.Server())
		if refused != nil {
			return Result{Outcome: RateLimited, Error: p.refuse(span, session, caller, Request{Method: methodToolsCall, Target: call.Name}, rt.Server(), refused)}
		}
		defer release() // when the backend call has returned
	}
	bc := registry.Call{ToolCall: call, Relay: relay,
		Bindings: registry.Bindings{Caller: caller.Name, Agent: caller.Agent, Workflow: caller.Workflow, Step: caller.Step}}
	bc.Name = rt.Original
	var seen *identity.Seen // who an upstream with token exchange or user OAuth saw
	if caller.Subject.Kind() != identity.None || rt.PerUser {
		ctx = identity.WithSubject(ctx, caller.Subject)
		if rt.PerUser {
			ctx = identity.WithUser(ctx, caller.Key())
		}
		ctx, seen = identity.WithSeen(ctx)
	}
	result, err := rt.Backend.Call(ctx, bc)
	guard := guarded.Summary()
	if approval != "" {
		guard = joinGuard(guard, approval)
	}
	return p.finish(ctx, span, session, caller, call.Name, rt, start, result, err, guard, seen)
}

// runResult is the rest of run for a task's result (RunResult): the
// server's limits, the fetch, and the steps of every result.
func (p *Pipeline) runResult(ctx context.Context, span trace.Span, session string, caller callers.Caller, name string, rt registry.Route, start time.Time, fetch Fetch) Result {
	if policy := p.limits.policy.Load(); policy != nil {
		release, refused := p.limits.acquireUpstream(policy, rt.Server())
		if refused != nil {
			return Result{Outcome: RateLimited, Error: p.refuse(span, session, caller, Request{Method: methodToolsCall, Target: name}, rt.Server(), refused)}
		}
		defer release()
	}
	result, err := fetch(ctx, rt)
	return p.finish(ctx, span, session, caller, name, rt, start, result, err, "", nil)
}

// finish takes a backend's result through the caller's content filters
// and the cap, and records the call.
func (p *Pipeline) finish(ctx context.Context, span trace.Span, session string, caller callers.Caller, name string, rt registry.Route, start time.Time, result json.RawMessage, err error, guard string, seen *identity.Seen) Result {
	if err == nil && Filters(caller) {
		var res *Result
		if result, guard, res = p.guardResult(ctx, span, session, caller, name, rt, result, guard); res != nil {
			return *res
		}
	}
	// An upstream's error, screened; the variable is declared here only,
	// where it may escape, so a call that did not fail allocates nothing.
	if err != nil && Filters(caller) {
		if rpcErr := (*jsonrpc.Error)(nil); errors.As(err, &rpcErr) {
			var withheld *Result
			if e := screenedError(rpcErr, func(raw json.RawMessage) json.RawMessage {
				out, g, res := p.guardResult(ctx, span, session, caller, name, rt, raw, guard)
				guard, withheld = g, res
				return out
			}); e != nil {
				err = e
			} else {
				return *withheld
			}
		}
	}
	var cut *resultcap.Report
	if err == nil {
		result, cut, err = p.capResult(rt, result)
	}
	outcome := p.record(ctx, span, session, caller, name, rt.Server(), start, err == nil && p.isErrorResult(result), err, cut, guard, seen)
	if err == nil {
		return Result{Result: result, Outcome: outcome, Server: rt.Server()}
	}
	return failed(err, outcome)
}

// failed is the answer to a call that failed with err: the upstream's
// JSON-RPC error stays one, anything else is an error result. Apart from
// Run, so that the error targets are only made for a failure.
func failed(err error, outcome Outcome) Result {
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) {
		return Result{Outcome: outcome, Error: rpcErr}
	}
	return Result{Result: ErrorResult("ERROR: " + err.Error()), Outcome: outcome}
}

// lookupFailed answers and records a call whose tool was not found, or is
// quarantined (refused before the upstream: its definition is not the one
// pinned).
func (p *Pipeline) lookupFailed(ctx context.Context, span trace.Span, session string, caller callers.Caller, name string, start time.Time, err error) Result {
	var quarantined *registry.QuarantinedError
	if errors.As(err, &quarantined) {
		p.recordQuarantined(span, session, caller, quarantined)
		return Result{Result: ErrorResult("BLOCKED: " + err.Error()), Outcome: Quarantined}
	}
	outcome := p.record(ctx, span, session, caller, name, "", start, false, err, nil, "", nil)
	var unknown *registry.UnknownToolError
	if errors.As(err, &unknown) {
		// mcp-go's answer to a name it did not serve, on every face.
		return Result{Outcome: outcome, Error: &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("tool '%s' not found: %v", name, err)}}
	}
	return Result{Result: ErrorResult("ERROR: " + err.Error()), Outcome: outcome}
}

// Wait returns when no call runs or ctx ends, and reports which: the
// drain's wait at shutdown. Calls may still start meanwhile (sessions stay
// open during the drain).
func (p *Pipeline) Wait(ctx context.Context) bool { return p.calls.wait(ctx) }

// capResult cuts a result to the route's cap (resultcap says how). The
// length check first: a result of at most cap bytes cannot hold more
// characters, so a call under the cap costs nothing more.
func (p *Pipeline) capResult(rt registry.Route, result json.RawMessage) (json.RawMessage, *resultcap.Report, error) {
	if rt.ResultCap.Chars <= 0 || len(result) <= rt.ResultCap.Chars {
		return result, nil, nil
	}
	out, rep, err := resultcap.Apply(result, rt.ResultCap.Chars, rt.ResultCap.Setting)
	if err != nil {
		return nil, nil, fmt.Errorf("cut the result of %s to %d characters: %w", rt.Server(), rt.ResultCap.Chars, err)
	}
	if rep != nil {
		p.metrics.resultsCut.WithLabelValues(rt.Server()).Inc()
	}
	return out, rep, nil
}

// ErrorResult is an error result (isError) with text, as the pipeline
// answers a failure a model should read; the hub's own tools answer theirs
// the same way.
func ErrorResult(text string) json.RawMessage {
	b, _ := json.Marshal(mcp.NewToolResultError(text))
	return b
}

// isErrorResult reads only the isError member of a raw result, spelt as
// the caller's SDK reads it.
func (p *Pipeline) isErrorResult(raw json.RawMessage) bool {
	return string(p.reader.Member(raw, "isError")) == "true"
}

// decide is the decision of a call: Purko's BLOCKED text when caller may
// not run the tool, or "".
func decide(caller callers.Caller, published string, rt registry.Route) string {
	return Decide(caller, rt.ScopeServer(), published, rt.Original, rt.Class, rt.Agent, rt.Exchange)
}

// Decide is the one decision for listing and calling: it returns Purko's
// BLOCKED text when caller may not run the tool of server published under
// published (original is its upstream's name, class its classification, agent the
// agent owning it, "" for none, exch its server's token exchange, nil for
// none), or "". Run decides calls with it, and tools/list (Visible) and
// find_tools list with it, so a caller is shown exactly what it may run.
func Decide(caller callers.Caller, server, published, original string, class autonomy.Class, agent string, exch registry.Exchange) string {
	if agent != "" && agent != caller.VerifiedAgent() {
		return fmt.Sprintf("BLOCKED: tool '%s' belongs to agent %s.", published, agent)
	}
	if !autonomy.Allowed(caller.Level, class) {
		return autonomy.Denial(caller.Level, published)
	}
	// An agent's own api tool is in its tool list by definition.
	if agent == "" && caller.Allow != nil && !caller.Allow.Permits(published, original) {
		return fmt.Sprintf("BLOCKED: tool '%s' is not in the tool list of %s.", published, caller.Name)
	}
	if !caller.Scope.Permits(server, published, original) {
		return fmt.Sprintf("BLOCKED: tool '%s' is not published by the endpoint /servers/%s.", published, caller.Scope.Name())
	}
	// A server reached as each caller takes only the callers whose token
	// it can exchange; the others would only ever get its refusal.
	if exch != nil {
		if err := exch.Accepts(caller.Subject); err != nil {
			return fmt.Sprintf("BLOCKED: tool '%s': %v.", published, err)
		}
	}
	return ""
}

// Visible reports whether caller's tools/list shows t (Decide).
func Visible(caller callers.Caller, t registry.Tool) bool {
	return Decide(caller, t.Server, t.Name, t.Original, t.Class, t.Agent, t.Exchange) == ""
}

func outcomeOf(ctx context.Context, toolError bool, err error) Outcome {
	switch {
	case err == nil && toolError:
		return ToolError
	case err == nil:
		return OK // before the targets below: errors.As makes them escape
	}
	var unavailable *registry.UnavailableError
	var unknown *registry.UnknownToolError
	var rpcErr *jsonrpc.Error
	switch {
	case ctx.Err() != nil:
		return Canceled
	case errors.As(err, &unavailable):
		return Unavailable
	case errors.As(err, &unknown):
		return Unknown
	case errors.As(err, &rpcErr):
		return RPCError
	}
	return Error
}
