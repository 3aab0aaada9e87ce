package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/mark3labs/mcp-go/mcp"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/tracing"
)

// Tracing of the requests the hub sends upstream. A tools/call gets a
// CLIENT span, child of the hub's SERVER span in ctx, and the upstream sees
// that span as its parent: in the traceparent/tracestate headers on HTTP
// transports (streamable HTTP, SSE; set by tracing.HeaderClient on every
// request that carries a span), in params._meta on stdio and WebSocket. A
// caller's own trace members in _meta never travel on: the hub's span
// replaces them. With Options.Tracer nil the hub records no spans and
// passes the caller's trace context on as it came (carriedCall).

// startCall starts the CLIENT span of a tools/call of tool on server, an
// upstream reached by transport tr.
func startCall(ctx context.Context, tracer trace.Tracer, server string, tr config.Transport, tool string) (context.Context, trace.Span) {
	return tracer.Start(ctx, tracing.SpanName(string(mcp.MethodToolsCall), tool),
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			tracing.MethodName.String(string(mcp.MethodToolsCall)),
			tracing.ToolName.String(tool),
			tracing.OperationName.String(tracing.OperationExecuteTool),
			tracing.Server.String(server),
			tracing.Transport.String(string(tr)),
		))
}

// endCall marks a failed call on its span. The error's text stays out: it
// may quote what the server or the caller sent.
func endCall(span trace.Span, err error) {
	if err == nil || !span.IsRecording() {
		return
	}
	errType := "transport"
	var rpcErr *RPCError
	var unavailable *UnavailableError
	switch {
	case errors.As(err, &rpcErr):
		errType = strconv.Itoa(rpcErr.Code)
	case errors.As(err, &unavailable):
		errType = "unavailable"
	case errors.Is(err, context.Canceled):
		errType = "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		errType = "timeout"
	}
	span.SetAttributes(tracing.ErrorType.String(errType))
	span.SetStatus(codes.Error, errType)
}

// headerTransport reports whether the upstream's transport carries the
// trace context in HTTP headers.
func headerTransport(t config.Transport) bool {
	return t == config.TransportStreamableHTTP || t == config.TransportSSE
}

// tracedCall is call with the span in ctx as its trace context: the
// caller's trace members of _meta removed, and the hub's added where the
// transport has no headers (headers false). call itself is not modified.
func tracedCall(ctx context.Context, call jsonrpc.ToolCall, headers bool) jsonrpc.ToolCall {
	var hub map[string]json.RawMessage
	if !headers {
		hub = tracing.Meta(ctx)
	}
	stale := false
	for k := range call.Meta {
		stale = stale || tracing.IsMetaKey(k)
	}
	if hub == nil && !stale {
		return call
	}
	call.Meta = withTraceMeta(call.Meta, hub)
	return call
}

// withTraceMeta is a copy of meta with trace as its only trace members.
func withTraceMeta(meta, trace map[string]json.RawMessage) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(meta)+len(trace))
	for k, v := range meta {
		if !tracing.IsMetaKey(k) {
			out[k] = v
		}
	}
	for k, v := range trace {
		out[k] = v
	}
	return out
}

// carriedCall is ctx and call with the caller's trace context passed on
// unchanged, for a hub that does not trace: ctx carries it (from the
// caller's traceparent header, put there by the server, else from call's
// _meta), the HTTP transports (headers true) send it in headers
// (tracing.HeaderClient), and the others get it in _meta, replacing any
// trace members the caller put there (the header comes first, as when
// tracing is on). call itself is not modified.
func carriedCall(ctx context.Context, call jsonrpc.ToolCall, headers bool) (context.Context, jsonrpc.ToolCall) {
	ctx = tracing.CarryMeta(ctx, call.Meta)
	if headers {
		return ctx, call
	}
	if carried := tracing.CarriedMeta(ctx); carried != nil {
		call.Meta = withTraceMeta(call.Meta, carried)
	}
	return ctx, call
}
