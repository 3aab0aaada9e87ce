package tracing

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// A traceparent with a trace flag OpenTelemetry does not know (random,
// 0x02) and a tracestate with spaces: an OpenTelemetry round trip would
// change both, the passthrough must not.
const (
	oddParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03"
	oddState  = "vendor=a1, other=b2"
)

func jsonString(s string) json.RawMessage { b, _ := json.Marshal(s); return b }

func TestCarry(t *testing.T) {
	header := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i+1 < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	for _, tc := range []struct {
		name      string
		header    http.Header
		meta      map[string]json.RawMessage
		want      Carried
		wantNone  bool
		wantMetas map[string]json.RawMessage // CarriedMeta
	}{
		{name: "header as it came", header: header("traceparent", oddParent, "tracestate", oddState),
			want: Carried{Parent: oddParent, State: oddState}},
		{name: "header without tracestate", header: header("traceparent", oddParent), want: Carried{Parent: oddParent}},
		{name: "_meta as it came", meta: map[string]json.RawMessage{"traceparent": jsonString(oddParent), "tracestate": jsonString(oddState)},
			want: Carried{Parent: oddParent, State: oddState}},
		{name: "header comes before _meta", header: header("traceparent", oddParent),
			meta: map[string]json.RawMessage{"traceparent": jsonString("00-11111111111111111111111111111111-2222222222222222-01")},
			want: Carried{Parent: oddParent}},
		{name: "invalid traceparent", header: header("traceparent", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "tracestate", oddState), wantNone: true},
		{name: "tracestate alone", header: header("tracestate", oddState), meta: map[string]json.RawMessage{"tracestate": jsonString(oddState)}, wantNone: true},
		{name: "_meta traceparent not a string", meta: map[string]json.RawMessage{"traceparent": json.RawMessage(`7`)}, wantNone: true},
		{name: "nothing", wantNone: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if tc.header != nil {
				ctx = CarryHeader(ctx, tc.header)
			}
			ctx = CarryMeta(ctx, tc.meta)
			got, ok := carried(ctx)
			if ok == tc.wantNone || got != tc.want {
				t.Fatalf("carried %+v, %v; want %+v (none: %v)", got, ok, tc.want, tc.wantNone)
			}
			meta := CarriedMeta(ctx)
			if tc.wantNone {
				if meta != nil {
					t.Fatalf("CarriedMeta = %s, want nil", meta)
				}
				return
			}
			var p, s string
			_ = json.Unmarshal(meta["traceparent"], &p)
			_ = json.Unmarshal(meta["tracestate"], &s)
			if _, has := meta["tracestate"]; p != tc.want.Parent || s != tc.want.State || has != (tc.want.State != "") {
				t.Fatalf("CarriedMeta = %s, want %+v", meta, tc.want)
			}
		})
	}
}

// With tracing off the carried context goes out in the headers unchanged,
// replacing any the request had; with a span in ctx the span wins.
func TestTracingTransportPassesTheCarriedContext(t *testing.T) {
	type seen struct{ parent, state string }
	var got []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, seen{r.Header.Get("traceparent"), r.Header.Get("tracestate")})
	}))
	defer srv.Close()
	hc := HeaderClient(srv.Client())
	carriedCtx := CarryHeader(context.Background(), http.Header{"Traceparent": {oddParent}, "Tracestate": {oddState}})
	tp := sdktrace.NewTracerProvider()
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	spanCtx, span := tp.Tracer("t").Start(carriedCtx, "hub")
	defer span.End()

	for _, ctx := range []context.Context{carriedCtx, spanCtx} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, nil)
		req.Header.Set("tracestate", "stale=1")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if req.Header.Get("tracestate") != "stale=1" {
			t.Fatal("the RoundTripper modified the request it was given")
		}
	}
	if len(got) != 2 || got[0] != (seen{oddParent, oddState}) {
		t.Fatalf("carried request sent %+v, want %s / %s unchanged", got, oddParent, oddState)
	}
	if sc := span.SpanContext(); got[1].parent != "00-"+sc.TraceID().String()+"-"+sc.SpanID().String()+"-01" {
		t.Fatalf("traced request sent %q, want the hub span %s", got[1].parent, sc.SpanID())
	}
}
