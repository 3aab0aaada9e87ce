package guardrails

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/purko-io/mcp-hub/internal/guardrails/detect"
	"github.com/purko-io/mcp-hub/internal/guardrails/normalize"
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

// BenchmarkFilterStages is where BenchmarkFilterResult's clean case
// spends its time: each pass Filter makes over the 100 KB result, alone.
// The passes add up to the whole; a one-pass design (issue 35) would
// replace them with one automaton over the bytes, whose floor on this
// machine is about what the secrets detector's keyword automaton alone
// costs (a DFA step per byte).
func BenchmarkFilterStages(b *testing.B) {
	raw := hubtest.ResultPage(false)
	var doc struct{ Content []struct{ Text string } }
	if err := json.Unmarshal(raw, &doc); err != nil || len(doc.Content) != 1 {
		b.Fatalf("the result page: %v", err)
	}
	text := doc.Content[0].Text
	pii, secrets := detect.NewPII(), detect.NewSecrets()
	var reader normalize.Reader
	ctx := context.Background()
	if _, err := secrets.Find(ctx, text, nil); err != nil { // compile the rules
		b.Fatal(err)
	}
	for _, st := range []struct {
		name string
		run  func()
	}{
		{"pii prefilter", func() { pii.Maybe(raw) }},
		{"secrets prefilter", func() { secrets.Maybe(raw) }},
		{"walk", func() { _, _ = rewriteStrings(raw, nopEditor{}) }},
		{"readings", func() { reader.Views(text, nil) }},
		{"secrets", func() { _, _ = secrets.Find(ctx, text, nil) }},
		{"pii", func() { pii.Find(text, nil) }},
	} {
		b.Run(st.name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				st.run()
			}
		})
	}
}

// nopEditor changes nothing: the walk alone.
type nopEditor struct{}

func (nopEditor) edit([]string) ([]string, error) { return nil, nil }
func (nopEditor) binary(string) bool              { return false }
