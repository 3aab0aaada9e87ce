package main

import (
	"strings"
	"testing"
)

// TestJudge: a figure against its bound in either direction, and a
// verdict not judged is never met.
func TestJudge(t *testing.T) {
	for _, c := range []struct {
		value float64
		op    string
		limit float64
		want  string
	}{
		{1.0, ">=", 1.0, statusMet},
		{0.99, ">=", 1.0, statusNotMet},
		{0.05, "<=", 0.05, statusMet},
		{0.051, "<=", 0.05, statusNotMet},
		{1, "==", 1, statusNotMet}, // an unknown operator never meets
	} {
		v := judge("call", "x", c.value, c.op, c.limit, "x")
		if v.Status != c.want || v.Met() != (c.want == statusMet) {
			t.Errorf("%v %s %v: %s", c.value, c.op, c.limit, v.Status)
		}
	}
	v := judge("call", "hub/proxy calls/s at 16 sessions", 1.2, ">=", 1, "x").unjudged("2 rounds, fewer than 3")
	if v.Met() || !strings.HasSuffix(v.String(), "NOT JUDGED: 2 ROUNDS, FEWER THAN 3") {
		t.Errorf("unjudged: %s", v)
	}
	if got := judge("idle", "goroutines per idle session", 4.25, "<=", 2, "").String(); got != "[idle] goroutines per idle session: 4.25 (target <= 2.00): NOT MET" {
		t.Errorf("String() = %q", got)
	}
}

// TestCallVerdicts: throughput judged above one session, the p50 at one,
// the upstream's CPU at every level; too few rounds judge nothing.
func TestCallVerdicts(t *testing.T) {
	cs := []Comparison{
		{Concurrency: 1, BeyondProxyP50Ms: 0.04, UpstreamCPURatio: 1.05},
		{Concurrency: 16, HubVsProxy: 1.02, UpstreamCPURatio: 1.2},
		{Concurrency: 64, HubVsProxy: 0.9, UpstreamCPURatio: 1.1},
	}
	want := []string{
		"hub p50 - proxy p50, one session: met",
		"hub/proxy calls/s at 16 sessions: met",
		"hub/proxy calls/s at 64 sessions: not met",
		"upstream CPU per call behind the hub / behind the proxy at 1 sessions: met",
		"upstream CPU per call behind the hub / behind the proxy at 16 sessions: not met",
		"upstream CPU per call behind the hub / behind the proxy at 64 sessions: met",
	}
	for _, rounds := range []int{minRounds, minRounds - 1} {
		got := callVerdicts(cs, rounds)
		if len(got) != len(want) {
			t.Fatalf("%d rounds: %d verdicts, want %d", rounds, len(got), len(want))
		}
		for i, v := range got {
			w := want[i]
			if rounds < minRounds {
				w = w[:strings.LastIndex(w, ": ")+2] + "not judged: 2 rounds, fewer than 3"
			}
			if g := v.What + ": " + v.Status; g != w {
				t.Errorf("%d rounds: %q, want %q", rounds, g, w)
			}
		}
	}
}
