package guardrails

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// funcs is an editor of two funcs.
type funcs struct {
	e func([]string) ([]string, error)
	b func(string) bool
}

func (f funcs) edit(texts []string) ([]string, error) { return f.e(texts) }
func (f funcs) binary(s string) bool                  { return f.b(s) }

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
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := []byte(tt.in)
			out, err := rewriteStrings(in, funcs{upper, binary})
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
	if _, err := rewriteStrings([]byte(`{"a":"x"`), funcs{upper, binary}); err == nil {
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
	if _, err := rewriteStrings([]byte(doc), funcs{record, func(string) bool { return false }}); err != nil {
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
