// Package tracing tests the hub's OpenTelemetry tracing end to end: a
// caller, the hub binary and an upstream each export spans over OTLP/HTTP
// to a receiver the test runs (collector_test.go), and the test reads the
// trace back from it.
package tracing

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/purko-io/mcp-hub/internal/hubtest"
	"github.com/purko-io/mcp-hub/internal/tracing"
)

// tracerOf is a tracer of service that exports every span to the collector as it
// ends (a synchronous exporter: nothing is buffered when the test reads),
// with the hub's own OTLP exporter.
func tracerOf(t *testing.T, j *collector, service string) trace.Tracer {
	t.Helper()
	env := map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": j.OTLP + "/v1/traces"}
	exp, err := tracing.NewExporter(context.Background(), func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", service))))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp.Tracer("test/tracing")
}

// startUpstream is an MCP server (mcp-go, Streamable HTTP, in this process)
// that joins the trace it is called in: it reads the traceparent header the
// hub sends and makes a span of its own for every tool run, exported to
// the collector as service test-upstream.
func startUpstream(t *testing.T, tracer trace.Tracer) string {
	t.Helper()
	s := server.NewMCPServer("up", "1")
	run := func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		_, span := tracer.Start(ctx, "run "+r.Params.Name, trace.WithSpanKind(trace.SpanKindServer))
		defer span.End()
		return mcp.NewToolResultText("ran " + r.Params.Name), nil
	}
	s.AddTool(mcp.NewTool("get_me"), run)
	s.AddTool(mcp.NewTool("delete_thing"), run)
	h := server.NewStreamableHTTPServer(s)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		h.ServeHTTP(w, r.WithContext(ctx))
	})}
	var wg sync.WaitGroup
	wg.Go(func() { _ = hs.Serve(ln) })
	t.Cleanup(func() { _ = hs.Close(); wg.Wait() })
	return "http://" + ln.Addr().String() + "/mcp"
}

func hubConfig(upstream, stdioUpstream, otlp string) string {
	return fmt.Sprintf(`builtins: {staticAnalysis: {enabled: false}, triggerWorkflow: {enabled: false}}
servers:
  - name: up
    url: %s
    transport: streamable-http
  - name: stdio-up
    command: %s
    env: {OTEL_EXPORTER_OTLP_ENDPOINT: %q}
auth:
  tokens:
    - name: executor
      token: {env: TEST_TOKEN_FULL}
      maxLevel: full
    - name: restricted-bot
      token: {env: TEST_TOKEN_RESTRICTED}
      maxLevel: restricted
`, upstream, stdioUpstream, otlp)
}

// buildStdioUpstream builds test/tracing/upstream, the stdio server that
// reads the hub's span from _meta and exports its own.
func buildStdioUpstream(t *testing.T) string {
	t.Helper()
	root, err := hubtest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "stdio-upstream")
	cmd := exec.Command("go", "build", "-o", bin, "./test/tracing/upstream")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the stdio upstream: %v\n%s", err, out)
	}
	return bin
}

const (
	tokenFull       = "tok-full-0123456789"
	tokenRestricted = "tok-restricted-0123456789"
)

// TestTraceCallerHubUpstream: one trace at the collector holds the caller's span,
// the hub's SERVER span (with tool, server, caller, level, decision and
// outcome), the hub's CLIENT span under it, and the upstream's span under
// that, whether the caller's context came in the traceparent header
// (Streamable HTTP) or in params._meta (WebSocket), and whether the hub
// passed its span on in a header (streamable HTTP upstream) or in
// params._meta (a stdio upstream, a process of its own). A denied call ends at
// the hub: decision=denied, no CLIENT span, nothing upstream. Each call's
// audit line carries its trace id.
func TestTraceCallerHubUpstream(t *testing.T) {
	j := startCollector(t)
	callerTracer := tracerOf(t, j, "test-caller")
	upstream := startUpstream(t, tracerOf(t, j, "test-upstream"))
	hub := hubtest.StartHub(t, hubtest.HubOptions{
		Config: hubConfig(upstream, buildStdioUpstream(t), j.OTLP), LogLevel: "info", Wait: hubtest.Connected,
		Env: []string{
			"OTEL_EXPORTER_OTLP_ENDPOINT=" + j.OTLP,
			"OTEL_BSP_SCHEDULE_DELAY=50",
			"TEST_TOKEN_FULL=" + tokenFull,
			"TEST_TOKEN_RESTRICTED=" + tokenRestricted,
		},
	})
	ws := dialWS(t, hub, tokenFull)

	for i, tc := range []struct {
		name     string
		face     string // mcp: traceparent header; ws: params._meta
		token    string
		tool     string
		server   string // the upstream that owns tool
		upstream string // its service name in the trace
		caller   string
		level    string
		denied   bool
		wantLen  int // spans in the trace
	}{
		{name: "streamable HTTP, traceparent header", face: "mcp", token: tokenFull, tool: "get_me", server: "up", upstream: "test-upstream", caller: "executor", level: "full", wantLen: 4},
		{name: "WebSocket, _meta.traceparent", face: "ws", token: tokenFull, tool: "get_me", server: "up", upstream: "test-upstream", caller: "executor", level: "full", wantLen: 4},
		{name: "stdio upstream, hub span in _meta", face: "mcp", token: tokenFull, tool: "get_stdio", server: "stdio-up", upstream: "test-stdio-upstream", caller: "executor", level: "full", wantLen: 4},
		{name: "denied", face: "mcp", token: tokenRestricted, tool: "delete_thing", server: "up", caller: "restricted-bot", level: "restricted", denied: true, wantLen: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, callerSpan := callerTracer.Start(context.Background(), "caller "+tc.name, trace.WithSpanKind(trace.SpanKindClient))
			carrier := propagation.MapCarrier{}
			propagation.TraceContext{}.Inject(ctx, carrier)
			var answer string
			switch tc.face {
			case "mcp":
				answer = postCall(t, hub.MCPURL(), tc.token, carrier["traceparent"], i, tc.tool)
			case "ws":
				answer = ws(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"_meta":{"traceparent":%q}}}`,
					100+i, tc.tool, carrier["traceparent"]))
			}
			callerSpan.End()
			if tc.denied != strings.Contains(answer, "BLOCKED") {
				t.Fatalf("answer %s (denied: %v)", answer, tc.denied)
			}
			traceID := callerSpan.SpanContext().TraceID().String()
			spans := j.waitTrace(t, traceID, tc.wantLen)
			if tc.denied {
				// Nothing went upstream: a span that would say otherwise
				// gets time to arrive before the trace is read once more.
				time.Sleep(500 * time.Millisecond)
				spans = j.waitTrace(t, traceID, tc.wantLen)
			}
			if len(spans) != tc.wantLen {
				t.Fatalf("trace %s has %d spans, want %d: %s", traceID, len(spans), tc.wantLen, summary(spans))
			}

			caller := only(t, spans, "test-caller", "client")
			hubServer := only(t, spans, "mcp-hub", "server")
			if hubServer.Parent() != caller.SpanID {
				t.Fatalf("hub server span's parent %s, want the caller's %s: %s", hubServer.Parent(), caller.SpanID, summary(spans))
			}
			if hubServer.OperationName != "tools/call "+tc.tool {
				t.Errorf("hub server span is %q", hubServer.OperationName)
			}
			decision, outcome := "allowed", "ok"
			if tc.denied {
				decision, outcome = "denied", "denied"
			}
			for k, want := range map[string]string{
				"mcp.method.name": "tools/call", "gen_ai.tool.name": tc.tool, "gen_ai.operation.name": "execute_tool",
				"mcp_hub.server": tc.server, "mcp_hub.caller": tc.caller, "mcp_hub.autonomy_level": tc.level,
				"mcp_hub.decision": decision, "mcp_hub.outcome": outcome,
			} {
				if got := hubServer.Tag(k); got != want {
					t.Errorf("hub server span %s = %q, want %q", k, got, want)
				}
			}
			for _, s := range spans {
				for _, tag := range s.Tags {
					if v := fmt.Sprint(tag.Value); strings.Contains(v, tokenFull) || strings.Contains(v, tokenRestricted) {
						t.Errorf("span %q tag %s carries a token", s.OperationName, tag.Key)
					}
				}
			}
			if !strings.Contains(hub.Output(), `"trace_id":"`+traceID+`"`) {
				t.Errorf("no audit line with trace_id %s in the hub's log:\n%s", traceID, hubtest.Tail(hub.Output()))
			}
			if tc.denied {
				return
			}
			hubClient := only(t, spans, "mcp-hub", "client")
			if hubClient.Parent() != hubServer.SpanID {
				t.Fatalf("hub client span's parent %s, want the hub server span %s", hubClient.Parent(), hubServer.SpanID)
			}
			transport := map[string]string{"up": "streamable-http", "stdio-up": "stdio"}[tc.server]
			if hubClient.Tag("mcp_hub.server") != tc.server || hubClient.Tag("gen_ai.tool.name") != tc.tool || hubClient.Tag("mcp_hub.transport") != transport {
				t.Errorf("hub client span tags %v", hubClient.Tags)
			}
			up := only(t, spans, tc.upstream, "server")
			if up.Parent() != hubClient.SpanID {
				t.Fatalf("upstream span's parent %s, want the hub client span %s: %s", up.Parent(), hubClient.SpanID, summary(spans))
			}
		})
	}
}

// only is the one span of service and kind in spans.
func only(t *testing.T, spans []otlpSpan, service, kind string) otlpSpan {
	t.Helper()
	var found []otlpSpan
	for _, s := range spans {
		if s.Service == service && s.Tag("span.kind") == kind {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d %s spans of %s, want 1: %s", len(found), kind, service, summary(spans))
	}
	return found[0]
}

// postCall is a plain tools/call on /mcp with a traceparent header, as a
// stateless executor sends it.
func postCall(t *testing.T, url, token, traceparent string, id int, tool string) string {
	t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q}}`, id, tool)
	return postMCP(t, url, token, http.Header{"Traceparent": {traceparent}}, body)
}

// postMCP posts one JSON-RPC message to /mcp as the caller of token, with
// the trace headers of trace, and returns the answer.
func postMCP(t *testing.T, url, token string, trace http.Header, body string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	for k, v := range trace {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /mcp: %s %s", resp.Status, raw)
	}
	return string(raw)
}

// dialWS opens an initialized WebSocket session as the caller of token; the
// returned func sends a request and returns its answer.
func dialWS(t *testing.T, hub *hubtest.Hub, token string) func(string) string {
	t.Helper()
	h := http.Header{}
	h.Set("Authorization", "Bearer "+token)
	conn, _, err := websocket.DefaultDialer.Dial(strings.Replace(hub.Base, "http://", "ws://", 1)+"/ws", h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	send := func(msg string) string {
		if err := conn.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		for {
			_ = conn.SetReadDeadline(time.Now().Add(15 * time.Second))
			_, raw, err := conn.ReadMessage()
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(raw), `"id"`) {
				return string(raw)
			}
		}
	}
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	return send
}
