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

// Targets of benchmark 1 (issue 22, "at the floor"), each a ratio or a
// difference against the bare reverse proxy measured in the same rounds.
const (
	targetHubVsProxy     = 1.0  // hub calls/s over proxy calls/s, at every level above one session
	targetSeqP50OverMs   = 0.05 // hub p50 minus proxy p50 at one session, ms
	targetUpstreamCPUVsP = 1.1  // upstream CPU per call behind the hub over behind the proxy
	// minRounds is the fewest interleaved rounds whose medians are judged.
	minRounds     = 3
	defaultRounds = 3
)

// Config is one bench run.
type Config struct {
	Duration    time.Duration
	Warmup      time.Duration
	Concurrency []int
	// Rounds is how many interleaved rounds benchmarks 1, 3 and 10 run (every
	// target once per round, in a rotated order); defaultRounds when 0.
	// Fewer than minRounds are measured but not judged.
	Rounds   int
	HubBin   string    // built when empty
	Progress io.Writer // progress lines; nil for none
	// BaseHubBin, when set, is a second hub binary that benchmark 8 also
	// measures (one built before tracing, to show tracing off costs nothing).
	BaseHubBin string
	// NotifyCalls is how many calls the notification latency benchmark
	// makes per target: defaultNotifyCalls when 0, none when negative.
	NotifyCalls int

	// Only lists the benchmarks to run (1 tools/call, 2 reference server,
	// 3 tools/list at scale, 4 idle sessions, 5 fan-out, 6 start-up,
	// 7 floods, 8 tracing, 9 binary, 10 guardrails); all when empty.
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

// rounds is Rounds or its default.
func (c Config) rounds() int {
	if c.Rounds > 0 {
		return c.Rounds
	}
	return defaultRounds
}

// selected reports whether benchmark n is to run.
func (c Config) selected(n int) bool { return len(c.Only) == 0 || slices.Contains(c.Only, n) }

// Benchmark numbers and names, for -only.
var benchNames = map[string]int{"call": 1, "reference": 2, "list": 3, "idle": 4, "fanout": 5, "startup": 6, "floods": 7, "tracing": 8, "binary": 9, "guardrails": 10}

// Result is one target at one concurrency.
type Result struct {
	Target      string  `json:"target"` // direct or hub
	Concurrency int     `json:"concurrency"`
	Calls       int     `json:"calls"`
	Errors      int     `json:"errors"`
	P50Ms       float64 `json:"p50Ms"`
	P99Ms       float64 `json:"p99Ms"`
	CallsPerSec float64 `json:"callsPerSec"`
	// CPU per measured call in µs, from /proc (cpu.go): the target's own
	// process (the proxy's, the hub's; 0 directly), and the upstream's
	// behind it. Measured by benchmark 1 only.
	CPUUsPerCall         float64 `json:"cpuUsPerCall,omitempty"`
	UpstreamCPUUsPerCall float64 `json:"upstreamCpuUsPerCall,omitempty"`
}

// CallRound is one round of benchmark 1 at one concurrency: each target
// measured once, in Order, and the hub set against the proxy of the same
// round.
type CallRound struct {
	Order              []string `json:"order"`
	Direct             Result   `json:"direct"`
	Proxy              Result   `json:"proxy"`
	Hub                Result   `json:"hub"`
	HubVsProxy         float64  `json:"hubVsProxy"`         // hub calls/s / proxy calls/s
	HubMinusProxyP50Ms float64  `json:"hubMinusProxyP50Ms"` // hub p50 - proxy p50
	UpstreamCPURatio   float64  `json:"upstreamCpuRatio"`   // upstream CPU per call behind the hub / behind the proxy
}

// set puts res in its target's place.
func (r *CallRound) set(res Result) {
	switch res.Target {
	case "direct":
		r.Direct = res
	case "proxy":
		r.Proxy = res
	default:
		r.Hub = res
	}
}

// Comparison sets the hub against the direct baseline and against a bare
// reverse proxy (net/http/httputil): the cost of one more HTTP hop on this
// machine, which no hub can go below. The three are measured in
// interleaved rounds (Rounds); Direct, Proxy and Hub are the medians of
// the rounds' figures, field by field (errors added up), and the ratios
// the medians of the rounds' ratios, so that a drift of the machine's load
// during the run falls on all three.
type Comparison struct {
	Concurrency          int         `json:"concurrency"`
	Rounds               []CallRound `json:"rounds"`
	Direct               Result      `json:"direct"`
	Proxy                Result      `json:"proxy"`
	Hub                  Result      `json:"hub"`
	OverheadP50Ms        float64     `json:"overheadP50Ms"`        // hub p50 - direct p50, medians
	OverheadP99Ms        float64     `json:"overheadP99Ms"`        // hub p99 - direct p99, medians
	ThroughputRatio      float64     `json:"throughputRatio"`      // hub / direct, medians
	ProxyThroughputRatio float64     `json:"proxyThroughputRatio"` // proxy / direct, medians
	HubVsProxy           float64     `json:"hubVsProxy"`           // median of the rounds' hub / proxy calls/s
	BeyondProxyP50Ms     float64     `json:"beyondProxyP50Ms"`     // median of the rounds' hub p50 - proxy p50
	UpstreamCPURatio     float64     `json:"upstreamCpuRatio"`     // median of the rounds' upstream CPU ratios
}

// summarize fills the medians and ratios from the rounds.
func (c *Comparison) summarize() {
	var direct, proxy, hub []Result
	var vsProxy, beyond, cpu []float64
	for _, r := range c.Rounds {
		direct, proxy, hub = append(direct, r.Direct), append(proxy, r.Proxy), append(hub, r.Hub)
		vsProxy, beyond, cpu = append(vsProxy, r.HubVsProxy), append(beyond, r.HubMinusProxyP50Ms), append(cpu, r.UpstreamCPURatio)
	}
	c.Direct, c.Proxy, c.Hub = medianResult(direct), medianResult(proxy), medianResult(hub)
	c.OverheadP50Ms, c.OverheadP99Ms = c.Hub.P50Ms-c.Direct.P50Ms, c.Hub.P99Ms-c.Direct.P99Ms
	c.ThroughputRatio = ratio(c.Hub.CallsPerSec, c.Direct.CallsPerSec)
	c.ProxyThroughputRatio = ratio(c.Proxy.CallsPerSec, c.Direct.CallsPerSec)
	c.HubVsProxy, c.BeyondProxyP50Ms, c.UpstreamCPURatio = median(vsProxy), median(beyond), median(cpu)
}

// medianResult is the median of runs of one target, field by field; the
// errors are added up, so that none hides.
func medianResult(rs []Result) Result {
	if len(rs) == 0 {
		return Result{}
	}
	out := Result{Target: rs[0].Target, Concurrency: rs[0].Concurrency}
	for _, r := range rs {
		out.Errors += r.Errors
	}
	out.Calls = int(medianBy(rs, func(r Result) float64 { return float64(r.Calls) }))
	out.P50Ms = medianBy(rs, func(r Result) float64 { return r.P50Ms })
	out.P99Ms = medianBy(rs, func(r Result) float64 { return r.P99Ms })
	out.CallsPerSec = medianBy(rs, func(r Result) float64 { return r.CallsPerSec })
	out.CPUUsPerCall = medianBy(rs, func(r Result) float64 { return r.CPUUsPerCall })
	out.UpstreamCPUUsPerCall = medianBy(rs, func(r Result) float64 { return r.UpstreamCPUUsPerCall })
	return out
}

// Report is the whole run.
type Report struct {
	Benchmark string    `json:"benchmark"`
	When      time.Time `json:"when"`
	CPUs      int       `json:"cpus"`
	GoVersion string    `json:"goVersion"`
	Duration  string    `json:"durationPerScenario"`
	Rounds    int       `json:"rounds"` // interleaved rounds of benchmarks 1, 3 and 10
	// LoadAvgStart and LoadAvgEnd are /proc/loadavg's 1, 5 and 15 minute
	// load averages when the run began and ended: how busy the machine
	// was besides the bench.
	LoadAvgStart string  `json:"loadAvgStart"`
	LoadAvgEnd   string  `json:"loadAvgEnd"`
	Ran          []int   `json:"benchmarksRun"`
	WallSeconds  float64 `json:"wallSeconds"`
	// Verdicts are the targets checked against the run's figures.
	Verdicts    []Verdict     `json:"verdicts"`
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
	// Binary: the release binary's size and the packages it is built of.
	Binary *BinaryBench `json:"binary,omitempty"`
	// Guardrails: tools/call of a 100 KB result with the content filters
	// off and on.
	Guardrails *GuardrailsBench `json:"guardrails,omitempty"`
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
		CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), Duration: cfg.Duration.String(), Rounds: cfg.rounds(), LoadAvgStart: loadAvg()}
	for n := 1; n <= len(benchNames); n++ {
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
	if cfg.selected(9) {
		if rep.Binary, err = env.runBinary(ctx); err != nil {
			return nil, fmt.Errorf("binary benchmark: %w", err)
		}
	}
	if cfg.selected(10) {
		if rep.Guardrails, err = env.runGuardrails(ctx); err != nil {
			return nil, fmt.Errorf("guardrails benchmark: %w", err)
		}
	}
	rep.judge()
	rep.LoadAvgEnd = loadAvg()
	rep.WallSeconds = time.Since(began).Seconds()
	return rep, nil
}

// judge checks the targets of the benchmarks that ran.
func (r *Report) judge() {
	r.Verdicts = append(r.Verdicts, callVerdicts(r.Comparisons, r.Rounds)...)
	if r.ToolsList != nil {
		r.Verdicts = append(r.Verdicts, r.ToolsList.verdicts(r.Rounds)...)
	}
	if r.Idle != nil {
		r.Verdicts = append(r.Verdicts, r.Idle.verdicts()...)
	}
	if r.Binary != nil {
		r.Verdicts = append(r.Verdicts, r.Binary.verdicts()...)
	}
	if r.Guardrails != nil {
		r.Verdicts = append(r.Verdicts, r.Guardrails.verdicts(r.Rounds)...)
	}
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

	targets := []callTarget{{"direct", upURL, 0}, {"proxy", proxyURL, proxy.PID()}, {"hub", hubURL, hub.PID()}}
	rounds := cfg.rounds()
	for _, n := range cfg.Concurrency {
		c := Comparison{Concurrency: n}
		for r := range rounds {
			var round CallRound
			// Each round starts with the next target, so that none always
			// runs first (on a cooler machine) or right after another.
			for i := range targets {
				t := targets[(i+r)%len(targets)]
				progress("concurrency %d, round %d of %d: %s", n, r+1, rounds, t.name)
				res, err := measureTarget(ctx, t, up.PID(), n, cfg)
				if err != nil {
					return err
				}
				round.Order = append(round.Order, t.name)
				round.set(res)
			}
			round.HubVsProxy = ratio(round.Hub.CallsPerSec, round.Proxy.CallsPerSec)
			round.HubMinusProxyP50Ms = round.Hub.P50Ms - round.Proxy.P50Ms
			round.UpstreamCPURatio = ratio(round.Hub.UpstreamCPUUsPerCall, round.Proxy.UpstreamCPUUsPerCall)
			c.Rounds = append(c.Rounds, round)
		}
		c.summarize()
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

// callTarget is one target of benchmark 1: its URL, and the process that
// serves it other than the upstream (0: none, the upstream is called
// directly).
type callTarget struct {
	name, url string
	pid       int
}

// measureTarget measures calls to t at n sessions, and the CPU per call of
// the upstream (upstreamPID) and of t's own process.
func measureTarget(ctx context.Context, t callTarget, upstreamPID, n int, cfg Config) (Result, error) {
	pids := []int{upstreamPID}
	if t.pid != 0 {
		pids = append(pids, t.pid)
	}
	m := newCPUMeter(pids...)
	res, err := measureHooked(ctx, t.url, t.name, n, cfg, meterWindow(m))
	if err != nil {
		return res, err
	}
	if res.UpstreamCPUUsPerCall, err = m.usPer(0, res.Calls); err != nil {
		return res, fmt.Errorf("%s at %d sessions: upstream %w", t.name, n, err)
	}
	if t.pid != 0 {
		if res.CPUUsPerCall, err = m.usPer(1, res.Calls); err != nil {
			return res, fmt.Errorf("%s at %d sessions: %w", t.name, n, err)
		}
	}
	return res, nil
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
	fmt.Fprintf(w, "mcp-hub bench: %d CPUs, %s, %s per scenario, %d rounds, load average at the start %s\n", r.CPUs, r.GoVersion, r.Duration, r.Rounds, r.LoadAvgStart)
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
	if r.Binary != nil {
		r.Binary.writeTable(w)
	}
	if r.Guardrails != nil {
		r.Guardrails.writeTable(w)
	}
	r.writeVerdicts(w)
	fmt.Fprintf(w, "\nbenchmarks run: %v in %.0f s; load average %s at the start, %s at the end\n", r.Ran, r.WallSeconds, r.LoadAvgStart, r.LoadAvgEnd)
}

// writeCalls prints benchmark 1.
func (r *Report) writeCalls(w io.Writer) {
	fmt.Fprintf(w, "\n[1] %s; direct, a bare reverse proxy and the hub in %d interleaved rounds, medians\n", r.Benchmark, r.Rounds)
	fmt.Fprintf(w, "%-5s %-7s %9s %9s %11s %7s %10s %13s\n", "conc", "target", "p50 ms", "p99 ms", "calls/s", "errors", "CPU µs/call", "upstream µs/call")
	for _, c := range r.Comparisons {
		for _, res := range []Result{c.Direct, c.Proxy, c.Hub} {
			fmt.Fprintf(w, "%-5d %-7s %9.3f %9.3f %11.0f %7d %10.0f %13.0f\n", res.Concurrency, res.Target, res.P50Ms, res.P99Ms, res.CallsPerSec, res.Errors, res.CPUUsPerCall, res.UpstreamCPUUsPerCall)
		}
	}
	fmt.Fprintf(w, "\nper round (in the order run): hub/proxy calls/s, hub-proxy p50 ms, upstream CPU per call behind the hub/behind the proxy\n")
	for _, c := range r.Comparisons {
		for i, rd := range c.Rounds {
			fmt.Fprintf(w, "%-5d round %d (%s): %.2fx, %+.3f ms, %.2fx\n", c.Concurrency, i+1, strings.Join(rd.Order, ", "), rd.HubVsProxy, rd.HubMinusProxyP50Ms, rd.UpstreamCPURatio)
		}
	}
	fmt.Fprintf(w, "\nmedians of the rounds\n")
	fmt.Fprintf(w, "%-5s %11s %13s %11s %11s %13s %12s\n", "conc", "hub/proxy", "hub-proxy p50", "up CPU h/p", "hub/direct", "proxy/direct", "hub-direct p50")
	for _, c := range r.Comparisons {
		fmt.Fprintf(w, "%-5d %10.2fx %10.3f ms %10.2fx %10.2fx %12.2fx %11.3f ms\n", c.Concurrency, c.HubVsProxy, c.BeyondProxyP50Ms, c.UpstreamCPURatio, c.ThroughputRatio, c.ProxyThroughputRatio, c.OverheadP50Ms)
	}
	if a := r.Autonomy; a != nil {
		fmt.Fprintf(w, "\nautonomy at %d sessions: full p50 %.3f ms, restricted p50 %.3f ms (delta %+.3f ms = %+.1f%% of the hub's overhead; target < 5%%), restricted/full throughput %.2fx\n",
			a.Concurrency, a.Full.P50Ms, a.Restricted.P50Ms, a.P50DeltaMs, 100*a.ShareOfHubOverhead, a.ThroughputRatio)
	}
	if r.Notifications != nil {
		r.Notifications.writeTable(w)
	}
}

// callVerdicts judges benchmark 1 against the proxy of the same rounds:
// throughput at every level above one session, the sequential p50, and
// the upstream's CPU per call at every level.
func callVerdicts(cs []Comparison, rounds int) []Verdict {
	var out []Verdict
	for _, c := range cs {
		if c.Concurrency > 1 {
			out = append(out, judge("call", fmt.Sprintf("hub/proxy calls/s at %d sessions", c.Concurrency), c.HubVsProxy, ">=", targetHubVsProxy, "x"))
		} else {
			out = append(out, judge("call", "hub p50 - proxy p50, one session", c.BeyondProxyP50Ms, "<=", targetSeqP50OverMs, " ms"))
		}
	}
	for _, c := range cs {
		out = append(out, judge("call", fmt.Sprintf("upstream CPU per call behind the hub / behind the proxy at %d sessions", c.Concurrency), c.UpstreamCPURatio, "<=", targetUpstreamCPUVsP, "x"))
	}
	if rounds < minRounds {
		for i := range out {
			out[i] = out[i].unjudged(fmt.Sprintf("%d rounds, fewer than %d", rounds, minRounds))
		}
	}
	return out
}

// callFunc makes one call on the session it was opened for.
type callFunc func(ctx context.Context) error

// opener opens session i of a measurement and returns its call and its
// close.
type opener func(ctx context.Context, i int) (callFunc, func(), error)

// measure runs n sessions calling echo back to back on url.
func measure(ctx context.Context, url, target string, n int, cfg Config, headers ...string) (Result, error) {
	return measureHooked(ctx, url, target, n, cfg, window{}, headers...)
}

// measureHooked is measure with w run at the edges of the measured time.
func measureHooked(ctx context.Context, url, target string, n int, cfg Config, w window, headers ...string) (Result, error) {
	httpClient := newHTTPClient(1024)
	defer httpClient.CloseIdleConnections()
	return measureCalls(ctx, target, n, cfg, w, func(ctx context.Context, _ int) (callFunc, func(), error) {
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
// back: for the warm-up, then for cfg.Duration, which is measured; w runs at
// the edges of the measured time.
func measureCalls(ctx context.Context, target string, n int, cfg Config, w window, open opener) (Result, error) {
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
	if w.begin != nil {
		t := time.NewTimer(time.Until(measure))
		select {
		case <-t.C:
			w.begin()
		case <-ctx.Done():
			t.Stop()
		}
	}
	wg.Wait()
	if w.end != nil {
		w.end()
	}
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

// upstreamHandler is the fast upstream: one cheap echo tool, one that
// sends progress and log messages while it runs (notify.go), and one that
// answers with a ~100 KB result (guardrails.go).
func upstreamHandler() http.Handler {
	s := server.NewMCPServer("fast", "1", server.WithToolCapabilities(false), server.WithLogging())
	s.AddTool(mcp.NewTool(benchTool, mcp.WithString("text")), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(r.GetString("text", "")), nil
	})
	addNotifyTool(s)
	addPageTool(s)
	return server.NewStreamableHTTPServer(s)
}

// startRole runs this binary as role (with env added to its environment)
// and returns it with the URL it prints on its first line.
func (e *benchEnv) startRole(ctx context.Context, role string, env ...string) (*hubtest.Process, string, error) {
	return e.startRoleBin(ctx, e.self, role, env...)
}

// startRoleBin is startRole from bin, a copy of the bench's binary.
func (e *benchEnv) startRoleBin(ctx context.Context, bin, role string, env ...string) (*hubtest.Process, string, error) {
	cmd := exec.Command(bin)
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
