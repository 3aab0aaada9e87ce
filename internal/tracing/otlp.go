package tracing

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"golang.org/x/net/http/httpguts"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// The hub's own OTLP/HTTP client. otlptrace turns the SDK's spans into
// tracepb.ResourceSpans; this file sends them, as an
// ExportTraceServiceRequest in protobuf, to the collector. It replaces
// otlptracehttp, whose import of the collector's service package links
// gRPC, grpc-gateway and genproto into the hub (102 packages, 8 MB of the
// binary, all of it resident while the hub idles) for a request that is
// one repeated field.

// Defaults of the OTLP exporter specification.
const (
	defaultOTLPEndpoint = "https://localhost:4318" // otlptracehttp's: TLS unless the scheme says http
	tracesPath          = "/v1/traces"
	defaultOTLPTimeout  = 10 * time.Second
)

// Retries: a collector that is busy (429, 502, 503, 504) or not reachable is
// asked again after a growing, jittered pause or the Retry-After it sent,
// whichever is longer, as long as the answer can still arrive before the
// export's deadline.
const (
	retryFirst = 500 * time.Millisecond
	retryMax   = 5 * time.Second
	// maxAnswer bounds what is read of a collector's answer: a partial
	// success or an error status is a few hundred bytes.
	maxAnswer = 64 << 10
)

// otlpConfig is what the OTEL_EXPORTER_OTLP_* variables ask of the exporter.
type otlpConfig struct {
	endpoint *url.URL
	headers  [][2]string // name, value; values are credentials as far as logs go
	timeout  time.Duration
	gzip     bool
	tls      *tls.Config // nil: the system's roots, no client certificate
}

// otlpEnv reads one exporter setting: the traces-only variable
// OTEL_EXPORTER_OTLP_TRACES_<key> wins over OTEL_EXPORTER_OTLP_<key>. It
// returns the value and the name of the variable it came from.
func otlpEnv(env func(string) (string, bool), key string) (value, name string) {
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_" + key, "OTEL_EXPORTER_OTLP_" + key} {
		if v, _ := env(name); strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v), name
		}
	}
	return "", ""
}

// otlpFromEnv reads the exporter's settings, as otlptracehttp read them,
// except that a setting it cannot honour is an error naming the variable
// (otlptracehttp logged it and went on without it). Error texts never hold
// a header value, nor an endpoint's user info or query.
func otlpFromEnv(env func(string) (string, bool), readFile func(string) ([]byte, error)) (*otlpConfig, error) {
	cfg := &otlpConfig{timeout: defaultOTLPTimeout}
	var err error
	if cfg.endpoint, err = otlpEndpoint(env); err != nil {
		return nil, err
	}
	if v, name := otlpEnv(env, "HEADERS"); v != "" {
		if cfg.headers, err = parseOTLPHeaders(v); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	if v, name := otlpEnv(env, "TIMEOUT"); v != "" {
		// Positive: an export without a deadline of its own would retry a
		// busy collector for as long as the caller's context lets it.
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil || ms <= 0 || ms > int64(time.Hour/time.Millisecond) {
			return nil, fmt.Errorf("%s: %q is not a number of milliseconds from 1 to 3600000", name, v)
		}
		cfg.timeout = time.Duration(ms) * time.Millisecond
	}
	switch v, name := otlpEnv(env, "COMPRESSION"); v {
	case "", "none":
	case "gzip":
		cfg.gzip = true
	default:
		return nil, fmt.Errorf("%s: %q is not supported (want gzip or none)", name, v)
	}
	secure := cfg.endpoint.Scheme == "https"
	// INSECURE applies to gRPC endpoints written without a scheme; over HTTP
	// the endpoint's scheme decides, and a contradiction is refused rather
	// than settled silently one way.
	if v, name := otlpEnv(env, "INSECURE"); v != "" {
		insecure, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not true or false", name, v)
		}
		if insecure && secure {
			return nil, fmt.Errorf("%s=true, but the endpoint is https: write it as http:// to send spans without TLS", name)
		}
	}
	if cfg.tls, err = otlpTLS(env, readFile); err != nil {
		return nil, err
	}
	if cfg.tls != nil && !secure {
		return nil, errors.New("OTEL_EXPORTER_OTLP_*CERTIFICATE/KEY are set, but the endpoint is http: write it as https:// to use TLS")
	}
	return cfg, nil
}

// otlpEndpoint is the URL spans are posted to. The traces endpoint is used
// as given (its path "/" when it has none); the general endpoint is a base
// URL, which /v1/traces is appended to.
func otlpEndpoint(env func(string) (string, bool)) (*url.URL, error) {
	raw, name := "", ""
	for _, n := range []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"} {
		if v, _ := env(n); strings.TrimSpace(v) != "" {
			raw, name = strings.TrimSpace(v), n
			break
		}
	}
	if name == "" {
		raw = defaultOTLPEndpoint
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: not a URL", name) // url's error quotes the whole value
	}
	u.Scheme = strings.ToLower(u.Scheme)
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s: want an http:// or https:// URL with a host", name)
	}
	switch {
	case name == "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT":
		if u.Path == "" {
			u.Path = "/"
		}
	default:
		u.Path = strings.TrimSuffix(u.Path, "/") + tracesPath
		u.RawPath = ""
	}
	return u, nil
}

// parseOTLPHeaders reads name=value pairs separated by commas, values
// percent-encoded (the W3C baggage format the specification names).
func parseOTLPHeaders(s string) ([][2]string, error) {
	var out [][2]string
	for i, entry := range strings.Split(s, ",") {
		if strings.TrimSpace(entry) == "" {
			continue
		}
		n, v, ok := strings.Cut(entry, "=")
		if !ok {
			return nil, fmt.Errorf("entry %d has no '='", i+1)
		}
		n = strings.TrimSpace(n)
		if !httpguts.ValidHeaderFieldName(n) {
			return nil, fmt.Errorf("entry %d: the name is not an HTTP header name", i+1)
		}
		v, err := url.PathUnescape(v)
		if err != nil {
			return nil, fmt.Errorf("header %s: the value is not percent-encoded correctly", n)
		}
		v = strings.TrimSpace(v)
		if strings.ContainsAny(v, "\r\n\x00") {
			return nil, fmt.Errorf("header %s: the value holds a line break or NUL", n)
		}
		out = append(out, [2]string{n, v})
	}
	return out, nil
}

// otlpTLS is the TLS configuration the certificate variables ask for, or
// nil when none is set: the CA file replaces the system's roots, as in
// otlptracehttp; a client certificate needs its key.
func otlpTLS(env func(string) (string, bool), readFile func(string) ([]byte, error)) (*tls.Config, error) {
	ca, caName := otlpEnv(env, "CERTIFICATE")
	// The certificate and its key come as a pair from the same prefix.
	var cert, key, certName, keyName string
	for _, prefix := range []string{"OTEL_EXPORTER_OTLP_TRACES_", "OTEL_EXPORTER_OTLP_"} {
		c, _ := env(prefix + "CLIENT_CERTIFICATE")
		k, _ := env(prefix + "CLIENT_KEY")
		c, k = strings.TrimSpace(c), strings.TrimSpace(k)
		if c == "" && k == "" {
			continue
		}
		certName, keyName = prefix+"CLIENT_CERTIFICATE", prefix+"CLIENT_KEY"
		if c == "" || k == "" {
			return nil, fmt.Errorf("%s and %s: set both or neither", certName, keyName)
		}
		cert, key = c, k
		break
	}
	if ca == "" && cert == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		pem, err := readFile(ca)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", caName, err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: %s holds no PEM certificate", caName, ca)
		}
	}
	if cert != "" {
		certPEM, err := readFile(cert)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", certName, err)
		}
		keyPEM, err := readFile(key)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", keyName, err)
		}
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("%s and %s: %w", certName, keyName, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// otlpClient posts spans to one OTLP/HTTP endpoint: an otlptrace.Client.
type otlpClient struct {
	cfg   *otlpConfig
	where string // the endpoint without user info or query, for errors
	agent string
	hc    *http.Client
	// stopped ends with Stop: it cancels the exports in flight, and no
	// export starts after it.
	stopped context.Context
	stop    context.CancelFunc
}

var _ otlptrace.Client = (*otlpClient)(nil)

// NewExporter is the OTLP/HTTP span exporter that the OTEL_EXPORTER_OTLP_*
// variables env returns describe (see FromEnv), started. Tests and their
// peers export with it too, so that nothing in the module links another
// exporter.
func NewExporter(ctx context.Context, env func(string) (string, bool)) (sdktrace.SpanExporter, error) {
	c, err := newOTLPClient(env, os.ReadFile)
	if err != nil {
		return nil, err
	}
	return otlptrace.New(ctx, c)
}

func newOTLPClient(env func(string) (string, bool), readFile func(string) ([]byte, error)) (*otlpClient, error) {
	cfg, err := otlpFromEnv(env, readFile)
	if err != nil {
		return nil, err
	}
	// The collector is the operator's, named in the hub's environment, not
	// a caller's: no dial policy applies (none did to otlptracehttp), and a
	// proxy from HTTPS_PROXY/NO_PROXY does, as it did.
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          4,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		TLSClientConfig:       cfg.tls,
	}
	where := *cfg.endpoint
	where.User, where.RawQuery, where.ForceQuery = nil, "", false
	stopped, stop := context.WithCancel(context.Background())
	return &otlpClient{
		cfg:     cfg,
		where:   where.String(),
		agent:   "OTel-OTLP-Exporter-Go/" + otlptrace.Version() + " mcp-hub",
		hc:      &http.Client{Transport: tr},
		stopped: stopped,
		stop:    stop,
	}, nil
}

// Start does nothing: connections are made by the first export.
func (c *otlpClient) Start(context.Context) error { return nil }

// Stop ends the exports in flight and closes the idle connections. The
// batch processor has flushed before it calls Stop.
func (c *otlpClient) Stop(context.Context) error {
	c.stop()
	c.hc.CloseIdleConnections()
	return nil
}

// UploadTraces posts one ExportTraceServiceRequest, retrying what a
// collector or the network may answer differently a moment later, within
// the export's deadline: ctx's (the batch processor's) or the exporter's
// timeout, whichever comes first.
func (c *otlpClient) UploadTraces(ctx context.Context, spans []*tracepb.ResourceSpans) error {
	if c.stopped.Err() != nil {
		return errors.New("OTLP exporter stopped")
	}
	body, err := encodeExportRequest(spans)
	if err != nil {
		return fmt.Errorf("encode spans: %w", err)
	}
	gzipped := false
	if c.cfg.gzip {
		if body, err = gzipBytes(body); err != nil {
			return fmt.Errorf("compress spans: %w", err)
		}
		gzipped = true
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(c.stopped, cancel)()
	ctx, cancelT := context.WithTimeout(ctx, c.cfg.timeout)
	defer cancelT()
	pause := retryFirst
	for attempt := 1; ; attempt++ {
		retryAfter, err := c.post(ctx, body, gzipped)
		var again *retryable
		if err == nil || !errors.As(err, &again) {
			return err
		}
		// Half to all of the pause, so that hubs that failed together do
		// not come back together.
		wait := max(pause/2+rand.N(pause/2+1), retryAfter)
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return fmt.Errorf("%w (attempt %d; no time left before the export's deadline to try again)", again.err, attempt)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (attempt %d; %w)", again.err, attempt, context.Cause(ctx))
		case <-t.C:
		}
		pause = min(2*pause, retryMax)
	}
}

// retryable is an export failure that may succeed when tried again.
type retryable struct{ err error }

func (r *retryable) Error() string { return r.err.Error() }
func (r *retryable) Unwrap() error { return r.err }

// post sends body once. A failure worth another try is a *retryable, with
// the pause the collector asked for, if any.
func (c *otlpClient) post(ctx context.Context, body []byte, gzipped bool) (retryAfter time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.endpoint.String(), bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("OTLP request to %s: %w", c.where, err)
	}
	req.Header.Set("User-Agent", c.agent)
	for _, h := range c.cfg.headers {
		req.Header.Set(h[0], h[1])
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Del("Content-Encoding")
	if gzipped {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		// url.Error names the URL with its query; say it without.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		err = fmt.Errorf("post spans to %s: %w", c.where, err)
		var bad *tls.CertificateVerificationError
		if ctx.Err() != nil || errors.As(err, &bad) {
			return 0, err
		}
		return 0, &retryable{err}
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswer)) // so the connection is reused
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if rejected, msg := partialSuccess(resp.Header.Get("Content-Type"), answer); rejected > 0 || msg != "" {
			return 0, fmt.Errorf("post spans to %s: the collector rejected %d spans: %s", c.where, rejected, c.scrub(msg))
		}
		return 0, nil
	}
	err = fmt.Errorf("post spans to %s: %s%s", c.where, resp.Status, c.scrub(statusMessage(resp.Header.Get("Content-Type"), answer)))
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return parseRetryAfter(resp.Header.Get("Retry-After")), &retryable{err}
	}
	return 0, err
}

// scrub removes the configured header values from a collector's message:
// a collector may quote the credential it refused.
func (c *otlpClient) scrub(s string) string {
	for _, h := range c.cfg.headers {
		if len(h[1]) >= 4 {
			s = strings.ReplaceAll(s, h[1], "[redacted]")
		}
	}
	return s
}

// parseRetryAfter is the pause a Retry-After header asks for: seconds or
// an HTTP date; 0 when absent or unreadable.
func parseRetryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s < 0 {
			return 0
		}
		return time.Duration(min(s, int64(time.Hour/time.Second))) * time.Second // later than the deadline anyway
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// encodeExportRequest is ExportTraceServiceRequest{resource_spans: spans}
// in protobuf: field 1, repeated, each a length-delimited ResourceSpans.
// Writing the one field here keeps the collector's service package (and
// with it gRPC) out of the hub.
func encodeExportRequest(spans []*tracepb.ResourceSpans) ([]byte, error) {
	sizes := make([]int, len(spans))
	total := 0
	for i, rs := range spans {
		sizes[i] = proto.Size(rs)
		total += protowire.SizeTag(1) + protowire.SizeBytes(sizes[i])
	}
	b := make([]byte, 0, total)
	cached := proto.MarshalOptions{UseCachedSize: true} // the sizes just computed
	for i, rs := range spans {
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(sizes[i]))
		var err error
		if b, err = cached.MarshalAppend(b, rs); err != nil {
			return nil, err
		}
	}
	return b, nil
}

func gzipBytes(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// partialSuccess reads ExportTraceServiceResponse.partial_success (field
// 1: rejected_spans 1, error_message 2) of a protobuf answer.
func partialSuccess(contentType string, b []byte) (rejected int64, msg string) {
	if !isProtobuf(contentType) {
		return 0, ""
	}
	ps, ok := protoField(b, 1, protowire.BytesType)
	if !ok {
		return 0, ""
	}
	if v, ok := protoField(ps, 1, protowire.VarintType); ok {
		n, _ := protowire.ConsumeVarint(v)
		rejected = int64(n)
	}
	m, _ := protoField(ps, 2, protowire.BytesType)
	return rejected, string(m)
}

// statusMessage is ": message" of an error answer: google.rpc.Status's
// message (field 2) when protobuf, the start of a text answer otherwise.
func statusMessage(contentType string, b []byte) string {
	if isProtobuf(contentType) {
		if m, ok := protoField(b, 2, protowire.BytesType); ok && len(m) > 0 {
			b = m
		} else {
			return ""
		}
	}
	s := strings.TrimSpace(strings.ToValidUTF8(string(b[:min(len(b), 256)]), "?"))
	if s == "" {
		return ""
	}
	return ": " + s
}

func isProtobuf(contentType string) bool {
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(contentType)), "application/x-protobuf")
}

// protoField is the last value of field num of type typ in the message b:
// a varint's bytes as written, a length-delimited field's contents.
func protoField(b []byte, num protowire.Number, typ protowire.Type) (out []byte, found bool) {
	for len(b) > 0 {
		n, t, l := protowire.ConsumeTag(b)
		if l < 0 {
			return out, found
		}
		b = b[l:]
		var v []byte
		var vl int
		switch t {
		case protowire.BytesType:
			v, vl = protowire.ConsumeBytes(b)
		case protowire.VarintType:
			_, vl = protowire.ConsumeVarint(b)
			if vl >= 0 {
				v = b[:vl]
			}
		default:
			vl = protowire.ConsumeFieldValue(n, t, b)
		}
		if vl < 0 {
			return out, found
		}
		if n == num && t == typ {
			out, found = v, true
		}
		b = b[vl:]
	}
	return out, found
}
