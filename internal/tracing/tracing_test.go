package tracing

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

func TestEnabled(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		on      bool
		wantErr string
	}{
		{name: "nothing set", env: nil},
		{name: "endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, on: true},
		{name: "traces endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, on: true},
		{name: "exporter otlp", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, on: true},
		{name: "exporter none wins over endpoint", env: map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"}},
		{name: "sdk disabled", env: map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}},
		{name: "sdk disabled upper case", env: map[string]string{"OTEL_SDK_DISABLED": "TRUE", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"}},
		{name: "sdk disabled false", env: map[string]string{"OTEL_SDK_DISABLED": "false", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"}, on: true},
		{name: "unknown exporter", env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, wantErr: "zipkin"},
		{name: "grpc refused", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, wantErr: "grpc"},
		{name: "traces protocol wins", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}, on: true},
		{name: "traces protocol named", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"}, wantErr: `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/json"`},
		{name: "grpc while off is no error", env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			on, err := enabled(func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || on != tc.on {
				t.Fatalf("enabled = %v, %v; want %v, nil", on, err, tc.on)
			}
		})
	}
}

func TestFromEnvOffHasNoTracer(t *testing.T) {
	p, err := FromEnv(context.Background(), func(string) (string, bool) { return "", false }, "mcp-hub", "test")
	if err != nil {
		t.Fatal(err)
	}
	if p.Enabled() || p.Tracer() != nil {
		t.Fatalf("tracing off: Enabled %v, Tracer %v; want false, nil", p.Enabled(), p.Tracer())
	}
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestFromEnvRefusesExporterSettings: an exporter setting the hub cannot
// honour stops FromEnv with the variable's name; while tracing is off the
// exporter's variables are not read.
func TestFromEnvRefusesExporterSettings(t *testing.T) {
	for _, tc := range []struct {
		env     map[string]string
		wantErr string
	}{
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"}, "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_COMPRESSION": "zstd"}, "OTEL_EXPORTER_OTLP_COMPRESSION"},
		{map[string]string{"OTEL_EXPORTER_OTLP_COMPRESSION": "zstd"}, ""},
	} {
		p, err := FromEnv(context.Background(), envOf(tc.env), "mcp-hub", "test")
		if tc.wantErr == "" {
			if err != nil || p.Enabled() {
				t.Errorf("%v: %v, enabled %v; want off, no error", tc.env, err, p.Enabled())
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%v: err %v, want one naming %s", tc.env, err, tc.wantErr)
		}
	}
}

func TestFromEnvOn(t *testing.T) {
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}
	p, err := FromEnv(context.Background(), func(k string) (string, bool) { v, ok := env[k]; return v, ok }, "mcp-hub", "test")
	if err != nil {
		t.Fatal(err)
	}
	if p.Tracer() == nil {
		t.Fatal("tracing on: no tracer")
	}
	_, span := p.Tracer().Start(context.Background(), "x")
	if !span.IsRecording() || TraceID(span) == "" {
		t.Fatal("span of an enabled provider does not record")
	}
	span.End()
	ctx, cancel := context.WithTimeout(context.Background(), 0)
	defer cancel()
	_ = p.Shutdown(ctx) // nothing listens on port 1: the flush may fail, it must not hang
}

const (
	parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	other  = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
)

func TestFromHeaderAndMeta(t *testing.T) {
	str := func(s string) json.RawMessage { b, _ := json.Marshal(s); return b }
	for _, tc := range []struct {
		name      string
		header    http.Header
		meta      map[string]json.RawMessage
		wantTrace string // "" for none
		wantState string
	}{
		{name: "none"},
		{name: "header", header: http.Header{"Traceparent": {parent}, "Tracestate": {"a=1"}}, wantTrace: "4bf92f3577b34da6a3ce929d0e0e4736", wantState: "a=1"},
		{name: "meta", meta: map[string]json.RawMessage{"traceparent": str(other), "tracestate": str("b=2")}, wantTrace: "0af7651916cd43dd8448eb211c80319c", wantState: "b=2"},
		{name: "header wins", header: http.Header{"Traceparent": {parent}}, meta: map[string]json.RawMessage{"traceparent": str(other)}, wantTrace: "4bf92f3577b34da6a3ce929d0e0e4736"},
		{name: "invalid header falls to meta", header: http.Header{"Traceparent": {"garbage"}}, meta: map[string]json.RawMessage{"traceparent": str(other)}, wantTrace: "0af7651916cd43dd8448eb211c80319c"},
		{name: "meta not a string", meta: map[string]json.RawMessage{"traceparent": json.RawMessage(`{"x":1}`)}},
		{name: "meta all zero trace id", meta: map[string]json.RawMessage{"traceparent": str("00-00000000000000000000000000000000-00f067aa0ba902b7-01")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := FromHeader(context.Background(), tc.header)
			if !Remote(ctx) {
				ctx = FromMeta(ctx, tc.meta)
			}
			sc := trace.SpanContextFromContext(ctx)
			if tc.wantTrace == "" {
				if sc.IsValid() {
					t.Fatalf("span context %v, want none", sc)
				}
				return
			}
			if got := sc.TraceID().String(); got != tc.wantTrace || !sc.IsRemote() {
				t.Fatalf("trace id %s (remote %v), want %s remote", got, sc.IsRemote(), tc.wantTrace)
			}
			if got := sc.TraceState().String(); got != tc.wantState {
				t.Fatalf("tracestate %q, want %q", got, tc.wantState)
			}
		})
	}
}

func TestInjectReplacesTheCallersContext(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	defer func() { _ = tp.Shutdown(context.Background()) }()
	ctx := FromHeader(context.Background(), http.Header{"Traceparent": {parent}})
	ctx, span := tp.Tracer("t").Start(ctx, "hub")
	defer span.End()
	want := span.SpanContext()

	h := http.Header{"Traceparent": {other}, "Tracestate": {"stale=1"}}
	InjectHeader(ctx, h)
	if got := h.Values("Traceparent"); len(got) != 1 || !strings.Contains(got[0], want.SpanID().String()) || !strings.Contains(got[0], want.TraceID().String()) {
		t.Fatalf("traceparent %q, want the hub span %s", got, want.SpanID())
	}
	if h.Get("Tracestate") != "" {
		t.Fatalf("stale tracestate kept: %q", h.Get("Tracestate"))
	}

	meta := Meta(ctx)
	back := trace.SpanContextFromContext(FromMeta(context.Background(), meta))
	if back.SpanID() != want.SpanID() || back.TraceID() != want.TraceID() {
		t.Fatalf("meta %s reads back as %v, want %v", meta, back, want)
	}
	for k := range meta {
		if !IsMetaKey(k) {
			t.Fatalf("meta key %q is no trace key", k)
		}
	}

	if m := Meta(context.Background()); m != nil {
		t.Fatalf("Meta without a span = %v, want nil", m)
	}
	h2 := http.Header{}
	InjectHeader(context.Background(), h2)
	if len(h2) != 0 {
		t.Fatalf("InjectHeader without a span set %v", h2)
	}
}

func TestSpanName(t *testing.T) {
	if got := SpanName("tools/call", "get_me"); got != "tools/call get_me" {
		t.Fatal(got)
	}
	if got := SpanName("initialize", ""); got != "initialize" {
		t.Fatal(got)
	}
}

func TestTracingTransportSetsHeadersOfTracedRequestsOnly(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("traceparent"))
	}))
	defer srv.Close()
	hc := HeaderClient(srv.Client())
	tp := sdktrace.NewTracerProvider()
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx, span := tp.Tracer("t").Start(context.Background(), "hub")
	defer span.End()
	sc := span.SpanContext()
	const callerParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

	for _, c := range []context.Context{ctx, context.Background()} {
		req, _ := http.NewRequestWithContext(c, http.MethodPost, srv.URL, nil)
		req.Header.Set("traceparent", callerParent) // a stale one, as a caller would send
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if req.Header.Get("traceparent") != callerParent {
			t.Fatal("the RoundTripper modified the request it was given")
		}
	}
	if len(got) != 2 || !strings.Contains(got[0], sc.SpanID().String()) || !strings.Contains(got[0], sc.TraceID().String()) {
		t.Fatalf("traced request carried %q, want the hub span %s", got, sc.SpanID())
	}
	if got[1] != callerParent {
		t.Fatalf("untraced request carried %q, want its own header untouched", got[1])
	}
}
