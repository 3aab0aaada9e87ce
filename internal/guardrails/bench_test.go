package guardrails

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/purko-io/mcp-hub/internal/hubtest"
	"github.com/purko-io/mcp-hub/internal/toolspec"
)

// BenchmarkFilterResult is what both content filters cost a 100 KB result
// (redacting what they find), against the result itself (b.SetBytes).
func BenchmarkFilterResult(b *testing.B) {
	for _, tc := range []struct {
		name     string
		findings bool
	}{{"clean", false}, {"two findings", true}} {
		b.Run(tc.name, func(b *testing.B) {
			g := New(Options{})
			spec := &toolspec.Guardrails{ContentFilters: []string{"pii", "secrets"}}
			raw := hubtest.ResultPage(tc.findings)
			out, rep, err := g.Filter(context.Background(), spec, Result, raw)
			if err != nil || rep.Found() != tc.findings || !json.Valid(out) {
				b.Fatalf("report %+v, error %v", rep, err)
			}
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				if _, _, err := g.Filter(context.Background(), spec, Result, raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
