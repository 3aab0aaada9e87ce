package main

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// Verdict is one target of the run checked against a figure it measured:
// Value Op Limit, where Op is "<=" or ">=". The figure is a ratio against
// (or a difference from) a baseline measured in the same run, or, for
// memory and size, an absolute bound.
type Verdict struct {
	Benchmark string  `json:"benchmark"` // its name (benchNames)
	What      string  `json:"what"`
	Value     float64 `json:"value"`
	Op        string  `json:"op"`
	Limit     float64 `json:"limit"`
	Unit      string  `json:"unit"`
	// Status is "met", "not met", or "not judged: <why>" (too few rounds,
	// nothing measured).
	Status string `json:"status"`
}

const (
	statusMet    = "met"
	statusNotMet = "not met"
)

// judge checks value against limit.
func judge(bench, what string, value float64, op string, limit float64, unit string) Verdict {
	v := Verdict{Benchmark: bench, What: what, Value: value, Op: op, Limit: limit, Unit: unit, Status: statusNotMet}
	if (op == "<=" && value <= limit) || (op == ">=" && value >= limit) {
		v.Status = statusMet
	}
	return v
}

// unjudged is v with the reason it is not judged.
func (v Verdict) unjudged(why string) Verdict {
	v.Status = "not judged: " + why
	return v
}

// Met reports whether v was judged and met.
func (v Verdict) Met() bool { return v.Status == statusMet }

func (v Verdict) String() string {
	return fmt.Sprintf("[%s] %s: %s%s (target %s %s%s): %s", v.Benchmark, v.What, num(v.Value), v.Unit, v.Op, num(v.Limit), v.Unit, strings.ToUpper(v.Status))
}

// num prints a figure with the precision its size needs.
func num(f float64) string {
	switch a := max(f, -f); {
	case a == 0:
		return "0"
	case a < 1:
		return fmt.Sprintf("%.3f", f)
	case a < 100:
		return fmt.Sprintf("%.2f", f)
	default:
		return fmt.Sprintf("%.0f", f)
	}
}

// writeVerdicts prints every verdict of the run.
func (r *Report) writeVerdicts(w io.Writer) {
	if len(r.Verdicts) == 0 {
		return
	}
	met := 0
	for _, v := range r.Verdicts {
		if v.Met() {
			met++
		}
	}
	fmt.Fprintf(w, "\nverdicts (%d of %d met)\n", met, len(r.Verdicts))
	for _, v := range r.Verdicts {
		fmt.Fprintln(w, v)
	}
}

// loadAvg is the 1, 5 and 15 minute load averages of /proc/loadavg; "?"
// when it cannot be read.
func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
