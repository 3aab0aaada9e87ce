package hub

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/purko-io/mcp-hub/internal/hubtest"
)

// Tests of what a registration may reach: the dial policy (never cloud
// metadata, loopback and private ranges as configured) and loops back to
// the hub. Every packet stays on loopback: a refused address is refused
// before its connect.

// countingUpstream serves an MCP server with an echo tool on a loopback
// port and counts the requests it gets.
func countingUpstream(t *testing.T) (base string, hits *atomic.Int32) {
	t.Helper()
	s := mcpserver.NewMCPServer("counted", "1")
	s.AddTool(mcp.NewTool("echo"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("echo"), nil
	})
	inner := mcpserver.NewStreamableHTTPServer(s)
	hits = new(atomic.Int32)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		inner.ServeHTTP(w, r)
	})}
	done := make(chan struct{})
	go func() { defer close(done); _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close(); <-done })
	return ln.Addr().String(), hits
}

// hubConfig writes a config with an admin token (env OPS_TOKEN, set here
// to ops-secret), admits anonymous callers (so a hub registered behind
// itself could list itself), and adds extra: indented, to upstream; else
// top-level.
func hubConfig(t *testing.T, extra string) string {
	t.Helper()
	t.Setenv("OPS_TOKEN", "ops-secret")
	path := filepath.Join(t.TempDir(), "hub.yaml")
	cfg := `servers: []
auth:
  tokens:
  - {name: ops, token: {env: OPS_TOKEN}, maxLevel: full, admin: true}
  anonymous: {enabled: true, maxLevel: full}
upstream:
  pingInterval: 200ms
  backoffMin: 100ms
  backoffMax: 500ms
` + extra
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// register posts a URL entry to h as the admin and fails t unless it is
// accepted.
func register(t *testing.T, h *servedHub, name, u string) {
	t.Helper()
	body := fmt.Sprintf(`{"name":%q,"url":%q}`, name, u)
	if status, answer := post(t, h.Base+"/api/mcp/server", "ops-secret", body); status != 200 {
		t.Fatalf("register %s at %s: %d %s", name, u, status, answer)
	}
}

// waitError waits until h lists server with an error holding want.
func waitError(t *testing.T, h *servedHub, server, want string) hubtest.ListedServer {
	t.Helper()
	return waitServer(t, h, server, "refused with "+want, func(s hubtest.ListedServer) bool {
		return s.Status == "error" && strings.Contains(s.Error, want)
	})
}

// TestRegisteredURLsOutsideTheDialPolicy registers, through POST
// /api/mcp/server, URLs at cloud metadata addresses and, on a hub whose
// upstream.dial allows neither loopback nor private addresses, at those:
// each is listed as refused by the dial policy, naming the address and
// why, and the loopback server behind the allowed-looking URLs never got
// a request.
func TestRegisteredURLsOutsideTheDialPolicy(t *testing.T) {
	upAddr, hits := countingUpstream(t)
	_, port, _ := net.SplitHostPort(upAddr)
	h := serveConfig(t, hubConfig(t, "  dial: {loopback: false, private: false}\n"))
	for _, tc := range []struct{ name, url, want string }{
		{"metadata", "http://169.254.169.254/mcp", "dial policy: 169.254.169.254 is link-local/cloud metadata: never dialled"},
		{"metadata-mapped", "http://[::ffff:169.254.169.254]/mcp", "dial policy: 169.254.169.254 is link-local/cloud metadata: never dialled"},
		{"metadata-v6", "http://[fd00:ec2::254]/latest", "dial policy: fd00:ec2::254 is link-local/cloud metadata: never dialled"},
		{"metadata-sse", "http://169.254.169.254/sse", "dial policy: 169.254.169.254 is link-local/cloud metadata: never dialled"},
		{"metadata-ws", "ws://169.254.169.254/ws", "dial policy: 169.254.169.254 is link-local/cloud metadata: never dialled"},
		{"unspecified", "http://0.0.0.0:" + port + "/mcp", "dial policy: 0.0.0.0 is an unspecified address: never dialled"},
		{"loopback", "http://" + upAddr + "/mcp", "dial policy: 127.0.0.1 is a loopback address: upstream.dial.loopback is false"},
		{"loopback-name", "http://localhost:" + port + "/mcp", "is a loopback address: upstream.dial.loopback is false"},
		{"private", "http://10.255.255.1/mcp", "dial policy: 10.255.255.1 is a private address: upstream.dial.private is false"},
	} {
		register(t, h, tc.name, tc.url)
		waitError(t, h, tc.name, tc.want)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the loopback upstream got %d requests", n)
	}
}

// TestMetadataRefusedOnADefaultHub: the laptop defaults allow loopback and
// private addresses, never metadata.
func TestMetadataRefusedOnADefaultHub(t *testing.T) {
	up := echoUpstream(t)
	h := serveConfig(t, hubConfig(t, ""))
	register(t, h, "metadata", "http://169.254.169.254/computeMetadata/v1/")
	waitError(t, h, "metadata", "dial policy: 169.254.169.254 is link-local/cloud metadata: never dialled")
	register(t, h, "local", up)
	waitConnected(t, h, "local")
}

// totalTools is the hub's listed tool count.
func totalTools(t *testing.T, h *servedHub) int {
	t.Helper()
	l, err := h.Listing("")
	if err != nil {
		t.Fatal(err)
	}
	return l.TotalTools
}

// stillTotal checks, for a while, that h's catalog keeps n tools.
func stillTotal(t *testing.T, h *servedHub, n int) {
	t.Helper()
	for range 5 {
		time.Sleep(200 * time.Millisecond)
		l, err := h.Listing("")
		if err != nil {
			t.Fatal(err)
		}
		if l.TotalTools != n {
			t.Fatalf("the catalog grew from %d to %d tools: %s", n, l.TotalTools, l.Summary())
		}
	}
}

// TestSelfRegistrationIsALoop registers the hub's own URLs, on every face
// and under another name for its host, through POST /api/mcp/server: each
// is refused as a registration loop, and the catalog does not grow.
func TestSelfRegistrationIsALoop(t *testing.T) {
	up := echoUpstream(t)
	h := serveConfig(t, hubConfig(t, ""))
	register(t, h, "up", up)
	waitConnected(t, h, "up")
	before := totalTools(t, h)
	u, _ := url.Parse(h.Base)
	for _, tc := range []struct{ name, url string }{
		{"self-mcp", h.Base + "/mcp"},
		{"self-sse", h.Base + "/sse"},
		{"self-ws", "ws://" + u.Host + "/ws"},
		{"self-by-name", "http://localhost:" + u.Port() + "/mcp"},
	} {
		register(t, h, tc.name, tc.url)
		sv := waitError(t, h, tc.name, "registration loop: ")
		if !strings.Contains(sv.Error, "answers as this hub") || sv.ToolCount != 0 {
			t.Fatalf("%s: %q with %d tools, want a direct loop and no tools", tc.name, sv.Error, sv.ToolCount)
		}
	}
	stillTotal(t, h, before)
}

// TestTwoHubLoop registers hub B on hub A, then A on B: the second closes
// a loop (A -> B -> A) and is refused by B, while A's registration of B,
// which is no loop by itself, stays connected; neither catalog grows.
// Then two replicas of one deployment (one instanceId): one registered on
// the other is the hub itself.
func TestTwoHubLoop(t *testing.T) {
	a := serveConfig(t, hubConfig(t, ""))
	b := serveConfig(t, hubConfig(t, ""))
	register(t, a, "b", b.MCPURL())
	waitConnected(t, a, "b")
	totalA, totalB := totalTools(t, a), totalTools(t, b)

	register(t, b, "a", a.MCPURL())
	sv := waitError(t, b, "a", "registration loop: ")
	if want := a.MCPURL() + " is a hub that reaches this hub"; !strings.Contains(sv.Error, want) {
		t.Fatalf("b's status of a: %q, want it to hold %q", sv.Error, want)
	}
	stillTotal(t, b, totalB)
	stillTotal(t, a, totalA)
	if l, err := a.Listing(""); err != nil || !l.Connected("b") {
		t.Fatalf("a's registration of b after b refused a: %v %v", l.Summary(), err)
	}

	replicas := hubConfig(t, "replicas: {instanceId: team/mcp-hub}\n")
	r1 := serveConfig(t, replicas)
	r2 := serveConfig(t, replicas)
	register(t, r1, "service", r2.MCPURL())
	sv = waitError(t, r1, "service", "registration loop: ")
	if !strings.Contains(sv.Error, "answers as this hub (instance team/mcp-hub) or a replica of it") {
		t.Fatalf("r1's status of r2: %q", sv.Error)
	}
}
