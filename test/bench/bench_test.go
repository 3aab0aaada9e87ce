package main

import (
	"context"
	"fmt"
	"os"
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
	rep, err := Run(ctx, Config{Duration: 300 * time.Millisecond, Warmup: 50 * time.Millisecond, Concurrency: []int{1, 4}})
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
}
