package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"time"

	"github.com/purko-io/mcp-hub/internal/hubtest"
)

// Benchmark 6: start-up time, from the exec of the hub to /readyz answering
// 200 and the listing showing every server connected, with the embedded
// default config (what `make run` uses) and with the many-upstream config.
// The baseline is the exec of `mcp-hub version`: process, Go runtime and
// package initialization, which every start pays.

const (
	defaultStartupRuns = 5
	targetStartupMs    = 300.0 // with the embedded default config
	startupPoll        = time.Millisecond
	toolsListGrace     = 2 * time.Second // from a complete catalog to a complete tools/list
)

// StartupRun is one start, in ms since the exec.
type StartupRun struct {
	ListeningMs float64 `json:"listeningMs"` // the "listening on" line on stdout
	ReadyMs     float64 `json:"readyMs"`     // /readyz 200
	CompleteMs  float64 `json:"completeMs"`  // ready, and every server connected
	// ToolsListMs: a tools/list on /mcp returns the complete catalog (the
	// MCP face gets the catalog after the registry's notify debounce).
	ToolsListMs float64 `json:"toolsListMs"`
	// Problem says why ToolsListMs is missing.
	Problem string `json:"problem,omitempty"`
}

// StartupCase is the starts with one config; the figures are medians.
type StartupCase struct {
	Config      string       `json:"config"`
	Servers     int          `json:"servers"` // upstreams in the config
	Tools       int          `json:"tools"`   // in the complete catalog
	Runs        []StartupRun `json:"runs"`
	ListeningMs float64      `json:"listeningMs"`
	ReadyMs     float64      `json:"readyMs"`
	CompleteMs  float64      `json:"completeMs"`
	ToolsListMs float64      `json:"toolsListMs"` // 0 when a run has a problem
	Ratio       float64      `json:"ratio"`       // CompleteMs / the exec baseline
	Problems    []string     `json:"problems,omitempty"`
}

// StartupBench is benchmark 6.
type StartupBench struct {
	Runs        int         `json:"runs"`
	ExecMs      float64     `json:"execMs"` // median exec -> exit of `mcp-hub version`
	Default     StartupCase `json:"default"`
	Scale       StartupCase `json:"scale"`
	TargetMs    float64     `json:"targetMs"`
	MeetsTarget bool        `json:"meetsTarget"` // the default's CompleteMs within TargetMs
}

func (e *benchEnv) runStartup(ctx context.Context, s *scaleSetup) (*StartupBench, error) {
	runs := e.cfg.StartupRuns
	if runs <= 0 {
		runs = defaultStartupRuns
	}
	out := &StartupBench{Runs: runs, TargetMs: targetStartupMs}
	var execs []float64
	for range runs {
		t0 := time.Now()
		if err := exec.CommandContext(ctx, e.hubBin, "version").Run(); err != nil {
			return nil, fmt.Errorf("mcp-hub version: %w", err)
		}
		execs = append(execs, msSince(t0))
	}
	out.ExecMs = median(execs)
	for _, c := range []struct {
		into  *StartupCase
		name  string
		args  []string
		names []string
	}{
		{&out.Default, "embedded default", nil, nil},
		{&out.Scale, fmt.Sprintf("%d upstreams x %d tools", s.upstreams, s.tools), []string{"--config", s.cfgPath}, s.names},
	} {
		c.into.Config, c.into.Servers = c.name, len(c.names)
		for i := range runs {
			e.progress("start-up, %s: start %d of %d", c.name, i+1, runs)
			r, tools, err := e.startOnce(ctx, c.args, c.names)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", c.name, err)
			}
			c.into.Runs = append(c.into.Runs, r)
			c.into.Tools = tools
		}
		var l, r, done, listed []float64
		for _, run := range c.into.Runs {
			l, r, done, listed = append(l, run.ListeningMs), append(r, run.ReadyMs), append(done, run.CompleteMs), append(listed, run.ToolsListMs)
		}
		c.into.ListeningMs, c.into.ReadyMs, c.into.CompleteMs, c.into.ToolsListMs = median(l), median(r), median(done), median(listed)
		for _, run := range c.into.Runs {
			if run.Problem != "" {
				c.into.ToolsListMs = 0
				if !slices.Contains(c.into.Problems, run.Problem) {
					c.into.Problems = append(c.into.Problems, run.Problem)
				}
			}
		}
		c.into.Ratio = ratio(c.into.CompleteMs, out.ExecMs)
	}
	out.MeetsTarget = out.Default.CompleteMs <= targetStartupMs
	return out, nil
}

func msSince(t time.Time) float64 { return float64(time.Since(t).Microseconds()) / 1000 }

// startOnce starts a hub, times it, and stops it.
func (e *benchEnv) startOnce(ctx context.Context, args, want []string) (run StartupRun, tools int, err error) {
	lctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	t0 := time.Now()
	hub, err := hubtest.LaunchHub(lctx, hubtest.HubOptions{Bin: e.hubBin, LogLevel: "info", Args: args})
	if err != nil {
		return run, 0, err
	}
	run.ListeningMs = msSince(t0)
	defer hub.Stop(5 * time.Second)
	base := hub.Base
	hc := newHTTPClient(4)
	defer hc.CloseIdleConnections()
	deadline := time.Now().Add(time.Minute)
	for run.ReadyMs == 0 {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return run, 0, fmt.Errorf("/readyz never answered 200")
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/readyz", nil)
		if resp, err := hc.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				run.ReadyMs = msSince(t0)
				break
			}
		}
		time.Sleep(startupPoll)
	}
	// The listing of a large catalog is not free to encode: the poller
	// waits twice as long as the last poll took, so that it takes at most
	// a third of one core from the hub it is timing.
	for {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return run, 0, fmt.Errorf("the catalog never completed")
		}
		t := time.Now()
		l, err := hubtest.FetchListing(ctx, hc, base, "?format=names")
		if err == nil && l.Connected(want...) {
			run.CompleteMs = msSince(t0)
			tools = l.TotalTools
			break
		}
		time.Sleep(max(startupPoll, 2*time.Since(t)))
	}
	rs, err := openRaw(ctx, hc, base+"/mcp")
	if err != nil {
		return run, 0, err
	}
	// The catalog is complete, so tools/list should follow within the
	// notify debounce; when it does not, that is reported, not waited for.
	deadline = time.Now().Add(toolsListGrace)
	for {
		t := time.Now()
		n, _, _, _, err := rs.listTools(ctx)
		switch {
		case err == nil && n == tools:
			run.ToolsListMs = msSince(t0)
			return run, tools, nil
		case ctx.Err() != nil:
			return run, 0, ctx.Err()
		case time.Now().After(deadline):
			run.Problem = fmt.Sprintf("tools/list listed %d of the catalog's %d tools %s after the catalog was complete (error: %v)", n, tools, toolsListGrace, err)
			return run, tools, nil
		}
		time.Sleep(max(startupPoll, 2*time.Since(t)))
	}
}

func (b *StartupBench) writeTable(w io.Writer) {
	fmt.Fprintf(w, "\n[6] start-up: exec -> \"listening\" line -> /readyz 200 -> listing shows every server connected (complete) -> tools/list has every tool (ms, median of %d starts)\n", b.Runs)
	fmt.Fprintf(w, "%-26s %7s %7s %10s %8s %9s %7s %10s\n", "config", "servers", "tools", "listening", "ready", "complete", "ratio", "tools/list")
	fmt.Fprintf(w, "%-26s %7s %7s %10s %8s %9.1f %6.1fx %10s\n", "`mcp-hub version` (base)", "-", "-", "-", "-", b.ExecMs, 1.0, "-")
	for _, c := range []StartupCase{b.Default, b.Scale} {
		listed := fmt.Sprintf("%.1f", c.ToolsListMs)
		if len(c.Problems) > 0 {
			listed = "never*"
		}
		fmt.Fprintf(w, "%-26s %7d %7d %10.1f %8.1f %9.1f %6.1fx %10s\n", c.Config, c.Servers, c.Tools, c.ListeningMs, c.ReadyMs, c.CompleteMs, c.Ratio, listed)
	}
	for _, c := range []StartupCase{b.Default, b.Scale} {
		for _, p := range c.Problems {
			fmt.Fprintf(w, "* %s: %s\n", c.Config, p)
		}
	}
	fmt.Fprintf(w, "target: the embedded default complete within %.0f ms: %s\n", b.TargetMs, verdict(b.MeetsTarget))
}
