package normalize

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/purko-io/mcp-hub/internal/hubtest"
)

// BenchmarkViews is what reading costs the text of the content filters'
// 100 KB result (hubtest.ResultPage), which holds nothing to undo but
// commit hashes to try and long JSON words.
func BenchmarkViews(b *testing.B) {
	var page struct {
		Content []struct{ Text string }
	}
	if err := json.Unmarshal(hubtest.ResultPage(false), &page); err != nil {
		b.Fatal(err)
	}
	s := page.Content[0].Text
	var r Reader
	views := r.Views(s, nil)
	if len(views) != 1 || !views[0].Verbatim() {
		b.Fatalf("%d readings", len(views))
	}
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		views = r.Views(s, views[:0])
	}
}

// BenchmarkMayHide is what the look for hidden text costs a 100 KB
// document of prose that the detectors' prefilters pass over, and the
// content filters' page (JSON text, many escapes).
func BenchmarkMayHide(b *testing.B) {
	prose, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text",
		"text": strings.Repeat("The quick brown fox jumps over a lazy dog; I said it twice. ", 1700)}}})
	for name, raw := range map[string][]byte{"prose": prose, "page": hubtest.ResultPage(false)} {
		b.Run(name, func(b *testing.B) {
			var r Reader
			if r.MayHide(raw) {
				b.Fatal("hides")
			}
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				r.MayHide(raw)
			}
		})
	}
}
