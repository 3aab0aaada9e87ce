package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/purko-io/mcp-hub/internal/hubtest"
)

// Benchmark 8: what tracing costs a tools/call. The same fast upstream is
// called through a bare reverse proxy, through a hub with tracing off and
// through a hub with tracing on that exports every span over OTLP/HTTP to a
// sink (a role of this binary that reads and drops what it is sent, so the
// figure is the hub's cost, not a trace backend's), in one run. With
// -base-hub, a hub built without tracing (e.g. from the commit before it)
// is measured too: with tracing off, hub minus proxy must not grow.

// otlpSinkRole serves POST /v1/traces, counting the export requests, and
// GET /count.
const otlpSinkRole = "otlp-sink"

func otlpSinkHandler() http.Handler {
	var exports atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		exports.Add(1)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK) // an empty ExportTraceServiceResponse
	})
	mux.HandleFunc("GET /count", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, exports.Load())
	})
	return mux
}

// TracingResult is benchmark 8 at one concurrency.
type TracingResult struct {
	Concurrency int     `json:"concurrency"`
	Proxy       Result  `json:"proxy"`
	Base        *Result `json:"base,omitempty"` // -base-hub, when given
	Off         Result  `json:"off"`
	On          Result  `json:"on"`
	// Hub minus proxy p50, per hub: what the hub adds beyond one HTTP hop.
	BaseBeyondProxyP50Ms float64 `json:"baseBeyondProxyP50Ms,omitempty"`
	OffBeyondProxyP50Ms  float64 `json:"offBeyondProxyP50Ms"`
	OnBeyondProxyP50Ms   float64 `json:"onBeyondProxyP50Ms"`
	// The cost of tracing: on minus off.
	OnCostP50Ms     float64 `json:"onCostP50Ms"`
	OnCostP99Ms     float64 `json:"onCostP99Ms"`
	ThroughputRatio float64 `json:"throughputRatio"` // on / off
}

// TracingBench is benchmark 8.
type TracingBench struct {
	Results []TracingResult `json:"results"`
	// Exports is how many OTLP export requests reached the sink: proof
	// that the traced hub exported.
	Exports int64 `json:"exports"`
}

func (e *benchEnv) runTracing(ctx context.Context) (*TracingBench, error) {
	cfg, progress := e.cfg, e.progress
	up, upURL, err := e.startRole(ctx, "upstream")
	if err != nil {
		return nil, fmt.Errorf("start upstream: %w", err)
	}
	defer up.Kill()
	proxy, proxyURL, err := e.startRole(ctx, "proxy", proxyTargetEnv+"="+strings.TrimSuffix(upURL, "/mcp"))
	if err != nil {
		return nil, fmt.Errorf("start reference proxy: %w", err)
	}
	defer proxy.Kill()
	sink, sinkURL, err := e.startRole(ctx, otlpSinkRole)
	if err != nil {
		return nil, fmt.Errorf("start OTLP sink: %w", err)
	}
	defer sink.Kill()
	servers := `MCP_SERVERS=[{"name":"fast","url":"` + upURL + `"}]`
	start := func(bin string, env ...string) (*hubtest.Hub, error) {
		h, err := hubtest.LaunchHub(ctx, hubtest.HubOptions{Bin: bin, LogLevel: "info", Env: append([]string{servers, "OTEL_SDK_DISABLED="}, env...)})
		if err != nil {
			return nil, err
		}
		if err := waitForTool(ctx, h.MCPURL(), benchTool); err != nil {
			h.Kill()
			return nil, err
		}
		return h, nil
	}
	off, err := start(e.hubBin, "OTEL_TRACES_EXPORTER=none")
	if err != nil {
		return nil, fmt.Errorf("start hub, tracing off: %w", err)
	}
	defer off.Kill()
	on, err := start(e.hubBin, "OTEL_TRACES_EXPORTER=otlp", "OTEL_EXPORTER_OTLP_ENDPOINT="+sinkURL)
	if err != nil {
		return nil, fmt.Errorf("start hub, tracing on: %w", err)
	}
	defer on.Kill()
	var base *hubtest.Hub
	if cfg.BaseHubBin != "" {
		if base, err = start(cfg.BaseHubBin); err != nil {
			return nil, fmt.Errorf("start base hub: %w", err)
		}
		defer base.Kill()
	}

	out := &TracingBench{}
	for _, n := range cfg.Concurrency {
		progress("tracing, concurrency %d: proxy, hubs with tracing off and on", n)
		r := TracingResult{Concurrency: n}
		// Every target twice, in one order and then the reverse, so none
		// always runs on a warmer or busier machine than another.
		targets := []struct{ name, url string }{{"proxy", proxyURL}, {"hub-off", off.MCPURL()}, {"hub-on", on.MCPURL()}}
		if base != nil {
			targets = append(targets, struct{ name, url string }{"hub-base", base.MCPURL()})
		}
		runs := map[string][]Result{}
		for round := range 2 {
			for i := range targets {
				tg := targets[i]
				if round == 1 {
					tg = targets[len(targets)-1-i]
				}
				res, err := measure(ctx, tg.url, tg.name, n, cfg)
				if err != nil {
					return nil, err
				}
				runs[tg.name] = append(runs[tg.name], res)
			}
		}
		r.Proxy, r.Off, r.On = mean(runs["proxy"]), mean(runs["hub-off"]), mean(runs["hub-on"])
		if base != nil {
			b := mean(runs["hub-base"])
			r.Base = &b
			r.BaseBeyondProxyP50Ms = b.P50Ms - r.Proxy.P50Ms
		}
		r.OffBeyondProxyP50Ms = r.Off.P50Ms - r.Proxy.P50Ms
		r.OnBeyondProxyP50Ms = r.On.P50Ms - r.Proxy.P50Ms
		r.OnCostP50Ms = r.On.P50Ms - r.Off.P50Ms
		r.OnCostP99Ms = r.On.P99Ms - r.Off.P99Ms
		r.ThroughputRatio = ratio(r.On.CallsPerSec, r.Off.CallsPerSec)
		out.Results = append(out.Results, r)
	}
	if out.Exports, err = sinkCount(ctx, sinkURL); err != nil {
		return nil, err
	}
	return out, nil
}

// sinkCount asks the sink how many export requests it got.
func sinkCount(ctx context.Context, sinkURL string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, sinkURL+"/count", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("OTLP sink count: %w", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

func (b *TracingBench) writeTable(w io.Writer) {
	fmt.Fprintf(w, "\n[8] tracing: tools/call through a hub with tracing off and on (every span exported over OTLP/HTTP to a sink; %d exports)\n", b.Exports)
	fmt.Fprintf(w, "%-5s %-9s %9s %9s %11s %7s\n", "conc", "target", "p50 ms", "p99 ms", "calls/s", "errors")
	for _, r := range b.Results {
		rows := []Result{r.Proxy}
		if r.Base != nil {
			rows = append(rows, *r.Base)
		}
		for _, res := range append(rows, r.Off, r.On) {
			fmt.Fprintf(w, "%-5d %-9s %9.3f %9.3f %11.0f %7d\n", res.Concurrency, res.Target, res.P50Ms, res.P99Ms, res.CallsPerSec, res.Errors)
		}
	}
	fmt.Fprintf(w, "%-5s %14s %14s %14s %12s %12s %11s\n", "conc", "base-proxy p50", "off-proxy p50", "on-proxy p50", "on-off p50", "on-off p99", "on/off tput")
	for _, r := range b.Results {
		baseCol := "-"
		if r.Base != nil {
			baseCol = fmt.Sprintf("%.3f", r.BaseBeyondProxyP50Ms)
		}
		fmt.Fprintf(w, "%-5d %14s %14.3f %14.3f %12.3f %12.3f %10.2fx\n", r.Concurrency, baseCol, r.OffBeyondProxyP50Ms, r.OnBeyondProxyP50Ms, r.OnCostP50Ms, r.OnCostP99Ms, r.ThroughputRatio)
	}
}
