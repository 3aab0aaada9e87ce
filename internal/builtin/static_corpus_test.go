package builtin

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestStaticCorpusPrecisionRecall measures the tool on a labelled corpus:
// each (file, rule) pair the manifest expects is a positive. It requires
// precision and recall of at least 0.9, so a rule change that trades one
// for the other shows up here and not in production.
func TestStaticCorpusPrecisionRecall(t *testing.T) {
	dir := filepath.Join("testdata", "static")
	raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Files map[string][]string `json:"files"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Files) < 30 {
		t.Fatalf("corpus has %d files, want >= 30", len(m.Files))
	}
	names := make([]string, 0, len(m.Files))
	for n := range m.Files {
		names = append(names, n)
	}
	sort.Strings(names)
	_, h := StaticAnalysis(StaticOptions{})
	tp, fp, fn := 0, 0, 0
	for _, name := range names {
		code, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil {
			t.Fatalf("manifest lists %s: %v", name, err)
		}
		// No language argument: detection from the filename is part of the test.
		rep := analyse(t, h, map[string]any{"code": string(code), "filename": strings.TrimSuffix(name, ".txt")})
		got := rulesOf(rep)
		want := map[string]bool{}
		for _, r := range m.Files[name] {
			want[r] = true
		}
		for r := range want {
			if got[r] {
				tp++
			} else {
				fn++
				t.Logf("MISS %s: expected %s; got %+v", name, r, rep.Findings)
			}
		}
		for r := range got {
			if !want[r] {
				fp++
				t.Logf("FALSE POSITIVE %s: %s; findings %+v", name, r, rep.Findings)
			}
		}
	}
	precision := float64(tp) / float64(max(tp+fp, 1))
	recall := float64(tp) / float64(max(tp+fn, 1))
	t.Logf("corpus: %d files, TP=%d FP=%d FN=%d precision=%.3f recall=%.3f", len(names), tp, fp, fn, precision, recall)
	if precision < 0.9 || recall < 0.9 {
		t.Errorf("precision %.3f / recall %.3f below 0.9", precision, recall)
	}
}
