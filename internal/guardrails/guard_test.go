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
