package guardrails

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/purko-io/mcp-hub/internal/toolspec"
)

// TestFilterFindsBothInOneString: an address and a key in one string are
// both redacted, whichever comes first; a regex filter's match beside them
// too.
func TestFilterFindsBothInOneString(t *testing.T) {
	g := New(Options{})
	spec := &toolspec.Guardrails{ContentFilters: []string{"pii", "secrets", `regex:T-\d+:[ticket]`}}
	for _, text := range []string{
		"a olga@fabrikam.de AKIAZ3MSJV5WKQ7TYRXB in it, T-7",
		"T-7: AKIAZ3MSJV5WKQ7TYRXB then olga@fabrikam.de",
	} {
		raw, _ := json.Marshal(map[string]string{"text": text})
		out, rep, err := g.Filter(context.Background(), spec, Result, raw)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"[redacted: email]", "[redacted: aws-access-token]", "[ticket]"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("%q filtered to %s: no %s", text, out, want)
			}
		}
		if len(rep.Hits) != 3 {
			t.Errorf("%q: hits %+v, want email, aws-access-token and regex-1", text, rep.Hits)
		}
	}
}

// TestFilterLargeDocument: in a document of overlapFrom bytes or more
// with a secrets keyword, PII's prefilter runs beside the walk, and a long
// string's readings are worked out and PII run on it beside the secrets
// detector; what they let through is found in a long string as it is and
// in its readings (a zero-width space, base64), in a short one and in a
// join of parts, and a document without personal data keeps its bytes.
func TestFilterLargeDocument(t *testing.T) {
	g := New(Options{})
	spec := &toolspec.Guardrails{ContentFilters: []string{"pii", "secrets"}}
	filler := strings.Repeat("The deploy token rotates after the release, see the runbook. ", overlapFrom/60+1)
	cases := []struct {
		name string
		doc  any
		want []string // markers; none: the document comes back as it was
	}{
		{"clean", map[string]any{"content": []any{map[string]any{"type": "text", "text": filler}}}, nil},
		{"in the long string", map[string]any{"content": []any{map[string]any{"type": "text", "text": filler + " write to olga.kowalska@fabrikam.de or call +49 30 901820 12"}}},
			[]string{"[redacted: email]", "[redacted: phone]"}},
		{"in a short string, before the long one", map[string]any{"author": "olga.kowalska@fabrikam.de", "content": []any{map[string]any{"type": "text", "text": filler}}},
			[]string{"[redacted: email]"}},
		{"in two long strings", map[string]any{"body": filler + " olga.kowalska@fabrikam.de", "content": []any{map[string]any{"type": "text", "text": filler + " piotr.nowak@fabrikam.de"}}},
			[]string{"[redacted: email]"}},
		{"hidden in the long string", map[string]any{"content": []any{map[string]any{"type": "text", "text": filler + " mail olga.kowal\u200bska@fabrikam.de, config YXdzX2FjY2Vzc19rZXlfaWQgPSBBS0lBWjNNU0pWNVdLUTdUWVJYQg== end"}}},
			[]string{"[redacted: email]", "[redacted: aws-access-token]"}},
		{"across two parts", map[string]any{"content": []any{map[string]any{"type": "text", "text": filler + " olga.kowalska@fab"}, map[string]any{"type": "text", "text": "rikam.de wrote"}}},
			[]string{"[redacted: email]"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			raw, _ := json.Marshal(tc.doc)
			if len(raw) < overlapFrom {
				t.Fatalf("the document has %d bytes, fewer than %d", len(raw), overlapFrom)
			}
			out, rep, err := g.Filter(context.Background(), spec, Result, raw)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == nil {
				if string(out) != string(raw) || rep.Found() {
					t.Fatalf("a clean document changed (hits %+v)", rep.Hits)
				}
				return
			}
			for _, w := range tc.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("no %s in the result (hits %+v)", w, rep.Hits)
				}
			}
			if strings.Contains(string(out), "fabrikam") || strings.Contains(string(out), "YXdz") {
				t.Errorf("the address is left in part: %s", out[len(out)-200:])
			}
		})
	}
}
