package detect

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type corpusItem struct {
	Text    string   `json:"text"`
	PII     []string `json:"pii"`
	Secrets []string `json:"secrets"`
	Note    string   `json:"note"`
}

func readCorpus(t testing.TB) []corpusItem {
	t.Helper()
	return readItems(t, filepath.Join("testdata", "corpus.jsonl"))
}

// readItems reads a file of JSON lines with (at least) a corpus item's
// members; the held-out corpus's files have these and more.
func readItems(t testing.TB, name string) []corpusItem {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var items []corpusItem
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for line := 1; sc.Scan(); line++ {
		var it corpusItem
		if err := json.Unmarshal(sc.Bytes(), &it); err != nil {
			t.Fatalf("%s:%d: %v", name, line, err)
		}
		items = append(items, it)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return items
}

// score counts, for one item and one filter, true positives (findings
// overlapping an expected substring), false positives (findings overlapping
// none) and false negatives (expected substrings no finding overlaps).
type score struct{ tp, fp, fn int }

func (s *score) add(o score) { s.tp += o.tp; s.fp += o.fp; s.fn += o.fn }

func (s score) precision() float64 {
	if s.tp+s.fp == 0 {
		return 1
	}
	return float64(s.tp) / float64(s.tp+s.fp)
}

func (s score) recall() float64 {
	if s.tp+s.fn == 0 {
		return 1
	}
	return float64(s.tp) / float64(s.tp+s.fn)
}

// scoreItem matches findings against expected substrings (every occurrence
// of each counts as expected).
func scoreItem(text string, want []string, got []Finding) (score, []string) {
	type span struct{ start, end int }
	var spans []span
	for _, w := range want {
		for off := 0; ; {
			i := strings.Index(text[off:], w)
			if i < 0 {
				break
			}
			spans = append(spans, span{off + i, off + i + len(w)})
			off += i + len(w)
		}
	}
	var s score
	var why []string
	hit := make([]bool, len(spans))
	for _, f := range got {
		ok := false
		for i, sp := range spans {
			if f.Start < sp.end && sp.start < f.End {
				hit[i], ok = true, true
			}
		}
		if ok {
			s.tp++
		} else {
			s.fp++
			why = append(why, fmt.Sprintf("false positive %s at %d:%d", f.Rule, f.Start, f.End))
		}
	}
	for i, h := range hit {
		if !h {
			s.fn++
			why = append(why, fmt.Sprintf("false negative at %d:%d", spans[i].start, spans[i].end))
		}
	}
	return s, why
}

// TestCorpusQuality runs both detectors on the labelled corpus and
// requires precision >= 0.95 and recall >= 0.90 for each. Failures print
// the item's note and offsets, never the text.
func TestCorpusQuality(t *testing.T) {
	items := readCorpus(t)
	if len(items) < 300 {
		t.Fatalf("corpus has %d items, want >= 300", len(items))
	}
	pii, secrets := NewPII(), NewSecrets()
	var ps, ss score
	var pPos, pNeg, sPos, sNeg int
	for i, it := range items {
		if len(it.PII) > 0 {
			pPos++
		} else {
			pNeg++
		}
		if len(it.Secrets) > 0 {
			sPos++
		} else {
			sNeg++
		}
		got := pii.Find(it.Text, nil)
		s, why := scoreItem(it.Text, it.PII, got)
		ps.add(s)
		for _, w := range why {
			t.Logf("pii item %d (%s): %s", i+1, it.Note, w)
		}
		if len(got) > 0 && !(pii.Maybe(jsonString(it.Text)) && pii.Maybe(jsonEscaped(it.Text))) {
			t.Errorf("pii item %d (%s): Maybe false on its JSON string, Find found %d", i+1, it.Note, len(got))
		}
		sg, err := secrets.Find(context.Background(), it.Text, nil)
		if err != nil {
			t.Fatal(err)
		}
		s, why = scoreItem(it.Text, it.Secrets, sg)
		ss.add(s)
		for _, w := range why {
			t.Logf("secrets item %d (%s): %s", i+1, it.Note, w)
		}
		if len(sg) > 0 && !(secrets.Maybe(jsonString(it.Text)) && secrets.Maybe(jsonEscaped(it.Text))) {
			t.Errorf("secrets item %d (%s): Maybe false on its JSON string, Find found %d", i+1, it.Note, len(sg))
		}
	}
	report := fmt.Sprintf("corpus: %d items; pii: %d with findings, %d without; secrets: %d with, %d without\n"+
		"pii:     precision %.3f recall %.3f (tp %d fp %d fn %d)\n"+
		"secrets: precision %.3f recall %.3f (tp %d fp %d fn %d)",
		len(items), pPos, pNeg, sPos, sNeg,
		ps.precision(), ps.recall(), ps.tp, ps.fp, ps.fn,
		ss.precision(), ss.recall(), ss.tp, ss.fp, ss.fn)
	t.Log(report)
	if testing.Verbose() {
		fmt.Println(report)
	}
	for _, f := range []struct {
		name string
		s    score
	}{{"pii", ps}, {"secrets", ss}} {
		if f.s.precision() < 0.95 || f.s.recall() < 0.90 {
			t.Errorf("%s: precision %.3f recall %.3f, want >= 0.95 and >= 0.90", f.name, f.s.precision(), f.s.recall())
		}
	}
}

// jsonString is text as a JSON document: a string, escaped as Go escapes it.
func jsonString(text string) []byte {
	b, _ := json.Marshal(text)
	return b
}

// jsonEscaped is text as a JSON string with every other character written
// as a \uXXXX escape: what Maybe must see through.
func jsonEscaped(text string) []byte {
	var b strings.Builder
	b.WriteByte('"')
	for i, r := range text {
		if i%2 == 0 || r == '"' || r == '\\' || r < 0x20 {
			fmt.Fprintf(&b, "\\u%04x", r)
		} else {
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return []byte(b.String())
}
