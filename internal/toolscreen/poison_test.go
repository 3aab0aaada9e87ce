package toolscreen

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// corpusClass is one file of testdata/poisoned: poisoned definitions of
// one kind of disguise, each from a published example or constructed
// after one (testdata/poisoned/SOURCES.md says which, and under what
// licence).
type corpusClass struct {
	Class    string `json:"class"`
	Variants []struct {
		ID     string `json:"id"`
		Source string `json:"source"`
		// Kind is what the definition is: tool, prompt, resource,
		// template, or instructions (a string: what a server says at
		// initialize).
		Kind       string          `json:"kind"`
		Want       []string        `json:"want"`
		Definition json.RawMessage `json:"definition"`
	} `json:"variants"`
}

// screenAs screens a corpus definition as the hub's client decodes it.
func screenAs(sc *Screener, kind string, def json.RawMessage) ([]Hit, error) {
	switch kind {
	case "tool":
		return screenJSON(def, sc.Screen)
	case "prompt":
		return screenJSON(def, sc.ScreenPrompt)
	case "resource":
		return screenJSON(def, sc.ScreenResource)
	case "template":
		return screenJSON(def, sc.ScreenTemplate)
	case "instructions":
		return screenJSON(def, sc.ScreenInstructions)
	}
	return nil, fmt.Errorf("unknown kind %q", kind)
}

func screenJSON[T any](def json.RawMessage, screen func(T) []Hit) ([]Hit, error) {
	var v T
	if err := json.Unmarshal(def, &v); err != nil {
		return nil, err
	}
	return screen(v), nil
}

// TestPoisonedCorpusIsCaught: every poisoned definition of the corpus is
// caught, by at least the rules it is known for; the count of each class
// is printed (go test -v -run TestPoisonedCorpusIsCaught).
func TestPoisonedCorpusIsCaught(t *testing.T) {
	sources, err := os.ReadFile("testdata/poisoned/SOURCES.md")
	if err != nil {
		t.Fatal(err)
	}
	sc := New()
	total, caught := 0, 0
	var summary []string
	for _, c := range readTestdata[corpusClass](t, "testdata/poisoned/*.json") {
		n := 0
		for _, v := range c.Variants {
			t.Run(c.Class+"/"+v.ID, func(t *testing.T) {
				if !strings.Contains(string(sources), "`"+v.Source+"`") {
					t.Errorf("source %q is not in SOURCES.md", v.Source)
				}
				hits, err := screenAs(sc, v.Kind, v.Definition)
				if err != nil {
					t.Fatalf("fixture: %v", err)
				}
				var rules []string
				for _, h := range hits {
					rules = append(rules, h.Rule)
					if len(h.Reason) > 300 {
						t.Errorf("reason too long (%d): %s", len(h.Reason), h.Reason)
					}
				}
				if len(hits) > 0 {
					n++
				}
				for _, w := range v.Want {
					if !slices.Contains(rules, w) {
						t.Errorf("want %s among the hits, got %s", w, Summary(hits))
					}
				}
				if len(hits) == 0 {
					t.Errorf("not caught")
				}
				t.Logf("%s", Summary(hits))
			})
		}
		total += len(c.Variants)
		caught += n
		summary = append(summary, fmt.Sprintf("%s %d/%d", c.Class, n, len(c.Variants)))
	}
	t.Logf("caught per class: %s; all: %d/%d", strings.Join(summary, ", "), caught, total)
	if total < 40 {
		t.Errorf("the corpus holds %d variants; want at least 40", total)
	}
}
