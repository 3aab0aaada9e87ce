package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary serve the bench's upstream when re-executed.
func TestMain(m *testing.M) {
	if role := os.Getenv(roleEnv); role != "" {
		if err := serveRole(role); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	os.Exit(m.Run())
}

// TestBenchHarness runs a small version of the benchmark as a correctness
// check: every call succeeds directly and through the hub, and the report is
// filled in. No timing is asserted: this machine is shared and noisy.
func TestBenchHarness(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const upstreams, tools, idle, floodConns, floodInits = 5, 10, 50, 200, 1100
	rep, err := Run(ctx, Config{Duration: 300 * time.Millisecond, Warmup: 50 * time.Millisecond, Rounds: minRounds, Concurrency: []int{1, 4}, NotifyCalls: 20,
		ProfileDir: t.TempDir(), ProfileSeconds: 1, ProfileConcurrency: 4,
		RefConcurrency: []int{1, 2}, ScaleUpstreams: upstreams, ScaleTools: tools, IdleSessions: idle, FanoutConcurrency: 4, StartupRuns: 1,
		FloodConns: floodConns, FloodInits: floodInits, FloodHeaderTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Ran, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}) {
		t.Errorf("benchmarks run: %v", rep.Ran)
	}
	if len(rep.Comparisons) != 2 {
		t.Fatalf("%d comparisons, want 2", len(rep.Comparisons))
	}
	if a := rep.Autonomy; a == nil || a.Full.Calls == 0 || a.Restricted.Calls == 0 || a.Full.Errors+a.Restricted.Errors != 0 {
		t.Fatalf("autonomy comparison: %+v", rep.Autonomy)
	}
	// 1: every target in every round, each round in its own order, with
	// the CPU per call of the upstream behind it and of its own process.
	for _, c := range rep.Comparisons {
		if len(c.Rounds) != minRounds {
			t.Fatalf("%d rounds at %d sessions, want %d", len(c.Rounds), c.Concurrency, minRounds)
		}
		orders := map[string]bool{}
		for _, rd := range c.Rounds {
			orders[strings.Join(rd.Order, ",")] = true
			for _, r := range []Result{rd.Direct, rd.Proxy, rd.Hub} {
				if r.Calls == 0 || r.Errors != 0 || r.P50Ms <= 0 || r.P99Ms < r.P50Ms || r.UpstreamCPUUsPerCall <= 0 ||
					(r.Target == "direct") != (r.CPUUsPerCall == 0) {
					t.Errorf("%s at %d sessions: %+v", r.Target, r.Concurrency, r)
				}
			}
			if rd.HubVsProxy <= 0 || rd.UpstreamCPURatio <= 0 {
				t.Errorf("round at %d sessions: %+v", c.Concurrency, rd)
			}
		}
		if len(orders) != minRounds {
			t.Errorf("orders at %d sessions: %v, want %d different", c.Concurrency, orders, minRounds)
		}
		for _, r := range []Result{c.Direct, c.Proxy, c.Hub} {
			if r.Calls == 0 || r.P50Ms <= 0 || r.UpstreamCPUUsPerCall <= 0 {
				t.Errorf("median of %s at %d sessions: %+v", r.Target, r.Concurrency, r)
			}
		}
		if c.ThroughputRatio <= 0 || c.ProxyThroughputRatio <= 0 || c.HubVsProxy <= 0 || c.UpstreamCPURatio <= 0 {
			t.Errorf("ratios at %d sessions: %+v", c.Concurrency, c)
		}
	}
	// Notifications: progress (with the caller's token) and log messages
	// reach the caller directly, through the proxy and through the hub, and
	// their latencies are computed. Losses are logged, not failed: one late
	// notification on a loaded machine is the benchmark's to report.
	n := rep.Notifications
	if n == nil {
		t.Fatal("no notification latency")
	}
	for _, r := range []NotifyResult{n.Direct, n.Proxy, n.Hub} {
		if r.Calls != 20 || r.Errors != 0 || r.Stray != 0 {
			t.Errorf("%s notifications: %+v", r.Target, r)
		}
		for kind, st := range map[string]NotifyStats{"progress": r.Progress, "log": r.Log} {
			if st.Expected != 20*10 || st.Received == 0 || st.Received+st.Lost != st.Expected ||
				st.P50Ms <= 0 || st.P99Ms < st.P50Ms || st.MaxMs < st.P99Ms {
				t.Errorf("%s %s notifications: %+v", r.Target, kind, st)
			}
			if st.Lost != 0 || st.Duplicates != 0 {
				t.Logf("%s %s notifications: %d lost, %d duplicated", r.Target, kind, st.Lost, st.Duplicates)
			}
		}
	}

	// The profile: CPU and two allocs profiles, summarized by go tool pprof.
	if p := rep.Profile; p == nil || p.Run == nil || p.Run.Calls == 0 || p.Run.Errors != 0 || p.RunRatio <= 0 {
		t.Errorf("tools/call profile: %+v", rep.Profile)
	}
	if rep.ListProfile == nil {
		t.Error("no tools/list profile")
	}
	for _, p := range []*ProfileCapture{rep.Profile, rep.ListProfile} {
		if p == nil {
			continue
		}
		for _, f := range []string{p.CPU, p.AllocsBase, p.Allocs} {
			if st, err := os.Stat(f); err != nil || st.Size() == 0 {
				t.Errorf("profile file %s: %v", f, err)
			}
		}
		var tops strings.Builder
		p.writeTops(ctx, &tops)
		if strings.Count(tops.String(), "flat%") != 4 {
			t.Errorf("pprof tops:\n%s", tops.String())
		}
	}

	// 2: the reference server over both transports, directly and through
	// the hub.
	if r := rep.Reference; r == nil || len(r.Comparisons) != 4 {
		t.Errorf("reference server: %+v", rep.Reference)
	} else {
		for _, c := range r.Comparisons {
			for _, res := range []Result{c.Direct, c.Hub} {
				if res.Calls == 0 || res.Errors != 0 || res.P50Ms <= 0 || res.P99Ms < res.P50Ms {
					t.Errorf("reference server over %s, %s at %d sessions: %+v", c.Transport, res.Target, c.Concurrency, res)
				}
			}
			if c.ThroughputRatio <= 0 {
				t.Errorf("reference server over %s at %d: throughput ratio %v", c.Transport, c.Concurrency, c.ThroughputRatio)
			}
		}
	}

	// 3: the whole catalog, and half of it for a restricted caller.
	if l := rep.ToolsList; l == nil {
		t.Error("no tools/list benchmark")
	} else {
		for _, c := range []struct {
			r     ListResult
			tools int
		}{{l.Direct, tools}, {l.DirectAll, upstreams * tools}, {l.Full, upstreams * tools}, {l.Restricted, upstreams * tools / 2}} {
			if c.r.Tools != c.tools || c.r.Lists < 5 || c.r.Pages < 1 || c.r.Bytes == 0 || c.r.P50Ms <= 0 || c.r.P99Ms < c.r.P50Ms || c.r.P50Ratio <= 0 {
				t.Errorf("tools/list %s: %+v, want %d tools", c.r.Target, c.r, c.tools)
			}
		}
		// The static server, sent the hub's own bytes, in every encoding
		// the hub speaks, every round.
		want := []string{"identity"}
		if l.HubGzip {
			want = append(want, "gzip")
		}
		var got []string
		for _, w := range l.Wire {
			got = append(got, w.Encoding)
			if len(w.Rounds) != minRounds || w.WireBytes == 0 || w.P50Ratio <= 0 {
				t.Errorf("tools/list against the static server, %s: %+v", w.Encoding, w)
			}
			// The same bytes from both, the hub's full list but for the
			// digits of the request id.
			for _, r := range []ListResult{w.Static, w.Hub} {
				if r.Lists < 5 || r.Bytes != w.Static.Bytes || max(r.Bytes-l.Full.Bytes, l.Full.Bytes-r.Bytes) > 8 ||
					r.P50Ms <= 0 || r.P99Ms < r.P50Ms || r.CPUMsPerList <= 0 {
					t.Errorf("tools/list %s: %+v (the hub's full list: %d bytes)", r.Target, r, l.Full.Bytes)
				}
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("tools/list encodings measured: %v, want %v", got, want)
		}
		checkListIssue34(t, l, minRounds)
	}

	// 4: every idle session opened and held; memory read before and after.
	if b := rep.Idle; b == nil || b.Sessions != idle || b.Failed != 0 || b.Closed != 0 ||
		b.Baseline.RSSKB <= 0 || b.Loaded.RSSKB <= 0 || b.AfterClose.RSSKB <= 0 || b.Baseline.HeapInuseKB <= 0 ||
		b.Loaded.Goroutines <= b.Baseline.Goroutines || b.HubNofile == "?" || b.LoadedRatio <= 0 || b.DefaultRSSKB <= 0 || b.ProxyRSSKB <= 0 {
		t.Errorf("idle sessions: %+v", rep.Idle)
	} else {
		// The idle starts: cold from an uncached binary, warm from a cached
		// one, each told apart.
		for _, s := range []IdleStart{b.Default, b.Proxy} {
			for _, m := range []ProcMem{s.Cold, s.Warm} {
				if m.AnonKB <= 0 || m.FileKB <= 0 || m.RSSKB < m.AnonKB+m.FileKB {
					t.Errorf("idle start %+v: memory %+v", s, m)
				}
			}
			if s.BinaryKB <= 0 || s.CachedWarm < 0.99 {
				t.Errorf("idle start %+v: binary not warm", s)
			}
		}
		if b.DefaultRSSKB != b.Default.Cold.RSSKB {
			t.Errorf("the idle RSS judged is %d KB, not the cold start's %d KB", b.DefaultRSSKB, b.Default.Cold.RSSKB)
		}
	}

	// 5: calls spread over every upstream, directly and through the hub.
	if f := rep.Fanout; f == nil || f.Upstreams != upstreams {
		t.Errorf("fan-out: %+v", rep.Fanout)
	} else {
		for _, r := range []Result{f.Direct, f.Hub} {
			if r.Calls == 0 || r.Errors != 0 || r.P50Ms <= 0 || r.P99Ms < r.P50Ms {
				t.Errorf("fan-out %s: %+v", r.Target, r)
			}
		}
	}

	// 7: the hub closed every slow connection, admitted the caller's
	// sessions up to its cap and refused the rest, and the other caller
	// was served in every phase.
	if f := rep.Floods; f == nil || f.SlowConns != floodConns || f.SlowOpenAfter != 0 ||
		f.Admitted != f.PerCallerCap || f.Refused != floodInits-f.PerCallerCap || f.Failed != 0 ||
		f.OtherErrors != 0 || f.OtherIdleMs <= 0 || f.OtherSlowMs <= 0 || f.OtherAfterMs <= 0 || f.AfterInit.RSSKB <= 0 {
		t.Errorf("floods: %+v", rep.Floods)
	}

	// 6: one start with each config, every stage timed in order.
	if s := rep.Startup; s == nil || s.ExecMs <= 0 {
		t.Errorf("start-up: %+v", rep.Startup)
	} else {
		for _, c := range []StartupCase{s.Default, s.Scale} {
			if len(c.Runs) != 1 || c.ListeningMs <= 0 || c.ReadyMs < c.ListeningMs || c.CompleteMs < c.ReadyMs || c.Tools == 0 || c.Ratio <= 0 {
				t.Errorf("start-up, %s: %+v", c.Config, c)
			}
			// A tools/list that never shows the catalog is the hub's fault,
			// which the benchmark reports; here it is only logged.
			if len(c.Problems) > 0 {
				t.Logf("start-up, %s: %v", c.Config, c.Problems)
			} else if c.ToolsListMs < c.CompleteMs {
				t.Errorf("start-up, %s: tools/list complete at %v ms, before the catalog (%v ms)", c.Config, c.ToolsListMs, c.CompleteMs)
			}
		}
		if s.Scale.Servers != upstreams || s.Scale.Tools != upstreams*tools {
			t.Errorf("start-up with %d upstreams: %+v", upstreams, s.Scale)
		}
	}

	// 7: hubs with tracing off and on, and the traced one exported.
	if tr := rep.Tracing; tr == nil || len(tr.Results) != 2 || tr.Exports == 0 {
		t.Errorf("tracing: %+v", rep.Tracing)
	} else {
		for _, r := range tr.Results {
			for _, res := range []Result{r.Proxy, r.Off, r.On} {
				if res.Calls == 0 || res.Errors != 0 || res.P50Ms <= 0 || res.P99Ms < res.P50Ms {
					t.Errorf("tracing, %s at %d sessions: %+v", res.Target, r.Concurrency, res)
				}
			}
			if r.ThroughputRatio <= 0 {
				t.Errorf("tracing at %d: throughput ratio %v", r.Concurrency, r.ThroughputRatio)
			}
		}
	}

	// 9: the release binary and its packages.
	if b := rep.Binary; b == nil || b.Bytes < 1<<20 || b.NonStd <= 0 || b.Packages <= b.NonStd {
		t.Errorf("binary: %+v", rep.Binary)
	}

	// 10: the 100 KB page as the plain and the filtered caller, at one
	// session and at each level, every round in its own order, with the
	// hub's CPU per call.
	if g := rep.Guardrails; g == nil || len(g.Results) != 1 || g.PageBytes < 90_000 || !slices.Equal(g.Filters, []string{"pii", "secrets"}) {
		t.Errorf("guardrails: %+v", rep.Guardrails)
	} else {
		for i, r := range g.Results {
			if want := 1; r.Concurrency != want {
				t.Errorf("guardrails level %d: concurrency %d, want %d", i, r.Concurrency, want)
			}
			if len(r.Rounds) != minRounds {
				t.Fatalf("guardrails: %d rounds at %d sessions, want %d", len(r.Rounds), r.Concurrency, minRounds)
			}
			orders := map[string]bool{}
			for _, rd := range r.Rounds {
				orders[strings.Join(rd.Order, ",")] = true
				for _, res := range []Result{rd.Plain, rd.Filtered} {
					if res.Calls == 0 || res.Errors != 0 || res.P50Ms <= 0 || res.P99Ms < res.P50Ms {
						t.Errorf("guardrails, %s at %d sessions: %+v", res.Target, r.Concurrency, res)
					}
				}
				if rd.Plain.Target != "plain" || rd.Filtered.Target != "filtered" || rd.P50Ratio <= 0 || rd.ThroughputRatio <= 0 ||
					rd.Paired.Pairs == 0 || rd.Paired.PlainP50Ms <= 0 || rd.Paired.FilteredP50Ms <= 0 {
					t.Errorf("guardrails round at %d sessions: %+v", r.Concurrency, rd)
				}
			}
			if len(orders) != 2 {
				t.Errorf("guardrails orders at %d sessions: %v, want both", r.Concurrency, orders)
			}
			if r.Plain.Calls == 0 || r.Filtered.Calls == 0 || r.P50Ratio <= 0 || r.ThroughputRatio <= 0 {
				t.Errorf("guardrails medians at %d sessions: %+v", r.Concurrency, r)
			}
		}
	}

	// Every target judged: with minRounds rounds, each is met or not.
	var verdicts []string
	for _, v := range rep.Verdicts {
		verdicts = append(verdicts, v.Benchmark+": "+v.What)
		if v.Status != statusMet && v.Status != statusNotMet {
			t.Errorf("verdict %s", v)
		}
	}
	wantVerdicts := []string{
		"call: hub p50 - proxy p50, one session",
		"call: hub/proxy calls/s at 4 sessions",
		"call: upstream CPU per call behind the hub / behind the proxy at 1 sessions",
		"call: upstream CPU per call behind the hub / behind the proxy at 4 sessions",
		"list: hub p50 / static server p50, identity",
	}
	if rep.ToolsList != nil && rep.ToolsList.HubGzip {
		wantVerdicts = append(wantVerdicts, "list: hub p50 / static server p50, gzip")
	}
	wantVerdicts = append(wantVerdicts,
		"list: hub sends the list gzip-compressed to a client that accepts gzip (1 yes, 0 no)",
		"list: hub p50 / static server p50, identity, 20 requests each in turn",
		"list: hub heap in use after GC, after 20 lists, over before the first, in list sizes",
		"list: hub RSS after 20 lists over before the first, in list sizes",
		"list: hub heap in use after GC, after 40 lists, over before the first, in list sizes",
		"list: hub RSS after 40 lists over before the first, in list sizes",
		"list: hub heap in use after GC, after 100 lists, over before the first, in list sizes",
		"list: hub RSS after 100 lists over before the first, in list sizes",
		"idle: Go heap + stacks per idle session",
		"idle: goroutines per idle session",
		"idle: RSS of the idle hub on its embedded default, started cold",
		"binary: release binary size",
		"binary: packages a cold build compiles (go list -deps)",
		"guardrails: filtered - plain p50 per 100 KB, in turns",
		"guardrails: filtered / plain p50, in turns")
	if !slices.Equal(verdicts, wantVerdicts) {
		t.Errorf("verdicts:\n%s\nwant:\n%s", strings.Join(verdicts, "\n"), strings.Join(wantVerdicts, "\n"))
	}

	var table strings.Builder
	rep.WriteTable(&table)
	for _, want := range []string{"notification latency", "[2] tools/call", "[3] tools/list", "[4] idle", "[5] fan-out", "[6] start-up", "[7] floods", "[8] tracing", "[9] binary", "[10] guardrails", "verdicts ("} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("the table has no %q:\n%s", want, table.String())
		}
	}
	t.Logf("\n%s", table.String())

	var md strings.Builder
	rep.WriteMarkdown(&md)
	for _, want := range []string{
		"| target | seq p50 ms | 4 sessions calls/s | vs proxy (4) | CPU µs per call (1 / 4) | upstream CPU µs per call (1 / 4) |\n|---|---|---|---|---|---|\n| direct |",
		"\n| bare proxy |", "\n| mcp-hub |", "\n- list: ", "\n- idle: ", "\n- binary: ", "\n- guardrails: ", "load average " + rep.LoadAvgStart,
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("the Markdown has no %q:\n%s", want, md.String())
		}
	}
	t.Logf("\n%s", md.String())
}

// TestParseOnly: -only takes numbers and names.
func TestParseOnly(t *testing.T) {
	got, err := parseOnly("3, idle,fanout ,6,floods,tracing,binary,Guardrails")
	if err != nil || !slices.Equal(got, []int{3, 4, 5, 6, 7, 8, 9, 10}) {
		t.Errorf("parseOnly = %v, %v", got, err)
	}
	if got, err := parseOnly(""); err != nil || got != nil {
		t.Errorf("parseOnly(\"\") = %v, %v", got, err)
	}
	for _, bad := range []string{"0", "11", "lists"} {
		if _, err := parseOnly(bad); err == nil {
			t.Errorf("parseOnly(%q) accepted", bad)
		}
	}
}
