package tracing

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// envOf is an env function over m.
func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

const secretValue = "sk-very-secret-api-key"

// checkErr fails t unless err says every one of want and not secretValue.
func checkErr(t *testing.T, err error, want []string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one saying %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
	if strings.Contains(err.Error(), secretValue) {
		t.Errorf("error %q holds the secret", err)
	}
}

func TestOTLPFromEnv(t *testing.T) {
	dir := t.TempDir()
	caFile, certFile, keyFile := writeTestCerts(t, dir)
	junk := filepath.Join(dir, "junk.pem")
	if err := os.WriteFile(junk, []byte("not pem"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		env     map[string]string
		url     string // the endpoint the spans go to
		headers string // name=value;... as configured, in order
		timeout time.Duration
		gzip    bool
		tls     bool
		wantErr []string // all in the error; secretValue never is
	}{
		{name: "default endpoint", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, url: "https://localhost:4318/v1/traces", timeout: defaultOTLPTimeout},
		{name: "base endpoint gets /v1/traces", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, url: "http://c:4318/v1/traces", timeout: defaultOTLPTimeout},
		{name: "base endpoint with a path", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://c/otlp/"}, url: "https://c/otlp/v1/traces", timeout: defaultOTLPTimeout},
		{name: "traces endpoint as given", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/custom", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://other"}, url: "http://c:4318/custom", timeout: defaultOTLPTimeout},
		{name: "traces endpoint without a path", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "HTTP://c:4318"}, url: "http://c:4318/", timeout: defaultOTLPTimeout},
		{name: "headers decoded, traces win", env: map[string]string{
			"OTEL_EXPORTER_OTLP_ENDPOINT":       "http://c",
			"OTEL_EXPORTER_OTLP_HEADERS":        "x-ignored=1",
			"OTEL_EXPORTER_OTLP_TRACES_HEADERS": "api-key=a%20b%3Dc, x-tenant = t1 ,",
		}, url: "http://c/v1/traces", headers: "api-key=a b=c;x-tenant=t1", timeout: defaultOTLPTimeout},
		{name: "timeout and gzip", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_TIMEOUT": "2500", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "gzip"}, url: "http://c/v1/traces", timeout: 2500 * time.Millisecond, gzip: true},
		{name: "compression none", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_COMPRESSION": "none"}, url: "http://c/v1/traces", timeout: defaultOTLPTimeout},
		{name: "insecure agrees with http", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_INSECURE": "true"}, url: "http://c/v1/traces", timeout: defaultOTLPTimeout},
		{name: "certificates", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://c", "OTEL_EXPORTER_OTLP_CERTIFICATE": caFile, "OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE": certFile, "OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY": keyFile}, url: "https://c/v1/traces", timeout: defaultOTLPTimeout, tls: true},

		{name: "no scheme", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"}, wantErr: []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://"}},
		{name: "unix scheme", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "unix:///run/otel.sock"}, wantErr: []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"}},
		{name: "not a URL", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + secretValue + "@c:port"}, wantErr: []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "not a URL"}},
		{name: "header without =", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_HEADERS": "a=1,Authorization: Bearer " + secretValue}, wantErr: []string{"OTEL_EXPORTER_OTLP_HEADERS", "entry 2"}},
		{name: "header name not a token", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "Bearer " + secretValue + "=x"}, wantErr: []string{"OTEL_EXPORTER_OTLP_TRACES_HEADERS", "entry 1"}},
		{name: "header value badly escaped", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_HEADERS": "api-key=" + secretValue + "%zz"}, wantErr: []string{"OTEL_EXPORTER_OTLP_HEADERS", "api-key"}},
		{name: "header value with a line break", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_HEADERS": "api-key=" + secretValue + "%0Ax-evil: 1"}, wantErr: []string{"OTEL_EXPORTER_OTLP_HEADERS", "line break"}},
		{name: "timeout not a number", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "10s"}, wantErr: []string{"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "10s"}},
		{name: "timeout zero", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_TIMEOUT": "0"}, wantErr: []string{"OTEL_EXPORTER_OTLP_TIMEOUT"}},
		{name: "compression unknown", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_COMPRESSION": "zstd"}, wantErr: []string{"OTEL_EXPORTER_OTLP_COMPRESSION", "zstd"}},
		{name: "insecure contradicts https", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://c", "OTEL_EXPORTER_OTLP_TRACES_INSECURE": "true"}, wantErr: []string{"OTEL_EXPORTER_OTLP_TRACES_INSECURE"}},
		{name: "insecure not a bool", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_INSECURE": "yes"}, wantErr: []string{"OTEL_EXPORTER_OTLP_INSECURE"}},
		{name: "certificate missing", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://c", "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE": filepath.Join(dir, "none.pem")}, wantErr: []string{"OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE", "none.pem"}},
		{name: "certificate not PEM", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://c", "OTEL_EXPORTER_OTLP_CERTIFICATE": junk}, wantErr: []string{"OTEL_EXPORTER_OTLP_CERTIFICATE", "no PEM"}},
		{name: "client certificate without key", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://c", "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": certFile}, wantErr: []string{"OTEL_EXPORTER_OTLP_CLIENT_KEY"}},
		{name: "client key not matching", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://c", "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": certFile, "OTEL_EXPORTER_OTLP_CLIENT_KEY": caFile}, wantErr: []string{"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and OTEL_EXPORTER_OTLP_CLIENT_KEY"}},
		{name: "TLS files with an http endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_CERTIFICATE": caFile}, wantErr: []string{"CERTIFICATE", "https://"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := otlpFromEnv(envOf(tc.env), os.ReadFile)
			if len(tc.wantErr) > 0 {
				checkErr(t, err, tc.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.endpoint.String(); got != tc.url {
				t.Errorf("endpoint %s, want %s", got, tc.url)
			}
			var hs []string
			for _, h := range cfg.headers {
				hs = append(hs, h[0]+"="+h[1])
			}
			if got := strings.Join(hs, ";"); got != tc.headers {
				t.Errorf("headers %q, want %q", got, tc.headers)
			}
			if cfg.timeout != tc.timeout || cfg.gzip != tc.gzip || (cfg.tls != nil) != tc.tls {
				t.Errorf("timeout %v gzip %v tls %v; want %v %v %v", cfg.timeout, cfg.gzip, cfg.tls != nil, tc.timeout, tc.gzip, tc.tls)
			}
			if tc.tls && (cfg.tls.RootCAs == nil || len(cfg.tls.Certificates) != 1) {
				t.Errorf("TLS config without the CA or the client certificate")
			}
		})
	}
}

// export is what the collector received in one request.
type export struct {
	header http.Header
	spans  []*tracepb.ResourceSpans
}

// collector is an OTLP/HTTP endpoint on loopback that decodes what it is
// sent and answers with answer(n) for the n-th request (from 1).
type collector struct {
	t       *testing.T
	srv     *httptest.Server
	answer  func(n int, w http.ResponseWriter, r *http.Request) bool // true: answered
	mu      sync.Mutex
	exports []export
	n       atomic.Int64
}

func newCollector(t *testing.T, answer func(n int, w http.ResponseWriter, r *http.Request) bool) *collector {
	c := &collector{t: t, answer: answer}
	c.srv = httptest.NewServer(http.HandlerFunc(c.serve))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *collector) serve(w http.ResponseWriter, r *http.Request) {
	n := int(c.n.Add(1))
	if c.answer != nil && c.answer(n, w, r) {
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "want POST /v1/traces application/x-protobuf", http.StatusBadRequest)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	spans, err := decodeExportRequest(b)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	c.exports = append(c.exports, export{header: r.Header.Clone(), spans: spans})
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
}

func (c *collector) received() []export {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]export(nil), c.exports...)
}

// decodeExportRequest reads an ExportTraceServiceRequest as a collector
// does, without the collector's package: field 1, each a ResourceSpans.
func decodeExportRequest(b []byte) ([]*tracepb.ResourceSpans, error) {
	var out []*tracepb.ResourceSpans
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		b = b[n:]
		if num != 1 || typ != protowire.BytesType {
			return nil, errors.New("unexpected field in ExportTraceServiceRequest")
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		b = b[n:]
		rs := &tracepb.ResourceSpans{}
		if err := proto.Unmarshal(v, rs); err != nil {
			return nil, err
		}
		out = append(out, rs)
	}
	return out, nil
}

// spanNames are the names of the spans in an export, with the resource's
// service.name of each.
func spanNames(spans []*tracepb.ResourceSpans) []string {
	var out []string
	for _, rs := range spans {
		service := ""
		for _, a := range rs.GetResource().GetAttributes() {
			if a.GetKey() == "service.name" {
				service = a.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				out = append(out, service+"/"+s.GetName())
			}
		}
	}
	return out
}

// exportSpans makes the named spans with an exporter built from env and
// returns the exporter's error (a synchronous exporter: each span is sent
// as it ends). Errors reach the otel error handler, not the span: so the
// exporter is called directly.
func exportSpans(t *testing.T, env map[string]string, names ...string) error {
	t.Helper()
	exp, err := NewExporter(context.Background(), envOf(env))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = exp.Shutdown(context.Background()) }()
	rec := sdktrace.NewSimpleSpanProcessor(nopExporter{})
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "svc"))))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	var ended []sdktrace.ReadOnlySpan
	for _, n := range names {
		_, span := tp.Tracer("t").Start(context.Background(), n)
		span.SetAttributes(attribute.String("k", "v"))
		span.End()
		ended = append(ended, span.(sdktrace.ReadOnlySpan))
	}
	return exp.ExportSpans(context.Background(), ended)
}

type nopExporter struct{}

func (nopExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (nopExporter) Shutdown(context.Context) error                             { return nil }

func TestExportReachesTheCollector(t *testing.T) {
	for _, tc := range []struct {
		name string
		gzip bool
	}{{"plain", false}, {"gzip", true}} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCollector(t, nil)
			env := map[string]string{
				"OTEL_EXPORTER_OTLP_ENDPOINT": c.srv.URL,
				"OTEL_EXPORTER_OTLP_HEADERS":  "api-key=" + secretValue + ",x-tenant=t%201",
			}
			if tc.gzip {
				env["OTEL_EXPORTER_OTLP_COMPRESSION"] = "gzip"
			}
			if err := exportSpans(t, env, "tools/call a", "tools/list"); err != nil {
				t.Fatal(err)
			}
			got := c.received()
			if len(got) != 1 {
				t.Fatalf("%d exports, want 1", len(got))
			}
			if names := strings.Join(spanNames(got[0].spans), ","); names != "svc/tools/call a,svc/tools/list" {
				t.Errorf("spans %q", names)
			}
			s := got[0].spans[0].GetScopeSpans()[0].GetSpans()[0]
			if len(s.GetTraceId()) != 16 || len(s.GetSpanId()) != 8 || s.GetAttributes()[0].GetKey() != "k" {
				t.Errorf("span decoded as %v", s)
			}
			h := got[0].header
			if h.Get("Api-Key") != secretValue || h.Get("X-Tenant") != "t 1" || !strings.Contains(h.Get("User-Agent"), "OTLP") {
				t.Errorf("headers %v", h)
			}
			if enc := h.Get("Content-Encoding"); (enc == "gzip") != tc.gzip {
				t.Errorf("Content-Encoding %q, gzip %v", enc, tc.gzip)
			}
		})
	}
}

// rpcStatus is a google.rpc.Status{code, message} in protobuf.
func rpcStatus(code int, msg string) []byte {
	b := protowire.AppendTag(nil, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(code))
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	return protowire.AppendString(b, msg)
}

func TestExportRetries(t *testing.T) {
	for _, tc := range []struct {
		name     string
		env      map[string]string
		answer   func(n int, w http.ResponseWriter, r *http.Request) bool
		requests int64
		minTime  time.Duration
		maxTime  time.Duration
		wantErr  []string // "" for success
	}{
		{
			name: "503 with Retry-After, then ok",
			answer: func(n int, w http.ResponseWriter, _ *http.Request) bool {
				if n > 1 {
					return false
				}
				w.Header().Set("Retry-After", "1")
				http.Error(w, "busy", http.StatusServiceUnavailable)
				return true
			},
			requests: 2, minTime: time.Second, maxTime: 5 * time.Second,
		},
		{
			name: "429 and 502 back off, then ok",
			answer: func(n int, w http.ResponseWriter, _ *http.Request) bool {
				switch n {
				case 1:
					w.WriteHeader(http.StatusTooManyRequests)
				case 2:
					w.WriteHeader(http.StatusBadGateway)
				default:
					return false
				}
				return true
			},
			requests: 3, minTime: retryFirst / 2, maxTime: 5 * time.Second,
		},
		{
			name: "connection closed, then ok",
			answer: func(n int, w http.ResponseWriter, _ *http.Request) bool {
				if n > 1 {
					return false
				}
				conn, _, err := w.(http.Hijacker).Hijack()
				if err == nil {
					conn.Close()
				}
				return true
			},
			requests: 2, maxTime: 5 * time.Second,
		},
		{
			name: "400 is not retried; its message said, the header value not",
			answer: func(_ int, w http.ResponseWriter, _ *http.Request) bool {
				w.Header().Set("Content-Type", "application/x-protobuf")
				w.WriteHeader(http.StatusBadRequest)
				_, _ = w.Write(rpcStatus(3, "bad key "+secretValue))
				return true
			},
			requests: 1, maxTime: time.Second,
			wantErr: []string{"400 Bad Request", "bad key [redacted]", "/v1/traces"},
		},
		{
			name: "Retry-After beyond the deadline: no wait",
			env:  map[string]string{"OTEL_EXPORTER_OTLP_TIMEOUT": "1000"},
			answer: func(_ int, w http.ResponseWriter, _ *http.Request) bool {
				w.Header().Set("Retry-After", "30")
				w.WriteHeader(http.StatusServiceUnavailable)
				return true
			},
			requests: 1, maxTime: 900 * time.Millisecond,
			wantErr: []string{"503", "deadline"},
		},
		{
			name: "always 504: retried until the deadline",
			env:  map[string]string{"OTEL_EXPORTER_OTLP_TIMEOUT": "2000"},
			answer: func(_ int, w http.ResponseWriter, _ *http.Request) bool {
				w.WriteHeader(http.StatusGatewayTimeout)
				return true
			},
			requests: -2, maxTime: 2500 * time.Millisecond, // at least 2
			wantErr: []string{"504", "attempt"},
		},
		{
			name: "partial success is an error",
			answer: func(_ int, w http.ResponseWriter, _ *http.Request) bool {
				ps := protowire.AppendTag(nil, 1, protowire.VarintType)
				ps = protowire.AppendVarint(ps, 2)
				ps = protowire.AppendTag(ps, 2, protowire.BytesType)
				ps = protowire.AppendString(ps, "too old")
				b := protowire.AppendTag(nil, 1, protowire.BytesType)
				b = protowire.AppendBytes(b, ps)
				w.Header().Set("Content-Type", "application/x-protobuf")
				_, _ = w.Write(b)
				return true
			},
			requests: 1, maxTime: time.Second,
			wantErr: []string{"rejected 2 spans: too old"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCollector(t, tc.answer)
			env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": c.srv.URL, "OTEL_EXPORTER_OTLP_HEADERS": "api-key=" + secretValue}
			for k, v := range tc.env {
				env[k] = v
			}
			start := time.Now()
			err := exportSpans(t, env, "s")
			took := time.Since(start)
			switch n := c.n.Load(); {
			case tc.requests > 0 && n != tc.requests, tc.requests < 0 && n < -tc.requests:
				t.Errorf("%d requests, want %d", n, tc.requests)
			}
			if took < tc.minTime || took > tc.maxTime {
				t.Errorf("took %v, want %v-%v", took, tc.minTime, tc.maxTime)
			}
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if len(c.received()) != 1 {
					t.Fatalf("%d exports received, want 1", len(c.received()))
				}
				return
			}
			checkErr(t, err, tc.wantErr)
		})
	}
}

// TestStopEndsAnExportInFlight: Shutdown does not wait for a collector
// that does not answer.
func TestStopEndsAnExportInFlight(t *testing.T) {
	release := make(chan struct{})
	c := newCollector(t, func(_ int, _ http.ResponseWriter, r *http.Request) bool {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		return true
	})
	defer close(release)
	client, err := newOTLPClient(envOf(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": c.srv.URL}), os.ReadFile)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- client.UploadTraces(context.Background(), []*tracepb.ResourceSpans{{}}) }()
	for c.n.Load() == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	if err := client.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("export in flight succeeded after Stop")
		}
	case <-time.After(3 * time.Second):
		t.Fatal("export in flight still running 3 s after Stop")
	}
	if err := client.UploadTraces(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "stopped") {
		t.Fatalf("export after Stop: %v, want stopped", err)
	}
}

func TestEncodeExportRequestRoundTrips(t *testing.T) {
	in := []*tracepb.ResourceSpans{
		{SchemaUrl: "a", ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{Name: "x", TraceId: bytes.Repeat([]byte{1}, 16)}}}}},
		{},
		{SchemaUrl: strings.Repeat("b", 300)}, // a length over one varint byte
	}
	b, err := encodeExportRequest(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := decodeExportRequest(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in) {
		t.Fatalf("%d ResourceSpans back, want %d", len(out), len(in))
	}
	for i := range in {
		if !proto.Equal(in[i], out[i]) {
			t.Errorf("ResourceSpans %d: %v back, want %v", i, out[i], in[i])
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"", 0}, {"3", 3 * time.Second}, {"-1", 0}, {"soon", 0}, {"99999999999", time.Hour},
		{time.Now().Add(-time.Minute).UTC().Format(http.TimeFormat), 0},
	} {
		if got := parseRetryAfter(tc.in); got != tc.want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
	if got := parseRetryAfter(time.Now().Add(time.Minute).UTC().Format(http.TimeFormat)); got < 58*time.Second || got > time.Minute {
		t.Errorf("Retry-After a minute from now: %v", got)
	}
}

// writeTestCerts writes a self-signed CA and a client certificate with its
// key, PEM, into dir.
func writeTestCerts(t *testing.T, dir string) (ca, cert, key string) {
	t.Helper()
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	ca = write("ca.pem", "CERTIFICATE", der)
	return ca, write("client.pem", "CERTIFICATE", der), write("client-key.pem", "EC PRIVATE KEY", keyDER)
}
