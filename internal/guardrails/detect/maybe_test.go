package detect

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf16"
)

// TestMaybeOnHeldOut: Maybe is true on every text of the held-out
// personal-data corpus (internal/guardrails/testdata/heldout) in which Find
// finds anything, as a JSON string, with every other character a \uXXXX
// escape, and with every non-ASCII one escaped (as Python's json.dumps
// writes by default): the readers of ids, labels and Unicode addresses it shares
// with Find must not lose a finding to the raw bytes.
func TestMaybeOnHeldOut(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "testdata", "heldout", "pii*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no held-out personal-data corpus: %v", err)
	}
	p := NewPII()
	found := 0
	for _, name := range files {
		for line, it := range readItems(t, name) {
			if len(p.Find(it.Text, nil)) == 0 {
				continue
			}
			found++
			if !p.Maybe(jsonString(it.Text)) || !p.Maybe(jsonEscaped(it.Text)) || !p.Maybe(asciiJSON(it.Text)) {
				t.Errorf("%s:%d: Maybe false on a text Find finds something in", name, line+1)
			}
		}
	}
	if found < 500 {
		t.Errorf("Find found something in %d held-out texts, want hundreds", found)
	}
}

// asciiJSON is text as a JSON string with every non-ASCII character
// escaped (surrogate pairs beyond the BMP).
func asciiJSON(text string) []byte {
	var b strings.Builder
	s := string(jsonString(text))
	for _, r := range s {
		switch {
		case r < 0x80:
			b.WriteRune(r)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&b, "\\u%04x\\u%04x", r1, r2)
		default:
			fmt.Fprintf(&b, "\\u%04x", r)
		}
	}
	return []byte(b.String())
}
