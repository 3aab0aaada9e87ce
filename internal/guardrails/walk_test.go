package guardrails

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestRewriteStrings: every string value is offered unescaped, object
// names and base64 members are not, changed strings are encoded again in
// place and the rest is copied byte for byte; a document with no change
// is returned as it came.
func TestRewriteStrings(t *testing.T) {
	upper := func(s string) (string, bool, error) {
		if !strings.Contains(s, "x") {
			return "", false, nil
		}
		return strings.ToUpper(s), true, nil
	}
	tests := []struct {
		name, in, want string
	}{
		{"nothing to change", `{"a": "b", "n": [1, true, null]}`, `{"a": "b", "n": [1, true, null]}`},
		{"values, not names", `{"x": "x1", "y" : ["ax", {"x":"x"}]}`, `{"x": "X1", "y" : ["AX", {"x":"X"}]}`},
		{"escapes read and written", `{"t":"line\nx \"q\" \u00e9"}`, `{"t":"LINE\nX \"Q\" É"}`},
		{"base64 left alone", `{"content":[{"type":"image","data":"xx=="},{"blob":"xy"},{"text":"x"}]}`, `{"content":[{"type":"image","data":"xx=="},{"blob":"xy"},{"text":"X"}]}`},
		{"a string in an array named data is no member", `{"data":{"v":"x"},"list":["x"]}`, `{"data":{"v":"X"},"list":["X"]}`},
		{"top-level string", `"x"`, `"X"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := []byte(tt.in)
			out, err := rewriteStrings(in, upper)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tt.want || !json.Valid(out) {
				t.Fatalf("got %s, want %s", out, tt.want)
			}
			if tt.in == tt.want && &out[0] != &in[0] {
				t.Fatal("an unchanged document was copied")
			}
		})
	}
	if _, err := rewriteStrings([]byte(`{"a":"x"`), upper); err == nil {
		t.Fatal("a truncated document was accepted")
	}
}
