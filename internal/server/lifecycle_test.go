package server

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/purko-io/mcp-hub/internal/config"
)

// TestPaginatedUpstreamListedWhole: an upstream that pages its tools/list
// two at a time still contributes every tool.
func TestPaginatedUpstreamListedWhole(t *testing.T) {
	s := mcpserver.NewMCPServer("paged", "1", mcpserver.WithPaginationLimit(2))
	for i := 0; i < 7; i++ {
		s.AddTool(mcp.NewTool(fmt.Sprintf("paged_%d", i)), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("ok"), nil
		})
	}
	url := serveOn(t, mcpserver.NewStreamableHTTPServer(s)) + "/mcp"
	h := newTestHub(t, []config.ServerSpec{{Name: "paged", URL: url, Transport: config.TransportStreamableHTTP}})
	h.waitConnected("paged")
	c, _ := h.dial()
	names := toolNames(t, c)
	mustf(t, len(names) == 7 && contains(names, "paged_6"), "tools through the hub = %v", names)
}

// TestShutdownLetsInFlightCallsFinish: after the stop signal the hub stops
// being ready, but a call already running completes with its real result.
func TestShutdownLetsInFlightCallsFinish(t *testing.T) {
	a := newFakeUpstream(t, "alpha")
	h := newTestHub(t, []config.ServerSpec{a.spec()})
	h.waitConnected("alpha")

	// A second server on the same registry, so this test controls its stop.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- h.srv.Serve(ctx, ln, 5*time.Second) }()
	base := "http://" + ln.Addr().String()

	result := make(chan map[string]any, 1)
	go func() {
		res, _ := rpc(t, base+"/mcp", "", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow_alpha","arguments":{"ms":600}}}`)
		result <- res
	}()
	time.Sleep(200 * time.Millisecond)
	stop()
	select {
	case res := <-result:
		r, ok := res["result"].(map[string]any)
		mustf(t, ok && r["isError"] == nil, "in-flight call during shutdown = %v", res)
		text := r["content"].([]any)[0].(map[string]any)["text"]
		mustf(t, text == "done", "in-flight call returned %v", text)
	case <-time.After(5 * time.Second):
		t.Fatal("in-flight call never finished")
	}
	select {
	case err := <-served:
		mustf(t, err == nil, "Serve returned %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after the drain")
	}
}
