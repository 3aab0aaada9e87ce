package server

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/mcpws"
)

// serveOn serves h on a fresh loopback port and returns its base URL.
func serveOn(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: h}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	return "http://" + ln.Addr().String()
}

func echoServer(name string) *mcpserver.MCPServer {
	s := mcpserver.NewMCPServer(name, "1", mcpserver.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("echo_"+name, mcp.WithString("text")), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(name + ":" + r.GetString("text", "")), nil
	})
	return s
}

// TestEveryTransportBothWays puts an SSE upstream and a WebSocket upstream
// behind the hub and reaches both through each downstream face.
func TestEveryTransportBothWays(t *testing.T) {
	sseUp := mcpserver.NewSSEServer(echoServer("sseup"))
	sseURL := serveOn(t, sseUp) + "/sse"
	mux := http.NewServeMux()
	mux.Handle("/ws", mcpws.NewHandler(echoServer("wsup")))
	wsURL := strings.Replace(serveOn(t, mux), "http://", "ws://", 1) + "/ws"

	h := newTestHub(t, []config.ServerSpec{
		{Name: "sseup", URL: sseURL, Transport: config.InferTransport(sseURL, "")},
		{Name: "wsup", URL: wsURL, Transport: config.InferTransport(wsURL, "")},
	})
	h.waitConnected("sseup", "wsup")

	newSSE := func() transport.Interface {
		tr, err := transport.NewSSE(h.url("/sse"))
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	newHTTP := func() transport.Interface {
		tr, err := transport.NewStreamableHTTP(h.url("/mcp"))
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	newWS := func() transport.Interface {
		return mcpws.NewClientTransport(strings.Replace(h.url("/ws"), "http://", "ws://", 1), nil)
	}
	cases := []struct {
		face    string
		tr      func() transport.Interface
		version string
	}{
		{"streamable-http modern", newHTTP, ""},
		{"streamable-http 2025-11-25", newHTTP, "2025-11-25"},
		{"sse 2024-11-05", newSSE, "2024-11-05"},
		{"websocket", newWS, ""},
	}
	for _, tc := range cases {
		t.Run(tc.face, func(t *testing.T) {
			var opts []client.ClientOption
			if tc.version != "" {
				opts = append(opts, client.WithProtocolVersion(tc.version))
			}
			c := client.NewClient(tc.tr(), opts...)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := c.Start(ctx); err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
				t.Fatalf("initialize: %v", err)
			}
			names := toolNames(t, c)
			mustf(t, contains(names, "echo_sseup") && contains(names, "echo_wsup"), "tools = %v", names)
			for _, up := range []string{"sseup", "wsup"} {
				got, isErr := call(t, c, "echo_"+up, map[string]any{"text": tc.face})
				mustf(t, !isErr && got == up+":"+tc.face, "echo_%s = %q", up, got)
			}
		})
	}
}

// TestLegacyUpstreamProbedOnce: a server that ignores the 2026-07-28
// server/discover probe costs the probe on its first connect only; every
// reconnect goes straight to initialize.
func TestLegacyUpstreamProbedOnce(t *testing.T) {
	inner := mcpserver.NewStreamableHTTPServer(echoServer("old"))
	var probes atomic.Int64
	var down atomic.Bool
	legacy := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			if bytes.Contains(body, []byte(`"server/discover"`)) {
				probes.Add(1)
				<-r.Context().Done() // ignore it, like servers that predate it
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		inner.ServeHTTP(w, r)
	})
	url := serveOn(t, legacy) + "/mcp"
	h := newTestHub(t, []config.ServerSpec{{Name: "old", URL: url, Transport: config.TransportStreamableHTTP}})
	h.waitConnected("old")
	mustf(t, probes.Load() == 1, "first connect sent %d probes, want 1", probes.Load())
	mustf(t, !strings.HasPrefix(h.status("old").Protocol, "2026"), "negotiated %q with a legacy server", h.status("old").Protocol)

	for i := 0; i < 2; i++ {
		down.Store(true)
		waitFor(t, "old down", func() bool { return h.status("old").State != "connected" })
		down.Store(false)
		h.waitConnected("old")
	}
	mustf(t, probes.Load() == 1, "reconnects sent the probe again: %d probes", probes.Load())
	c, _ := h.dial()
	got, _ := call(t, c, "echo_old", map[string]any{"text": "x"})
	mustf(t, got == "old:x", "echo_old = %q", got)
}

// TestBreakerFailsFast: once a server's transport keeps failing, calls fail
// at once instead of each waiting for its own timeout.
func TestBreakerFailsFast(t *testing.T) {
	inner := mcpserver.NewStreamableHTTPServer(echoServer("flaky"))
	var broken atomic.Bool
	var reached atomic.Int64
	flaky := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if broken.Load() && r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			if bytes.Contains(body, []byte(`"tools/call"`)) {
				reached.Add(1)
				panic(http.ErrAbortHandler) // drop the connection mid-request
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		inner.ServeHTTP(w, r)
	})
	url := serveOn(t, flaky) + "/mcp"
	h := newTestHub(t, []config.ServerSpec{{Name: "flaky", URL: url, Transport: config.TransportStreamableHTTP}})
	h.waitConnected("flaky")
	c, _ := h.dial()
	broken.Store(true)
	var last string
	for i := 0; i < 10; i++ {
		last, _ = call(t, c, "echo_flaky", map[string]any{"text": "x"})
		mustf(t, strings.HasPrefix(last, "ERROR:"), "call %d on a broken server = %q", i, last)
	}
	// The test hub opens the breaker after 3 consecutive failures.
	mustf(t, reached.Load() <= 4, "%d of 10 calls reached the broken server; the breaker should stop them", reached.Load())
	mustf(t, strings.Contains(last, "circuit breaker open"), "last error = %q", last)
}
