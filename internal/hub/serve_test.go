package hub

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/hubtest"
)

// The tests of this package run the hub as `mcp-hub serve` wires it (New,
// Serve), in the test's process: what the config file and the environment
// make of a hub, with no binary and no flags.

// servedHub is a hub served in the test's process.
type servedHub struct {
	*hubtest.Hub
	// Log is the hub's log (JSON lines, debug and up).
	Log *hubtest.Log
	// Stop stops the hub as SIGTERM stops mcp-hub serve and fails the
	// test unless it stops cleanly; the test's end stops it too.
	Stop func()
}

// serveConfig wires the hub the config file at path describes, with env
// ("K=V") in its environment, and serves it on a loopback port until the
// test ends. Its state directory (pins, name claims) is the test's, and
// no cluster or MCP_SERVERS of the machine reaches it (as hubtest's hubs);
// its log is shown if the test failed.
func serveConfig(t *testing.T, path string, env ...string) *servedHub {
	t.Helper()
	for _, k := range []string{"MCP_SERVERS", "KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT", "MCP_HUB_STATE_DIR"} {
		t.Setenv(k, "")
	}
	// New reads the state directory once: each hub has its own.
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	logs := hubtest.NewLog()
	h, err := New(t.Context(), cfg, Options{ConfigPath: path, Listen: ln.Addr().String(), Version: "v0.0.0-test"},
		zerolog.New(logs).Level(zerolog.DebugLevel))
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- h.Serve(ctx, ln) }()
	stop := sync.OnceFunc(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("the hub stopped with %v", err)
		}
		h.Close()
	})
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("log of the hub at %s:\n%s", ln.Addr(), hubtest.Tail(logs.String()))
		}
	})
	return &servedHub{Hub: &hubtest.Hub{Base: "http://" + ln.Addr().String()}, Log: logs, Stop: stop}
}

// echoTool answers echo:<text>.
func echoTool() mcpserver.ServerTool {
	return mcpserver.ServerTool{Tool: mcp.NewTool("echo", mcp.WithString("text")),
		Handler: func(_ context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("echo:" + r.GetString("text", "")), nil
		}}
}

// echoUpstream serves an MCP server with the echo tool on a loopback port
// and returns its URL.
func echoUpstream(t *testing.T) string {
	t.Helper()
	return hubtest.StartUpstream(t, "up", echoTool()).URL
}

// waitServer waits until h lists server as ok accepts it, and returns it
// as listed; what says what was awaited.
func waitServer(t *testing.T, h *servedHub, server, what string, ok func(hubtest.ListedServer) bool) hubtest.ListedServer {
	t.Helper()
	var sv hubtest.ListedServer
	hubtest.Eventually(t, 15*time.Second, 20*time.Millisecond, server+" "+what, func() error {
		l, err := h.Listing("")
		if err != nil {
			return err
		}
		s, found := l.Server(server)
		if !found || !ok(s) {
			return errors.New(l.Summary())
		}
		sv = s
		return nil
	})
	return sv
}

// waitConnected waits until h lists server connected.
func waitConnected(t *testing.T, h *servedHub, server string) hubtest.ListedServer {
	t.Helper()
	return waitServer(t, h, server, "connected", func(s hubtest.ListedServer) bool { return s.Status == "connected" })
}

// post sends body to the hub's url as JSON with token, and returns the
// status and answer.
func post(t *testing.T, url, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}
