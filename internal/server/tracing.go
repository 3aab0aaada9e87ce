package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/dispatch"
	"github.com/purko-io/mcp-hub/internal/tracing"
)

// Tracing of the requests the hub serves. Every tools/call gets a SERVER
// span in the pipeline (internal/pipeline), whatever face it came in on; initialize and tools/list
// get one through mcp-go's hooks (and the fast tools/list path). The
// parent is the caller's W3C trace context: the traceparent header on /mcp
// and /messages, else params._meta.traceparent (stdio, WebSocket, SSE).
// With tracing off the tracer is nil and none of this runs.

// traceHeaders puts the caller's traceparent header, when it sends one, in
// the request's context, where the pipeline and the hooks find it. With
// tracing off it is carried as it came (tracing.CarryHeader), for the
// upstream.
func (m *methodSpans) traceHeaders(next http.Handler) http.Handler {
	if m.tracer == nil {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if ctx := tracing.CarryHeader(r.Context(), r.Header); ctx != r.Context() {
				r = r.WithContext(ctx)
			}
			next.ServeHTTP(w, r)
		})
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ctx := tracing.FromHeader(r.Context(), r.Header); ctx != r.Context() {
			r = r.WithContext(ctx)
		}
		next.ServeHTTP(w, r)
	})
}

// methodSpans are the SERVER spans of the requests other than tools/call
// (which the pipeline traces on every face): initialize, tools/list,
// resources/*, prompts/*, ping and the rest, from mcp-go's before-hook to
// its success or error hook (mcp-go hands these hooks the same request
// pointer, which keys the span), and the fast path's tools/list
// (startList); traceHeaders gives them and the pipeline their parent.
type methodSpans struct {
	tracer trace.Tracer
	mu     sync.Mutex
	open   map[any]trace.Span
}

// install adds the hooks; it does nothing when tracing is off.
func (m *methodSpans) install(hooks *server.Hooks) {
	if m.tracer == nil {
		return
	}
	m.open = map[any]trace.Span{}
	hooks.AddBeforeAny(func(ctx context.Context, id any, method mcp.MCPMethod, message any) {
		if method == mcp.MethodToolsCall {
			return
		}
		var meta *mcp.Meta
		var extra []attribute.KeyValue
		switch req := message.(type) {
		case *mcp.InitializeRequest:
			extra = append(extra, tracing.ProtocolVersion.String(req.Params.ProtocolVersion))
		case *mcp.ListToolsRequest:
			meta = req.Params.Meta
		case *mcp.ListResourcesRequest:
			meta = req.Params.Meta
		case *mcp.ListPromptsRequest:
			meta = req.Params.Meta
		}
		m.begin(ctx, message, method, id, meta, extra...)
	})
	hooks.AddOnSuccess(func(_ context.Context, _ any, _ mcp.MCPMethod, message any, _ any) {
		m.end(message, nil)
	})
	hooks.AddOnError(func(_ context.Context, _ any, _ mcp.MCPMethod, message any, err error) {
		m.end(message, err)
	})
}

func (m *methodSpans) begin(ctx context.Context, key any, method mcp.MCPMethod, id any, meta *mcp.Meta, extra ...attribute.KeyValue) {
	if !tracing.Remote(ctx) && meta != nil {
		ctx = tracing.FromMeta(ctx, traceMeta(meta))
	}
	attrs := append(extra,
		tracing.MethodName.String(string(method)),
		tracing.Caller.String(callers.From(ctx).Name),
	)
	if sid := sessionID(ctx); sid != "" {
		attrs = append(attrs, tracing.SessionID.String(sid))
	}
	if rid := hookRequestID(id); rid != "" {
		attrs = append(attrs, tracing.RequestID.String(rid))
	}
	_, span := m.tracer.Start(ctx, string(method), trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	m.mu.Lock()
	m.open[key] = span
	m.mu.Unlock()
}

func (m *methodSpans) end(key any, err error) {
	m.mu.Lock()
	span, ok := m.open[key]
	delete(m.open, key)
	m.mu.Unlock()
	if !ok {
		return
	}
	if err != nil {
		span.SetAttributes(tracing.ErrorType.String("rpc_error"))
		span.SetStatus(codes.Error, "rpc_error")
	}
	span.End()
}

// hookRequestID is the JSON-RPC id mcp-go hands its hooks (the id as
// encoding/json decoded it) as the span attribute shows it.
func hookRequestID(id any) string {
	switch v := id.(type) {
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case int64:
		return strconv.FormatInt(v, 10)
	case mcp.RequestId:
		if !v.IsNil() {
			return hookRequestID(v.Value())
		}
	}
	return ""
}

// traceMeta is the trace context members of mcp-go's reading of a _meta.
func traceMeta(meta *mcp.Meta) map[string]json.RawMessage {
	var out map[string]json.RawMessage
	for k, v := range meta.AdditionalFields {
		if str, ok := v.(string); ok && tracing.IsMetaKey(k) {
			if out == nil {
				out = make(map[string]json.RawMessage, 2)
			}
			out[k], _ = json.Marshal(str)
		}
	}
	return out
}

// dispatched starts the span of a request the dispatcher serves and the
// pipeline does not (lists, unsubscribe): its parent is the caller's
// trace context, from the HTTP headers (traceHeaders) or else the
// request's _meta (stdio, WebSocket).
func (m *methodSpans) dispatched(ctx context.Context, req *dispatch.Request) (context.Context, func(error)) {
	if !tracing.Remote(ctx) {
		ctx = tracing.FromMeta(ctx, req.Meta())
	}
	attrs := []attribute.KeyValue{
		tracing.MethodName.String(req.Msg.Method),
		tracing.Caller.String(callers.From(ctx).Name),
		tracing.RequestID.String(tracing.RequestIDText(req.Msg.ID)),
	}
	if req.Session != "" {
		attrs = append(attrs, tracing.SessionID.String(req.Session))
	}
	ctx, span := m.tracer.Start(ctx, req.Msg.Method, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	return ctx, func(err error) {
		if err != nil {
			span.SetAttributes(tracing.ErrorType.String("rpc_error"))
			span.SetStatus(codes.Error, "rpc_error")
		}
		span.End()
	}
}

// startList starts the span of a tools/list the fast path answers.
func (m *methodSpans) startList(ctx context.Context, id json.RawMessage, session string) trace.Span {
	attrs := []attribute.KeyValue{
		tracing.MethodName.String(string(mcp.MethodToolsList)),
		tracing.Caller.String(callers.From(ctx).Name),
		tracing.RequestID.String(tracing.RequestIDText(id)),
	}
	if session != "" {
		attrs = append(attrs, tracing.SessionID.String(session))
	}
	_, span := m.tracer.Start(ctx, string(mcp.MethodToolsList), trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	return span
}
