package tracing

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/purko-io/mcp-hub/internal/hubtest"
)

// Jaeger v2 (a build of the OpenTelemetry Collector with Jaeger's storage
// and query) is the real trace backend of these tests: OTLP/HTTP in,
// traces read back through its query API. hack/jaeger.sh builds it once
// from the Go module proxy into ~/.cache/mcp-hub (`make test-deps`).

// jaeger is a running Jaeger: where to send spans and where to read traces.
type jaeger struct {
	OTLP  string // http://127.0.0.1:PORT, the OTLP/HTTP receiver
	Query string // http://127.0.0.1:PORT, the query API (/api/traces/{id})
}

// jaegerBinary is MCPHUB_JAEGER, or hack/jaeger.sh's cached build (built
// now when missing: 10+ minutes on a fresh 2-core machine).
func jaegerBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("MCPHUB_JAEGER"); bin != "" {
		return bin
	}
	root, err := hubtest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(root, "hack", "jaeger.sh"))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hack/jaeger.sh: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// jaegerConfig listens on loopback only: OTLP/HTTP on otlp, the query API
// on query and its gRPC twin on grpc; memory storage; no metrics server.
func jaegerConfig(otlp, query, grpc int) string {
	return fmt.Sprintf(`service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    resource:
      service.name: jaeger
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_query:
    enable_tracing: false
    storage:
      traces: mem
    http:
      endpoint: 127.0.0.1:%d
    grpc:
      endpoint: 127.0.0.1:%d
  jaeger_storage:
    backends:
      mem:
        memory:
          max_traces: 10000
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%d
processors:
  batch:
    timeout: 50ms
exporters:
  jaeger_storage_exporter:
    trace_storage: mem
`, query, grpc, otlp)
}

// startJaeger runs Jaeger until t's cleanup (stopped by PID).
func startJaeger(t *testing.T) jaeger {
	t.Helper()
	bin := jaegerBinary(t)
	dir := t.TempDir()
	var otlp int
	_, query := hubtest.StartServer(t, "jaeger", 0, func(query int) *exec.Cmd {
		otlp = hubtest.FreePort(t)
		path := filepath.Join(dir, fmt.Sprintf("jaeger-%d.yaml", query))
		if err := os.WriteFile(path, []byte(jaegerConfig(otlp, query, hubtest.FreePort(t))), 0o600); err != nil {
			t.Fatal(err)
		}
		return exec.Command(bin, "--config", "file:"+path)
	})
	j := jaeger{OTLP: fmt.Sprintf("http://127.0.0.1:%d", otlp), Query: fmt.Sprintf("http://127.0.0.1:%d", query)}
	// The query port opens before the receiver may: wait for both.
	hubtest.Eventually(t, 30*time.Second, 50*time.Millisecond, "jaeger's OTLP receiver", func() error {
		resp, err := http.Post(j.OTLP+"/v1/traces", "application/json", strings.NewReader(`{}`))
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("OTLP receiver: %s", resp.Status)
		}
		return nil
	})
	return j
}

// jaegerSpan is a span as Jaeger's query API (/api/traces) shows it.
type jaegerSpan struct {
	TraceID       string `json:"traceID"`
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	Tags []struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	} `json:"tags"`
	ProcessID string `json:"processID"`
	Service   string `json:"-"`
}

// Parent is the span's CHILD_OF reference, "" for a root.
func (s jaegerSpan) Parent() string {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" {
			return r.SpanID
		}
	}
	return ""
}

// Tag is the value of a tag as text, "" when absent.
func (s jaegerSpan) Tag(key string) string {
	for _, t := range s.Tags {
		if t.Key == key {
			return fmt.Sprint(t.Value)
		}
	}
	return ""
}

// trace reads one trace back from Jaeger; no trace yet is an empty list.
func (j jaeger) trace(ctx context.Context, traceID string) ([]jaegerSpan, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, j.Query+"/api/traces/"+traceID, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusNotFound {
		return nil, nil
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /api/traces/%s: %s %s", traceID, resp.Status, body)
	}
	var out struct {
		Data []struct {
			Spans     []jaegerSpan `json:"spans"`
			Processes map[string]struct {
				ServiceName string `json:"serviceName"`
			} `json:"processes"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, fmt.Errorf("read trace %s: %w", traceID, err)
	}
	var spans []jaegerSpan
	for _, d := range out.Data {
		for _, s := range d.Spans {
			s.Service = d.Processes[s.ProcessID].ServiceName
			spans = append(spans, s)
		}
	}
	return spans, nil
}

// waitTrace polls Jaeger (bounded) until the trace holds at least n spans.
func (j jaeger) waitTrace(t *testing.T, traceID string, n int) []jaegerSpan {
	t.Helper()
	var spans []jaegerSpan
	hubtest.Eventually(t, 30*time.Second, 100*time.Millisecond, fmt.Sprintf("%d spans of trace %s in jaeger", n, traceID), func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var err error
		if spans, err = j.trace(ctx, traceID); err != nil {
			return err
		}
		if len(spans) < n {
			return fmt.Errorf("%d spans so far: %s", len(spans), summary(spans))
		}
		return nil
	})
	return spans
}

func summary(spans []jaegerSpan) string {
	var b strings.Builder
	for _, s := range spans {
		fmt.Fprintf(&b, "[%s %s %q kind=%s parent=%s] ", s.Service, s.SpanID, s.OperationName, s.Tag("span.kind"), s.Parent())
	}
	return b.String()
}
