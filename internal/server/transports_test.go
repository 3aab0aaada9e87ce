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

// TestUpstreamRevisionChoice: the hub opens a session with the
// initialize handshake (2025-11-25) on every server that takes it, so a
// request carries no per-request _meta the server must decode: it never
// sends the 2026-07-28 server/discover probe to such a server, on its
// first connect or on a reconnect. A server that refuses the handshake is
// reached over 2026-07-28, and so is one pinned to it.
func TestUpstreamRevisionChoice(t *testing.T) {
	for _, tc := range []struct {
		name       string
		refuseInit bool   // the server answers initialize with -32601
		pin        string // the spec's protocolVersion
		wantModern bool
	}{
		{name: "a server that takes both"},
		{name: "a server without the handshake", refuseInit: true, wantModern: true},
		{name: "pinned to 2026-07-28", pin: "2026-07-28", wantModern: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inner := mcpserver.NewStreamableHTTPServer(echoServer("up"))
			var probes, inits atomic.Int64
			var down atomic.Bool
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if down.Load() {
					http.Error(w, "down", http.StatusServiceUnavailable)
					return
				}
				if r.Method == http.MethodPost {
					body, _ := io.ReadAll(r.Body)
					if bytes.Contains(body, []byte(`"server/discover"`)) {
						probes.Add(1)
					}
					if bytes.Contains(body, []byte(`"method":"initialize"`)) {
						inits.Add(1)
						if tc.refuseInit {
							w.Header().Set("Content-Type", "application/json")
							_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":0,"error":{"code":-32601,"message":"Method not found"}}`)
							return
						}
					}
					r.Body = io.NopCloser(bytes.NewReader(body))
				}
				inner.ServeHTTP(w, r)
			})
			url := serveOn(t, h) + "/mcp"
			hub := newTestHub(t, []config.ServerSpec{{Name: "up", URL: url, Transport: config.TransportStreamableHTTP, ProtocolVersion: tc.pin}})
			hub.waitConnected("up")
			modern := strings.HasPrefix(hub.status("up").Protocol, "2026")
			mustf(t, modern == tc.wantModern, "negotiated %q; want 2026-07-28: %v", hub.status("up").Protocol, tc.wantModern)
			if !tc.wantModern {
				for i := 0; i < 2; i++ {
					down.Store(true)
					waitFor(t, "up down", func() bool { return hub.status("up").State != "connected" })
					down.Store(false)
					hub.waitConnected("up")
				}
				mustf(t, probes.Load() == 0, "the hub probed a server that takes the handshake %d times", probes.Load())
				mustf(t, inits.Load() >= 3, "%d initialize handshakes over 3 connects", inits.Load())
			}
			c, _ := hub.dial()
			got, _ := call(t, c, "echo_up", map[string]any{"text": "x"})
			mustf(t, got == "up:x", "echo_up = %q", got)
		})
	}
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
