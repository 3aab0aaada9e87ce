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
