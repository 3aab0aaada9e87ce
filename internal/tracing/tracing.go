// Package tracing is the hub's OpenTelemetry tracing: setup from the
// standard OTEL_* environment variables, the W3C trace context read from a
// caller (HTTP headers or a request's _meta) and written to an upstream, and
// the span attribute names the hub uses. It imports nothing of the hub's, so
// every layer (server, upstream) can use it without import cycles.
//
// Tracing is off unless the environment asks for it. Off, Provider.Tracer
// is nil: callers check for nil before doing any work, so the call path
// neither allocates nor creates spans.
package tracing

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Span attribute keys. The mcp.*, gen_ai.*, jsonrpc.* and error.type keys
// follow the OpenTelemetry semantic conventions for MCP and GenAI; the
// mcp_hub.* keys say what only the hub knows. Arguments, results and
// credentials are never attributes.
const (
	MethodName      = attribute.Key("mcp.method.name")
	SessionID       = attribute.Key("mcp.session.id")
	ProtocolVersion = attribute.Key("mcp.protocol.version")
	ToolName        = attribute.Key("gen_ai.tool.name")
	OperationName   = attribute.Key("gen_ai.operation.name")
	RequestID       = attribute.Key("jsonrpc.request.id")
	ErrorType       = attribute.Key("error.type")

	Server        = attribute.Key("mcp_hub.server")
	Caller        = attribute.Key("mcp_hub.caller")
	AutonomyLevel = attribute.Key("mcp_hub.autonomy_level")
	Decision      = attribute.Key("mcp_hub.decision")
	Outcome       = attribute.Key("mcp_hub.outcome")
	Transport     = attribute.Key("mcp_hub.transport")
	// UpstreamSubject and UpstreamActor are who an upstream with token
	// exchange saw call: the sub and act.sub of the token minted for it.
	UpstreamSubject = attribute.Key("mcp_hub.upstream.subject")
	UpstreamActor   = attribute.Key("mcp_hub.upstream.actor")
)

// OperationExecuteTool is gen_ai.operation.name of a tools/call.
const OperationExecuteTool = "execute_tool"

// ScopeName is the instrumentation scope of the hub's spans.
const ScopeName = "github.com/purko-io/mcp-hub"

// W3C trace context carriers: the HTTP header names, which are also the
// _meta member names on transports without headers.
const (
	traceparent = "traceparent"
	tracestate  = "tracestate"
)

// SpanName is the span name the MCP semantic conventions give a request:
// "{mcp.method.name} {target}", e.g. "tools/call get_me", or the method
// alone when there is no target.
func SpanName(method, target string) string {
	if target == "" {
		return method
	}
	return method + " " + target
}

// Provider owns the tracer provider built from the environment, and with it
// the exporter's goroutines. Shutdown flushes what is buffered.
type Provider struct {
	tp *sdktrace.TracerProvider
}

// Enabled reports whether spans are made and exported.
func (p *Provider) Enabled() bool { return p != nil && p.tp != nil }

// Tracer returns the hub's tracer, or nil when tracing is off: a nil check
// is the one test on the call path that keeps the off case free.
func (p *Provider) Tracer() trace.Tracer {
	if !p.Enabled() {
		return nil
	}
	return p.tp.Tracer(ScopeName)
}

// Shutdown flushes buffered spans and stops the exporter; ctx bounds how
// long that may take. It does nothing when tracing is off.
func (p *Provider) Shutdown(ctx context.Context) error {
	if !p.Enabled() {
		return nil
	}
	if err := p.tp.Shutdown(ctx); err != nil {
		return fmt.Errorf("flush traces: %w", err)
	}
	return nil
}

// Setup builds the provider from the process environment (see FromEnv).
func Setup(ctx context.Context, service, version string) (*Provider, error) {
	return FromEnv(ctx, os.LookupEnv, service, version)
}

// FromEnv builds the provider from the OTEL_* variables that env returns.
// Tracing is on when OTEL_TRACES_EXPORTER is "otlp", or when it is unset and
// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set;
// OTEL_SDK_DISABLED=true and OTEL_TRACES_EXPORTER=none turn it off. The
// exporter is OTLP over HTTP/protobuf (otlp.go) and reads, each
// OTEL_EXPORTER_OTLP_TRACES_* winning over its OTEL_EXPORTER_OTLP_*:
// ENDPOINT (the traces one as given, the general one with /v1/traces
// appended; default https://localhost:4318; its scheme says whether TLS is
// used, and INSECURE may not contradict it), HEADERS, TIMEOUT (ms, default
// 10 s, for the whole export with its retries), COMPRESSION (gzip or none),
// CERTIFICATE, CLIENT_CERTIFICATE and CLIENT_KEY. The SDK reads
// OTEL_TRACES_SAMPLER(_ARG) and OTEL_BSP_*; the resource takes
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, service.name defaulting to
// service. Settings the hub cannot honour are an error, not silently ignored.
func FromEnv(ctx context.Context, env func(string) (string, bool), service, version string) (*Provider, error) {
	on, err := enabled(env)
	if err != nil || !on {
		return &Provider{}, err
	}
	exp, err := NewExporter(ctx, env)
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	res, err := resource.Merge(
		resource.NewSchemaless(attribute.String("service.name", service), attribute.String("service.version", version)),
		envResource(ctx),
	)
	if err != nil {
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Provider{tp: tp}, nil
}

// envResource is the resource OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES
// describe, with the SDK's own attributes; it wins over the defaults.
func envResource(ctx context.Context) *resource.Resource {
	res, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil && res == nil {
		return resource.Empty()
	}
	return res // a partly invalid OTEL_RESOURCE_ATTRIBUTES keeps what parsed
}

// enabled decides from env whether to trace.
func enabled(env func(string) (string, bool)) (bool, error) {
	get := func(k string) string { v, _ := env(k); return strings.TrimSpace(v) }
	if strings.EqualFold(get("OTEL_SDK_DISABLED"), "true") {
		return false, nil
	}
	on := get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" || get("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
	if exporters := get("OTEL_TRACES_EXPORTER"); exporters != "" {
		on = false
		for e := range strings.SplitSeq(exporters, ",") {
			switch strings.TrimSpace(e) {
			case "otlp":
				on = true
			case "none":
			default:
				return false, fmt.Errorf("OTEL_TRACES_EXPORTER: %q is not supported (want otlp or none)", e)
			}
		}
	}
	if !on {
		return false, nil
	}
	if proto, name := otlpEnv(env, "PROTOCOL"); proto != "" && proto != "http/protobuf" {
		return false, fmt.Errorf("%s: %q is not supported (want http/protobuf)", name, proto)
	}
	return true, nil
}

// propagator is the W3C trace context propagator; it has no state.
func propagator() propagation.TraceContext { return propagation.TraceContext{} }

// FromHeader returns ctx with the remote span context of a W3C traceparent
// (and tracestate) in h, or ctx itself when h carries none or an invalid one.
func FromHeader(ctx context.Context, h http.Header) context.Context {
	if len(h.Values(traceparent)) == 0 {
		return ctx
	}
	return propagator().Extract(ctx, propagation.HeaderCarrier(h))
}

// FromMeta returns ctx with the remote span context of the traceparent and
// tracestate members of a request's _meta (JSON strings), or ctx itself when
// meta carries none or an invalid one. It serves callers whose transport has
// no headers: stdio, WebSocket, and messages posted to an SSE session.
func FromMeta(ctx context.Context, meta map[string]json.RawMessage) context.Context {
	raw, ok := meta[traceparent]
	if !ok {
		return ctx
	}
	c := propagation.MapCarrier{}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ctx
	}
	c[traceparent] = s
	if json.Unmarshal(meta[tracestate], &s) == nil {
		c[tracestate] = s
	}
	return propagator().Extract(ctx, c)
}

// Remote reports whether ctx already holds a caller's span context (or a
// span of the hub's), so that a lower-priority carrier is not read.
func Remote(ctx context.Context) bool {
	return trace.SpanContextFromContext(ctx).IsValid()
}

// InjectHeader sets traceparent (and tracestate) in h from the span in ctx,
// replacing whatever was there; h is left alone when ctx has no valid span.
func InjectHeader(ctx context.Context, h http.Header) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	h.Del(traceparent)
	h.Del(tracestate)
	propagator().Inject(ctx, propagation.HeaderCarrier(h))
}

// Meta returns the traceparent (and tracestate) _meta members for the span
// in ctx, as JSON strings, or nil when ctx has no valid span.
func Meta(ctx context.Context) map[string]json.RawMessage {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return nil
	}
	c := propagation.MapCarrier{}
	propagator().Inject(ctx, c)
	out := make(map[string]json.RawMessage, len(c))
	for k, v := range c {
		b, _ := json.Marshal(v)
		out[k] = b
	}
	return out
}

// IsMetaKey reports whether a _meta member carries trace context: the hub
// replaces these with its own span's when it traces a call.
func IsMetaKey(key string) bool { return key == traceparent || key == tracestate }

// TraceID is the hex trace id of span when it records, "" otherwise:
// the key that joins a call's log lines to its trace.
func TraceID(span trace.Span) string {
	if span == nil || !span.IsRecording() {
		return ""
	}
	return span.SpanContext().TraceID().String()
}

// RequestIDText is a JSON-RPC id as the RequestID attribute shows it: a
// string id without its quotes, a number as written.
func RequestIDText(id json.RawMessage) string {
	var s string
	if json.Unmarshal(id, &s) == nil {
		return s
	}
	return string(id)
}

// tracingTransport sets the traceparent and tracestate headers of every
// request whose context holds a span, or a caller's carried trace context
// (Carry), the one way the hub's HTTP clients of upstreams (its own POST,
// mcp-go's streamable HTTP and SSE) pass it on.
type tracingTransport struct{ base http.RoundTripper }

func (t tracingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.base
	if base == nil {
		base = http.DefaultTransport
	}
	ctx := req.Context()
	if trace.SpanContextFromContext(ctx).IsValid() {
		// A RoundTripper must not modify the request it was given.
		out := req.Clone(ctx)
		InjectHeader(ctx, out.Header)
		return base.RoundTrip(out)
	}
	if c, ok := carried(ctx); ok {
		out := req.Clone(ctx)
		c.setHeader(out.Header)
		return base.RoundTrip(out)
	}
	return base.RoundTrip(req)
}

// CloseIdleConnections passes http.Client.CloseIdleConnections on to the
// wrapped transport.
func (t tracingTransport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// HeaderClient returns a copy of hc whose requests carry the trace context
// of their own context in headers (InjectHeader, or a caller's carried
// context as it came: Carry), leaving the request they were given alone.
func HeaderClient(hc *http.Client) *http.Client {
	out := *hc
	out.Transport = tracingTransport{base: hc.Transport}
	return &out
}
