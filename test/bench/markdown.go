package main

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// The Speed table (docs/operators.md) of issue 22: benchmark 1's targets side by side,
// then one line each for the list, idle, binary and guardrails benchmarks,
// and the verdicts, with the machine and its load, so that the page shows one
// run and says where it ran.

// writeMarkdownTo writes the table to path; "-" is stdout.
func writeMarkdownTo(r *Report, path string) error {
	if path == "-" {
		r.WriteMarkdown(os.Stdout)
		return nil
	}
	var b strings.Builder
	r.WriteMarkdown(&b)
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("write the Markdown table: %w", err)
	}
	return nil
}

// WriteMarkdown prints the table for docs/operators.md's Speed section.
func (r *Report) WriteMarkdown(w io.Writer) {
	fmt.Fprintf(w, "Measured by `make bench` on %d CPUs, %s, load average %s at the start (%s at the end); %d interleaved rounds of %s per target, medians.\n\n",
		r.CPUs, r.GoVersion, r.LoadAvgStart, r.LoadAvgEnd, r.Rounds, r.Duration)
	if len(r.Comparisons) > 0 {
		r.writeCallsMarkdown(w)
	}
	var lines []string
	if l := r.ToolsList; l != nil {
		lines = append(lines, l.markdownLine())
	}
	if b := r.Idle; b != nil {
		lines = append(lines, b.markdownLine())
	}
	if b := r.Binary; b != nil {
		lines = append(lines, b.markdownLine())
	}
	if b := r.Guardrails; b != nil {
		lines = append(lines, b.markdownLine())
	}
	for _, l := range lines {
		fmt.Fprintf(w, "- %s\n", l)
	}
	if len(r.Verdicts) > 0 {
		fmt.Fprintf(w, "\nTargets:\n\n")
		for _, v := range r.Verdicts {
			fmt.Fprintf(w, "- %s\n", v)
		}
	}
}

// writeCallsMarkdown is benchmark 1's rows: the sequential p50, calls/s
// at each level above one session, the hub's and the proxy's calls/s
// against the proxy's, and the CPU per call at every level.
func (r *Report) writeCallsMarkdown(w io.Writer) {
	var seq *Comparison
	var multi []Comparison
	var levels []string
	for i, c := range r.Comparisons {
		levels = append(levels, fmt.Sprint(c.Concurrency))
		if c.Concurrency == 1 {
			seq = &r.Comparisons[i]
		} else {
			multi = append(multi, c)
		}
	}
	head := []string{"target", "seq p50 ms"}
	var multiLevels []string
	for _, c := range multi {
		head = append(head, fmt.Sprintf("%d sessions calls/s", c.Concurrency))
		multiLevels = append(multiLevels, fmt.Sprint(c.Concurrency))
	}
	all := strings.Join(levels, " / ")
	head = append(head, fmt.Sprintf("vs proxy (%s)", strings.Join(multiLevels, " / ")),
		fmt.Sprintf("CPU µs per call (%s)", all), fmt.Sprintf("upstream CPU µs per call (%s)", all))
	fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat("---|", len(head)))
	for _, t := range []struct {
		name string
		pick func(Comparison) Result
	}{
		{"direct", func(c Comparison) Result { return c.Direct }},
		{"bare proxy", func(c Comparison) Result { return c.Proxy }},
		{"mcp-hub", func(c Comparison) Result { return c.Hub }},
	} {
		row := []string{t.name, "-"}
		if seq != nil {
			row[1] = fmt.Sprintf("%.2f", t.pick(*seq).P50Ms)
		}
		var vs []string
		for _, c := range multi {
			row = append(row, fmt.Sprintf("%.0f", t.pick(c).CallsPerSec))
			switch t.name {
			case "mcp-hub":
				vs = append(vs, fmt.Sprintf("%.2fx", c.HubVsProxy))
			case "bare proxy":
				vs = append(vs, "1x")
			}
		}
		var own, up []string
		for _, c := range r.Comparisons {
			res := t.pick(c)
			own, up = append(own, fmt.Sprintf("%.0f", res.CPUUsPerCall)), append(up, fmt.Sprintf("%.0f", res.UpstreamCPUUsPerCall))
		}
		ownCol := strings.Join(own, " / ")
		if t.name == "direct" {
			ownCol = "-"
		}
		row = append(row, strings.Join(vs, " / "), ownCol, strings.Join(up, " / "))
		fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
	}
	fmt.Fprintln(w)
}
