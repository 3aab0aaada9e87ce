package resultcap

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestApplyShape: a resources/read or prompts/get result over the cap keeps
// its first characters and ends with the notice, in the shape's own items;
// blobs are kept; a result within the cap is returned as it is.
func TestApplyShape(t *testing.T) {
	long := strings.Repeat("é", 400)
	for _, tc := range []struct {
		name   string
		shape  Shape
		raw    string
		member string
		cut    bool
	}{
		{"resource within the cap", Resource, `{"contents":[{"uri":"a://x","text":"short"}]}`, "contents", false},
		{"resource text cut", Resource, `{"contents":[{"uri":"a://x","text":"` + long + `"},{"uri":"a://b","blob":"AAAA"}]}`, "contents", true},
		{"prompt message cut", Prompt, `{"description":"d","messages":[{"role":"user","content":{"type":"text","text":"` + long + `"}}]}`, "messages", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, rep, err := ApplyShape(tc.shape, json.RawMessage(tc.raw), 250, "upstream.maxResultChars")
			if err != nil {
				t.Fatal(err)
			}
			if !tc.cut {
				if rep != nil || string(out) != tc.raw {
					t.Fatalf("cut %s: %s", tc.raw, out)
				}
				return
			}
			if rep == nil || rep.TextTotal != 400 || rep.TextKept >= 250 {
				t.Fatalf("report %+v", rep)
			}
			var top map[string]json.RawMessage
			var items []map[string]json.RawMessage
			if err := json.Unmarshal(out, &top); err != nil || json.Unmarshal(top[tc.member], &items) != nil {
				t.Fatalf("%v: %s", err, out)
			}
			chars := 0
			notice := false
			for _, it := range items {
				var text string
				if tc.shape == Prompt {
					var c struct{ Text string }
					_ = json.Unmarshal(it["content"], &c)
					text = c.Text
				} else {
					_ = json.Unmarshal(it["text"], &text)
					if _, ok := it["uri"]; !ok {
						t.Errorf("item without uri: %v", it)
					}
				}
				chars += utf8.RuneCountInString(text)
				notice = notice || strings.Contains(text, "upstream.maxResultChars")
			}
			if chars > 250 || !notice {
				t.Fatalf("%d characters, notice %v: %s", chars, notice, out)
			}
			if tc.shape == Resource && !strings.Contains(string(out), `"blob":"AAAA"`) {
				t.Fatalf("blob dropped: %s", out)
			}
		})
	}
}
