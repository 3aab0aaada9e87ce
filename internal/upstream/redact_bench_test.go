package upstream

import (
	"bytes"
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
)

// BenchmarkCallResult100KB is one tools/call on the direct path to a
// loopback upstream whose tool answers 100 KB of text: without
// credentials (nothing to redact: the unredacted pass), with a bearer
// token and a static header that the result does not hold, and with the
// token echoed in the middle of the result.
func BenchmarkCallResult100KB(b *testing.B) {
	text := strings.Repeat("The quick brown fox jumps over the lazy dog; lorem ipsum dolor sit amet. ", 1400)
	s := mcpserver.NewMCPServer("big", "1", mcpserver.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("big", mcp.WithBoolean("echo")), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if r.GetBool("echo", false) {
			return mcp.NewToolResultText(text[:len(text)/2] + r.Header.Get("Authorization") + text[len(text)/2:]), nil
		}
		return mcp.NewToolResultText(text), nil
	})
	ts := httptest.NewServer(mcpserver.NewStreamableHTTPServer(s))
	b.Cleanup(ts.Close)
	plain := config.ServerSpec{Name: "big", URL: ts.URL + "/mcp", Transport: config.TransportStreamableHTTP}
	secret := plain
	secret.BearerToken = config.Secret("s3cr3t-bearer-T0KEN-0123456789abcdef")
	secret.Headers = map[string]string{"X-Api-Key": "k3y-in-a-header-42"}
	for _, bc := range []struct {
		name string
		spec config.ServerSpec
		args string
	}{
		{"no-credentials", plain, `{}`},
		{"credentials-absent", secret, `{}`},
		{"credentials-echoed", secret, `{"echo":true}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := New(bc.spec, Options{ConnectTimeout: 5 * time.Second, Timeout: 10 * time.Second, BackoffMin: time.Hour, BackoffMax: time.Hour},
				zerolog.Nop(), func() {})
			c.Start(context.Background())
			defer c.Stop()
			for deadline := time.Now().Add(10 * time.Second); c.Status().State != StateConnected; time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					b.Fatalf("not connected: %+v", c.Status())
				}
			}
			call := jsonrpc.ToolCall{Name: "big", Arguments: []byte(bc.args)}
			b.ReportAllocs()
			for b.Loop() {
				res, err := c.Call(context.Background(), call)
				if err != nil || len(res) < 100_000 || bytes.Contains(res, []byte("s3cr3t")) {
					b.Fatalf("call: %v (%d bytes)", err, len(res))
				}
			}
		})
	}
}
