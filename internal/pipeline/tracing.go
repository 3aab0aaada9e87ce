package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/tracing"
)

// The span of a call: every tools/call gets a SERVER span in Run, whatever
// face it came in on. Its parent is the caller's W3C trace context: the
// traceparent header the face put in ctx (tracing.FromHeader), else the
// call's params._meta.traceparent (stdio, WebSocket, SSE). With tracing
// off p.tracer is nil and none of this runs.

// requestIDKey holds the JSON-RPC id of a call, for its span: a face that
// knows it (the /mcp fast path) says it with WithRequestID (mcp-go's tool
// handler does not see the id).
type requestIDKey struct{}

// WithRequestID records id for the span of the call run under ctx; it
// returns ctx itself, costing nothing, when tracing is off.
func (p *Pipeline) WithRequestID(ctx context.Context, id json.RawMessage) context.Context {
	if p.tracer == nil || len(id) == 0 {
		return ctx
	}
	return context.WithValue(ctx, requestIDKey{}, id)
}

// startCall starts the SERVER span of one tools/call. The caller's trace
// context comes from the header (already in ctx) or from _meta.
func (p *Pipeline) startCall(ctx context.Context, caller callers.Caller, session string, call jsonrpc.ToolCall) (context.Context, trace.Span) {
	if !tracing.Remote(ctx) {
		ctx = tracing.FromMeta(ctx, call.Meta)
	}
	attrs := make([]attribute.KeyValue, 0, 8)
	attrs = append(attrs,
		tracing.MethodName.String(string(mcp.MethodToolsCall)),
		tracing.ToolName.String(call.Name),
		tracing.OperationName.String(tracing.OperationExecuteTool),
		tracing.Caller.String(caller.Name),
		tracing.AutonomyLevel.String(caller.Level.String()),
	)
	if session != "" {
		attrs = append(attrs, tracing.SessionID.String(session))
	}
	if id, ok := ctx.Value(requestIDKey{}).(json.RawMessage); ok {
		attrs = append(attrs, tracing.RequestID.String(tracing.RequestIDText(id)))
	}
	return p.tracer.Start(ctx, tracing.SpanName(string(mcp.MethodToolsCall), call.Name),
		trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
}

// traced ends span (nil: tracing is off) with the call's decision and
// outcome, and returns ev, the call's audit line, with the trace id.
// err is the backend's error, nil for a result (toolError or not).
func traced(ev *zerolog.Event, span trace.Span, srv, decision string, outcome Outcome, err error) *zerolog.Event {
	if span == nil {
		return ev
	}
	endCall(span, srv, decision, outcome, err)
	if id := tracing.TraceID(span); id != "" {
		ev = ev.Str("trace_id", id)
	}
	return ev
}

// endCall writes what was decided and what came of it on a call's span.
func endCall(span trace.Span, srv, decision string, outcome Outcome, err error) {
	if !span.IsRecording() {
		return
	}
	if srv != "" { // "" for a name no server offers
		span.SetAttributes(tracing.Server.String(srv))
	}
	span.SetAttributes(tracing.Decision.String(decision), tracing.Outcome.String(outcome))
	if outcome == OK {
		return
	}
	errType := outcome
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) {
		// The MCP conventions name a JSON-RPC failure by its code.
		errType = strconv.Itoa(rpcErr.Code)
	}
	span.SetAttributes(tracing.ErrorType.String(errType))
	span.SetStatus(codes.Error, outcome)
}

// addEvent marks a moment of a call on its span (nil when tracing is
// off): the wait for a person's approval, which may be most of its time.
func addEvent(span trace.Span, name string) {
	if span != nil {
		span.AddEvent(name)
	}
}
