package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

const defaultDuration = 3 * time.Second

// Targets of the hub core issue, checked against the measured figures.
const (
	targetOverheadP50 = 0.15 // ms
	targetOverheadP99 = 1.0  // ms
	targetThroughput  = 0.8  // hub calls/s over direct calls/s
)

// Config is one bench run.
type Config struct {
	Duration    time.Duration
	Warmup      time.Duration
	Concurrency []int
	HubBin      string    // built when empty
	Progress    io.Writer // progress lines; nil for none
	// NotifyCalls is how many calls the notification latency benchmark
	// makes per target: defaultNotifyCalls when 0, none when negative.
	NotifyCalls int
}

// Result is one target at one concurrency.
type Result struct {
	Target      string  `json:"target"` // direct or hub
	Concurrency int     `json:"concurrency"`
	Calls       int     `json:"calls"`
	Errors      int     `json:"errors"`
	P50Ms       float64 `json:"p50Ms"`
	P99Ms       float64 `json:"p99Ms"`
	CallsPerSec float64 `json:"callsPerSec"`
}

// Comparison sets the hub against the direct baseline of the same run, and
// against a bare reverse proxy (net/http/httputil): the cost of one more
// HTTP hop on this machine, which no hub can go below.
type Comparison struct {
	Concurrency          int     `json:"concurrency"`
	Direct               Result  `json:"direct"`
	Proxy                Result  `json:"proxy"`
	Hub                  Result  `json:"hub"`
	OverheadP50Ms        float64 `json:"overheadP50Ms"`
	OverheadP99Ms        float64 `json:"overheadP99Ms"`
	ThroughputRatio      float64 `json:"throughputRatio"`      // hub / direct
	ProxyThroughputRatio float64 `json:"proxyThroughputRatio"` // proxy / direct
	BeyondProxyP50Ms     float64 `json:"beyondProxyP50Ms"`     // hub p50 - proxy p50
	MeetsTargets         bool    `json:"meetsTargets"`
}

// Report is the whole run.
type Report struct {
	Benchmark   string        `json:"benchmark"`
	When        time.Time     `json:"when"`
	CPUs        int           `json:"cpus"`
	GoVersion   string        `json:"goVersion"`
	Duration    string        `json:"durationPerScenario"`
	Comparisons []Comparison  `json:"comparisons"`
	Autonomy    *AutonomyCost `json:"autonomy"`
	// Notifications is the latency of progress and log messages an
	// upstream sends during a call; nil when not measured.
	Notifications *NotifyLatency `json:"notifications,omitempty"`
}

// Run starts the upstream and the hub as processes, measures every
// concurrency level directly and through the hub, and stops both.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.Warmup == 0 {
		cfg.Warmup = cfg.Duration / 6
	}
	progress := func(format string, args ...any) {
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, format+"\n", args...)
		}
	}
	tmp, err := os.MkdirTemp("", "mcp-hub-bench")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	hubBin := cfg.HubBin
	if hubBin == "" {
		hubBin = filepath.Join(tmp, "mcp-hub")
		progress("building mcp-hub")
		if out, err := exec.CommandContext(ctx, "go", "build", "-o", hubBin, "github.com/purko-io/mcp-hub/cmd/mcp-hub").CombinedOutput(); err != nil {
			return nil, fmt.Errorf("build mcp-hub: %v\n%s", err, out)
		}
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	upCmd := exec.Command(self)
	upCmd.Env = append(os.Environ(), roleEnv+"=upstream")
	up, err := startProcess(ctx, upCmd, "http://")
	if err != nil {
		return nil, fmt.Errorf("start upstream: %w", err)
	}
	defer up.stop()
	proxyCmd := exec.Command(self)
	proxyCmd.Env = append(os.Environ(), roleEnv+"=proxy", proxyTargetEnv+"="+strings.TrimSuffix(up.url, "/mcp"))
	proxy, err := startProcess(ctx, proxyCmd, "http://")
	if err != nil {
		return nil, fmt.Errorf("start reference proxy: %w", err)
	}
	defer proxy.stop()
	hubCmd := exec.Command(hubBin, "serve", "--listen", "127.0.0.1:0", "--log-level", "info")
	hubCmd.Env = append(os.Environ(), `MCP_SERVERS=[{"name":"fast","url":"`+up.url+`"}]`)
	hub, err := startProcess(ctx, hubCmd, "listening on ")
	if err != nil {
		return nil, fmt.Errorf("start hub: %w", err)
	}
	defer hub.stop()
	hubURL := strings.Fields(strings.SplitN(hub.url, "listening on ", 2)[1])[0]
	if err := waitForTool(ctx, hubURL, benchTool); err != nil {
		return nil, err
	}

	rep := &Report{Benchmark: "tools/call, fast mcp-go upstream, streamable HTTP", When: time.Now().UTC(),
		CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), Duration: cfg.Duration.String()}
	for _, n := range cfg.Concurrency {
		progress("concurrency %d: direct", n)
		direct, err := measure(ctx, up.url, "direct", n, cfg)
		if err != nil {
			return nil, err
		}
		progress("concurrency %d: through a bare reverse proxy", n)
		viaProxy, err := measure(ctx, proxy.url, "proxy", n, cfg)
		if err != nil {
			return nil, err
		}
		progress("concurrency %d: through the hub", n)
		viaHub, err := measure(ctx, hubURL, "hub", n, cfg)
		if err != nil {
			return nil, err
		}
		c := Comparison{Concurrency: n, Direct: direct, Proxy: viaProxy, Hub: viaHub,
			OverheadP50Ms: viaHub.P50Ms - direct.P50Ms, OverheadP99Ms: viaHub.P99Ms - direct.P99Ms,
			BeyondProxyP50Ms: viaHub.P50Ms - viaProxy.P50Ms}
		if direct.CallsPerSec > 0 {
			c.ThroughputRatio = viaHub.CallsPerSec / direct.CallsPerSec
			c.ProxyThroughputRatio = viaProxy.CallsPerSec / direct.CallsPerSec
		}
		c.MeetsTargets = c.OverheadP50Ms <= targetOverheadP50 && c.OverheadP99Ms <= targetOverheadP99 && c.ThroughputRatio >= targetThroughput
		rep.Comparisons = append(rep.Comparisons, c)
	}

	// The autonomy decision is made when the catalog changes, so a
	// restricted session should cost what a full one costs.
	n := cfg.Concurrency[len(cfg.Concurrency)/2]
	progress("concurrency %d: hub, full and restricted sessions", n)
	// Alternate the order (full, restricted, restricted, full) so neither
	// side always runs on a warmer or busier machine.
	var fulls, restricteds []Result
	for _, first := range []string{"full", "restricted"} {
		for _, level := range []string{first, map[string]string{"full": "restricted", "restricted": "full"}[first]} {
			res, err := measure(ctx, hubURL, level, n, cfg, "X-Autonomy-Level", level)
			if err != nil {
				return nil, err
			}
			if level == "full" {
				fulls = append(fulls, res)
			} else {
				restricteds = append(restricteds, res)
			}
		}
	}
	full, restricted := mean(fulls), mean(restricteds)
	a := &AutonomyCost{Concurrency: n, Full: full, Restricted: restricted, P50DeltaMs: restricted.P50Ms - full.P50Ms}
	for _, c := range rep.Comparisons {
		if c.Concurrency == n && c.OverheadP50Ms > 0 {
			a.ShareOfHubOverhead = a.P50DeltaMs / c.OverheadP50Ms
		}
	}
	if full.CallsPerSec > 0 {
		a.ThroughputRatio = restricted.CallsPerSec / full.CallsPerSec
	}
	rep.Autonomy = a

	// Last: setting a log level makes the hub's sessions with the upstream
	// carry log messages, which the tool-call figures above should not see.
	if calls := cfg.NotifyCalls; calls >= 0 {
		if calls == 0 {
			calls = defaultNotifyCalls
		}
		if rep.Notifications, err = runNotify(ctx, calls, up.url, proxy.url, hubURL, progress); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// mean averages runs of one target: latencies and rates are averaged, counts
// added.
func mean(rs []Result) Result {
	out := Result{Target: rs[0].Target, Concurrency: rs[0].Concurrency}
	for _, r := range rs {
		out.Calls += r.Calls
		out.Errors += r.Errors
		out.P50Ms += r.P50Ms / float64(len(rs))
		out.P99Ms += r.P99Ms / float64(len(rs))
		out.CallsPerSec += r.CallsPerSec / float64(len(rs))
	}
	return out
}

// AutonomyCost compares restricted and full sessions through the hub.
type AutonomyCost struct {
	Concurrency        int     `json:"concurrency"`
	Full               Result  `json:"full"`
	Restricted         Result  `json:"restricted"`
	P50DeltaMs         float64 `json:"p50DeltaMs"`         // restricted - full
	ShareOfHubOverhead float64 `json:"shareOfHubOverhead"` // P50DeltaMs / the hub's p50 overhead
	ThroughputRatio    float64 `json:"throughputRatio"`    // restricted / full
}

// WriteTable prints the report for people.
func (r *Report) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "%s (%d CPUs, %s, %s per scenario)\n\n", r.Benchmark, r.CPUs, r.GoVersion, r.Duration)
	fmt.Fprintf(w, "%-5s %-7s %9s %9s %11s %7s\n", "conc", "target", "p50 ms", "p99 ms", "calls/s", "errors")
	for _, c := range r.Comparisons {
		for _, res := range []Result{c.Direct, c.Proxy, c.Hub} {
			fmt.Fprintf(w, "%-5d %-7s %9.3f %9.3f %11.0f %7d\n", res.Concurrency, res.Target, res.P50Ms, res.P99Ms, res.CallsPerSec, res.Errors)
		}
	}
	fmt.Fprintf(w, "\nhub overhead (hub - direct, same run); targets: p50 <= %.2f ms, p99 <= %.1f ms, throughput >= %.1fx\n", targetOverheadP50, targetOverheadP99, targetThroughput)
	fmt.Fprintf(w, "%-5s %9s %9s %11s %6s   %17s %17s\n", "conc", "p50 +ms", "p99 +ms", "throughput", "met", "proxy throughput", "hub-proxy p50 ms")
	for _, c := range r.Comparisons {
		fmt.Fprintf(w, "%-5d %9.3f %9.3f %10.2fx %6v   %16.2fx %17.3f\n", c.Concurrency, c.OverheadP50Ms, c.OverheadP99Ms, c.ThroughputRatio, c.MeetsTargets, c.ProxyThroughputRatio, c.BeyondProxyP50Ms)
	}
	if a := r.Autonomy; a != nil {
		fmt.Fprintf(w, "\nautonomy at %d sessions: full p50 %.3f ms, restricted p50 %.3f ms (delta %+.3f ms = %+.1f%% of the hub's overhead; target < 5%%), restricted/full throughput %.2fx\n",
			a.Concurrency, a.Full.P50Ms, a.Restricted.P50Ms, a.P50DeltaMs, 100*a.ShareOfHubOverhead, a.ThroughputRatio)
	}
	if r.Notifications != nil {
		r.Notifications.writeTable(w)
	}
}

// measure runs n sessions calling echo back to back on url.
func measure(ctx context.Context, url, target string, n int, cfg Config, headers ...string) (Result, error) {
	httpClient := &http.Client{Transport: &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 1024, IdleConnTimeout: time.Minute}}
	defer httpClient.CloseIdleConnections()
	clients := make([]*client.Client, n)
	for i := range clients {
		c, err := dial(ctx, url, httpClient, headers...)
		if err != nil {
			return Result{}, fmt.Errorf("%s session %d: %w", target, i, err)
		}
		defer c.Close()
		clients[i] = c
	}
	var (
		mu      sync.Mutex
		all     []time.Duration
		errs    int
		wg      sync.WaitGroup
		started = time.Now()
		measure = started.Add(cfg.Warmup)
		end     = measure.Add(cfg.Duration)
	)
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat := make([]time.Duration, 0, 4096)
			bad := 0
			req := mcp.CallToolRequest{}
			req.Params.Name = benchTool
			req.Params.Arguments = map[string]any{"text": "ping"}
			for ctx.Err() == nil {
				t0 := time.Now()
				if t0.After(end) {
					break
				}
				res, err := c.CallTool(ctx, req)
				d := time.Since(t0)
				if t0.Before(measure) {
					continue
				}
				if err != nil || res.IsError {
					bad++
					continue
				}
				lat = append(lat, d)
			}
			mu.Lock()
			all = append(all, lat...)
			errs += bad
			mu.Unlock()
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return Result{}, ctx.Err()
	}
	slices.Sort(all)
	res := Result{Target: target, Concurrency: n, Calls: len(all), Errors: errs,
		CallsPerSec: float64(len(all)) / cfg.Duration.Seconds()}
	if len(all) > 0 {
		res.P50Ms = ms(all[len(all)/2])
		res.P99Ms = ms(all[min(len(all)-1, len(all)*99/100)])
	}
	return res, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// dial opens an initialized session; headers are name, value pairs sent on
// every request.
func dial(ctx context.Context, url string, hc *http.Client, headers ...string) (*client.Client, error) {
	h := map[string]string{}
	for i := 0; i+1 < len(headers); i += 2 {
		h[headers[i]] = headers[i+1]
	}
	tr, err := transport.NewStreamableHTTP(url, transport.WithHTTPBasicClient(hc), transport.WithHTTPHeaders(h))
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

// waitForTool waits until the hub serves tool.
func waitForTool(ctx context.Context, url, tool string) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		c, err := dial(ctx, url, http.DefaultClient)
		if err == nil {
			res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
			c.Close()
			if err == nil {
				for _, t := range res.Tools {
					if t.Name == tool {
						return nil
					}
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("the hub never served %s", tool)
}

// benchTool is the upstream's cheap tool; its name reads as read-only, so a
// restricted session may call it too.
const benchTool = "get_echo"

// roleEnv makes the bench binary (or test binary) serve the upstream or the
// reference proxy; proxyTargetEnv is the proxy's upstream.
const (
	roleEnv        = "MCPHUB_BENCH_ROLE"
	proxyTargetEnv = "MCPHUB_BENCH_PROXY_TARGET"
)

// upstreamHandler is the fast upstream: one cheap echo tool, and one that
// sends progress and log messages while it runs (notify.go).
func upstreamHandler() http.Handler {
	s := server.NewMCPServer("fast", "1", server.WithToolCapabilities(false), server.WithLogging())
	s.AddTool(mcp.NewTool(benchTool, mcp.WithString("text")), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(r.GetString("text", "")), nil
	})
	addNotifyTool(s)
	return server.NewStreamableHTTPServer(s)
}

// proc is a child process that announced its URL on its first stdout line
// matching marker.
type proc struct {
	cmd *exec.Cmd
	url string
}

func startProcess(ctx context.Context, cmd *exec.Cmd, marker string) (*proc, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.Contains(sc.Text(), marker) {
				select {
				case lines <- strings.TrimSpace(sc.Text()):
				default:
				}
			}
		}
	}()
	select {
	case p.url = <-lines:
		return p, nil
	case <-time.After(20 * time.Second):
	case <-ctx.Done():
	}
	p.stop()
	return nil, fmt.Errorf("%s printed no %q line", cmd.Path, marker)
}

func (p *proc) stop() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	_ = p.cmd.Wait()
}
