package server

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/hubtest"
	"github.com/purko-io/mcp-hub/internal/registry"
)

// /readyz answers 503 until every configured upstream was tried once: a
// slow one until it connected, a hung one until upstream.connectTimeout
// (2s in the fixture); then 200.
func TestReadyzWaitsUntilEveryUpstreamWasTried(t *testing.T) {
	const delay = time.Second
	tool := mcpserver.ServerTool{Tool: mcp.NewTool("late"), Handler: func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	}}
	slow := hubtest.StartSlowUpstream(t, "slow", delay, tool)
	began := time.Now()
	h := newTestHub(t, []config.ServerSpec{
		{Name: "slow", URL: slow.URL, Transport: config.TransportStreamableHTTP},
		{Name: "hung", URL: hubtest.StartSilentUpstream(t), Transport: config.TransportStreamableHTTP},
	})
	readyz := func() (int, string) {
		resp, err := http.Get(h.url("/readyz"))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	code, body := readyz()
	mustf(t, code == http.StatusServiceUnavailable, "/readyz at start = %d %q, want 503", code, body)
	waitFor(t, "the slow upstream to connect", func() bool { return h.status("slow").State == registry.StateConnected })
	code, body = readyz()
	mustf(t, code == http.StatusServiceUnavailable && strings.Contains(body, "upstreams not all tried"),
		"/readyz with the hung upstream still in its first attempt = %d %q, want 503", code, body)
	waitFor(t, "/readyz 200", func() bool { code, _ := readyz(); return code == http.StatusOK })
	took := time.Since(began)
	mustf(t, took >= 2*time.Second-100*time.Millisecond && took < 5*time.Second, "/readyz 200 after %s, want about connectTimeout (2s)", took)
	t.Logf("/readyz 200 after %s", took)
}
