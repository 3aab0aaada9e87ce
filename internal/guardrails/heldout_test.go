package guardrails

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/purko-io/mcp-hub/internal/guardrails/detect"
	"github.com/purko-io/mcp-hub/internal/toolspec"
)

// The held-out corpus (issue 35): labelled items built from public
// material, not beside the detectors (testdata/heldout/SOURCES.md names
// each source and licence). Unlike detect's corpus test, which scores the
// detectors' findings, this one scores what a caller receives: each item
// goes through Guard.Filter as a tool result and as arguments, and a value
// counts as caught only when one redaction covers it whole, so a redaction
// that leaves part of an address or the tail of a token is a miss.

// heldOutItem is one line of a testdata/heldout/*.jsonl file: pii and
// secrets list the exact substrings of text each filter must redact whole
// (every occurrence counts); an item with both empty is a hard negative.
type heldOutItem struct {
	Text     string   `json:"text"`
	PII      []string `json:"pii"`
	Secrets  []string `json:"secrets"`
	Category string   `json:"category"` // e.g. secret/connection-string, pii/phone-national, negative/hash
	Source   string   `json:"source"`   // a key of SOURCES.md
}

// Held-out goals of issue 35: precision and recall of each filter, and the
// corpus's least size.
const (
	heldOutMinPrecision = 0.95
	heldOutMinRecall    = 0.95
	heldOutMinPositives = 1000
	heldOutMinNegatives = 1000
)

func readHeldOut(t *testing.T) (items []heldOutItem, files []string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "heldout", "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for line := 1; sc.Scan(); line++ {
			var it heldOutItem
			if err := json.Unmarshal(sc.Bytes(), &it); err != nil {
				t.Fatalf("%s:%d: %v", name, line, err)
			}
			for _, v := range append(slices.Clone(it.PII), it.Secrets...) {
				if v == "" || !strings.Contains(it.Text, v) {
					t.Fatalf("%s:%d: labelled value %q is not in the text", name, line, v)
				}
			}
			if it.Category == "" || it.Source == "" {
				t.Fatalf("%s:%d: an item names its category and source", name, line)
			}
			items = append(items, it)
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return items, files
}

// markerRE is a redaction marker of the pii and secrets filters.
var markerRE = regexp.MustCompile(`\[redacted: ([a-z0-9-]+)\]`)

// redaction is one span of the input a marker replaced, and its rule.
type redaction struct {
	start, end int
	rule       string
}

// redactions recovers which spans of in became which markers of out: out
// is in with spans replaced by markers, so in matches out's literal parts
// with a group in place of each marker. The groups are lazy and anchored:
// the alignment is unique unless a redacted span ends with the text that
// follows it, which the corpus does not hold.
func redactions(in, out string) ([]redaction, error) {
	marks := markerRE.FindAllStringSubmatchIndex(out, -1)
	if len(marks) == 0 {
		if in != out {
			return nil, fmt.Errorf("output changed without a marker")
		}
		return nil, nil
	}
	var pat strings.Builder
	pat.WriteString(`(?s)^`)
	last := 0
	for _, m := range marks {
		pat.WriteString(regexp.QuoteMeta(out[last:m[0]]))
		pat.WriteString(`(.+?)`)
		last = m[1]
	}
	pat.WriteString(regexp.QuoteMeta(out[last:]))
	pat.WriteString(`$`)
	re, err := regexp.Compile(pat.String())
	if err != nil {
		return nil, err
	}
	g := re.FindStringSubmatchIndex(in)
	if g == nil {
		return nil, fmt.Errorf("output is not the input with spans replaced by markers")
	}
	rs := make([]redaction, len(marks))
	for i, m := range marks {
		rs[i] = redaction{start: g[2+2*i], end: g[3+2*i], rule: out[m[2]:m[3]]}
	}
	return rs, nil
}

// heldOutScore counts caught values (tp), values missed or cut (fn) and
// redactions that cover no labelled value (fp).
type heldOutScore struct{ tp, fp, fn int }

func (s heldOutScore) precision() float64 {
	if s.tp+s.fp == 0 {
		return 1
	}
	return float64(s.tp) / float64(s.tp+s.fp)
}

func (s heldOutScore) recall() float64 {
	if s.tp+s.fn == 0 {
		return 1
	}
	return float64(s.tp) / float64(s.tp+s.fn)
}

// filterText runs the filters over text as a tool result's text part, or
// as an argument (per direction), and returns what the caller would read.
func filterText(t *testing.T, g *Guard, spec *toolspec.Guardrails, direction, text string) string {
	t.Helper()
	var raw []byte
	if direction == Result {
		raw, _ = json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "text": text}}})
	} else {
		raw, _ = json.Marshal(map[string]string{"query": text})
	}
	out, _, err := g.Filter(context.Background(), spec, direction, raw)
	if err != nil {
		t.Fatalf("filter the %s: %v", direction, err)
	}
	if direction == Result {
		var res struct {
			Content []struct{ Text string } `json:"content"`
		}
		if err := json.Unmarshal(out, &res); err != nil || len(res.Content) != 1 {
			t.Fatalf("filtered result %s: %v", out, err)
		}
		return res.Content[0].Text
	}
	var args struct{ Query string }
	if err := json.Unmarshal(out, &args); err != nil {
		t.Fatalf("filtered arguments %s: %v", out, err)
	}
	return args.Query
}

// TestHeldOutQuality holds the pii and secrets filters to P and R >= 0.95
// on the held-out corpus, in both directions, and prints both per
// category. Failures print the item's file line, category and offsets,
// never the text (which holds rule-matching credentials).
func TestHeldOutQuality(t *testing.T) {
	items, files := readHeldOut(t)
	g := New(Options{})
	spec := &toolspec.Guardrails{ContentFilters: []string{toolspec.FilterPII, toolspec.FilterSecrets}}
	total := map[string]*heldOutScore{toolspec.FilterPII: {}, toolspec.FilterSecrets: {}}
	byCat := map[string]*heldOutScore{}
	positives, negatives := 0, 0
	for i, it := range items {
		if len(it.PII)+len(it.Secrets) == 0 {
			negatives++
		} else {
			positives++
		}
		out := filterText(t, g, spec, Result, it.Text)
		if args := filterText(t, g, spec, Arguments, it.Text); args != out {
			t.Errorf("item %d (%s): the arguments are filtered otherwise than the result", i+1, it.Category)
		}
		rs, err := redactions(it.Text, out)
		if err != nil {
			t.Errorf("item %d (%s): %v", i+1, it.Category, err)
			continue
		}
		cat := byCat[it.Category]
		if cat == nil {
			cat = &heldOutScore{}
			byCat[it.Category] = cat
		}
		used := make([]bool, len(rs))
		for _, lab := range []struct {
			filter string
			values []string
		}{{toolspec.FilterPII, it.PII}, {toolspec.FilterSecrets, it.Secrets}} {
			for _, v := range lab.values {
				for off := 0; ; {
					j := strings.Index(it.Text[off:], v)
					if j < 0 {
						break
					}
					start, end := off+j, off+j+len(v)
					off = end
					caught := false
					for k, r := range rs {
						if r.start < end && start < r.end {
							used[k] = true
							caught = caught || r.start <= start && end <= r.end
						}
					}
					if caught {
						total[lab.filter].tp++
						cat.tp++
					} else {
						total[lab.filter].fn++
						cat.fn++
						t.Logf("item %d (%s, %s): %s value at %d:%d not redacted whole", i+1, it.Category, it.Source, lab.filter, start, end)
					}
				}
			}
		}
		for k, r := range rs {
			if !used[k] {
				f := toolspec.FilterSecrets
				if detect.IsPIIRule(r.rule) {
					f = toolspec.FilterPII
				}
				total[f].fp++
				cat.fp++
				t.Logf("item %d (%s, %s): false positive %s at %d:%d", i+1, it.Category, it.Source, r.rule, r.start, r.end)
			}
		}
	}
	cats := make([]string, 0, len(byCat))
	for c := range byCat {
		cats = append(cats, c)
	}
	sort.Strings(cats)
	var b strings.Builder
	fmt.Fprintf(&b, "held-out corpus: %d items (%d with values, %d hard negatives) from %d files\n", len(items), positives, negatives, len(files))
	fmt.Fprintf(&b, "%-40s %5s %5s %5s %9s %7s\n", "category", "tp", "fp", "fn", "precision", "recall")
	for _, c := range cats {
		s := byCat[c]
		fmt.Fprintf(&b, "%-40s %5d %5d %5d %9.3f %7.3f\n", c, s.tp, s.fp, s.fn, s.precision(), s.recall())
	}
	for _, f := range []string{toolspec.FilterSecrets, toolspec.FilterPII} {
		s := total[f]
		fmt.Fprintf(&b, "%-40s %5d %5d %5d %9.3f %7.3f\n", "ALL "+f, s.tp, s.fp, s.fn, s.precision(), s.recall())
	}
	t.Log("\n" + b.String())
	if positives < heldOutMinPositives || negatives < heldOutMinNegatives {
		t.Errorf("held-out corpus: %d items with values and %d hard negatives, want at least %d and %d", positives, negatives, heldOutMinPositives, heldOutMinNegatives)
	}
	for _, f := range []string{toolspec.FilterSecrets, toolspec.FilterPII} {
		if s := total[f]; s.precision() < heldOutMinPrecision || s.recall() < heldOutMinRecall {
			t.Errorf("%s filter on the held-out corpus: precision %.3f, recall %.3f, want >= %.2f and >= %.2f", f, s.precision(), s.recall(), heldOutMinPrecision, heldOutMinRecall)
		}
	}
}

// TestRedactionsAlignment: the scoring recovers the spans a filter
// replaced, so that a cut redaction scores as a miss.
func TestRedactionsAlignment(t *testing.T) {
	for _, tc := range []struct {
		in, out string
		want    []redaction
		bad     bool
	}{
		{in: "a b", out: "a b"},
		{in: "mail x@y.io now", out: "mail [redacted: email] now", want: []redaction{{5, 11, "email"}}},
		{in: "josé.pérez@correo.es", out: "josé.pé[redacted: email]", want: []redaction{{9, 22, "email"}}},
		{in: "k=AKIA1 and x@y.io", out: "k=[redacted: aws-access-token] and [redacted: email]", want: []redaction{{2, 7, "aws-access-token"}, {12, 18, "email"}}},
		{in: "abc", out: "abd", bad: true},
		{in: "abc", out: "xyz[redacted: email]", bad: true},
	} {
		got, err := redactions(tc.in, tc.out)
		if (err != nil) != tc.bad {
			t.Errorf("redactions(%q, %q): error %v, want error %v", tc.in, tc.out, err, tc.bad)
			continue
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("redactions(%q, %q) = %+v, want %+v", tc.in, tc.out, got, tc.want)
		}
	}
}
