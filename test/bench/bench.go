package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/purko-io/mcp-hub/internal/hubtest"
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
	// BaseHubBin, when set, is a second hub binary that benchmark 8 also
	// measures (one built before tracing, to show tracing off costs nothing).
	BaseHubBin string
	// NotifyCalls is how many calls the notification latency benchmark
	// makes per target: defaultNotifyCalls when 0, none when negative.
	NotifyCalls int

	// Only lists the benchmarks to run (1 tools/call, 2 reference server,
	// 3 tools/list at scale, 4 idle sessions, 5 fan-out, 6 start-up,
	// 7 floods, 8 tracing); all when empty.
	Only []int
	// ProfileDir, when set, receives CPU and allocation profiles of the hub
	// during a tools/call run at ProfileConcurrency sessions (benchmark 1);
	// Report.Profile.writeTops summarizes them.
	ProfileDir         string
	ProfileSeconds     int // CPU profile length; default the measuring time
	ProfileConcurrency int // default 16

	// Benchmark 2: sessions per scenario; default 1 and 16.
	RefConcurrency []int
	// Benchmarks 3-6: upstreams served by one process, tools each; default
	// 100 x 100.
	ScaleUpstreams, ScaleTools int
	// Benchmark 4: idle sessions to open; default 10,000.
	IdleSessions int
	// Benchmark 5: concurrent sessions; default 64.
	FanoutConcurrency int
	// Benchmark 6: starts per configuration; default 5.
	StartupRuns int
	// Benchmark 7: slowloris connections and abandoned initialize calls;
	// default 10,000 and 40,000; the hub's header timeout, default 10s.
	FloodConns, FloodInits int
	FloodHeaderTimeout     time.Duration
}

// selected reports whether benchmark n is to run.
func (c Config) selected(n int) bool { return len(c.Only) == 0 || slices.Contains(c.Only, n) }

// Benchmark numbers and names, for -only.
var benchNames = map[string]int{"call": 1, "reference": 2, "list": 3, "idle": 4, "fanout": 5, "startup": 6, "floods": 7, "tracing": 8}

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
	Ran         []int         `json:"benchmarksRun"`
	WallSeconds float64       `json:"wallSeconds"`
	Comparisons []Comparison  `json:"comparisons"`
	Autonomy    *AutonomyCost `json:"autonomy"`
	// Notifications is the latency of progress and log messages an
	// upstream sends during a call; nil when not measured.
	Notifications *NotifyLatency `json:"notifications,omitempty"`
	// Profile is the hub's CPU and allocation profile during tools/call
	// (benchmark 1 with -profile).
	Profile *ProfileCapture `json:"profile,omitempty"`
	// ListProfile is the hub's profile during a full tools/list of the
	// large catalog (benchmark 3 with -profile).
	ListProfile *ProfileCapture `json:"listProfile,omitempty"`
	// Reference: tools/call with the official reference server upstream.
	Reference *ReferenceBench `json:"reference,omitempty"`
	// ToolsList: tools/list of a large catalog.
	ToolsList *ListBench `json:"toolsList,omitempty"`
	// Idle: memory of idle downstream sessions.
	Idle *IdleBench `json:"idleSessions,omitempty"`
	// Fanout: tools/call spread over many upstreams.
	Fanout *FanoutBench `json:"fanout,omitempty"`
	// Startup: time from exec to a ready hub with a complete catalog.
	Startup *StartupBench `json:"startup,omitempty"`
	// Floods: what one caller's slowloris connections and abandoned
	// sessions make the hub hold.
	Floods *FloodBench `json:"floods,omitempty"`
	// Tracing: tools/call with tracing off and on.
	Tracing *TracingBench `json:"tracing,omitempty"`
}

// benchEnv is what every benchmark of one run shares.
type benchEnv struct {
	cfg      Config
	hubBin   string // the mcp-hub binary
	self     string // this binary, which serves the upstream roles
	tmp      string // scratch directory, removed after the run
	progress func(format string, args ...any)
}

// Run builds the hub, runs the selected benchmarks, each with its own
// upstream and hub processes, and stops them.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	began := time.Now()
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
		progress("building mcp-hub")
		if hubBin, err = hubtest.Build(ctx); err != nil {
			return nil, err
		}
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	env := &benchEnv{cfg: cfg, hubBin: hubBin, self: self, tmp: tmp, progress: progress}
	rep := &Report{Benchmark: "tools/call, fast mcp-go upstream, streamable HTTP", When: time.Now().UTC(),
		CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), Duration: cfg.Duration.String()}
	for n := 1; n <= 8; n++ {
		if cfg.selected(n) {
			rep.Ran = append(rep.Ran, n)
		}
	}
	if cfg.selected(1) {
		if err := env.runCalls(ctx, rep); err != nil {
			return nil, err
		}
	}
	if cfg.selected(2) {
		if rep.Reference, err = env.runReference(ctx); err != nil {
			return nil, fmt.Errorf("reference server benchmark: %w", err)
		}
	}
	if cfg.selected(3) || cfg.selected(4) || cfg.selected(5) || cfg.selected(6) {
		if err := env.runScale(ctx, rep); err != nil {
			return nil, err
		}
	}
	if cfg.selected(7) {
		progress("benchmark 7: floods")
		if rep.Floods, err = env.runFloods(ctx); err != nil {
			return nil, fmt.Errorf("flood benchmark: %w", err)
		}
	}
	if cfg.selected(8) {
		if rep.Tracing, err = env.runTracing(ctx); err != nil {
			return nil, fmt.Errorf("tracing benchmark: %w", err)
		}
	}
	rep.WallSeconds = time.Since(began).Seconds()
	return rep, nil
}

// runCalls is benchmark 1: tools/call directly, through a bare reverse
// proxy and through the hub, the autonomy cost, the notification latency,
// and the optional profile.
func (e *benchEnv) runCalls(ctx context.Context, rep *Report) error {
	cfg, progress := e.cfg, e.progress
	up, upURL, err := e.startRole(ctx, "upstream")
	if err != nil {
		return fmt.Errorf("start upstream: %w", err)
	}
	defer up.Kill()
	proxy, proxyURL, err := e.startRole(ctx, "proxy", proxyTargetEnv+"="+strings.TrimSuffix(upURL, "/mcp"))
	if err != nil {
		return fmt.Errorf("start reference proxy: %w", err)
	}
	defer proxy.Kill()
	var args []string
	pprofAddr := ""
	if cfg.ProfileDir != "" {
		if pprofAddr, err = hubtest.FreeAddr(); err != nil {
			return err
		}
		args = append(args, "--pprof", pprofAddr)
	}
	hub, err := hubtest.LaunchHub(ctx, hubtest.HubOptions{Bin: e.hubBin, LogLevel: "info", Args: args,
		Env: []string{`MCP_SERVERS=[{"name":"fast","url":"` + upURL + `"}]`}})
	if err != nil {
		return fmt.Errorf("start hub: %w", err)
	}
	defer hub.Kill()
	hubURL := hub.MCPURL()
	if err := waitForTool(ctx, hubURL, benchTool); err != nil {
		return err
	}

	for _, n := range cfg.Concurrency {
		progress("concurrency %d: direct", n)
		direct, err := measure(ctx, upURL, "direct", n, cfg)
		if err != nil {
			return err
		}
		progress("concurrency %d: through a bare reverse proxy", n)
		viaProxy, err := measure(ctx, proxyURL, "proxy", n, cfg)
		if err != nil {
			return err
		}
		progress("concurrency %d: through the hub", n)
		viaHub, err := measure(ctx, hubURL, "hub", n, cfg)
		if err != nil {
			return err
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
				return err
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

	// The profile has a run of its own, so that profiling does not touch
	// the figures above.
	if cfg.ProfileDir != "" {
		if rep.Profile, err = e.profileCalls(ctx, hubURL, pprofAddr); err != nil {
			return fmt.Errorf("profile: %w", err)
		}
		for _, c := range rep.Comparisons {
			if c.Concurrency == rep.Profile.Concurrency {
				rep.Profile.RunRatio = ratio(rep.Profile.Run.CallsPerSec, c.Hub.CallsPerSec)
			}
		}
	}

	// Last: setting a log level makes the hub's sessions with the upstream
	// carry log messages, which the tool-call figures above should not see.
	if calls := cfg.NotifyCalls; calls >= 0 {
		if calls == 0 {
			calls = defaultNotifyCalls
		}
		if rep.Notifications, err = runNotify(ctx, calls, upURL, proxyURL, hubURL, progress); err != nil {
			return err
		}
	}
	return nil
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
	fmt.Fprintf(w, "mcp-hub bench: %d CPUs, %s, %s per scenario\n", r.CPUs, r.GoVersion, r.Duration)
	if len(r.Comparisons) > 0 {
		r.writeCalls(w)
	}
	if r.Reference != nil {
		r.Reference.writeTable(w)
	}
	if r.ToolsList != nil {
		r.ToolsList.writeTable(w)
	}
	if r.Idle != nil {
		r.Idle.writeTable(w)
	}
	if r.Fanout != nil {
		r.Fanout.writeTable(w)
	}
	if r.Startup != nil {
		r.Startup.writeTable(w)
	}
	if r.Floods != nil {
		r.Floods.writeTable(w)
	}
	if r.Tracing != nil {
		r.Tracing.writeTable(w)
	}
	fmt.Fprintf(w, "\nbenchmarks run: %v in %.0f s\n", r.Ran, r.WallSeconds)
}

// writeCalls prints benchmark 1.
func (r *Report) writeCalls(w io.Writer) {
	fmt.Fprintf(w, "\n[1] %s\n", r.Benchmark)
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

// callFunc makes one call on the session it was opened for.
type callFunc func(ctx context.Context) error

// opener opens session i of a measurement and returns its call and its
// close.
type opener func(ctx context.Context, i int) (callFunc, func(), error)

// measure runs n sessions calling echo back to back on url.
func measure(ctx context.Context, url, target string, n int, cfg Config, headers ...string) (Result, error) {
	return measureHooked(ctx, url, target, n, cfg, nil, headers...)
}

// measureHooked is measure that calls onMeasure when the measuring (after
// the warm-up) begins.
func measureHooked(ctx context.Context, url, target string, n int, cfg Config, onMeasure func(), headers ...string) (Result, error) {
	httpClient := newHTTPClient(1024)
	defer httpClient.CloseIdleConnections()
	return measureCalls(ctx, target, n, cfg, onMeasure, func(ctx context.Context, _ int) (callFunc, func(), error) {
		c, err := dial(ctx, url, httpClient, headers...)
		if err != nil {
			return nil, nil, err
		}
		return toolCaller(c, benchTool, map[string]any{"text": "ping"}), func() { c.Close() }, nil
	})
}

func newHTTPClient(idle int) *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConns: idle, MaxIdleConnsPerHost: idle, IdleConnTimeout: time.Minute}}
}

// toolCaller calls tool with args on c; a result flagged as an error is a
// failed call.
func toolCaller(c *client.Client, tool string, args map[string]any) callFunc {
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	return func(ctx context.Context) error { return callTool(ctx, c, req) }
}

func callTool(ctx context.Context, c *client.Client, req mcp.CallToolRequest) error {
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return err
	}
	if res.IsError {
		return fmt.Errorf("%s: error result", req.Params.Name)
	}
	return nil
}

// measureCalls opens n sessions with open, then each makes calls back to
// back: for the warm-up, then for cfg.Duration, which is measured.
func measureCalls(ctx context.Context, target string, n int, cfg Config, onMeasure func(), open opener) (Result, error) {
	calls := make([]callFunc, n)
	var (
		mu      sync.Mutex
		openErr error
		closers []func()
		next    = make(chan int)
		wg      sync.WaitGroup
	)
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	for range min(n, 8) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				call, closeFn, err := open(ctx, i)
				mu.Lock()
				if err != nil && openErr == nil {
					openErr = fmt.Errorf("%s session %d: %w", target, i, err)
				}
				if err == nil {
					calls[i] = call
					closers = append(closers, closeFn)
				}
				mu.Unlock()
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if openErr != nil {
		return Result{}, openErr
	}
	var (
		all     []time.Duration
		errs    int
		started = time.Now()
		measure = started.Add(cfg.Warmup)
		end     = measure.Add(cfg.Duration)
	)
	if onMeasure != nil {
		t := time.AfterFunc(cfg.Warmup, onMeasure)
		defer t.Stop()
	}
	for _, call := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat := make([]time.Duration, 0, 4096)
			bad := 0
			for ctx.Err() == nil {
				t0 := time.Now()
				if t0.After(end) {
					break
				}
				err := call(ctx)
				d := time.Since(t0)
				if t0.Before(measure) {
					continue
				}
				if err != nil {
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
	res.P50Ms, res.P99Ms = pct(all, 50), pct(all, 99)
	return res, nil
}

// pct is the p-th percentile of sorted latencies, in ms; 0 for none.
func pct(sorted []time.Duration, p int) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return ms(sorted[min(len(sorted)-1, len(sorted)*p/100)])
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

// startRole runs this binary as role (with env added to its environment)
// and returns it with the URL it prints on its first line.
func (e *benchEnv) startRole(ctx context.Context, role string, env ...string) (*hubtest.Process, string, error) {
	cmd := exec.Command(e.self)
	cmd.Env = append(append(os.Environ(), roleEnv+"="+role), env...)
	p, err := hubtest.Launch(role, cmd)
	if err != nil {
		return nil, "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	line, err := p.WaitLine(ctx, func(l string) bool { return strings.Contains(l, "http://") })
	if err != nil {
		p.Kill()
		return nil, "", fmt.Errorf("%s printed no URL: %w\n%s", role, err, hubtest.Tail(p.Output()))
	}
	return p, strings.TrimSpace(line), nil
}
