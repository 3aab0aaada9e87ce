package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/tracing"
)

const callerParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// hubSpan is a context holding a recording span, child of the caller's.
func hubSpan(t *testing.T) (context.Context, trace.SpanContext) {
	t.Helper()
	tp := sdktrace.NewTracerProvider()
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": callerParent})
	ctx, span := tp.Tracer("t").Start(ctx, "hub")
	t.Cleanup(func() { span.End() })
	return ctx, span.SpanContext()
}

func TestTracedCallReplacesTheCallersTraceContext(t *testing.T) {
	ctx, sc := hubSpan(t)
	str := func(s string) json.RawMessage { b, _ := json.Marshal(s); return b }
	callerMeta := map[string]json.RawMessage{
		"traceparent":   str(callerParent),
		"tracestate":    str("caller=1"),
		"progressToken": json.RawMessage(`7`),
	}
	for _, tc := range []struct {
		name        string
		transport   config.Transport
		ctx         context.Context
		meta        map[string]json.RawMessage
		wantParent  string // the traceparent the upstream's _meta carries, "" for none
		wantUnmoved bool   // the call comes back as it went in
	}{
		{name: "stdio gets the hub span in _meta", transport: config.TransportStdio, ctx: ctx, meta: callerMeta, wantParent: sc.SpanID().String()},
		{name: "websocket gets the hub span in _meta", transport: config.TransportWebSocket, ctx: ctx, meta: nil, wantParent: sc.SpanID().String()},
		{name: "streamable HTTP: header only, caller's _meta dropped", transport: config.TransportStreamableHTTP, ctx: ctx, meta: callerMeta},
		{name: "SSE: header only, caller's _meta dropped", transport: config.TransportSSE, ctx: ctx, meta: callerMeta},
		{name: "HTTP without caller trace members: unchanged", transport: config.TransportStreamableHTTP, ctx: ctx, meta: map[string]json.RawMessage{"progressToken": json.RawMessage(`7`)}, wantUnmoved: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Client{spec: config.ServerSpec{Name: "up", Transport: tc.transport}}
			in := jsonrpc.ToolCall{Name: "get_me", Meta: tc.meta}
			before, _ := json.Marshal(in.Meta)
			traced := tracedCall(tc.ctx, in, headerTransport(c.spec.Transport))
			if after, _ := json.Marshal(in.Meta); string(after) != string(before) {
				t.Fatalf("the caller's call was modified: %s -> %s", before, after)
			}
			if tc.wantUnmoved {
				if got, _ := json.Marshal(traced.Meta); string(got) != string(before) {
					t.Fatalf("meta %s, want %s", got, before)
				}
				return
			}
			if _, ok := traced.Meta["progressToken"]; tc.meta["progressToken"] != nil && !ok {
				t.Fatalf("progressToken lost: %s", traced.Meta)
			}
			got := string(traced.Meta["traceparent"])
			switch {
			case tc.wantParent == "" && got != "":
				t.Fatalf("traceparent %s in _meta of an HTTP upstream, want none (header)", got)
			case tc.wantParent != "" && !strings.Contains(got, tc.wantParent):
				t.Fatalf("traceparent %s, want the hub span %s", got, tc.wantParent)
			}
			if st := string(traced.Meta["tracestate"]); strings.Contains(st, "caller=1") {
				t.Fatalf("the caller's tracestate travelled on: %s", st)
			}
			// The upstream's request built from the call carries exactly that.
			b := (&out{}).params(traced, nil)
			if strings.Contains(string(b), "00f067aa0ba902b7") {
				t.Fatalf("the caller's span id reached the upstream: %s", b)
			}
			if tc.wantParent != "" && !strings.Contains(string(b), `"traceparent":"00-`+sc.TraceID().String()+"-"+tc.wantParent) {
				t.Fatalf("the request sent upstream lacks the hub's traceparent: %s", b)
			}
		})
	}
}

// With tracing off the caller's trace context goes on as it came: in
// _meta to an upstream without headers (from the caller's header or its
// _meta, the header first), and in ctx for the HTTP transports' headers,
// the call's _meta left as the caller sent it.
func TestCarriedCallPassesTheCallersTraceContext(t *testing.T) {
	const (
		parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03" // flags OpenTelemetry does not know
		other  = "00-11111111111111111111111111111111-2222222222222222-01"
		state  = "vendor=a1, other=b2"
	)
	str := func(s string) json.RawMessage { b, _ := json.Marshal(s); return b }
	fromHeader := tracing.CarryHeader(context.Background(), http.Header{"Traceparent": {parent}, "Tracestate": {state}})
	callerMeta := map[string]json.RawMessage{"traceparent": str(parent), "tracestate": str(state), "progressToken": json.RawMessage(`7`)}
	for _, tc := range []struct {
		name       string
		transport  config.Transport
		ctx        context.Context
		meta       map[string]json.RawMessage
		wantMeta   map[string]json.RawMessage
		wantHeader bool // ctx carries parent/state for the HTTP client
	}{
		{name: "stdio: header to _meta", transport: config.TransportStdio, ctx: fromHeader,
			meta:     map[string]json.RawMessage{"progressToken": json.RawMessage(`7`)},
			wantMeta: callerMeta},
		{name: "websocket: header replaces the caller's _meta members", transport: config.TransportWebSocket, ctx: fromHeader,
			meta:     map[string]json.RawMessage{"traceparent": str(other), "progressToken": json.RawMessage(`7`)},
			wantMeta: callerMeta},
		{name: "stdio: _meta as it came", transport: config.TransportStdio, ctx: context.Background(), meta: callerMeta, wantMeta: callerMeta},
		{name: "streamable HTTP: header, _meta untouched", transport: config.TransportStreamableHTTP, ctx: fromHeader,
			meta: map[string]json.RawMessage{"progressToken": json.RawMessage(`7`)}, wantMeta: map[string]json.RawMessage{"progressToken": json.RawMessage(`7`)}, wantHeader: true},
		{name: "SSE: _meta to header", transport: config.TransportSSE, ctx: context.Background(), meta: callerMeta, wantMeta: callerMeta, wantHeader: true},
		{name: "nothing to carry", transport: config.TransportStdio, ctx: context.Background(), meta: nil, wantMeta: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := jsonrpc.ToolCall{Name: "get_me", Meta: tc.meta}
			before, _ := json.Marshal(in.Meta)
			ctx, out := carriedCall(tc.ctx, in, headerTransport(tc.transport))
			if after, _ := json.Marshal(in.Meta); string(after) != string(before) {
				t.Fatalf("the caller's call was modified: %s -> %s", before, after)
			}
			got, _ := json.Marshal(out.Meta)
			want, _ := json.Marshal(tc.wantMeta)
			if string(got) != string(want) {
				t.Errorf("meta %s, want %s", got, want)
			}
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://127.0.0.1:1/", nil)
			var rec roundTripRecorder
			_, _ = tracing.HeaderClient(&http.Client{Transport: &rec}).Do(req)
			h := rec.header
			if tc.wantHeader && (h.Get("traceparent") != parent || h.Get("tracestate") != state) {
				t.Errorf("headers %v, want traceparent %s and tracestate %s", h, parent, state)
			}
		})
	}
}

// roundTripRecorder keeps the headers of the request it gets and fails it.
type roundTripRecorder struct{ header http.Header }

func (r *roundTripRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.header = req.Header
	return nil, errors.New("recorded")
}
