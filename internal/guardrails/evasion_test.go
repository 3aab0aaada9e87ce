package guardrails

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/purko-io/mcp-hub/internal/toolspec"
)

// What the evasions hide: fake credentials of the shapes gitleaks' rules
// match (not their documented examples, which are allow-listed) and an
// address at a real-looking domain.
var hidden = []struct{ name, value, rule string }{
	{"github token", "ghp_R8tK2vQ9xLm4Pz7Wn3Yb6Hc1Jd5Fg0Se8Ua4", "github-pat"},
	{"aws key id", "AKIAZ3MSJV5WKQ7TYRXB", "aws-access-token"},
	{"e-mail address", "olga.kowalska@fabrikam.de", "email"},
}

// An evasion writes a value so that a reader still reads it. shape says
// where the writing goes in a document (evasionDoc).
type evasion struct {
	name   string
	shape  string // "" (a string value), "split" (two text parts), "key", "data"
	before string // written before it (no part of what must go)
	write  func(v string) []string
}

func one(f func(string) string) func(string) []string {
	return func(v string) []string { return []string{f(v)} }
}

// eachRune writes each rune of v with f, every every-th (1: each).
func eachRune(every int, f func(r rune) string) func(string) string {
	return func(v string) string {
		var b strings.Builder
		for i, r := range []rune(v) {
			if i%every == every-1 {
				b.WriteString(f(r))
			} else {
				b.WriteRune(r)
			}
		}
		return b.String()
	}
}

var lookalikes = map[rune]rune{'a': 'а', 'e': 'е', 'o': 'о', 'p': 'р', 'c': 'с', 'x': 'х', 'A': 'А', 'K': 'К', 'T': 'Т', 'B': 'В', 'M': 'М', 'S': 'Ѕ', 'I': 'І'}

var evasions = []evasion{
	{name: "as it is", write: one(func(v string) string { return v })},
	{name: "split over two parts", shape: "split", write: func(v string) []string { return []string{v[:len(v)/2], v[len(v)/2:]} }},
	{name: "base64", write: one(func(v string) string { return base64.StdEncoding.EncodeToString([]byte(v)) })},
	{name: "base64url in a path", before: "/v1/files/", write: one(func(v string) string {
		return base64.RawURLEncoding.EncodeToString([]byte("k=" + v))
	})},
	{name: "base64 of base64", write: one(func(v string) string {
		return base64.StdEncoding.EncodeToString([]byte(base64.StdEncoding.EncodeToString([]byte(v))))
	})},
	{name: "url-encoded base64", write: one(func(v string) string {
		return url.QueryEscape(base64.StdEncoding.EncodeToString([]byte(v + "?")))
	})},
	{name: "hex", write: one(func(v string) string { return hex.EncodeToString([]byte(v)) })},
	{name: "url-encoded", write: one(eachRune(1, func(r rune) string { return fmt.Sprintf("%%%02X", r) }))},
	{name: "url-encoded in part", write: one(eachRune(4, func(r rune) string { return fmt.Sprintf("%%%02x", r) }))},
	{name: "url-encoded twice", write: one(eachRune(3, func(r rune) string { return fmt.Sprintf("%%25%02X", r) }))},
	{name: `\u-escaped`, write: one(eachRune(1, func(r rune) string { return fmt.Sprintf(`\u%04x`, r) }))},
	{name: `\u-escaped in part`, write: one(eachRune(5, func(r rune) string { return fmt.Sprintf(`\u%04X`, r) }))},
	{name: `\x-escaped`, write: one(eachRune(2, func(r rune) string { return fmt.Sprintf(`\x%02x`, r) }))},
	{name: "html character references", write: one(eachRune(2, func(r rune) string {
		if r%2 == 0 {
			return fmt.Sprintf("&#%d;", r)
		}
		return fmt.Sprintf("&#x%x;", r)
	}))},
	{name: "zero-width characters inside", write: one(eachRune(3, func(r rune) string { return string(r) + "\u200b" }))},
	{name: "format characters inside", write: one(eachRune(2, func(r rune) string { return "\u2060" + string(r) + "\u00ad\ufeff" }))},
	{name: "combining marks", write: one(eachRune(1, func(r rune) string { return string(r) + "\u0336" }))},
	{name: "fullwidth", write: one(eachRune(1, func(r rune) string { return string(r - 0x21 + 0xff01) }))},
	{name: "mathematical letters", write: one(eachRune(1, func(r rune) string {
		switch {
		case 'a' <= r && r <= 'z':
			return string(r - 'a' + 0x1d41a)
		case 'A' <= r && r <= 'Z':
			return string(r - 'A' + 0x1d400)
		}
		return string(r)
	}))},
	{name: "look-alike letters", write: one(eachRune(1, func(r rune) string {
		if l, ok := lookalikes[r]; ok {
			return string(l)
		}
		return string(r)
	}))},
	{name: "spaced out", write: one(func(v string) string { return strings.Join(strings.Split(v, ""), " ") })},
	{name: "spaced out wide", before: "key: ", write: one(func(v string) string { return strings.Join(strings.Split(v, ""), "  ") })},
	{name: "an object key", shape: "key", write: one(func(v string) string { return v })},
	{name: "base64 text in data", shape: "data", write: one(func(v string) string {
		return base64.StdEncoding.EncodeToString([]byte(strings.Repeat("settings of the deploy job, kept for reference\n", 8) + "login " + v + "\n"))
	})},
}

// evasionDoc puts the writing of a value in a document of the direction.
func evasionDoc(t *testing.T, direction string, ev evasion, w []string) []byte {
	t.Helper()
	shape := ev.shape
	if ev.before != "" {
		w = append([]string{ev.before + w[0]}, w[1:]...)
	}
	var doc any
	text := func(s string) map[string]any { return map[string]any{"type": "text", "text": s} }
	switch {
	case shape == "split" && direction == Result:
		doc = map[string]any{"content": []any{text(w[0]), text(w[1])}}
	case shape == "split":
		doc = map[string]any{"lines": w}
	case shape == "key" && direction == Result:
		doc = map[string]any{"content": []any{text("see the structured content")}, "structuredContent": map[string]any{w[0]: "v", "b": 1}}
	case shape == "key":
		doc = map[string]any{w[0]: "v", "b": 1}
	case shape == "data" && direction == Result:
		doc = map[string]any{"content": []any{map[string]any{"type": "image", "mimeType": "image/png", "data": w[0]}}}
	case shape == "data":
		doc = map[string]any{"attachment": map[string]any{"name": "notes", "data": w[0]}}
	case direction == Result:
		doc = map[string]any{"content": []any{text(w[0])}}
	default:
		doc = map[string]any{"query": w[0], "limit": 10}
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestFilterSeesThroughEvasions: each evasion of each hidden value, in
// arguments and in results, is redacted whole in redact mode (no six
// bytes of the value or of its writing are left in any string of the
// output, which stays valid JSON) and blocks in block mode.
func TestFilterSeesThroughEvasions(t *testing.T) {
	g := New(Options{})
	redactSpec := &toolspec.Guardrails{ContentFilters: []string{"secrets", "pii"}}
	blockSpec := &toolspec.Guardrails{ContentFilters: []string{"secrets", "pii"}, ContentFilterMode: "block"}
	for _, h := range hidden {
		for _, ev := range evasions {
			w := ev.write(h.value)
			for _, direction := range []string{Arguments, Result} {
				t.Run(h.name+"/"+ev.name+"/"+direction, func(t *testing.T) {
					raw := evasionDoc(t, direction, ev, w)
					out, rep, err := g.Filter(context.Background(), redactSpec, direction, raw)
					if err != nil {
						t.Fatal(err)
					}
					if !rep.Found() || rep.Blocked || rep.Hits[0].Rule != h.rule {
						t.Fatalf("%s: report %+v, want %s redacted", raw, rep, h.rule)
					}
					if !jsontext.Value(out).IsValid() {
						t.Fatalf("%s: output %s is no valid JSON", raw, out)
					}
					text := stringsOf(t, out)
					for _, leak := range append([]string{h.value}, w...) {
						if s := commonRun(text, leak, 6); s != "" {
							t.Fatalf("%s filtered to %s: %q of %q is left", raw, out, s, leak)
						}
					}
					if !strings.Contains(text, "[redacted: "+h.rule+"]") {
						t.Fatalf("%s filtered to %s: no marker", raw, out)
					}
					out, rep, err = g.Filter(context.Background(), blockSpec, direction, raw)
					if err != nil || !rep.Blocked || !bytes.Equal(out, raw) {
						t.Fatalf("%s in block mode: report %+v, error %v", raw, rep, err)
					}
				})
			}
		}
	}
}

// stringsOf returns the strings of a JSON document, names included,
// unescaped, one a line.
func stringsOf(t *testing.T, raw []byte) string {
	t.Helper()
	dec := jsontext.NewDecoder(bytes.NewReader(raw))
	var b strings.Builder
	for {
		tok, err := dec.ReadToken()
		if err != nil {
			break
		}
		if tok.Kind() == '"' {
			b.WriteString(tok.String())
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// commonRun returns a substring of leak of n bytes or more that text
// holds, "" if none.
func commonRun(text, leak string, n int) string {
	for i := 0; i+n <= len(leak); i++ {
		if strings.Contains(text, leak[i:i+n]) {
			return leak[i : i+n]
		}
	}
	return ""
}

// TestFilterJoinsOverlappingFindings: two findings that overlap are
// redacted as one span; neither leaves the part of it outside the other.
func TestFilterJoinsOverlappingFindings(t *testing.T) {
	g := New(Options{})
	spec := &toolspec.Guardrails{ContentFilters: []string{"pii", `regex:olga\.kow:[name]`, `regex:alska@fab:[x]`}}
	raw := []byte(`{"q":"write to olga.kowalska@fabrikam.de today"}`)
	out, rep, err := g.Filter(context.Background(), spec, Arguments, raw)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"q":"write to [redacted: email] today"}`; string(out) != want {
		t.Fatalf("got %s, want %s (report %+v)", out, want, rep)
	}
}

// TestFilterRedactedKeysStayUnique: two keys redacted to the same marker
// in one object stay two members.
func TestFilterRedactedKeysStayUnique(t *testing.T) {
	g := New(Options{})
	spec := &toolspec.Guardrails{ContentFilters: []string{"secrets"}}
	raw := []byte(`{"ghp_R8tK2vQ9xLm4Pz7Wn3Yb6Hc1Jd5Fg0Se8Ua4":1,"ghp_Q9xLm4Pz7Wn3Yb6Hc1Jd5Fg0Se8UaR8tK2v7":2,"[redacted: github-pat]":3}`)
	out, rep, err := g.Filter(context.Background(), spec, Arguments, raw)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"[redacted: github-pat] (2)":1,"[redacted: github-pat] (3)":2,"[redacted: github-pat]":3}`
	if string(out) != want || !jsontext.Value(out).IsValid() || rep.Hits[0].Count != 2 {
		t.Fatalf("got %s, report %+v; want %s", out, rep, want)
	}
}

// TestFilterHardNegatives: what looks encoded but hides nothing passes
// unchanged and unreported: images, hashes, UUIDs, escapes, prose in
// other scripts, tables.
func TestFilterHardNegatives(t *testing.T) {
	g := New(Options{})
	spec := &toolspec.Guardrails{ContentFilters: []string{"secrets", "pii"}}
	for name, raw := range hardNegatives(t) {
		t.Run(name, func(t *testing.T) {
			for _, direction := range []string{Arguments, Result} {
				out, rep, err := g.Filter(context.Background(), spec, direction, raw)
				if err != nil {
					t.Fatal(err)
				}
				if rep.Found() || !bytes.Equal(out, raw) {
					t.Fatalf("%s: report %+v, output %.300s", direction, rep, out)
				}
			}
		})
	}
}

// hardNegatives are documents that look encoded but hide nothing.
func hardNegatives(t *testing.T) map[string][]byte {
	img := pngBase64(t)
	text := func(s string) []byte {
		raw, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": s}}})
		return raw
	}
	return map[string][]byte{
		"an image":                       []byte(`{"content":[{"type":"text","text":"the chart:"},{"type":"image","mimeType":"image/png","data":"` + img + `"}]}`),
		"an image as a data URI in text": text(`<img src="data:image/png;base64,` + img + `">`),
		"random base64":                  text("blob " + base64.StdEncoding.EncodeToString(randomBytes(3000))),
		"hashes": text("sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\n" +
			"commit 2fd4e1c67a2d28fced849ee1bb76e7391b93eb12 parent de9f2c7fd25e1b3afad3e85a0bd17d9b100db4b3\n" +
			"md5 d41d8cd98f00b204e9800998ecf8427e, blake2 786a02f742015903c6c6fd852552d272912f4740e15847618a86e217f71f5419d25e1031afee585313896444934eb04b903a685b1448b755d56f701afe9be2ce"),
		"uuids": text("request 550e8400-e29b-41d4-a716-446655440000 trace 123e4567-e89b-12d3-a456-426614174000 span 3fa85f64-5717-4562-b3fc-2c963f66afa6"),
		"escapes": text(`{"path":"C:\\Users\\build\\AppData\\Local\\Temp","msg":"caf\u00e9 \"quoted\"\n\ttab","url":"https://example.net/search?q=a%20b&lang=en&amp;x=1","html":"&lt;b&gt;bold&lt;/b&gt; &amp; &copy; 2026 &#169;"}` +
			strings.Repeat(`\n\"x\": \"\\u00e9\\u00e8\"`, 50)),
		"long identifiers": text("mcphub_guardrail_hits_total internationalization-configuration AbstractSingletonProxyFactoryBean 2026-12-02T15:00:00.000Z /api/v1/items/internationalization"),
		"prose in other scripts": text("Привет, мир! Это обычный текст о погоде и работе. Ελληνικά κείμενα είναι εδώ. " +
			"日本語のテキストです。 Déjà vu, naïve façade, Straße, ½ ™ — “quotes” …"),
		"a table":         text("| a | b | c | d | e | f | g | h |\n|---|---|---|---|---|---|---|---|\n| 1 | 0 | 1 | 1 | 0 | 0 | 1 | 0 |"),
		"arrays of words": []byte(`{"tags":["bug","area/sync","p1"],"labels":["a","b","c"],"ids":[4001,4002]}`),
		"emoji":           text("done ✅ 👍🏽 👨‍👩‍👧 ❤️"),
	}
}

func randomBytes(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// pngBase64 returns a small noisy PNG in base64.
func pngBase64(t *testing.T) string {
	t.Helper()
	r := rand.New(rand.NewPCG(3, 4))
	img := image.NewRGBA(image.Rect(0, 0, 48, 48))
	for y := range 48 {
		for x := range 48 {
			img.Set(x, y, color.RGBA{uint8(r.Uint32()), uint8(x * 5), uint8(y * 5), 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

// TestFilterKeepsJSONValid: over random documents of keys, values and
// arrays of text parts made of pieces of credentials, their writings and
// what is near them, the output is valid JSON, without duplicate names.
func TestFilterKeepsJSONValid(t *testing.T) {
	g := New(Options{})
	spec := &toolspec.Guardrails{ContentFilters: []string{"secrets", "pii", `regex:x{3}:[x]`}}
	pieces := []string{"ghp_R8tK2vQ9xLm4", "Pz7Wn3Yb6Hc1Jd5Fg0Se8Ua4", "AKIAZ3MSJV5WKQ7TYRXB", "olga.kowalska@", "fabrikam.de", " ", "\u200b", "é",
		"%41", "&amp;", "\\u0041", "[redacted: github-pat]", "Z2hwX1I4dEsydlE5eExtNFB6N1duM1liNkhjMUpkNUZnMFNlOFVhNA==", "xxx", "\"", "日"}
	rng := rand.New(rand.NewPCG(5, 6))
	text := func() string {
		var b strings.Builder
		for range rng.IntN(6) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		return b.String()
	}
	for range 500 {
		obj := map[string]any{}
		for range rng.IntN(5) {
			obj[text()] = text()
		}
		parts := []any{}
		for range rng.IntN(4) {
			parts = append(parts, map[string]any{"type": "text", "text": text()}, text())
		}
		obj["content"] = parts
		raw, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		for _, direction := range []string{Arguments, Result} {
			out, _, err := g.Filter(context.Background(), spec, direction, raw)
			if err != nil {
				t.Fatalf("%s: %v", raw, err)
			}
			if !jsontext.Value(out).IsValid() {
				t.Fatalf("%s filtered to %s: no valid JSON", raw, out)
			}
		}
	}
}
