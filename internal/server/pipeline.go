package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.opentelemetry.io/otel/trace"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/callfeed"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/registry"
	"github.com/purko-io/mcp-hub/internal/resultcap"
)

// The way of one tool call. Every face (the /mcp fast path, mcp-go's
// handler behind Streamable HTTP, SSE, WebSocket and stdio, the REST run
// in rest.go) reads a call once, strictly (jsonrpc.ParseToolCall, or the
// gate in gate.go for what mcp-go reads), and hands it to runCall: look up,
// decide, call the backend with exactly the name and arguments decided on,
// cut the result to its cap, record. There is no other way to a backend.

// Outcomes of a call, as counted in metrics and written in the audit line.
const (
	outcomeOK          = "ok"
	outcomeToolError   = "tool_error"
	outcomeUnavailable = "unavailable"
	outcomeUnknown     = "unknown_tool"
	outcomeCanceled    = "canceled"
	outcomeRPCError    = "rpc_error"
	outcomeDenied      = "denied"
	outcomeRateLimited = "rate_limited"
	outcomeQuarantined = "quarantined"
	outcomeError       = "error"
)

// runCall runs one decided tools/call for caller and returns its result as
// JSON, or a *jsonrpc.Error to answer the request with. relay, when not
// nil, brings what the upstream sends during the call to the caller.
// Failures a model should read come back as error results whose text
// starts with "ERROR:" (or "BLOCKED:" for a denial), which Purko's executor
// treats as failure.
func (s *Server) runCall(ctx context.Context, caller callers.Caller, session string, call jsonrpc.ToolCall, relay registry.Relay) (json.RawMessage, error) {
	result, _, err := s.runCallOutcome(ctx, caller, session, call, relay)
	return result, err
}

// runCallOutcome is runCall that also says how the call ended (one of the
// outcome constants, as in the audit line), for a face that answers each
// kind in its own way (rest.go: a denial is 403, a refusal 429) without
// reading the result's text.
func (s *Server) runCallOutcome(ctx context.Context, caller callers.Caller, session string, call jsonrpc.ToolCall, relay registry.Relay) (json.RawMessage, string, error) {
	s.calls.start()
	defer s.calls.done()
	start := time.Now()
	var span trace.Span // nil when tracing is off
	if s.tracer != nil {
		ctx, span = s.startCall(ctx, caller, session, call)
		defer span.End()
	}
	if s.limits.callers != nil {
		release, refused := s.limits.acquireCaller(caller)
		if refused != nil {
			return nil, outcomeRateLimited, s.refuseCall(span, session, caller, call.Name, "", refused)
		}
		defer release()
	}
	rt, err := s.route(caller, session, call.Name)
	var quarantined *registry.QuarantinedError
	if errors.As(err, &quarantined) {
		// Refused before the upstream: its definition is not the one
		// pinned (pins.go).
		s.recordQuarantined(span, session, caller, quarantined)
		return errorResult("BLOCKED: " + err.Error()), outcomeQuarantined, nil
	}
	if err != nil {
		outcome := s.record(ctx, span, session, caller, call.Name, "", start, false, err, nil)
		var unknown *registry.UnknownToolError
		if errors.As(err, &unknown) {
			// mcp-go's answer to a name it did not serve, on every face.
			return nil, outcome, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("tool '%s' not found: %v", call.Name, err)}
		}
		return errorResult("ERROR: " + err.Error()), outcome, nil
	}
	if denial := decide(caller, call.Name, rt); denial != "" {
		s.recordDenial(span, session, caller, call.Name, rt, denial)
		return errorResult(denial), outcomeDenied, nil
	}
	if policy := s.limits.policy.Load(); policy != nil {
		release, refused := s.limits.acquireUpstream(policy, rt.Server())
		if refused != nil {
			return nil, outcomeRateLimited, s.refuseCall(span, session, caller, call.Name, rt.Server(), refused)
		}
		defer release() // when the backend call has returned
	}
	bc := registry.Call{ToolCall: call, Bindings: caller.Bindings(), Relay: relay}
	bc.Name = rt.Original
	result, err := rt.Backend.Call(ctx, bc)
	var cut *resultcap.Report
	if err == nil {
		result, cut, err = s.capResult(rt, result)
	}
	outcome := s.record(ctx, span, session, caller, call.Name, rt.Server(), start, err == nil && isErrorResult(result), err, cut)
	var rpcErr *jsonrpc.Error
	switch {
	case err == nil:
		return result, outcome, nil
	case errors.As(err, &rpcErr):
		return nil, outcome, rpcErr // the upstream's JSON-RPC error stays one
	}
	return errorResult("ERROR: " + err.Error()), outcome, nil
}

// capResult cuts a result to the route's cap (resultcap says how). The
// length check first: a result of at most cap bytes cannot hold more
// characters, so a call under the cap costs nothing more.
func (s *Server) capResult(rt registry.Route, result json.RawMessage) (json.RawMessage, *resultcap.Report, error) {
	if rt.ResultCap.Chars <= 0 || len(result) <= rt.ResultCap.Chars {
		return result, nil, nil
	}
	out, rep, err := resultcap.Apply(result, rt.ResultCap.Chars, rt.ResultCap.Setting)
	if err != nil {
		return nil, nil, fmt.Errorf("cut the result of %s to %d characters: %w", rt.Server(), rt.ResultCap.Chars, err)
	}
	if rep != nil {
		s.metrics.resultsCut.WithLabelValues(rt.Server()).Inc()
	}
	return out, rep, nil
}

// errorResult is an error result with text.
func errorResult(text string) json.RawMessage {
	b, _ := json.Marshal(mcp.NewToolResultError(text))
	return b
}

// isErrorResult reads only the isError member of a raw result.
func isErrorResult(raw json.RawMessage) bool {
	var r struct {
		IsError bool `json:"isError"`
	}
	return json.Unmarshal(raw, &r) == nil && r.IsError
}

// callTool is the router's handler (catalog.go): mcp-go runs it for every
// tools/call on every face it serves, with the caller's tool name in
// calledToolHeader. The gate has already refused any message whose strict
// reading differs from mcp-go's, so the call read from req is the one the
// caller sent. Calls here go through the relay: they come from sessions
// that take progress, log messages or server requests, or from faces with
// one channel per session.
func (s *Server) callTool(ctx context.Context, req mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
	call, err := toolCallOf(req)
	defer func() {
		// mcp-go's recovery (server.WithRecovery) would name the router.
		if r := recover(); r != nil {
			res, err = nil, s.marks.mark(&jsonrpc.Error{Code: jsonrpc.CodeInternalError,
				Message: fmt.Sprintf("panic recovered in %s tool handler: %v", call.Name, r)})
		}
	}()
	if err == nil {
		err = s.checkParamHeaders(req.Header, call)
	}
	if err != nil {
		return nil, s.marks.mark(jsonrpc.AsError(err))
	}
	raw, err := s.runCall(ctx, callers.From(ctx), sessionID(ctx), call, s.relayFor(ctx))
	if err != nil {
		// Each face mcp-go writes to puts the error back in place of
		// mcp-go's -32603 (reply.go).
		return nil, s.marks.mark(jsonrpc.AsError(err))
	}
	return mcp.ParseCallToolResult(&raw)
}

// toolCallOf turns mcp-go's reading of a tools/call, routed to the router
// by routeCall, into the hub's.
func toolCallOf(req mcp.CallToolRequest) (jsonrpc.ToolCall, error) {
	p := req.Params
	call := jsonrpc.ToolCall{Name: req.Header.Get(calledToolHeader), Arguments: p.RawArguments}
	var err error
	if call.Arguments == nil && p.Arguments != nil {
		if call.Arguments, err = json.Marshal(p.Arguments); err != nil {
			return call, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params: arguments: " + err.Error()}
		}
	}
	if p.Meta != nil {
		b, err := json.Marshal(p.Meta)
		if err == nil {
			err = json.Unmarshal(b, &call.Meta)
		}
		if err != nil {
			return call, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params: _meta: " + err.Error()}
		}
	}
	if len(p.InputResponses) > 0 {
		call.InputResponses, _ = json.Marshal(p.InputResponses)
	}
	if p.RequestState != "" {
		call.RequestState, _ = json.Marshal(p.RequestState)
	}
	return call, nil
}

// decide is the one decision for listing and calling: it returns Purko's
// BLOCKED text when caller may not run the tool, or "".
func decide(caller callers.Caller, published string, rt registry.Route) string {
	return decideTool(caller, published, rt.Original, rt.Class, rt.Agent)
}

func decideTool(caller callers.Caller, published, original string, class autonomy.Class, agent string) string {
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
	return ""
}

// visible reports whether caller's tools/list shows t.
func visible(caller callers.Caller, t registry.Tool) bool {
	return decideTool(caller, t.Name, t.Original, t.Class, t.Agent) == ""
}

// record writes the metrics, the audit line and the span (nil when tracing
// is off) of one call, never its arguments: they may hold secrets. The audit
// line carries the trace id of a traced call. It returns the outcome.
func (s *Server) record(ctx context.Context, span trace.Span, session string, caller callers.Caller, tool, srv string, start time.Time, toolError bool, err error, cut *resultcap.Report) string {
	elapsed := time.Since(start)
	outcome := outcomeOf(ctx, toolError, err)
	metricTool := tool
	if outcome == outcomeUnknown {
		// A name no server offers is the caller's text: as a label it
		// would let any caller grow the series without bound.
		metricTool = ""
	}
	s.metrics.observeCall(srv, metricTool, outcome, elapsed)
	s.feed.Add(callfeed.Call{Time: start, Caller: caller.Name, Address: caller.Address(), Level: caller.Level.String(), Tool: tool, Server: srv,
		Decision: "allowed", Outcome: outcome, Duration: elapsed})
	ev := s.log.Info()
	if outcome != outcomeOK && outcome != outcomeToolError {
		ev = s.log.Warn().Str("error", err.Error())
	}
	if cut != nil {
		ev = ev.Int("result_chars", cut.TextTotal).Int("result_chars_kept", cut.TextKept)
		if cut.StructuredChars > 0 {
			ev = ev.Int("structured_chars_dropped", cut.StructuredChars)
		}
	}
	ev = traced(ev, span, srv, "allowed", outcome, err)
	ev.Str("audit", "tools/call").Str("session", session).Str("caller", caller.Name).Str("autonomy", caller.Level.String()).
		Str("tool", tool).Str("server", srv).Str("decision", "allowed").
		Dur("duration", elapsed).Str("outcome", outcome).Func(caller.AuditFace).Msg("tool call")
	return outcome
}

// recordDenial writes the audit line, metric and span (nil when tracing is
// off) of a refused call.
func (s *Server) recordDenial(span trace.Span, session string, caller callers.Caller, tool string, rt registry.Route, reason string) {
	s.metrics.observeCall(rt.Server(), tool, outcomeDenied, 0)
	s.feed.Add(callfeed.Call{Time: time.Now(), Caller: caller.Name, Address: caller.Address(), Level: caller.Level.String(), Tool: tool, Server: rt.Server(),
		Decision: "denied", Outcome: outcomeDenied})
	ev := traced(s.log.Warn(), span, rt.Server(), "denied", outcomeDenied, nil)
	ev.Str("audit", "tools/call").Str("session", session).Str("caller", caller.Name).Str("autonomy", caller.Level.String()).
		Str("tool", tool).Str("server", rt.Server()).Str("decision", "denied").Str("reason", reason).
		Str("class", rt.Class.Reason).Str("outcome", outcomeDenied).Func(caller.AuditFace).Msg("tool call denied")
}

func outcomeOf(ctx context.Context, toolError bool, err error) string {
	var unavailable *registry.UnavailableError
	var unknown *registry.UnknownToolError
	var rpcErr *jsonrpc.Error
	switch {
	case err == nil && toolError:
		return outcomeToolError
	case err == nil:
		return outcomeOK
	case ctx.Err() != nil:
		return outcomeCanceled
	case errors.As(err, &unavailable):
		return outcomeUnavailable
	case errors.As(err, &unknown):
		return outcomeUnknown
	case errors.As(err, &rpcErr):
		return outcomeRPCError
	}
	return outcomeError
}

func sessionID(ctx context.Context) string {
	if cs := server.ClientSessionFromContext(ctx); cs != nil {
		return cs.SessionID()
	}
	return ""
}
