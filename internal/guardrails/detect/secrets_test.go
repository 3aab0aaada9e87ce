package detect

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func TestTokenEnd(t *testing.T) {
	for _, tc := range []struct {
		text      string
		end, want int
	}{
		{"abc-def ghi", 3, 7},                // the rest of the token
		{"abc.def.ghi, x", 3, 11},            // '.' between token characters
		{"abc. Next", 3, 3},                  // a sentence's full stop
		{"abc==; x", 3, 5},                   // base64 padding
		{"abc\"", 3, 3},                      // a closing quote
		{"abc@host", 3, 3},                   // userinfo's '@'
		{"abc%2Fdef&x=1", 3, 9},              // a percent-escape inside
		{"abc", 3, 3},                        // the end of the text
		{"a/b/c-d e", 1, 7},                  // a path of token characters
		{"sk_live_abc</Key>", 8, 11},         // an XML value
		{"xoxa-2-1234-5678-abcd, x", 11, 21}, // a Slack token cut after a segment
	} {
		if got := tokenEnd(tc.text, tc.end); got != tc.want {
			t.Errorf("tokenEnd(%q, %d) = %d, want %d", tc.text, tc.end, got, tc.want)
		}
	}
}

// TestFindRedactsWholeTokens: gitleaks' legacy workspace rule stops after
// the first segment of an xoxa-2 token; what the filter redacts is the
// whole token, as one finding.
func TestFindRedactsWholeTokens(t *testing.T) {
	const tok = "xoxa-2-123456789012-123456789012-1234567890123-0a1b2c3d4e5f60718293a4b5c6d7e8f9"
	for _, text := range []string{
		"SLACK_TOKEN=" + tok + "\n",
		`<add key="SlackToken" value="` + tok + `" />`,
		"pasted " + tok + ", rejected",
	} {
		got, err := NewSecrets().Find(context.Background(), text, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || text[got[0].Start:got[0].End] != tok {
			t.Errorf("findings %+v in a text with one Slack token, want one covering the token (%d bytes)", got, len(tok))
		}
	}
}

// TestRealToolDefinitionsHoldNoSecrets: the tool definitions of published
// MCP servers (toolscreen's testdata: descriptions and schemas that speak
// of tokens, passwords and API keys) hold no credential, and the secrets
// filter finds none in them, in the raw JSON or in any string of it.
func TestRealToolDefinitionsHoldNoSecrets(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "toolscreen", "testdata", "real", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no real tool definitions: %v", err)
	}
	s := NewSecrets()
	strs := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		texts := []string{string(b)}
		var doc any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		texts = appendStrings(texts, doc)
		for _, text := range texts {
			strs++
			found, err := s.Find(context.Background(), text, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, fd := range found {
				t.Errorf("%s: %s at %d:%d", filepath.Base(f), fd.Rule, fd.Start, fd.End)
			}
		}
	}
	t.Logf("%d files, %d texts: no findings", len(files), strs)
}

// appendStrings appends every string value of a decoded JSON document.
func appendStrings(out []string, v any) []string {
	switch v := v.(type) {
	case string:
		out = append(out, v)
	case []any:
		for _, e := range v {
			out = appendStrings(out, e)
		}
	case map[string]any:
		for _, e := range v {
			out = appendStrings(out, e)
		}
	}
	return out
}
