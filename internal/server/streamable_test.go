package server

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/purko-io/mcp-hub/internal/config"
)

// chattyUpstream has a tool that logs before answering (so mcp-go replies
// with an SSE stream) and a tool whose handler fails (a JSON-RPC error).
func chattyUpstream(t *testing.T) config.ServerSpec {
	s := mcpserver.NewMCPServer("chatty", "1", mcpserver.WithLogging())
	s.AddTool(mcp.NewTool("chatty_log"), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		srv := mcpserver.ServerFromContext(ctx)
		_ = srv.SendNotificationToClient(ctx, "notifications/message", map[string]any{"level": "info", "data": "working"})
		return mcp.NewToolResultText("logged then answered"), nil
	})
	s.AddTool(mcp.NewTool("chatty_fail"), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, errors.New("kaboom in the handler")
	})
	url := serveOn(t, mcpserver.NewStreamableHTTPServer(s)) + "/mcp"
	return config.ServerSpec{Name: "chatty", URL: url, Transport: config.TransportStreamableHTTP}
}

func TestFastPathAndMCPPathAgree(t *testing.T) {
	a := newFakeUpstream(t, "alpha")
	h := newTestHub(t, []config.ServerSpec{a.spec(), chattyUpstream(t)})
	h.waitConnected("alpha", "chatty")
	url := h.url("/mcp")
	_, session := rpc(t, url, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	cases := []struct {
		name, body, want string
	}{
		{"fast path", `{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`, "alpha:x"},
		{"progress token takes the MCP path", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"},"_meta":{"progressToken":"p"}}}`, "alpha:x"},
		{"SSE reply from the upstream", `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"chatty_log"}}`, "logged then answered"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, _ := rpc(t, url, session, tc.body)
			r, ok := res["result"].(map[string]any)
			mustf(t, ok, "reply %v", res)
			text := r["content"].([]any)[0].(map[string]any)["text"]
			mustf(t, text == tc.want, "text %v, want %q", text, tc.want)
			mustf(t, strings.Contains(tc.body, `"id":"a"`) == (res["id"] == "a"), "reply id %v does not match the request", res["id"])
		})
	}
}

func TestUpstreamJSONRPCErrorPassesThrough(t *testing.T) {
	h := newTestHub(t, []config.ServerSpec{chattyUpstream(t)})
	h.waitConnected("chatty")
	res, _ := rpc(t, h.url("/mcp"), "", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"chatty_fail"}}`)
	e, ok := res["error"].(map[string]any)
	mustf(t, ok && strings.Contains(e["message"].(string), "kaboom in the handler"), "reply %v, want the upstream's JSON-RPC error", res)
	mustf(t, res["id"] == float64(3), "reply id %v", res["id"])
}

func TestFastPathKeepsDNSRebindingProtection(t *testing.T) {
	a := newFakeUpstream(t, "alpha")
	h := newTestHub(t, []config.ServerSpec{a.spec()})
	h.waitConnected("alpha")
	req, _ := http.NewRequest("POST", h.url("/mcp"), strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`))
	req.Host = "evil.example:80"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	mustf(t, resp.StatusCode == http.StatusForbidden, "foreign Host on loopback got %s", resp.Status)
	mustf(t, a.calls.Load() == 0, "the call reached the upstream")
}

func TestUpstreamJSONRPCErrorOverSSEFace(t *testing.T) {
	h := newTestHub(t, []config.ServerSpec{chattyUpstream(t)})
	h.waitConnected("chatty")
	tr, err := transport.NewSSE(h.url("/sse"))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = "chatty_fail"
	_, err = c.CallTool(ctx, req)
	mustf(t, err != nil && strings.Contains(err.Error(), "kaboom in the handler"), "call over /sse: %v, want the upstream's JSON-RPC error", err)
}
