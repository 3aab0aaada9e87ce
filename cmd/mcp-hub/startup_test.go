package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/purko-io/mcp-hub/internal/hubtest"
)

// stdioHub starts `mcp-hub stdio` with a config holding servers (name ->
// URL) and upstream.connectTimeout 2s, and returns the client once the
// transport is up (initialize not sent yet).
func stdioHub(t *testing.T, ctx context.Context, servers map[string]string) *client.Client {
	t.Helper()
	body := "upstream: {connectTimeout: 2s}\nbuiltins: {staticAnalysis: {enabled: false}}\nservers:\n"
	for name, url := range servers {
		body += "- name: " + name + "\n  url: " + url + "\n"
	}
	cfg := filepath.Join(t.TempDir(), "hub.yaml")
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(transport.NewStdio(hubBin, nil, "stdio", "--config", cfg, "--log-level", "warn"))
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func slowTool(name string) mcpserver.ServerTool {
	return mcpserver.ServerTool{Tool: mcp.NewTool(name), Handler: func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	}}
}

// A stdio client's first tools/list, sent right after initialize, already
// holds the tools of an upstream that took 1.5 s to answer its handshake:
// the hub answers nothing before every upstream was tried once.
func TestStdioFirstListHasSlowUpstreamTools(t *testing.T) {
	const delay = 1500 * time.Millisecond
	slow := hubtest.StartSlowUpstream(t, "slow", delay, slowTool("warm_up"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	began := time.Now()
	c := stdioHub(t, ctx, map[string]string{"slow": slow.URL})
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatalf("initialize over stdio: %v", err)
	}
	took := time.Since(began)
	res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list over stdio: %v", err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	if !slices.Contains(names, "warm_up") {
		t.Fatalf("the first tools/list lacks the slow upstream's tool: %v", names)
	}
	if took < delay {
		t.Fatalf("initialize answered after %s, before the upstream answered (%s)", took, delay)
	}
	t.Logf("initialize answered after %s (upstream handshake delayed %s)", took, delay)
}

// An upstream that never answers holds the stdio start-up no longer than
// upstream.connectTimeout (2s); the one that answers is listed.
func TestStdioStartupBoundedByConnectTimeout(t *testing.T) {
	upURL, _ := startUpstream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	began := time.Now()
	c := stdioHub(t, ctx, map[string]string{"up": upURL, "hung": hubtest.StartSilentUpstream(t)})
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatalf("initialize over stdio: %v", err)
	}
	took := time.Since(began)
	if took > 5*time.Second {
		t.Fatalf("a hung upstream held initialize for %s (connectTimeout 2s)", took)
	}
	res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list over stdio: %v", err)
	}
	if len(res.Tools) != 1 || res.Tools[0].Name != "echo" {
		t.Fatalf("first tools/list = %+v, want the connected upstream's echo", res.Tools)
	}
	t.Logf("initialize answered after %s with a hung upstream (connectTimeout 2s)", took)
}
