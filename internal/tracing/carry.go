package tracing

import (
	"context"
	"encoding/json"
	"net/http"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Trace context passthrough. With tracing off the hub records no spans, but
// it is still a hop between the caller and the upstream: the caller's W3C
// trace context (traceparent and tracestate) goes on to the upstream as it
// came, so the upstream's own spans join the caller's trace (the hub is
// invisible in it, like any proxy that does not trace). The strings pass
// byte for byte: an OpenTelemetry round trip would drop trace flags it does
// not know and normalise tracestate. Only a valid traceparent is carried (a
// tracestate never travels without one). With tracing on none of this runs:
// the hub's span is the upstream's parent (tracing.go).

// carriedKey holds a Carried in a context.
type carriedKey struct{}

// Carried is a caller's trace context as it arrived.
type Carried struct {
	Parent string // traceparent
	State  string // tracestate, "" when the caller sent none
}

// valid reports whether c's traceparent is one a tracer would continue.
func (c Carried) valid() bool {
	mc := propagation.MapCarrier{traceparent: c.Parent}
	return trace.SpanContextFromContext(propagator().Extract(context.Background(), mc)).IsValid()
}

// CarryHeader returns ctx carrying the traceparent and tracestate headers
// of h, or ctx itself when h has no valid traceparent.
func CarryHeader(ctx context.Context, h http.Header) context.Context {
	p := h.Get(traceparent)
	if p == "" {
		return ctx
	}
	return carry(ctx, Carried{Parent: p, State: h.Get(tracestate)})
}

// CarryMeta returns ctx carrying the traceparent and tracestate members of
// a request's _meta, unless ctx carries a trace context already (the HTTP
// header comes first, as when tracing is on) or meta has no valid one.
func CarryMeta(ctx context.Context, meta map[string]json.RawMessage) context.Context {
	raw, ok := meta[traceparent]
	if !ok {
		return ctx
	}
	if _, ok := carried(ctx); ok {
		return ctx
	}
	var c Carried
	if json.Unmarshal(raw, &c.Parent) != nil {
		return ctx
	}
	if s, ok := meta[tracestate]; ok && json.Unmarshal(s, &c.State) != nil {
		c.State = ""
	}
	return carry(ctx, c)
}

func carry(ctx context.Context, c Carried) context.Context {
	if !c.valid() {
		return ctx
	}
	return context.WithValue(ctx, carriedKey{}, c)
}

// carried is the trace context ctx carries, if any.
func carried(ctx context.Context) (Carried, bool) {
	c, ok := ctx.Value(carriedKey{}).(Carried)
	return c, ok
}

// setHeader puts c in h, replacing what was there.
func (c Carried) setHeader(h http.Header) {
	h.Set(traceparent, c.Parent)
	if c.State != "" {
		h.Set(tracestate, c.State)
	} else {
		h.Del(tracestate)
	}
}

// CarriedMeta returns the _meta members of the trace context ctx carries,
// as JSON strings, or nil when it carries none: what an upstream without
// headers (stdio, WebSocket) gets with tracing off.
func CarriedMeta(ctx context.Context) map[string]json.RawMessage {
	c, ok := carried(ctx)
	if !ok {
		return nil
	}
	out := make(map[string]json.RawMessage, 2)
	out[traceparent], _ = json.Marshal(c.Parent)
	if c.State != "" {
		out[tracestate], _ = json.Marshal(c.State)
	}
	return out
}
