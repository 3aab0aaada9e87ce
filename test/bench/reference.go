package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/hubtest"
)

// Benchmark 2: tools/call of the official reference server's echo tool
// (@modelcontextprotocol/server-everything, a Node.js server, installed by
// `make test-deps`), over the two upstream transports the hub speaks to it:
// Streamable HTTP and legacy HTTP+SSE. The baseline is an mcp-go client
// calling the reference server directly over the same transport; the hub is
// always called over Streamable HTTP.

// RefComparison is the hub against the direct baseline for one upstream
// transport at one concurrency.
type RefComparison struct {
	Transport       string  `json:"transport"` // streamable-http or sse
	Concurrency     int     `json:"concurrency"`
	Direct          Result  `json:"direct"`
	Hub             Result  `json:"hub"`
	OverheadP50Ms   float64 `json:"overheadP50Ms"`
	OverheadP99Ms   float64 `json:"overheadP99Ms"`
	ThroughputRatio float64 `json:"throughputRatio"` // hub / direct
}

// ReferenceBench is benchmark 2.
type ReferenceBench struct {
	Server      string          `json:"server"` // package@version
	Tool        string          `json:"tool"`
	Comparisons []RefComparison `json:"comparisons"`
}

// startEverything starts the reference server in mode (streamableHttp or
// sse) on a free port and waits until it accepts connections. It binds
// every interface; the port is chosen on loopback.
func startEverything(ctx context.Context, script, mode string) (*hubtest.Process, int, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	return hubtest.LaunchServer(ctx, "reference server ("+mode+")", 0, func(port int) *exec.Cmd {
		cmd := hubtest.EverythingCommand(script, mode, port)
		cmd.Dir = filepath.Dir(script)
		return cmd
	})
}

// packageVersion reads the version of the npm package whose entry point
// is script (dist/index.js).
func packageVersion(script string) string {
	data, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(script)), "package.json"))
	if err != nil {
		return "?"
	}
	var p struct{ Name, Version string }
	_ = json.Unmarshal(data, &p)
	return p.Name + "@" + p.Version
}

func (e *benchEnv) runReference(ctx context.Context) (*ReferenceBench, error) {
	script, err := hubtest.EverythingScript()
	if err != nil {
		return nil, err
	}
	e.progress("reference server: starting it (streamable HTTP and SSE) and a hub in front of both")
	httpUp, httpPort, err := startEverything(ctx, script, "streamableHttp")
	if err != nil {
		return nil, err
	}
	defer httpUp.Kill()
	sseUp, ssePort, err := startEverything(ctx, script, "sse")
	if err != nil {
		return nil, err
	}
	defer sseUp.Kill()
	httpURL := fmt.Sprintf("http://127.0.0.1:%d/mcp", httpPort)
	sseURL := fmt.Sprintf("http://127.0.0.1:%d/sse", ssePort)
	cfgPath, err := e.hubConfig("reference.yaml", []map[string]any{
		{"name": "ref-http", "url": httpURL, "transport": "streamable-http"},
		{"name": "ref-sse", "url": sseURL, "transport": "sse"},
	})
	if err != nil {
		return nil, err
	}
	hub, err := e.startHub(ctx, "--config", cfgPath)
	if err != nil {
		return nil, err
	}
	defer hub.Stop(5 * time.Second)
	base := hub.Base
	listing, err := waitCatalog(ctx, base, []string{"ref-http", "ref-sse"}, 30*time.Second)
	if err != nil {
		return nil, err
	}
	names := published(listing)
	out := &ReferenceBench{Server: packageVersion(script), Tool: "echo"}
	args := map[string]any{"message": "ping"}
	levels := e.cfg.RefConcurrency
	if len(levels) == 0 {
		levels = []int{1, 16}
	}
	for _, tr := range []struct{ name, server, url string }{
		{"streamable-http", "ref-http", httpURL},
		{"sse", "ref-sse", sseURL},
	} {
		published, ok := names[[2]string{tr.server, "echo"}]
		if !ok {
			return nil, fmt.Errorf("the hub does not list %s's echo tool", tr.server)
		}
		for _, n := range levels {
			hc := newHTTPClient(1024)
			e.progress("reference server over %s, %d sessions: direct", tr.name, n)
			direct, err := measureCalls(ctx, "direct", n, e.cfg, window{}, func(ctx context.Context, _ int) (callFunc, func(), error) {
				c, err := dialTransport(ctx, tr.name, tr.url, hc)
				if err != nil {
					return nil, nil, err
				}
				return toolCaller(c, "echo", args), func() { c.Close() }, nil
			})
			if err != nil {
				return nil, err
			}
			e.progress("reference server over %s, %d sessions: through the hub", tr.name, n)
			viaHub, err := measureCalls(ctx, "hub", n, e.cfg, window{}, func(ctx context.Context, _ int) (callFunc, func(), error) {
				c, err := dial(ctx, base+"/mcp", hc)
				if err != nil {
					return nil, nil, err
				}
				return toolCaller(c, published, args), func() { c.Close() }, nil
			})
			hc.CloseIdleConnections()
			if err != nil {
				return nil, err
			}
			out.Comparisons = append(out.Comparisons, RefComparison{Transport: tr.name, Concurrency: n, Direct: direct, Hub: viaHub,
				OverheadP50Ms: viaHub.P50Ms - direct.P50Ms, OverheadP99Ms: viaHub.P99Ms - direct.P99Ms,
				ThroughputRatio: ratio(viaHub.CallsPerSec, direct.CallsPerSec)})
		}
	}
	return out, nil
}

// dialTransport opens an initialized mcp-go client session over
// streamable-http or sse (url is then the /sse endpoint).
func dialTransport(ctx context.Context, kind, url string, hc *http.Client) (*client.Client, error) {
	if kind != "sse" {
		return dial(ctx, url, hc)
	}
	tr, err := transport.NewSSE(url, transport.WithHTTPClient(hc))
	if err != nil {
		return nil, err
	}
	c := client.NewClient(tr)
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	ictx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := c.Initialize(ictx, mcp.InitializeRequest{}); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (r *ReferenceBench) writeTable(w io.Writer) {
	fmt.Fprintf(w, "\n[2] tools/call %s through the hub vs directly, %s (hub called over Streamable HTTP)\n", r.Tool, r.Server)
	fmt.Fprintf(w, "%-16s %-5s %-7s %9s %9s %11s %7s\n", "upstream", "conc", "target", "p50 ms", "p99 ms", "calls/s", "errors")
	for _, c := range r.Comparisons {
		for _, res := range []Result{c.Direct, c.Hub} {
			fmt.Fprintf(w, "%-16s %-5d %-7s %9.3f %9.3f %11.0f %7d\n", c.Transport, res.Concurrency, res.Target, res.P50Ms, res.P99Ms, res.CallsPerSec, res.Errors)
		}
	}
	fmt.Fprintf(w, "%-16s %-5s %9s %9s %11s\n", "upstream", "conc", "p50 +ms", "p99 +ms", "throughput")
	for _, c := range r.Comparisons {
		fmt.Fprintf(w, "%-16s %-5d %9.3f %9.3f %10.2fx\n", c.Transport, c.Concurrency, c.OverheadP50Ms, c.OverheadP99Ms, c.ThroughputRatio)
	}
}
