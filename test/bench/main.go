// Command bench measures what the hub costs on the path of a tool call: the
// same calls go to a fast upstream directly and through the hub, in one run,
// and every figure is reported against that direct baseline. The hub and the
// upstream run as separate processes on loopback, as in production.
//
//	go run ./test/bench [-only 1,2,3,4,5,6,7,8,9,10] [-duration 3s] [-rounds 3] [-concurrency 1,16,64] [-notify-calls 200]
//	                    [-profile DIR] [-idle-sessions 10000] [-base-hub BIN] [-out bench-results.json] [-markdown FILE]
//
// The benchmarks (-only takes their numbers or names):
//
//	1 call       tools/call directly, through a bare reverse proxy and through the hub, in interleaved rounds,
//	             with the CPU per call of each process; autonomy cost; notification latency
//	2 reference  tools/call with the official reference server upstream, over Streamable HTTP and SSE
//	3 list       tools/list of 100 upstreams x 100 tools, full and restricted view, and the same bytes
//	             from a static Go server in interleaved rounds
//	4 idle       hub memory per idle downstream session (10,000 sessions); idle RSS on the embedded default
//	5 fanout     tools/call spread over 100 upstreams at 64 sessions
//	6 startup    exec to ready with a complete catalog, default config and 100 upstreams
//	7 floods     slowloris connections and abandoned sessions from one caller
//	8 tracing    tools/call through a hub with tracing off and on (OTLP export), against a bare proxy
//	9 binary     the release binary's size and the packages a build of it compiles
//	10 guardrails tools/call of a 100 KB result as a caller with content filters (pii, secrets) and one
//	             without, in interleaved rounds: the filters' cost per 100 KB
//
// The run ends with the verdicts of issue 22's (and 23's) targets and, with
// -markdown, writes the table of the Speed section of docs/operators.md.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/purko-io/mcp-hub/internal/hubtest"
)

func main() {
	duration := flag.Duration("duration", defaultDuration, "measuring time per scenario")
	conc := flag.String("concurrency", "1,16,64", "concurrent sessions per scenario")
	rounds := flag.Int("rounds", defaultRounds, "interleaved rounds of benchmarks 1, 3 and 10 (at least 3 for a verdict)")
	out := flag.String("out", "", "write the results as JSON to this file")
	markdown := flag.String("markdown", "", "write the Speed table of docs/operators.md (Markdown) to this file, - for stdout")
	hubBin := flag.String("hub", "", "mcp-hub binary (default: build it)")
	baseHub := flag.String("base-hub", "", "benchmark 8: also measure this mcp-hub binary (e.g. built before tracing), tracing unset")
	notifyCalls := flag.Int("notify-calls", defaultNotifyCalls, "calls per target in the notification latency benchmark (0: skip it)")
	only := flag.String("only", "", "run only these benchmarks: numbers or names, comma-separated (1 call, 2 reference, 3 list, 4 idle, 5 fanout, 6 startup, 7 floods, 8 tracing, 9 binary, 10 guardrails)")
	profileDir := flag.String("profile", "", "capture the hub's CPU and allocation profiles into this directory during tools/call at -profile-concurrency sessions (benchmark 1) and during tools/list of the large catalog (benchmark 3), and print their top")
	profileSecs := flag.Int("profile-seconds", 0, "CPU profile length in seconds (default: -duration)")
	profileConc := flag.Int("profile-concurrency", 16, "sessions of the profiled tools/call run")
	refConc := flag.String("ref-concurrency", "1,16", "concurrent sessions in the reference server benchmark")
	upstreams := flag.Int("upstreams", defaultScaleUpstreams, "upstreams in benchmarks 3-6")
	tools := flag.Int("tools", defaultScaleTools, "tools per upstream in benchmarks 3-6")
	idle := flag.Int("idle-sessions", defaultIdleSessions, "idle sessions to open in benchmark 4")
	fanout := flag.Int("fanout-concurrency", defaultFanout, "concurrent sessions in benchmark 5")
	startups := flag.Int("startup-runs", defaultStartupRuns, "starts per config in benchmark 6")
	floodConns := flag.Int("flood-conns", defaultFloodConns, "slowloris connections in benchmark 7")
	floodInits := flag.Int("flood-inits", defaultFloodInits, "abandoned initialize calls in benchmark 7")
	flag.Parse()

	if role := os.Getenv(roleEnv); role != "" {
		if err := serveRole(role); err != nil {
			fmt.Fprintln(os.Stderr, role+":", err)
			os.Exit(1)
		}
		return
	}
	levels, err := positiveList("-concurrency", *conc)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	refLevels, err := positiveList("-ref-concurrency", *refConc)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	selected, err := parseOnly(*only)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *notifyCalls <= 0 {
		*notifyCalls = -1 // Config: negative skips, 0 is the default
	}
	if *rounds < 1 {
		fmt.Fprintln(os.Stderr, "-rounds: must be at least 1")
		os.Exit(2)
	}
	rep, err := Run(ctx, Config{Duration: *duration, Rounds: *rounds, Concurrency: levels, HubBin: *hubBin, BaseHubBin: *baseHub, Progress: os.Stderr, NotifyCalls: *notifyCalls,
		Only: selected, ProfileDir: *profileDir, ProfileSeconds: *profileSecs, ProfileConcurrency: *profileConc,
		RefConcurrency: refLevels, ScaleUpstreams: *upstreams, ScaleTools: *tools, IdleSessions: *idle,
		FanoutConcurrency: *fanout, StartupRuns: *startups, FloodConns: *floodConns, FloodInits: *floodInits})
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	rep.WriteTable(os.Stdout)
	for _, p := range []*ProfileCapture{rep.Profile, rep.ListProfile} {
		if p != nil {
			p.writeTops(ctx, os.Stdout)
		}
	}
	fmt.Println("\nthe Speed table of docs/operators.md (Markdown):")
	rep.WriteMarkdown(os.Stdout)
	if *markdown != "" {
		if err := writeMarkdownTo(rep, *markdown); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
	}
	if *out != "" {
		b, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(*out, b, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		fmt.Printf("\nresults written to %s\n", *out)
	}
}

// positiveList parses a comma-separated list of positive numbers.
func positiveList(flagName, list string) ([]int, error) {
	var out []int
	for _, s := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s: %q is not a positive number", flagName, s)
		}
		out = append(out, n)
	}
	return out, nil
}

// parseOnly parses -only: benchmark numbers or names; empty selects all.
func parseOnly(list string) ([]int, error) {
	var out []int
	for _, s := range strings.Split(list, ",") {
		s = strings.ToLower(strings.TrimSpace(s))
		if s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if named, ok := benchNames[s]; ok {
			n, err = named, nil
		}
		if err != nil || n < 1 || n > len(benchNames) {
			return nil, fmt.Errorf("-only: %q is neither 1-%d nor one of call, reference, list, idle, fanout, startup, floods, tracing, binary, guardrails", s, len(benchNames))
		}
		out = append(out, n)
	}
	return out, nil
}

// serveRole serves the fast upstream, a bare reverse proxy in front of it,
// many upstreams (benchmarks 3-6), or a static reply (benchmark 3), on a
// loopback port and prints its URL
// on stdout (for many upstreams, the base URL: upstream i is at /u<i>/mcp).
func serveRole(role string) error {
	var h http.Handler
	path := "/mcp"
	switch role {
	case "upstream":
		h = upstreamHandler()
	case otlpSinkRole:
		h, path = otlpSinkHandler(), ""
	case "static":
		var err error
		if h, err = staticFromEnv(); err != nil {
			return err
		}
	case "many":
		h, path = manyHandler(envInt(upstreamsEnv, defaultScaleUpstreams), envInt(toolsEnv, defaultScaleTools)), ""
	case "proxy":
		target, err := url.Parse(os.Getenv(proxyTargetEnv))
		if err != nil {
			return err
		}
		rp := httputil.NewSingleHostReverseProxy(target)
		rp.Transport = &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 1024, IdleConnTimeout: time.Minute}
		h = hubtest.FullDuplex(rp)
	default:
		return fmt.Errorf("unknown role %q", role)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Printf("http://%s%s\n", ln.Addr(), path)
	return http.Serve(ln, h)
}
