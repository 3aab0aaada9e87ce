package tracing

import (
	"bytes"
	"compress/gzip"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/purko-io/mcp-hub/internal/hubtest"
)

// The trace backend of these tests is an OTLP/HTTP receiver the test owns:
// the three exporters (the caller's and the upstream's in this process, the
// hub's in its own) post real OTLP protobuf to it, it decodes every request
// with the OpenTelemetry project's generated messages, refuses what a
// collector would refuse (another content type, fields it does not know,
// a span without ids), and keeps the spans by trace. What the tests check
// is that the spans arrive with the right parents and attributes; a full
// trace store (Jaeger, built from source: 25 minutes of a cold CI) adds a
// query API nothing here needs.

// collector is a running OTLP/HTTP receiver and what it has received.
type collector struct {
	OTLP string // http://127.0.0.1:PORT, posts go to OTLP+"/v1/traces"

	mu     sync.Mutex
	spans  map[string][]otlpSpan // by trace id (hex)
	errors []string              // requests refused, for the failure message
}

// otlpSpan is a received span, with the service of its resource.
type otlpSpan struct {
	Service       string
	TraceID       string
	SpanID        string
	ParentID      string // "" for a root
	OperationName string
	Kind          string // "server", "client", "internal", ...
	Tags          []tag  // the span's attributes
}

type tag struct {
	Key   string
	Value any
}

// Parent is the id of the span's parent, "" for a root.
func (s otlpSpan) Parent() string { return s.ParentID }

// Tag is the value of an attribute as text ("span.kind" is the kind), ""
// when absent.
func (s otlpSpan) Tag(key string) string {
	if key == "span.kind" {
		return s.Kind
	}
	for _, t := range s.Tags {
		if t.Key == key {
			return fmt.Sprint(t.Value)
		}
	}
	return ""
}

// startCollector runs the receiver on a free loopback port until t's
// cleanup.
func startCollector(t *testing.T) *collector {
	t.Helper()
	c := &collector{spans: map[string][]otlpSpan{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c.OTLP = "http://" + ln.Addr().String()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", c.receive)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	var wg sync.WaitGroup
	wg.Go(func() { _ = srv.Serve(ln) })
	t.Cleanup(func() { _ = srv.Close(); wg.Wait() })
	return c
}

// receive takes one export request, as the OTLP/HTTP specification has a
// collector take it: protobuf body, gzip when the exporter says so, an
// empty ExportTraceServiceResponse back.
func (c *collector) receive(w http.ResponseWriter, r *http.Request) {
	refuse := func(err error) {
		c.mu.Lock()
		c.errors = append(c.errors, err.Error())
		c.mu.Unlock()
		http.Error(w, err.Error(), http.StatusBadRequest)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		refuse(fmt.Errorf("content type %q, want application/x-protobuf", ct))
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			refuse(fmt.Errorf("gzip: %w", err))
			return
		}
		body = zr
	}
	raw, err := io.ReadAll(io.LimitReader(body, 16<<20))
	if err != nil {
		refuse(fmt.Errorf("read the request: %w", err))
		return
	}
	spans, err := decodeExport(raw)
	if err != nil {
		refuse(err)
		return
	}
	c.mu.Lock()
	for _, s := range spans {
		c.spans[s.TraceID] = append(c.spans[s.TraceID], s)
	}
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK) // an empty ExportTraceServiceResponse is zero bytes
}

// decodeExport reads an ExportTraceServiceRequest (field 1: repeated
// ResourceSpans) without the collector's service package, whose gRPC and
// gateway code this test does not need.
func decodeExport(raw []byte) ([]otlpSpan, error) {
	var out []otlpSpan
	for len(raw) > 0 {
		num, typ, n := protowire.ConsumeTag(raw)
		if n < 0 {
			return nil, fmt.Errorf("export request: %w", protowire.ParseError(n))
		}
		raw = raw[n:]
		if num != 1 || typ != protowire.BytesType {
			return nil, fmt.Errorf("export request: unknown field %d (wire type %d)", num, typ)
		}
		msg, n := protowire.ConsumeBytes(raw)
		if n < 0 {
			return nil, fmt.Errorf("export request: %w", protowire.ParseError(n))
		}
		raw = raw[n:]
		var rs tracepb.ResourceSpans
		if err := proto.Unmarshal(msg, &rs); err != nil {
			return nil, fmt.Errorf("resource spans: %w", err)
		}
		spans, err := spansOf(&rs)
		if err != nil {
			return nil, err
		}
		out = append(out, spans...)
	}
	return out, nil
}

// spansOf flattens one ResourceSpans; fields the message does not define
// and spans without valid ids are errors, as they would be in a collector.
func spansOf(rs *tracepb.ResourceSpans) ([]otlpSpan, error) {
	if len(rs.ProtoReflect().GetUnknown()) > 0 {
		return nil, errors.New("resource spans: fields unknown to OTLP")
	}
	service := ""
	for _, kv := range rs.GetResource().GetAttributes() {
		if kv.GetKey() == "service.name" {
			service = kv.GetValue().GetStringValue()
		}
	}
	var out []otlpSpan
	for _, ss := range rs.GetScopeSpans() {
		for _, sp := range ss.GetSpans() {
			if len(sp.GetTraceId()) != 16 || len(sp.GetSpanId()) != 8 {
				return nil, fmt.Errorf("span %q: trace id of %d bytes, span id of %d", sp.GetName(), len(sp.GetTraceId()), len(sp.GetSpanId()))
			}
			if len(sp.ProtoReflect().GetUnknown()) > 0 {
				return nil, fmt.Errorf("span %q: fields unknown to OTLP", sp.GetName())
			}
			s := otlpSpan{
				Service:       service,
				TraceID:       hex.EncodeToString(sp.GetTraceId()),
				SpanID:        hex.EncodeToString(sp.GetSpanId()),
				OperationName: sp.GetName(),
				Kind:          strings.ToLower(strings.TrimPrefix(sp.GetKind().String(), "SPAN_KIND_")),
			}
			if p := sp.GetParentSpanId(); len(p) > 0 {
				s.ParentID = hex.EncodeToString(p)
			}
			for _, kv := range sp.GetAttributes() {
				s.Tags = append(s.Tags, tag{Key: kv.GetKey(), Value: valueOf(kv.GetValue())})
			}
			out = append(out, s)
		}
	}
	return out, nil
}

func valueOf(v *commonpb.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue
	default:
		return v.String()
	}
}

// trace is what has arrived of one trace so far.
func (c *collector) trace(traceID string) ([]otlpSpan, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]otlpSpan(nil), c.spans[traceID]...), append([]string(nil), c.errors...)
}

// waitTrace waits (bounded) until the trace holds at least n spans; a
// refused request fails the test at once.
func (c *collector) waitTrace(t *testing.T, traceID string, n int) []otlpSpan {
	t.Helper()
	var spans []otlpSpan
	hubtest.Eventually(t, 30*time.Second, 50*time.Millisecond, fmt.Sprintf("%d spans of trace %s", n, traceID), func() error {
		var refused []string
		spans, refused = c.trace(traceID)
		if len(refused) > 0 {
			t.Fatalf("the collector refused export requests: %s", strings.Join(refused, "; "))
		}
		if len(spans) < n {
			return fmt.Errorf("%d spans so far: %s", len(spans), summary(spans))
		}
		return nil
	})
	return spans
}

func summary(spans []otlpSpan) string {
	var b bytes.Buffer
	for _, s := range spans {
		fmt.Fprintf(&b, "[%s %s %q kind=%s parent=%s] ", s.Service, s.SpanID, s.OperationName, s.Kind, s.Parent())
	}
	return b.String()
}
