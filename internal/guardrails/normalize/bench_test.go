package normalize

import (
	"encoding/json"
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
