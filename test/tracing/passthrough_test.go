package tracing

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/purko-io/mcp-hub/internal/hubtest"
)

// gotContext is the trace context one tools/call reached the upstream with.
type gotContext struct {
	parent, state         string // headers
	metaParent, metaState string // params._meta
}

// recordingUpstream is an MCP server (mcp-go, Streamable HTTP, in this
// process) that records the trace context of every tools/call it runs, by
// the tool's "id" argument; it records no spans.
type recordingUpstream struct {
	url string
	mu  sync.Mutex
	got map[string]gotContext
}

type headerKey struct{}

func startRecordingUpstream(t *testing.T) *recordingUpstream {
	t.Helper()
	u := &recordingUpstream{got: map[string]gotContext{}}
	s := server.NewMCPServer("rec", "1")
	s.AddTool(mcp.NewTool("record", mcp.WithString("id")), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		h, _ := ctx.Value(headerKey{}).(http.Header)
		g := gotContext{parent: h.Get("traceparent"), state: h.Get("tracestate")}
		if m := r.Params.Meta; m != nil {
			g.metaParent, _ = m.AdditionalFields["traceparent"].(string)
			g.metaState, _ = m.AdditionalFields["tracestate"].(string)
		}
		u.mu.Lock()
		u.got[r.GetString("id", "")] = g
		u.mu.Unlock()
		return mcp.NewToolResultText("recorded"), nil
	})
	h := server.NewStreamableHTTPServer(s)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), headerKey{}, r.Header.Clone())))
	})}
	var wg sync.WaitGroup
	wg.Go(func() { _ = hs.Serve(ln) })
	t.Cleanup(func() { _ = hs.Close(); wg.Wait() })
	u.url = "http://" + ln.Addr().String() + "/mcp"
	return u
}

func (u *recordingUpstream) context(t *testing.T, id string) gotContext {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	g, ok := u.got[id]
	if !ok {
		t.Fatalf("the upstream ran no call %s", id)
	}
	return g
}

// startOTLPSink is an OTLP/HTTP endpoint that takes every export and keeps
// nothing: the hub traces, and the test reads what the upstream got.
func startOTLPSink(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })}
	var wg sync.WaitGroup
	wg.Go(func() { _ = hs.Serve(ln) })
	t.Cleanup(func() { _ = hs.Close(); wg.Wait() })
	return "http://" + ln.Addr().String()
}

// TestTraceContextPassthrough: with tracing off the hub records no spans
// but passes the caller's trace context on unchanged, traceparent (with a
// trace flag OpenTelemetry does not know) and tracestate byte for byte,
// whether it came in headers (/mcp) or in _meta (WebSocket); with tracing
// on the upstream's parent is the hub's span, in the caller's trace, with
// the caller's tracestate.
func TestTraceContextPassthrough(t *testing.T) {
	const (
		traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
		spanID  = "00f067aa0ba902b7"
		parent  = "00-" + traceID + "-" + spanID + "-03"
		state   = "vendor=a1,other=b2"
	)
	for _, on := range []bool{false, true} {
		t.Run(fmt.Sprintf("tracing on %v", on), func(t *testing.T) {
			up := startRecordingUpstream(t)
			env := []string{"OTEL_TRACES_EXPORTER=none", "TEST_TOKEN_FULL=" + tokenFull}
			if on {
				env = []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + startOTLPSink(t), "TEST_TOKEN_FULL=" + tokenFull}
			}
			hub := hubtest.StartHub(t, hubtest.HubOptions{
				Config: fmt.Sprintf(`builtins: {staticAnalysis: {enabled: false}, triggerWorkflow: {enabled: false}}
servers:
  - name: rec
    url: %s
    transport: streamable-http
auth:
  tokens:
    - name: executor
      token: {env: TEST_TOKEN_FULL}
      maxLevel: full
`, up.url), LogLevel: "warn", Wait: hubtest.Connected, Env: env,
			})
			postMCP(t, hub.MCPURL(), tokenFull, http.Header{"Traceparent": {parent}, "Tracestate": {state}},
				`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"record","arguments":{"id":"header"}}}`)
			ws := dialWS(t, hub, tokenFull)
			ws(fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"record","arguments":{"id":"meta"},"_meta":{"traceparent":%q,"tracestate":%q}}}`, parent, state))

			for _, id := range []string{"header", "meta"} {
				g := up.context(t, id)
				if !on {
					if g.parent != parent || g.state != state {
						t.Errorf("%s: upstream got traceparent %q tracestate %q; want %q and %q unchanged", id, g.parent, g.state, parent, state)
					}
					continue
				}
				p := strings.Split(g.parent, "-")
				if len(p) != 4 || p[1] != traceID || p[2] == spanID || g.state != state {
					t.Errorf("%s: upstream got traceparent %q tracestate %q; want the hub's span in trace %s (not the caller's %s) and %q",
						id, g.parent, g.state, traceID, spanID, state)
				}
				if id == "meta" && (g.metaParent != "" || g.metaState != "") {
					t.Errorf("meta: the caller's _meta trace context travelled on past the hub's span: %q %q", g.metaParent, g.metaState)
				}
			}
		})
	}
}
