package resultcap

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
)

const hint = "upstream.maxResultChars"

// textOf is the text a model reads in a result, and the result parsed.
func parse(t *testing.T, raw json.RawMessage) (*mcp.CallToolResult, []string) {
	t.Helper()
	res, err := mcp.ParseCallToolResult(&raw)
	if err != nil {
		t.Fatalf("cut result is not a valid tools/call result: %v\n%.300s", err, raw)
	}
	var texts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case mcp.TextContent:
			texts = append(texts, c.Text)
		case mcp.EmbeddedResource:
			if r, ok := c.Resource.(mcp.TextResourceContents); ok {
				texts = append(texts, r.Text)
			}
		}
	}
	return res, texts
}

func chars(texts []string) int {
	n := 0
	for _, s := range texts {
		n += utf8.RuneCountInString(s)
	}
	return n
}

func result(t *testing.T, r *mcp.CallToolResult) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestApplyKeepsWhatFits(t *testing.T) {
	small := result(t, mcp.NewToolResultText("hello"))
	image := result(t, mcp.NewToolResultImage("", strings.Repeat("A", 50000), "image/png"))
	for _, tc := range []struct {
		name  string
		raw   json.RawMessage
		limit int
	}{
		{"small", small, 1000},
		{"off", result(t, mcp.NewToolResultText(strings.Repeat("x", 5000))), 0},
		{"binary is not text", image, 1000},
		{"not a result object", json.RawMessage(`"` + strings.Repeat("x", 2000) + `"`), 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, rep, err := Apply(tc.raw, tc.limit, hint)
			if tc.name == "not a result object" {
				if err == nil {
					t.Fatalf("a string result was accepted: %.80s", out)
				}
				return
			}
			if err != nil || rep != nil || string(out) != string(tc.raw) {
				t.Fatalf("Apply changed a result that fits: err %v, report %+v, %.120s", err, rep, out)
			}
		})
	}
}

func TestApplyCutsText(t *testing.T) {
	const limit = 1000
	long := strings.Repeat("é", 700) + strings.Repeat("😀", 700) // 1400 characters, 4200 bytes
	for _, tc := range []struct {
		name    string
		res     *mcp.CallToolResult
		wantPre string // the kept text starts so
		total   int
		images  int
	}{
		{"one text part, multi-byte characters", mcp.NewToolResultText(long), strings.Repeat("é", 700) + "😀", 1400, 0},
		{"later parts dropped, images kept", &mcp.CallToolResult{Content: []mcp.Content{
			mcp.NewTextContent(strings.Repeat("a", 400)),
			mcp.NewImageContent(strings.Repeat("B", 3000), "image/png"),
			mcp.NewTextContent(strings.Repeat("b", 800)),
			mcp.NewTextContent(strings.Repeat("c", 800)),
		}}, strings.Repeat("a", 400) + "b", 2000, 1},
		{"embedded resource text", &mcp.CallToolResult{Content: []mcp.Content{
			mcp.NewEmbeddedResource(mcp.TextResourceContents{URI: "file:///x", MIMEType: "text/plain", Text: strings.Repeat("r", 3000)}),
		}}, strings.Repeat("r", 500), 3000, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, rep, err := Apply(result(t, tc.res), limit, hint)
			if err != nil {
				t.Fatal(err)
			}
			res, texts := parse(t, out)
			if rep == nil || rep.TextTotal != tc.total || rep.TextKept >= tc.total || rep.StructuredChars != 0 {
				t.Fatalf("report %+v, want %d characters in all, fewer kept", rep, tc.total)
			}
			if n := chars(texts); n > limit {
				t.Errorf("%d characters after the cut, limit %d", n, limit)
			}
			kept := strings.Join(texts[:len(texts)-1], "")
			if !strings.HasPrefix(kept, tc.wantPre) || utf8.RuneCountInString(kept) != rep.TextKept || !utf8.ValidString(kept) {
				t.Errorf("kept %d characters %.60q..., report says %d", utf8.RuneCountInString(kept), kept, rep.TextKept)
			}
			note := texts[len(texts)-1]
			for _, want := range []string{"[mcp-hub: result cut", hint, "Ask for less"} {
				if !strings.Contains(note, want) {
					t.Errorf("notice %q does not say %q", note, want)
				}
			}
			if strings.HasPrefix(note, "ERROR:") || res.IsError {
				t.Errorf("a cut result must not read as a failure: %q isError=%v", note, res.IsError)
			}
			images := 0
			for _, c := range res.Content {
				if _, ok := c.(mcp.ImageContent); ok {
					images++
				}
			}
			if images != tc.images {
				t.Errorf("%d images kept, want %d", images, tc.images)
			}
		})
	}
}

func TestApplyStructuredContent(t *testing.T) {
	const limit = 1000
	big := map[string]any{"rows": strings.Repeat("x", 2000)}
	small := map[string]any{"rows": 3}
	for _, tc := range []struct {
		name       string
		res        *mcp.CallToolResult
		dropped    bool
		wantChange bool
	}{
		{"too big: dropped, error result", mcp.NewToolResultStructured(big, "rows"), true, true},
		{"fits while text is cut: kept", mcp.NewToolResultStructured(small, strings.Repeat("t", 3000)), false, true},
		{"both fit", mcp.NewToolResultStructured(small, "3 rows"), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := result(t, tc.res)
			out, rep, err := Apply(raw, limit, hint)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.wantChange {
				if rep != nil || string(out) != string(raw) {
					t.Fatalf("changed: %+v", rep)
				}
				return
			}
			res, texts := parse(t, out)
			if got := res.StructuredContent == nil; got != tc.dropped {
				t.Fatalf("structured content dropped %v, want %v", got, tc.dropped)
			}
			if res.IsError != tc.dropped {
				t.Errorf("isError %v, want %v: without structured content a tool with an output schema must answer an error result", res.IsError, tc.dropped)
			}
			note := texts[len(texts)-1]
			if tc.dropped != strings.Contains(note, "structured content of") {
				t.Errorf("notice %q", note)
			}
			if n := chars(texts); n > limit {
				t.Errorf("%d characters, limit %d", n, limit)
			}
		})
	}
}

func TestApplyKeepsOtherMembers(t *testing.T) {
	raw := json.RawMessage(`{"content":[{"type":"text","text":"` + strings.Repeat("z", 3000) + `","annotations":{"priority":1}}],"_meta":{"k":"v"}}`)
	out, _, err := Apply(raw, 1000, hint)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Meta    map[string]string `json:"_meta"`
		Content []struct {
			Annotations map[string]any `json:"annotations"`
		} `json:"content"`
	}
	if err := json.Unmarshal(out, &got); err != nil || got.Meta["k"] != "v" || got.Content[0].Annotations["priority"] != float64(1) {
		t.Fatalf("members lost: %v %s", err, out)
	}
}

// FuzzApply: whatever the result, a cut one is valid JSON within the limit.
func FuzzApply(f *testing.F) {
	f.Add(`{"content":[{"type":"text","text":"abc"}]}`, 1000, 3)
	f.Add(`{"content":[{"type":"text","text":"é😀"}],"structuredContent":{"a":1}}`, 1000, 600)
	f.Fuzz(func(t *testing.T, raw string, limit, repeat int) {
		if limit < 1000 || limit > 5000 || repeat < 0 || repeat > 2000 {
			return
		}
		var r mcp.CallToolResult
		if json.Unmarshal([]byte(raw), &r) != nil {
			return
		}
		for i := range r.Content {
			if tc, ok := r.Content[i].(mcp.TextContent); ok {
				tc.Text = strings.Repeat(tc.Text, repeat)
				r.Content[i] = tc
			}
		}
		b, err := json.Marshal(r)
		if err != nil {
			return
		}
		out, _, err := Apply(b, limit, hint)
		if err != nil {
			t.Fatalf("Apply(%.100s): %v", b, err)
		}
		if !json.Valid(out) {
			t.Fatalf("invalid JSON: %.200s", out)
		}
		_, texts := parse(t, out)
		if n := chars(texts); n > limit {
			t.Fatalf("%d characters, limit %d", n, limit)
		}
	})
}

// TestApplyNoticeDigits: fewer characters kept can mean one more digit in
// the count cut, so the notice grows as the room for text shrinks; the cut
// result still fits, whatever the sizes (found by FuzzApply in CI).
func TestApplyNoticeDigits(t *testing.T) {
	for _, limit := range []int{1000, 1189, 2500} {
		for total := limit + 1; total <= limit+1500; total++ {
			raw := result(t, mcp.NewToolResultText(strings.Repeat("x", total)))
			out, rep, err := Apply(raw, limit, hint)
			if err != nil || rep == nil {
				t.Fatalf("limit %d, %d characters: %v %v", limit, total, rep, err)
			}
			if _, texts := parse(t, out); chars(texts) > limit {
				t.Fatalf("limit %d, %d characters: cut to %d", limit, total, chars(texts))
			}
		}
	}
}
