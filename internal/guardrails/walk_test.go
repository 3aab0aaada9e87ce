package guardrails

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// funcs is an editor of two funcs.
type funcs struct {
	e func([]string) ([]string, error)
	b func(string) bool
}

func (f funcs) binary(s string) bool { return f.b(s) }

// edit offers the texts to e and cuts each text it changed whole.
func (f funcs) edit(texts []string) ([][]cut, error) {
	out, err := f.e(texts)
	if err != nil || out == nil {
		return nil, err
	}
	cuts := make([][]cut, len(texts))
	for i, s := range out {
		if s != texts[i] {
			cuts[i] = []cut{{0, len(texts[i]), s}}
		}
	}
	return cuts, nil
}

// TestRewriteStrings: every string, names included, is offered unescaped,
// the text parts of an array as one group, binary base64 members not;
// changed strings are encoded again in place and the rest is copied byte
// for byte; a document with no change is returned as it came; a changed
// name never repeats another of its object.
func TestRewriteStrings(t *testing.T) {
	upper := func(texts []string) ([]string, error) {
		if !slices.ContainsFunc(texts, func(s string) bool { return strings.Contains(s, "x") }) {
			return nil, nil
		}
		out := make([]string, len(texts))
		for i, s := range texts {
			out[i] = strings.ToUpper(s)
		}
		return out, nil
	}
	binary := func(s string) bool { return s == "xx==" }
	tests := []struct {
		name, in, want string
	}{
		{"nothing to change", `{"a": "b", "n": [1, true, null]}`, `{"a": "b", "n": [1, true, null]}`},
		{"values and names", `{"x": "x1", "y" : ["ax", {"x":"x"}]}`, `{"X": "X1", "y" : ["AX", {"X":"X"}]}`},
		{"escapes read and written", `{"t":"line\nx \"q\" \u00e9"}`, `{"t":"LINE\nX \"Q\" É"}`},
		{"binary base64 left alone", `{"content":[{"type":"image","data":"xx=="},{"blob":"xy"}]}`, `{"content":[{"type":"image","data":"xx=="},{"blob":"XY"}]}`},
		{"a string in an array named data is no member", `{"data":{"v":"x"},"list":["x"]}`, `{"data":{"v":"X"},"list":["X"]}`},
		{"top-level string", `"x"`, `"X"`},
		{"a group is changed as one", `["a","x",{"text":"b"},1,"c"]`, `["A","X",{"TEXT":"B"},1,"C"]`},
		{"a changed name stays unique", `{"x":1,"X":2,"X (2)":3,"xx":{"x":4}}`, `{"X (3)":1,"X":2,"X (2)":3,"XX":{"X":4}}`},
		{"two names changed alike", `{"xa":1,"xA":2}`, `{"XA":1,"XA (2)":2}`},
	}
	// One pool for every case, as a Guard's: a case unquotes into the
	// buffers the ones before gave back.
	texts := &sync.Pool{New: func() any { return new([]byte) }}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := []byte(tt.in)
			out, err := rewriteStrings(in, funcs{upper, binary}, texts)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tt.want || !jsontext.Value(out).IsValid() {
				t.Fatalf("got %s, want %s", out, tt.want)
			}
			if tt.in == tt.want && &out[0] != &in[0] {
				t.Fatal("an unchanged document was copied")
			}
		})
	}
	if _, err := rewriteStrings([]byte(`{"a":"x"`), funcs{upper, binary}, nil); err == nil {
		t.Fatal("a truncated document was accepted")
	}
}

// TestRewriteStringsGroups: the text parts of an array come as one group,
// in order, whatever lies between them; other strings come alone.
func TestRewriteStringsGroups(t *testing.T) {
	var groups [][]string
	record := func(texts []string) ([]string, error) {
		groups = append(groups, slices.Clone(texts))
		return nil, nil
	}
	doc := `{"content":[{"type":"text","text":"A"},{"type":"image","data":"AAAA"},{"type":"text","text":"B"}],"args":["p",["q","r"],"s"]}`
	if _, err := rewriteStrings([]byte(doc), funcs{record, func(string) bool { return false }}, nil); err != nil {
		t.Fatal(err)
	}
	var joined []string
	for _, g := range groups {
		if len(g) > 1 {
			joined = append(joined, strings.Join(g, "+"))
		}
	}
	if want := []string{"A+B", "q+r", "p+s"}; !slices.Equal(joined, want) {
		t.Fatalf("groups %q, want %q among them", groups, want)
	}
}

// TestMayJoin: true for every document with a group of two texts or more.
func TestMayJoin(t *testing.T) {
	for doc, want := range map[string]bool{
		`{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`: true,
		`{"content":[{"type":"text","text":"a \"text\": b"}]}`:                false,
		`["a", "b"]`:                          true,
		`{"a":"b","c":"d","e":["f"]}`:         false,
		`{"a":["x\\", "y"]}`:                  true,
		`{"a":["x\", \"y"]}`:                  false,
		`[1,"a",2,"b"]`:                       true,
		`["a", {"text": "b"}]`:                true,
		`{"k":"v", "list": ["one" , "two" ]}`: true,
	} {
		if got := mayJoin([]byte(doc)); got != want {
			t.Errorf("mayJoin(%s) = %v, want %v", doc, got, want)
		}
		if !json.Valid([]byte(doc)) {
			t.Errorf("%s is no JSON", doc)
		}
	}
}

// FuzzAppendCuts: cuts made in a string (spans of it replaced, on
// character boundaries) written by appendCuts, whatever escapes the
// upstream used (\u for every character outside ASCII, surrogate pairs,
// \/), read back as the string cut: the bytes kept from the original
// string and the ones encoded anew join into the one string.
func FuzzAppendCuts(f *testing.F) {
	f.Add("token in a \"quoted\" line\nolga@fabrikam.de and more", uint(10), uint(30), "[redacted: email]", uint8(0))
	f.Add("héllo wörld 😀 end", uint(3), uint(9), "", uint8(1))
	f.Add("😀😀😀😀", uint(4), uint(8), "x", uint8(1))
	f.Add("a/b\\c\td", uint(0), uint(2), "a/b", uint8(2))
	f.Add(strings.Repeat("abc\"", 70)+"SECRET"+strings.Repeat("\"def", 70), uint(280), uint(286), "[redacted: key]", uint8(0))
	f.Add("key=AKIAZ3MSJV5WKQ7TYRXB mail olga@fabrikam.de\n", uint(4), uint(24), "[redacted: aws]", uint8(5))
	f.Fuzz(func(t *testing.T, old string, from, to uint, repl string, mode uint8) {
		old, repl = strings.ToValidUTF8(old, "?"), strings.ToValidUTF8(repl, "?")
		// One cut, or with mode's high bits two or three: the second
		// mirrors the first from the end, the third is empty at the end.
		var cuts []cut
		a, b := int(from%uint(len(old)+1)), int(to%uint(len(old)+1))
		a, b = min(a, b), max(a, b)
		cuts = append(cuts, cut{a, b, repl})
		if mode&4 != 0 && len(old)-a > b {
			cuts = append(cuts, cut{len(old) - b, len(old) - a, "[" + repl + "]"})
		}
		if mode&8 != 0 && cuts[len(cuts)-1].to < len(old) {
			cuts = append(cuts, cut{len(old), len(old), "<end>"})
		}
		for i := range cuts {
			for cuts[i].from > 0 && cuts[i].from < len(old) && !utf8.RuneStart(old[cuts[i].from]) {
				cuts[i].from--
			}
			for cuts[i].to < len(old) && !utf8.RuneStart(old[cuts[i].to]) {
				cuts[i].to++
			}
			if i > 0 && cuts[i].from < cuts[i-1].to {
				return // overlapping once widened: not what an editor gives
			}
		}
		quoted := quoteAs(old, mode%3)
		if u, err := jsontext.AppendUnquote(nil, quoted); err != nil || string(u) != old {
			t.Fatalf("the test's quoting of %q: %s (%v)", old, quoted, err)
		}
		out, err := appendCuts([]byte("prefix "), quoted, old, cuts)
		if err != nil {
			t.Fatal(err)
		}
		want := applyCuts(old, cuts)
		if !bytes.HasPrefix(out, []byte("prefix ")) {
			t.Fatalf("cut %s: wrote over what was before: %s", quoted, out)
		}
		got, err := jsontext.AppendUnquote(nil, out[len("prefix "):])
		if err != nil || string(got) != want {
			t.Fatalf("cut %s of %q by %v: wrote %s, which reads %q (%v), want %q", quoted, old, cuts, out, got, err, want)
		}
	})
}

// quoteAs writes s as a JSON string the way an encoder might: mode 0 as
// jsontext does, 1 with every character outside ASCII as \u escapes
// (surrogate pairs beyond the BMP), 2 with '/' as \/ too.
func quoteAs(s string, mode uint8) []byte {
	if mode == 0 {
		out, _ := jsontext.AppendQuote(nil, s)
		return out
	}
	out := []byte{'"'}
	for _, r := range s {
		switch {
		case r == '/' && mode == 2:
			out = append(out, `\/`...)
		case r >= utf8.RuneSelf:
			if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
				out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
			} else {
				out = fmt.Appendf(out, `\u%04X`, r)
			}
		default:
			q, _ := jsontext.AppendQuote(nil, string(r))
			out = append(out, q[1:len(q)-1]...)
		}
	}
	return append(out, '"')
}

// FuzzUnquote: unquote reads every JSON string the decoder accepts as
// jsontext.AppendUnquote does, whatever escapes it holds.
func FuzzUnquote(f *testing.F) {
	for _, s := range []string{`"plain"`, `"a\nb\t\"c\"\\\/\b\f\r"`, `"\u00e9\u00E9 \ud83d\ude00 \u2028"`, `"\ud83d"`, `"\udc00\ud83d"`, `"x\\"`, `"é😀\u0000"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		dec := jsontext.NewDecoder(strings.NewReader(in))
		if dec.PeekKind() != '"' {
			return
		}
		v, err := dec.ReadValue()
		if err != nil {
			return
		}
		want, werr := jsontext.AppendUnquote(nil, v)
		got, gerr := unquote(v, func(n int) []byte { return make([]byte, 0, n) })
		if (werr != nil) != (gerr != nil) || werr == nil && got != string(want) {
			t.Fatalf("unquote(%s) = %q (%v), jsontext reads %q (%v)", v, got, gerr, want, werr)
		}
	})
}
