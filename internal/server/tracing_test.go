package server

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/registry"
)

// tracedUpstream is a streamable HTTP upstream that remembers the
// traceparent header of every tools/call it is sent.
type tracedUpstream struct {
	spec config.ServerSpec
	mu   sync.Mutex
	seen []string
	runs map[string]int
}

func newTracedUpstream(t *testing.T, name string, tools ...string) *tracedUpstream {
	u := &tracedUpstream{runs: map[string]int{}}
	s := mcpserver.NewMCPServer(name, "1")
	for _, tool := range tools {
		s.AddTool(mcp.NewTool(tool), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			u.mu.Lock()
			u.runs[tool]++
			u.mu.Unlock()
			return mcp.NewToolResultText("ran " + tool), nil
		})
	}
	h := mcpserver.NewStreamableHTTPServer(s)
	url := serveOn(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"tools/call"`)) {
			u.mu.Lock()
			u.seen = append(u.seen, r.Header.Get("traceparent"))
			u.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	})) + "/mcp"
	u.spec = config.ServerSpec{Name: name, URL: url, Transport: config.TransportStreamableHTTP}
	return u
}

// sawParent reports whether a tools/call reached the upstream with span
// as its parent.
func (u *tracedUpstream) sawParent(sc trace.SpanContext) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, tp := range u.seen {
		if tp == fmt.Sprintf("00-%s-%s-01", sc.TraceID(), sc.SpanID()) {
			return true
		}
	}
	return false
}

func (u *tracedUpstream) ran(tool string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.runs[tool]
}

// TestTracingOnEveryFace: a tools/call on every face makes one SERVER span,
// child of the caller's trace context (header on /mcp, _meta on stdio and
// WebSocket, the header winning over _meta), with the decision and outcome;
// an allowed call makes a CLIENT span under it whose context the upstream
// receives; a denied call never leaves the hub.
func TestTracingOnEveryFace(t *testing.T) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	tracer := tp.Tracer("test")

	u := newTracedUpstream(t, "A", "get_me", "delete_file")
	restricted := autonomy.Restricted
	h := newTestHubOpts(t, []config.ServerSpec{u.spec}, hubOpts{Auth: callers.NewAuth(nil, &restricted, nil), Tracer: tracer},
		func(o *registry.Options) { o.Upstream.Tracer = tracer })
	h.waitConnected("A")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ws := dialWS(ctx, t, h)
	sse := dialSSE(ctx, t, h)
	session := initSession(t, h.url("/mcp"))
	stdio := startStdio(ctx, t, h, autonomy.Restricted)

	for i, tc := range []struct {
		name     string
		face     string // mcp, ws, sse, stdio
		header   bool   // caller context in the traceparent header
		meta     bool   // caller context in params._meta.traceparent
		progress bool   // a progress token: the call takes the relayed way
		tool     string
		decision string
		outcome  string
		caller   string
	}{
		{name: "mcp header", face: "mcp", header: true, tool: "get_me", decision: "allowed", outcome: "ok", caller: "anonymous"},
		{name: "mcp _meta", face: "mcp", meta: true, tool: "get_me", decision: "allowed", outcome: "ok", caller: "anonymous"},
		{name: "mcp header wins over _meta", face: "mcp", header: true, meta: true, tool: "get_me", decision: "allowed", outcome: "ok", caller: "anonymous"},
		{name: "mcp with a progress token (mcp-go's handler and client)", face: "mcp", header: true, progress: true, tool: "get_me", decision: "allowed", outcome: "ok", caller: "anonymous"},
		{name: "websocket _meta", face: "ws", meta: true, tool: "get_me", decision: "allowed", outcome: "ok", caller: "anonymous"},
		{name: "sse header on /messages", face: "sse", header: true, tool: "get_me", decision: "allowed", outcome: "ok", caller: "anonymous"},
		{name: "sse _meta", face: "sse", meta: true, tool: "get_me", decision: "allowed", outcome: "ok", caller: "anonymous"},
		{name: "stdio _meta", face: "stdio", meta: true, tool: "get_me", decision: "allowed", outcome: "ok", caller: "stdio"},
		{name: "mcp denied", face: "mcp", header: true, tool: "delete_file", decision: "denied", outcome: "denied", caller: "anonymous"},
		{name: "stdio denied", face: "stdio", meta: true, tool: "delete_file", decision: "denied", outcome: "denied", caller: "stdio"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Each case is its own trace: the header's and _meta's contexts
			// differ, so the parent tells which one the hub took.
			headerCtx := remote(t, fmt.Sprintf("%032x", 0x1000+i), "00000000000000a1")
			metaCtx := remote(t, fmt.Sprintf("%032x", 0x2000+i), "00000000000000b2")
			want := headerCtx
			if !tc.header {
				want = metaCtx
			}
			meta := ""
			switch {
			case tc.meta:
				meta = fmt.Sprintf(`,"_meta":{"traceparent":%q,"tracestate":"caller=1"}`, traceparentOf(metaCtx))
			case tc.progress:
				meta = `,"_meta":{"progressToken":"p1"}`
			}
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q%s}}`, 100+i, tc.tool, meta)
			hdr := http.Header{}
			if tc.header {
				hdr.Set("traceparent", traceparentOf(headerCtx))
			}
			if tc.progress {
				hdr.Set("Mcp-Session-Id", session)
			}
			switch tc.face {
			case "mcp":
				postMCP(t, h.url("/mcp"), body, hdr)
			case "sse":
				sse(body, hdr)
			case "ws":
				ws(body)
			case "stdio":
				stdio(body)
			}

			srv := findSpan(t, sr, want.TraceID(), trace.SpanKindServer)
			if srv.Parent().SpanID() != want.SpanID() {
				t.Fatalf("server span's parent %s, want the caller's %s", srv.Parent().SpanID(), want.SpanID())
			}
			if srv.Name() != "tools/call "+tc.tool {
				t.Errorf("server span name %q", srv.Name())
			}
			wantAttrs := map[string]string{
				"mcp.method.name": "tools/call", "gen_ai.tool.name": tc.tool, "gen_ai.operation.name": "execute_tool",
				"mcp_hub.server": "A", "mcp_hub.caller": tc.caller, "mcp_hub.autonomy_level": "restricted",
				"mcp_hub.decision": tc.decision, "mcp_hub.outcome": tc.outcome,
			}
			if tc.face == "mcp" && !tc.progress {
				// The fast path knows the id; mcp-go's tool handler does not.
				wantAttrs["jsonrpc.request.id"] = fmt.Sprint(100 + i)
			}
			checkAttrs(t, srv.Attributes(), wantAttrs)

			client := spansOf(sr, want.TraceID(), trace.SpanKindClient)
			if tc.decision == "denied" {
				if len(client) != 0 || u.ran(tc.tool) != 0 {
					t.Fatalf("a denied call left the hub: %d client spans, %d runs", len(client), u.ran(tc.tool))
				}
				return
			}
			if len(client) != 1 {
				t.Fatalf("%d client spans, want 1", len(client))
			}
			if client[0].Parent().SpanID() != srv.SpanContext().SpanID() {
				t.Fatalf("client span's parent %s, want the server span %s", client[0].Parent().SpanID(), srv.SpanContext().SpanID())
			}
			checkAttrs(t, client[0].Attributes(), map[string]string{"mcp_hub.server": "A", "gen_ai.tool.name": tc.tool, "mcp_hub.transport": "streamable-http"})
			if !u.sawParent(client[0].SpanContext()) {
				t.Fatalf("the upstream never saw the hub's client span %s as its parent (saw %q)", client[0].SpanContext().SpanID(), u.seen)
			}
		})
	}

	// Other requests mcp-go serves have their span too, child of the
	// caller's context: tools/list with _meta on WebSocket, ping on stdio.
	listCtx := remote(t, fmt.Sprintf("%032x", 0x3000), "00000000000000c3")
	ws(fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"_meta":{"traceparent":%q}}}`, traceparentOf(listCtx)))
	list := findSpan(t, sr, listCtx.TraceID(), trace.SpanKindServer)
	if list.Name() != "tools/list" || list.Parent().SpanID() != listCtx.SpanID() {
		t.Errorf("tools/list span %q with parent %s, want tools/list under %s", list.Name(), list.Parent().SpanID(), listCtx.SpanID())
	}
	checkAttrs(t, list.Attributes(), map[string]string{"mcp.method.name": "tools/list", "jsonrpc.request.id": "7", "mcp_hub.caller": "anonymous"})
	stdio(`{"jsonrpc":"2.0","id":8,"method":"ping"}`)
	waitFor(t, "a ping span", func() bool {
		for _, s := range sr.Ended() {
			if s.Name() == "ping" && s.SpanKind() == trace.SpanKindServer {
				return true
			}
		}
		return false
	})

	// initialize (stdio and WebSocket, through mcp-go's hooks) has its span.
	initSpans := 0
	for _, s := range sr.Ended() {
		if s.Name() == "initialize" && s.SpanKind() == trace.SpanKindServer {
			initSpans++
		}
	}
	if initSpans < 4 {
		t.Errorf("%d initialize spans, want one per session (4)", initSpans)
	}
}

// TestTracingOffMakesNoSpans: without a tracer the hub makes no span of
// its own: the upstream gets the caller's traceparent as it came (issue 26:
// a proxy that does not trace passes the context on), not a hub span, and
// a call without one reaches the upstream without one.
func TestTracingOffMakesNoSpans(t *testing.T) {
	u := newTracedUpstream(t, "A", "get_me")
	h := newTestHub(t, []config.ServerSpec{u.spec})
	h.waitConnected("A")
	const callerParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	hdr := http.Header{}
	hdr.Set("traceparent", callerParent)
	postMCP(t, h.url("/mcp"), `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_me"}}`, hdr)
	postMCP(t, h.url("/mcp"), `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_me"}}`, http.Header{})
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.seen) != 2 || u.seen[0] != callerParent || u.seen[1] != "" {
		t.Fatalf("upstream saw traceparent %q, want the caller's %s unchanged, then none", u.seen, callerParent)
	}
}

func remote(t *testing.T, traceID, spanID string) trace.SpanContext {
	tid, err := trace.TraceIDFromHex(traceID)
	if err != nil {
		t.Fatal(err)
	}
	sid, err := trace.SpanIDFromHex(spanID)
	if err != nil {
		t.Fatal(err)
	}
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true})
}

func traceparentOf(sc trace.SpanContext) string {
	return fmt.Sprintf("00-%s-%s-01", sc.TraceID(), sc.SpanID())
}

// spansOf are the ended spans of kind in the trace.
func spansOf(sr *tracetest.SpanRecorder, id trace.TraceID, kind trace.SpanKind) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range sr.Ended() {
		if s.SpanContext().TraceID() == id && s.SpanKind() == kind {
			out = append(out, s)
		}
	}
	return out
}

// findSpan waits (bounded) for the one span of kind in the trace.
func findSpan(t *testing.T, sr *tracetest.SpanRecorder, id trace.TraceID, kind trace.SpanKind) sdktrace.ReadOnlySpan {
	t.Helper()
	var got []sdktrace.ReadOnlySpan
	waitFor(t, "span of trace "+id.String(), func() bool { got = spansOf(sr, id, kind); return len(got) > 0 })
	if len(got) != 1 {
		t.Fatalf("%d %s spans in trace %s, want 1", len(got), kind, id)
	}
	return got[0]
}

func checkAttrs(t *testing.T, attrs []attribute.KeyValue, want map[string]string) {
	t.Helper()
	got := map[string]string{}
	for _, a := range attrs {
		got[string(a.Key)] = a.Value.Emit()
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("attribute %s = %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
}

func postMCP(t *testing.T, url, body string, hdr http.Header) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	for k, v := range hdr {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !bytes.Contains(raw, []byte(`"result"`)) {
		t.Fatalf("POST %s: HTTP %d %s", body, resp.StatusCode, raw)
	}
	return string(raw)
}

// initSession initializes a Streamable HTTP session and returns its id.
func initSession(t *testing.T, url string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(initializeMsg))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || id == "" {
		t.Fatalf("initialize: HTTP %d, session %q", resp.StatusCode, id)
	}
	return id
}

const initializeMsg = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// dialWS opens an initialized WebSocket session; the returned func sends a
// request and waits for its answer.
func dialWS(ctx context.Context, t *testing.T, h *testHub) func(string) {
	conn, _, err := websocket.DefaultDialer.DialContext(ctx, strings.Replace(h.url("/ws"), "http://", "ws://", 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	send := func(msg string) {
		if err := conn.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		for {
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			_, raw, err := conn.ReadMessage()
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(raw, []byte(`"id"`)) { // not a notification
				return
			}
		}
	}
	send(initializeMsg)
	return send
}

// dialSSE opens an initialized legacy SSE session; the returned func posts
// a request to its /messages endpoint with hdr and waits for its answer on
// the stream.
func dialSSE(ctx context.Context, t *testing.T, h *testHub) func(string, http.Header) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, h.url("/sse"), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	lines := bufio.NewScanner(resp.Body)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	endpoint := ""
	for endpoint == "" && lines.Scan() {
		if l := lines.Text(); strings.HasPrefix(l, "data: ") {
			endpoint = strings.TrimPrefix(l, "data: ")
		}
	}
	if endpoint == "" {
		t.Fatal("no endpoint event on /sse")
	}
	send := func(msg string, hdr http.Header) {
		pr, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.url(endpoint), strings.NewReader(msg))
		for k, v := range hdr {
			pr.Header[k] = v
		}
		pr.Header.Set("Content-Type", "application/json")
		presp, err := http.DefaultClient.Do(pr)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, presp.Body)
		presp.Body.Close()
		for lines.Scan() {
			if l := lines.Text(); strings.HasPrefix(l, "data: ") && strings.Contains(l, `"id"`) {
				return
			}
		}
		t.Fatal("SSE stream ended without an answer")
	}
	send(initializeMsg, nil)
	return send
}

// startStdio serves stdio at level; the returned func sends a request and
// waits for its answer.
func startStdio(ctx context.Context, t *testing.T, h *testHub, level autonomy.Level) func(string) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan struct{})
	go func() { defer close(done); _ = h.srv.ServeStdio(ctx, inR, outW, level, "") }()
	t.Cleanup(func() { inW.Close(); <-done; outW.Close() })
	lines := bufio.NewScanner(outR)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	send := func(msg string) {
		if _, err := io.WriteString(inW, msg+"\n"); err != nil {
			t.Fatal(err)
		}
		for lines.Scan() {
			if bytes.Contains(lines.Bytes(), []byte(`"id"`)) {
				return
			}
		}
		t.Fatal("stdio ended without an answer")
	}
	send(initializeMsg)
	return send
}
