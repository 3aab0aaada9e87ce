package main

import (
	"context"
	"fmt"
	"os"
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
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Config{Duration: 300 * time.Millisecond, Warmup: 50 * time.Millisecond, Concurrency: []int{1, 4}, NotifyCalls: 20})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Comparisons) != 2 {
		t.Fatalf("%d comparisons, want 2", len(rep.Comparisons))
	}
	if a := rep.Autonomy; a == nil || a.Full.Calls == 0 || a.Restricted.Calls == 0 || a.Full.Errors+a.Restricted.Errors != 0 {
		t.Fatalf("autonomy comparison: %+v", rep.Autonomy)
	}
	for _, c := range rep.Comparisons {
		for _, r := range []Result{c.Direct, c.Proxy, c.Hub} {
			if r.Calls == 0 || r.Errors != 0 || r.P50Ms <= 0 || r.P99Ms < r.P50Ms {
				t.Errorf("%s at %d sessions: %+v", r.Target, r.Concurrency, r)
			}
		}
		if c.ThroughputRatio <= 0 || c.ProxyThroughputRatio <= 0 {
			t.Errorf("throughput ratios %v, %v", c.ThroughputRatio, c.ProxyThroughputRatio)
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
	var table strings.Builder
	rep.WriteTable(&table)
	if !strings.Contains(table.String(), "notification latency") {
		t.Errorf("the table has no notification latency:\n%s", table.String())
	}
}
