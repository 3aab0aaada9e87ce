package guardrails

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/purko-io/mcp-hub/internal/hubtest"
	"github.com/purko-io/mcp-hub/internal/toolspec"
)

// BenchmarkFilterResult is what both content filters cost a 100 KB result
// (redacting what they find), against the result itself (b.SetBytes); and
// a 100 KB result of prose that their prefilters pass over (what looking
// for encoded text in it costs).
func BenchmarkFilterResult(b *testing.B) {
	prose, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text",
		"text": strings.Repeat("The quick brown fox jumps over a lazy dog; I said it twice. ", 1700)}}})
	for _, tc := range []struct {
		name     string
		findings bool
		raw      []byte
	}{{"clean", false, hubtest.ResultPage(false)}, {"two findings", true, hubtest.ResultPage(true)}, {"passed over", false, prose}} {
		b.Run(tc.name, func(b *testing.B) {
			g := New(Options{})
			spec := &toolspec.Guardrails{ContentFilters: []string{"pii", "secrets"}}
			raw := tc.raw
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
