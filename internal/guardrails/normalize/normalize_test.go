package normalize

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// TestViews: the readings of a string, and the bytes of the string a
// part of a reading maps back to: all that wrote it.
func TestViews(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString
	tests := []struct {
		name, in string
		reading  string // one of the readings
		find     string // in the reading
		want     string // the bytes of in it comes from
	}{
		{"plain", "a ghp_x b", "a ghp_x b", "ghp_x", "ghp_x"},
		{`\u escapes`, `a \u0067\u0068p_x`, "a ghp_x", "hp", `\u0068p`},
		{"surrogate pair", `\ud83d\ude00!`, "😀!", "😀", `\ud83d\ude00`},
		{"lone surrogate stays", `\ud83dx`, `\ud83dx`, "x", "x"},
		{`\u{}`, `\u{67}hp`, "ghp", "gh", `\u{67}h`},
		{`\U and \x`, `\U00000067\x68p`, "ghp", "ghp", `\U00000067\x68p`},
		{"percent", "%67%68p_%41", "ghp_A", "p_A", "p_%41"},
		{"percent twice", "%2567h", "gh", "g", "%2567"},
		{"percent-u", "%u0067h", "gh", "g", "%u0067"},
		{"percent UTF-8", "jos%C3%A9@x", "jose@x", "e@", "%C3%A9@"},
		{"percent of no character stays", "%DB_PASSWORD%", "%DB_PASSWORD%", "%DB", "%DB"},
		{"the string as it is too", "%67hp", "%67hp", "%67", "%67"},
		{"html", "&#103;&#x68;p&amp;&lt;", "ghp&<", "hp&", "&#x68;p&amp;"},
		{"not escapes", `50% \n &x &zz; \u12`, `50% \n &x &zz; \u12`, "50%", "50%"},
		{"zero-width inside", "gh\u200bp_\u2060x", "ghp_x", "ghp_x", "gh\u200bp_\u2060x"},
		{"zero-width at the edge", "a \u200bghp", "a ghp", "ghp", "ghp"},
		{"soft hyphen and BOM", "g\u00adh\ufeffp", "ghp", "ghp", "g\u00adh\ufeffp"},
		{"controls", "g\x00h\x1bp", "ghp", "ghp", "g\x00h\x1bp"},
		{"fullwidth", "ｇｈｐ＿x", "ghp_x", "hp", "ｈｐ"},
		{"mathematical", "𝐠𝐡𝐩", "ghp", "h", "𝐡"},
		{"confusables", "АКІА о", "AKIA o", "KIA", "КІА"},
		{"digit look-alikes", "০١", "01", "1", "١"},
		{"diacritics", "olgá é", "olga e", "olga", "olgá"},
		{"combining mark", "ae\u0301b", "aeb", "eb", "e\u0301b"},
		{"strike-through", "g\u0336h\u0336", "gh", "gh", "g\u0336h\u0336"},
		{"ligature", "ﬁle", "file", "fi", "ﬁ"},
		{"base64", "x " + b64([]byte("olga@fabrikam.de!")) + " y", "olga@fabrikam.de!", "fabrikam", b64([]byte("olga@fabrikam.de!"))},
		{"base64 padded", "k=" + b64([]byte("olga@fabrikam.de")), "olga@fabrikam.de", "olga", b64([]byte("olga@fabrikam.de"))},
		{"base64url", base64.RawURLEncoding.EncodeToString([]byte("ghp_??>>x~~~a")), "ghp_??>>x~~~a", "ghp", base64.RawURLEncoding.EncodeToString([]byte("ghp_??>>x~~~a"))},
		{"base64 of base64", b64([]byte(b64([]byte("olga@fabrikam.de")))), "olga@fabrikam.de", "olga", b64([]byte(b64([]byte("olga@fabrikam.de"))))},
		{"base64 after a path", "/api/v2/" + b64([]byte("olga@fabrikam.de")), "olga@fabrikam.de", "olga", b64([]byte("olga@fabrikam.de"))},
		{"hex", "h " + fmt.Sprintf("%x", "olga@fabrikam.de"), "olga@fabrikam.de", "olga", fmt.Sprintf("%x", "olga@fabrikam.de")},
		{"hex after 0x", "0x" + fmt.Sprintf("%X", "olga@fabrikam.de"), "olga@fabrikam.de", "olga", "0x" + fmt.Sprintf("%X", "olga@fabrikam.de")},
		{"escaped base64", strings.ReplaceAll(b64([]byte("olga@fabrikam.de")), "=", "%3D"), "olga@fabrikam.de", "olga", strings.ReplaceAll(b64([]byte("olga@fabrikam.de")), "=", "%3D")},
		{"fullwidth base64", strings.Map(func(r rune) rune { return r - 0x21 + 0xff01 }, b64([]byte("olga@fabrikam.de"))), "olga@fabrikam.de", "olga",
			strings.Map(func(r rune) rune { return r - 0x21 + 0xff01 }, b64([]byte("olga@fabrikam.de")))},
		{"spaced out", "token: g h p _ a b c d e f ok", "token: ghp_abcdef", "ghp_abcdef", "g h p _ a b c d e f"},
		{"spaced out over lines", "a\nb\nc\nd\ne\nf\ng\nh", "abcdefgh", "bcd", "b\nc\nd"},
	}
	var r Reader
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			views := r.Views(tt.in, nil)
			var got []string
			for _, v := range views {
				got = append(got, v.S)
				i := strings.Index(v.S, tt.find)
				if v.S != tt.reading || i < 0 {
					continue
				}
				from, to := v.Span(i, i+len(tt.find))
				if tt.in[from:to] != tt.want {
					t.Fatalf("%q of reading %q maps to %q, want %q", tt.find, v.S, tt.in[from:to], tt.want)
				}
				if v.Verbatim() != (v.S == tt.in) {
					t.Fatalf("reading %q: Verbatim %v", v.S, v.Verbatim())
				}
				return
			}
			t.Fatalf("readings %q, none is %q with %q", got, tt.reading, tt.find)
		})
	}
}

// TestViewsNothingToUndo: a string with nothing to undo has one reading,
// itself, and costs no allocation.
func TestViewsNothingToUndo(t *testing.T) {
	var r Reader
	buf := make([]Text, 0, 4)
	for _, s := range []string{
		"", "plain words, 100% sure & done; C:\\path\\n", "sha 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		"550e8400-e29b-41d4-a716-446655440000 — 日本語", "| a | b | c |", "a b c d e f g",
	} {
		views := r.Views(s, buf[:0])
		if len(views) != 1 || views[0].S != s || !views[0].Verbatim() {
			t.Errorf("%q: readings %+v", s, views)
		}
		if n := testing.AllocsPerRun(10, func() { r.Views(s, buf[:0]) }); n != 0 {
			t.Errorf("%q: %v allocations", s, n)
		}
	}
}

// TestViewsLinear: reading takes time in proportion to the text, whatever
// it is made of (a word as long as the text, runs, spaced-out letters):
// four times the text takes less than ten times as long (quadratic work
// takes sixteen; caches and the collector add some on a larger text). The
// best of two readings of each size is compared, so a loaded machine slows
// both alike; no wall-clock bound. A burst of load on the larger reading
// alone can still pass ten: a size fails only when three measurements in
// a row say so, which quadratic work always does.
func TestViewsLinear(t *testing.T) {
	var r Reader
	best := func(s string) time.Duration {
		d := time.Duration(1<<63 - 1)
		for range 2 {
			start := time.Now()
			r.Views(s, nil)
			d = min(d, time.Since(start))
		}
		return d
	}
	const quarter = 1 << 18
	for name, unit := range map[string]string{
		"one long word":   "日本語のテキスト",
		"one long run":    "abcdefgh",
		"spaced out":      "a ",
		"spaced and wide": "a    ",
		"escapes":         `\u00`,
	} {
		small := strings.Repeat(unit, quarter/len(unit))
		large := strings.Repeat(unit, 4*quarter/len(unit))
		for try := 1; ; try++ {
			ds, dl := best(small), best(large)
			t.Logf("%s: %d bytes in %v, %d bytes in %v (%.1fx)", name, len(small), ds, len(large), dl, float64(dl)/float64(ds))
			if dl <= 10*ds+time.Millisecond {
				break
			}
			if try == 3 {
				t.Errorf("%s: 4x the text took %.1fx as long (%v, %v), three times: not linear", name, float64(dl)/float64(ds), ds, dl)
				break
			}
		}
	}
}

// TestSpansAreWhole: over random mixes of what the readings undo, every
// byte range of every reading maps to a range of whole characters of the
// string, and the spans of consecutive bytes never go backwards.
func TestSpansAreWhole(t *testing.T) {
	pieces := []string{"a", "Z", "0", " ", "\u200b", "é", "e\u0301", "ｇ", "К", `\u0041`, "%41", "%2541", "&#65;", "&amp;", "\\", "%", "&",
		base64.StdEncoding.EncodeToString([]byte("olga@fabrikam.de")), "日", "\x00", "/", "😀", `\ud83d\ude00`}
	rng := rand.New(rand.NewPCG(7, 8))
	var r Reader
	for range 2000 {
		var b strings.Builder
		for range rng.IntN(30) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		s := b.String()
		for _, v := range r.Views(s, nil) {
			lastFrom := -1
			for i := 0; i < len(v.S); {
				_, size := utf8.DecodeRuneInString(v.S[i:])
				from, to := v.Span(i, i+size)
				if from < 0 || to > len(s) || from >= to || !utf8.RuneStart(s[from]) || to < len(s) && !utf8.RuneStart(s[to]) {
					t.Fatalf("%q, reading %q: byte %d maps to [%d, %d)", s, v.S, i, from, to)
				}
				if from < lastFrom {
					t.Fatalf("%q, reading %q: byte %d maps to %d, before %d", s, v.S, i, from, lastFrom)
				}
				lastFrom = from
				i += size
			}
		}
	}
}

// TestMayHide: MayHide is true for each JSON encoding of every string
// that has more readings than itself, and false for plain documents.
func TestMayHide(t *testing.T) {
	var r Reader
	strs := []string{
		`\u0041`, "%41", "%2541", "&#65;", "&amp;", "\u200b", "é", "ｇ", "К", "x\x01", "\u00ad",
		base64.StdEncoding.EncodeToString([]byte("olga@fabrikam.de")),
		"/files/" + base64.RawURLEncoding.EncodeToString([]byte("olga@fabrikam.de")),
		fmt.Sprintf("%x", "olga@fabrikam.de"),
		"a b c d e f g h", "a\tb\nc d e f g h", "日 本 語 の テ キ ス ト", "x: a  b \n c\n\nd e f g \" h",
		"\"a\" b c d e f g h", "ab c d e f g h i j", "long words a b\nc\nd e f g h i", "long words 日 本 c d e f g h more",
		"C:\\Users\\x", "100% & more", "plain", "日本語 — ok", "550e8400-e29b-41d4-a716-446655440000",
	}
	for _, s := range strs {
		views := r.Views(s, nil)
		hides := len(views) > 1 || !views[0].Verbatim()
		for _, raw := range encodings(t, s) {
			if got := r.MayHide(raw); hides && !got {
				t.Errorf("MayHide(%s) = false, but %q reads as %d texts", raw, s, len(views))
			}
		}
	}
	// Random mixes of what the readings undo and what they leave: with
	// characters that fold, and with runs and spaced-out words only.
	for k, pieces := range [][]string{
		{"a", "bc", "Z", "0", " ", "  ", "\n", "\t", "\"", "\\", "/", "日", "😀", "é", "\u200b", "%41", "&amp;", "&",
			`\u0041`, base64.StdEncoding.EncodeToString([]byte("olga@fabrikam.de")), "9f86d081884c7d659a2feaa0c55ad015", "word"},
		{"a", "b", "c", "Z", "0", " ", " ", " ", "  ", "\n", "\t", "\"", "\\", "/", "日", "😀", "&", "%", "x\\u", "=",
			"b2xnYUBmYWJyaWthbS5kZQ", base64.StdEncoding.EncodeToString([]byte("olga@fabrikam.de")), "9f86d081884c7d659a2feaa0c55ad015", "6f6c6761", "word"},
	} {
		rng := rand.New(rand.NewPCG(9, uint64(k)))
		for range 5000 {
			var b strings.Builder
			for range rng.IntN(40) {
				b.WriteString(pieces[rng.IntN(len(pieces))])
			}
			s := b.String()
			views := r.Views(s, nil)
			if len(views) == 1 && views[0].Verbatim() {
				continue
			}
			for _, raw := range encodings(t, s) {
				if !r.MayHide(raw) {
					t.Fatalf("MayHide(%s) = false, but %q reads as %d texts, the first %q", raw, s, len(views), views[0].S)
				}
			}
		}
	}
	for _, doc := range []string{
		`{"a":"plain text","n":[1,2,{"b":"C:\\Users\\x 100% sure"}]}`,
		`{"sha":"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08","id":"550e8400-e29b-41d4-a716-446655440000"}`,
		`{"t":"\u65e5? no: \u2014 dash, \"quote\", tab\t, line\n"}`,
	} {
		if r.MayHide([]byte(doc)) {
			t.Errorf("MayHide(%s) = true", doc)
		}
	}
}

// encodings returns s as a JSON document as encoders write it: as it is,
// HTML-safe (\u0026 for &), and ASCII-only (\uXXXX for the rest).
func encodings(t *testing.T, s string) [][]byte {
	t.Helper()
	html, err := json.Marshal(map[string]string{"t": s})
	if err != nil {
		t.Fatal(err)
	}
	var plain bytes.Buffer
	enc := json.NewEncoder(&plain)
	enc.SetEscapeHTML(false)
	if err := enc.Encode([]string{s}); err != nil {
		t.Fatal(err)
	}
	var ascii bytes.Buffer
	for _, r := range string(html) {
		if r < utf8.RuneSelf {
			ascii.WriteRune(r)
		} else if r > 0xffff {
			r1, r2 := (r-0x10000)>>10+0xd800, (r-0x10000)&0x3ff+0xdc00
			fmt.Fprintf(&ascii, `\u%04x\u%04x`, r1, r2)
		} else {
			fmt.Fprintf(&ascii, `\u%04x`, r)
		}
	}
	return [][]byte{html, plain.Bytes(), ascii.Bytes()}
}

// TestBinary: base64 of an image is binary; base64 of text, a short
// string and what is no base64 are not.
func TestBinary(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 32, 32))
	rng := rand.New(rand.NewPCG(1, 1))
	for i := range img.Pix {
		img.Pix[i] = uint8(rng.Uint32())
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("notes of the meeting, nothing secret here. ", 10)
	var r Reader
	for s, want := range map[string]bool{
		base64.StdEncoding.EncodeToString(b.Bytes()):              true,
		base64.RawURLEncoding.EncodeToString(b.Bytes()):           true,
		base64.StdEncoding.EncodeToString([]byte(text)):           false,
		base64.StdEncoding.EncodeToString(b.Bytes()[:40]):         false,
		"not base64 at all, " + text:                              false,
		base64.StdEncoding.EncodeToString(b.Bytes()) + "=!":       false,
		strings.Repeat("ghp_R8tK2vQ9xLm4Pz7Wn3Yb6Hc1Jd5Fg0+/", 9): false,
	} {
		if got := r.Binary(s); got != want {
			t.Errorf("Binary(%.40q...) = %v, want %v", s, got, want)
		}
	}
}
