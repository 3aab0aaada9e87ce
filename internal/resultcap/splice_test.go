package resultcap

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// long is a text over the limits below.
var long = strings.Repeat("x", 1000)

// expand fills in want: KEPT is the first characters of long kept (other
// being the characters kept of other text parts), NOTICE the notice of
// rep, encoded.
func expand(t *testing.T, want string, rep *Report, other, limit int) string {
	t.Helper()
	if rep == nil {
		t.Fatal("nothing was cut")
	}
	note, err := json.Marshal(notice(*rep, limit, hint))
	if err != nil {
		t.Fatal(err)
	}
	kept := max(rep.TextKept-other, 0)
	return strings.NewReplacer("KEPT", long[:kept], "NOTICE", string(note)).Replace(want)
}

// TestApplySplices: a cut result is the result as it came, but for the
// text cut, the parts and members left out and the notice: members keep
// their order and their bytes, unknown ones too, and the commas and spaces
// between what is kept are those that came.
func TestApplySplices(t *testing.T) {
	img := func(data string) string { return `{"type":"image","data":"` + data + `","mimeType":"image/png"}` }
	for _, tc := range []struct {
		name, raw, want string
		limit, other    int
	}{
		{"member order and unknown members kept",
			`{"zeta":{"b":2,"a":1},"content":[{"type":"text","annotations":{"priority":1,"audience":["user"]},"text":"` + long + `","x-extra":[1, 2]}],"_meta":{"z":true,"a":false},"isError":false}`,
			`{"zeta":{"b":2,"a":1},"content":[{"type":"text","annotations":{"priority":1,"audience":["user"]},"text":"KEPT","x-extra":[1, 2]},{"type":"text","text":NOTICE}],"_meta":{"z":true,"a":false},"isError":false}`,
			400, 0},
		{"structured content dropped: isError replaced where it was",
			`{"isError":false,"structuredContent":{"rows":"` + long + `"},"content":[{"type":"text","text":"3 rows"}],"_meta":{}}`,
			`{"isError":true,"content":[{"type":"text","text":"3 rows"},{"type":"text","text":NOTICE}],"_meta":{}}`,
			400, 6},
		{"structured content dropped: isError added",
			`{"content":[{"type":"text","text":"3 rows"}],"structuredContent":{"rows":"` + long + `"}}`,
			`{"content":[{"type":"text","text":"3 rows"},{"type":"text","text":NOTICE}],"isError":true}`,
			400, 6},
		{"structured content dropped: content added",
			`{"structuredContent":{"rows":"` + long + `"},"z":1}`,
			`{"z":1,"content":[{"type":"text","text":NOTICE}],"isError":true}`,
			400, 0},
		{"structured content dropped: null content replaced",
			`{"content":null,"structuredContent":"` + long + `"}`,
			`{"content":[{"type":"text","text":NOTICE}],"isError":true}`,
			400, 0},
		{"duplicate isError: the last replaced, the earlier left out",
			`{"isError":false,"structuredContent":"` + long + `","isError":false}`,
			`{"isError":true,"content":[{"type":"text","text":NOTICE}]}`,
			400, 0},
		{"duplicate content: the last cut, the earlier left out",
			`{"content":[{"type":"text","text":"` + strings.Repeat("y", 2000) + `"}],"content":[{"type":"text","text":"` + long + `"}],"_meta":1}`,
			`{"content":[{"type":"text","text":"KEPT"},{"type":"text","text":NOTICE}],"_meta":1}`,
			400, 0},
		{"duplicate text in a part: the last cut, the earlier left out",
			`{"content":[{"text":"short","type":"text","text":"` + long + `"}]}`,
			`{"content":[{"type":"text","text":"KEPT"},{"type":"text","text":NOTICE}]}`,
			400, 0},
		{"duplicate type in a part: the last counts",
			`{"content":[{"type":"image","text":"` + long + `","type":"text"}]}`,
			`{"content":[{"type":"image","text":"KEPT","type":"text"},{"type":"text","text":NOTICE}]}`,
			400, 0},
		{"duplicate resource and resource text: the last cut, the earlier left out",
			`{"content":[{"type":"resource","resource":{"uri":"a","text":"` + long + `"},"resource":{"uri":"b","text":"short","text":"` + long + `"}}]}`,
			`{"content":[{"type":"resource","resource":{"uri":"b","text":"KEPT"}},{"type":"text","text":NOTICE}]}`,
			400, 0},
		{"embedded resource text cut",
			`{"content":[{"type":"resource","resource":{"uri":"file:///x","mimeType":"text/plain","text":"` + long + `"},"annotations":{}}]}`,
			`{"content":[{"type":"resource","resource":{"uri":"file:///x","mimeType":"text/plain","text":"KEPT"},"annotations":{}},{"type":"text","text":NOTICE}]}`,
			400, 0},
		{"parts kept between parts cut and dropped",
			`{"content":[{"type":"text","text":"` + long + `"},` + img("AAAA") + `,{"type":"text","text":"` + long + `"},` + img("BBBB") + `,{"type":"text","text":"` + long + `"}]}`,
			`{"content":[{"type":"text","text":"KEPT"},` + img("AAAA") + `,` + img("BBBB") + `,{"type":"text","text":NOTICE}]}`,
			400, 0},
		{"no text fits: leading parts dropped",
			`{"content":[{"type":"text","text":"` + long + `"},` + img("AAAA") + `,{"type":"text","text":"` + long + `"},` + img("BBBB") + `]}`,
			`{"content":[` + img("AAAA") + `,` + img("BBBB") + `,{"type":"text","text":NOTICE}]}`,
			100, 0},
		{"indented",
			"{\n  \"content\": [\n    {\n      \"type\": \"text\",\n      \"text\": \"" + long + "\"\n    },\n    {\n      \"type\" : \"text\",\n      \"text\" : \"" + long + "\"\n    }\n  ],\n  \"_meta\": {\n    \"k\": \"v\"\n  }\n}\n",
			"{\n  \"content\": [\n    {\n      \"type\": \"text\",\n      \"text\": \"KEPT\"\n    },{\"type\":\"text\",\"text\":NOTICE}\n  ],\n  \"_meta\": {\n    \"k\": \"v\"\n  }\n}\n",
			400, 0},
		{"escaped names",
			`{"con\u0074ent":[{"type":"te\u0078t","\u0074ext":"` + long + `"}]}`,
			`{"con\u0074ent":[{"type":"te\u0078t","\u0074ext":"KEPT"},{"type":"text","text":NOTICE}]}`,
			400, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, rep, err := Apply(json.RawMessage(tc.raw), tc.limit, hint)
			if err != nil {
				t.Fatal(err)
			}
			if want := expand(t, tc.want, rep, tc.other, tc.limit); string(out) != want {
				t.Fatalf("cut\n%s\nwant\n%s", out, want)
			}
			sameAsReference(t, Tool, tc.raw, tc.limit)
		})
	}
}

// TestApplyShapeSplices: resources/read and prompts/get results are cut
// in place like tools/call results, the notice in an item of their own.
func TestApplyShapeSplices(t *testing.T) {
	for _, tc := range []struct {
		name      string
		shape     Shape
		raw, want string
	}{
		{"resource: blob kept, its URI the notice's", Resource,
			`{"contents":[{"uri":"a://x","mimeType":"text/markdown","text":"` + long + `","_meta":{"k":1}},{"uri":"a://b","blob":"AAAA"},{"uri":"a://c","text":"` + long + `"}],"_meta":{"m":2}}`,
			`{"contents":[{"uri":"a://x","mimeType":"text/markdown","text":"KEPT","_meta":{"k":1}},{"uri":"a://b","blob":"AAAA"},{"uri":"a://b","mimeType":"text/plain","text":NOTICE}],"_meta":{"m":2}}`},
		{"resource: duplicate text", Resource,
			`{"contents":[{"text":"` + long + `","uri":"a://x","text":"` + long + `"}]}`,
			`{"contents":[{"uri":"a://x","text":"KEPT"},{"uri":"a://x","mimeType":"text/plain","text":NOTICE}]}`},
		{"prompt: image message kept", Prompt,
			`{"description":"d","messages":[{"role":"user","content":{"type":"text","text":"` + long + `"}},{"role":"assistant","content":{"type":"image","data":"AAAA","mimeType":"image/png"}},{"role":"user","content":{"type":"text","text":"` + long + `"}}]}`,
			`{"description":"d","messages":[{"role":"user","content":{"type":"text","text":"KEPT"}},{"role":"assistant","content":{"type":"image","data":"AAAA","mimeType":"image/png"}},{"role":"user","content":{"type":"text","text":NOTICE}}]}`},
		{"prompt: duplicate content", Prompt,
			`{"messages":[{"content":{"type":"text","text":"x"},"role":"user","content":{"type":"text","text":"` + long + `"}}]}`,
			`{"messages":[{"role":"user","content":{"type":"text","text":"KEPT"}},{"role":"user","content":{"type":"text","text":NOTICE}}]}`},
		{"prompt: embedded resource", Prompt,
			`{"messages":[{"role":"user","content":{"type":"resource","resource":{"uri":"r","text":"` + long + `"}}}]}`,
			`{"messages":[{"role":"user","content":{"type":"resource","resource":{"uri":"r","text":"KEPT"}}},{"role":"user","content":{"type":"text","text":NOTICE}}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, rep, err := ApplyShape(tc.shape, json.RawMessage(tc.raw), 400, hint)
			if err != nil {
				t.Fatal(err)
			}
			if want := expand(t, tc.want, rep, 0, 400); string(out) != want {
				t.Fatalf("cut\n%s\nwant\n%s", out, want)
			}
			sameAsReference(t, tc.shape, tc.raw, 400)
		})
	}
}

// TestApplyText: texts are counted as encoding/json decoded them: escapes
// as what they stand for, an invalid byte or an unpaired surrogate as one
// U+FFFD; such a text is cut, not refused, and a part kept whole keeps
// its bytes as they came.
func TestApplyText(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		total      int
	}{
		{"escapes", strings.Repeat(`\"\n\u00e9\ud83d\ude00\\`, 300), 1500},
		{"invalid UTF-8", "\xff\xfe" + strings.Repeat("é\xc3", 500), 1002},
		{"unpaired surrogates", `\ud800a` + strings.Repeat(`\udc00a`, 500), 1002},
		{"surrogate and invalid UTF-8", `\ud800` + "\xff" + long, 1002},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := `{"content":[{"type":"text","text":"kept` + "\xfe" + `"},{"type":"text","text":"` + tc.text + `"}]}`
			out, rep, err := Apply(json.RawMessage(raw), 400, hint)
			if err != nil {
				t.Fatal(err)
			}
			if rep.TextTotal != 5+tc.total {
				t.Errorf("%d characters, want %d", rep.TextTotal, 5+tc.total)
			}
			if !strings.HasPrefix(string(out), `{"content":[{"type":"text","text":"kept`+"\xfe"+`"},`) {
				t.Errorf("a part kept whole was changed: %.80q", out)
			}
			if cut := out[len(`{"content":[{"type":"text","text":"kept`+"\xfe"+`"},`):]; !utf8.Valid(cut) {
				t.Errorf("the text cut is not valid UTF-8: %.80q", cut)
			}
			sameAsReference(t, Tool, raw, 400)
		})
	}
}

// TestApplyErrors: what cannot be cut is an error that says where.
func TestApplyErrors(t *testing.T) {
	part := `{"type":"text","text":"` + long + `"}`
	for _, tc := range []struct {
		name  string
		shape Shape
		raw   string
		want  string
	}{
		{"a string", Tool, `"` + long + `"`, "read the result to cut it: a string, not an object"},
		{"spaces", Tool, strings.Repeat(" ", 2000), "read the result to cut it"},
		{"invalid JSON", Tool, `{"content":[` + part, "read the result to cut it"},
		{"invalid escape", Tool, `{"content":[{"type":"text","text":"\x` + long + `"}]}`, "read the result to cut it"},
		{"more after it", Tool, `{"content":[` + part + `]} x`, "read the result to cut it"},
		{"another object after it", Tool, `{"content":[` + part + `]} {}`, "read the result to cut it"},
		{"content not an array", Tool, `{"content":"` + long + `"}`, "read the result's content to cut it: a string, not an array"},
		{"part not an object", Tool, `{"content":[` + part + `,5]}`, "read content[1] to cut it: a number, not an object"},
		{"text not a string", Tool, `{"content":[{"type":"text","text":5},` + part + `]}`, "read content[0] to cut it: text: a number, not a string"},
		{"no text", Tool, `{"content":[{"type":"text"},` + part + `]}`, "read content[0] to cut it: text: missing"},
		{"resource not an object", Tool, `{"content":[{"type":"resource","resource":[]},` + part + `]}`, "read content[0] to cut it: resource: an array, not an object"},
		{"no resource", Tool, `{"content":[{"type":"resource"},` + part + `]}`, "read content[0] to cut it: resource: missing"},
		{"resource text not a string", Tool, `{"content":[{"type":"resource","resource":{"text":true}},` + part + `]}`, "read content[0] to cut it: resource.text: a boolean, not a string"},
		{"contents item text not a string", Resource, `{"contents":[{"uri":"u","text":{}},{"text":"` + long + `"}]}`, "read contents[0] to cut it: text: an object, not a string"},
		{"message content not an object", Prompt, `{"messages":[{"role":"user","content":"x"},{"content":` + part + `}]}`, "read messages[0] to cut it: content: a string, not an object"},
		{"messages not an array", Prompt, `{"messages":{"a":"` + long + `"}}`, "read the result's messages to cut it: an object, not an array"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := ApplyShape(tc.shape, json.RawMessage(tc.raw), 400, hint)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q (%.80s)", err, tc.want, out)
			}
			if _, _, err := refApplyShape(tc.shape, json.RawMessage(tc.raw), 400, hint); err == nil {
				t.Fatalf("the reference cut it")
			}
		})
	}
}

// TestApplyKeepsRawUncut: a result read and found within the limit is
// returned itself, not a copy.
func TestApplyKeepsRawUncut(t *testing.T) {
	raw := json.RawMessage(`{"content":[{"type":"text","text":"` + strings.Repeat(`\"`, 800) + `"}],"structuredContent":{"n":1}}`)
	for _, shape := range []Shape{Tool, Resource, Prompt} {
		out, rep, err := ApplyShape(shape, raw, 1000, hint)
		if err != nil || rep != nil || len(out) != len(raw) || &out[0] != &raw[0] {
			t.Fatalf("shape %d: %v %+v: not raw itself", shape, err, rep)
		}
	}
}

// TestApplyMatchesReference: results of many kinds cut as the reference
// cut them.
func TestApplyMatchesReference(t *testing.T) {
	for _, tc := range []struct {
		shape Shape
		raw   string
		limit int
	}{
		{Tool, `null` + strings.Repeat(" ", 2000), 400},
		{Tool, `{"content":[null,{"type":"text","text":null},{"type":"text","text":"` + long + `"}]}`, 400},
		{Tool, `{"content":[{"type":5,"text":"` + long + `"},{"type":"text","text":"` + long + `"}]}`, 400},
		{Tool, `{"content":[{"type":"resource","resource":null},{"type":"resource","resource":{"blob":"AA"}},{"type":"text","text":"` + long + `"}]}`, 400},
		{Tool, `{"content":5,"content":[{"type":"text","text":"` + long + `"}]}`, 400},
		{Tool, `{"content":[{"type":"text","text":"` + long + `"}],"content":null}`, 400},
		{Tool, `{"content":[{"type":"text","text":"` + long + `"}],"structuredContent":null,"isError":false}`, 400},
		{Tool, `{"structuredContent":"` + long + `","structuredContent":null,"content":[{"type":"text","text":"` + long + `"}]}`, 400},
		{Tool, `{"structuredContent":{"a":"` + long + `"},"content":[{"type":"text","text":"` + long + `"}]}`, 400},
		{Tool, `{"content":[{"type":"text","text":"` + long + `"},{"type":"text","text":"` + long + `"}]}`, 1500},
		{Tool, ` { "content" : [ { "type" : "text" , "text" : "` + long + `" } , { "type" : "text" , "text" : "` + long + `" } ] } `, 1200},
		{Resource, `{"contents":[{"uri":1,"text":"` + long + `"},{"uri":"b","text":null},{"text":"` + long + `"}]}`, 1200},
		{Resource, `{"contents":[null,{"uri":"a","text":"` + long + `"}]}`, 400},
		{Prompt, `{"messages":[null,{"role":"user"},{"role":"user","content":null},{"content":{"type":"text","text":"` + long + `"}}]}`, 400},
	} {
		sameAsReference(t, tc.shape, tc.raw, tc.limit)
	}
}

// FuzzApplyReference: whatever the result, the cut is the reference's.
// The inputs are short, each longMark standing for long: the fuzzer then
// mutates the structure rather than a kilobyte of x, and minimizing what
// it finds takes moments, not the whole run.
func FuzzApplyReference(f *testing.F) {
	f.Add(`{"content":[{"type":"text","text":"<L>"},{"type":"image","data":"AA"},{"type":"text","text":"<L>"}],"_meta":{}}`, 900, 0)
	f.Add(`{"isError":false,"structuredContent":{"a":"<L>"},"content":[{"type":"resource","resource":{"uri":"u","text":"<L>"}}]}`, 700, 0)
	f.Add(`{"contents":[{"uri":"a","text":"<L>"},{"uri":"b","blob":"AA"}]}`, 500, 1)
	f.Add(`{"messages":[{"role":"user","content":{"type":"text","text":"<L>"}}]}`, 500, 2)
	f.Fuzz(func(t *testing.T, raw string, limit, shape int) {
		if limit < 1 || limit > 2000 || shape < 0 || shape > 2 || len(raw) > 4096 {
			return
		}
		sameAsReference(t, Shape(shape), strings.ReplaceAll(raw, longMark, long), limit)
	})
}

// longMark stands for long in FuzzApplyReference's inputs.
const longMark = "<L>"

// sameAsReference holds ApplyShape to the reference on raw: the same
// report, an error for the same results, the same JSON once decoded; and
// raw itself when nothing is cut.
func sameAsReference(t *testing.T, shape Shape, raw string, limit int) {
	t.Helper()
	want, wantRep, wantErr := refApplyShape(shape, json.RawMessage(raw), limit, hint)
	got, rep, err := ApplyShape(shape, json.RawMessage(raw), limit, hint)
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("error %v, the reference's %v (%.200q)", err, wantErr, raw)
	}
	if err != nil {
		return
	}
	if !reflect.DeepEqual(rep, wantRep) {
		t.Fatalf("report %+v, the reference's %+v (%.200q)", rep, wantRep, raw)
	}
	if rep == nil {
		if string(got) != raw {
			t.Fatalf("nothing cut, but the result changed: %.200q", got)
		}
		return
	}
	if !json.Valid(got) {
		t.Fatalf("invalid JSON: %.300q", got)
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("cut\n%.600q\nthe reference's\n%.600q", got, want)
	}
}

// TestRuneCountPrefix: characters are counted and cut as utf8 counts and
// decodes them, eight bytes at a time or not.
func TestRuneCountPrefix(t *testing.T) {
	for _, s := range []string{"", "a", "é", "abcdefgh", "abcdefghé", "ééééééé", "😀😀😀a😀😀", "\xff\xfe\xc3abcdefghijk\xe2\x82", strings.Repeat("aé😀€", 30)} {
		if got, want := runeCount([]byte(s)), utf8.RuneCountInString(s); got != want {
			t.Errorf("runeCount(%q) = %d, want %d", s, got, want)
		}
		if !utf8.ValidString(s) {
			continue
		}
		for n := 0; n <= utf8.RuneCountInString(s)+1; n++ {
			if got, want := string(prefix([]byte(s), n)), refPrefix(s, n); got != want {
				t.Errorf("prefix(%q, %d) = %q, want %q", s, n, got, want)
			}
		}
	}
}

// TestApplyRandomAgainstReference: results built at random of what
// backends send (escapes, invalid UTF-8, unpaired surrogates, duplicate
// members, nulls, members in any order, spaces between tokens) are cut as
// the reference cut them.
func TestApplyRandomAgainstReference(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	g := gen{rnd}
	for i := range 3000 {
		shape := Shape(rnd.IntN(3))
		raw := g.result(shape)
		limit := 50 + rnd.IntN(1500)
		t.Run(fmt.Sprint(i), func(t *testing.T) { sameAsReference(t, shape, raw, limit) })
	}
}

// gen builds JSON results at random.
type gen struct{ r *rand.Rand }

func (g gen) pick(s ...string) string { return s[g.r.IntN(len(s))] }

// ws is the space between two tokens.
func (g gen) ws() string { return g.pick("", "", "", " ", "\n  ", "\t") }

func (g gen) text() string {
	if g.r.IntN(30) == 0 {
		return g.pick("null", "5", "{}") // null is no text; the others cannot be cut
	}
	var b strings.Builder
	b.WriteByte('"')
	for n := g.r.IntN([]int{1, 10, 300, 1500}[g.r.IntN(4)]); n > 0; n-- {
		b.WriteString(g.pick("a", "b", "é", "😀", `\"`, `\n`, `\u00e9`, `\ud83d\ude00`, `\ud800`, "\xff", " ", `\\`, "<&>", "\u2028", `\/`))
	}
	b.WriteByte('"')
	return b.String()
}

// object is an object of members, in any order, some of them twice.
func (g gen) object(members ...string) string {
	g.r.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
	if len(members) > 0 && g.r.IntN(8) == 0 {
		members = append(members, members[g.r.IntN(len(members))])
	}
	var b strings.Builder
	b.WriteString("{" + g.ws())
	for i, m := range members {
		if i > 0 {
			b.WriteString(g.ws() + "," + g.ws())
		}
		b.WriteString(m)
	}
	return b.String() + g.ws() + "}"
}

func (g gen) member(name, value string) string {
	return `"` + name + `"` + g.ws() + ":" + g.ws() + value
}

func (g gen) array(item func() string) string {
	var items []string
	for n := g.r.IntN(6); n > 0; n-- {
		items = append(items, item())
	}
	return "[" + g.ws() + strings.Join(items, g.ws()+","+g.ws()) + g.ws() + "]"
}

func (g gen) part() string {
	switch g.r.IntN(8) {
	case 0:
		return "null"
	case 1:
		return g.object(g.member("type", `"image"`), g.member("data", `"AAAA"`), g.member("mimeType", `"image/png"`))
	case 2:
		return g.object(g.member("type", `"resource"`), g.member("resource", g.object(g.member("uri", `"file:///x"`), g.member("text", g.text()))))
	case 3:
		return g.object(g.member("type", `"resource"`), g.member("resource", g.pick("null", `{"uri":"u","blob":"AA"}`)))
	case 4:
		return g.object(g.member("type", `"text"`), g.member("text", g.text()), g.member("annotations", `{"priority":1}`))
	}
	return g.object(g.member("type", `"text"`), g.member("text", g.text()))
}

func (g gen) result(shape Shape) string {
	var members []string
	switch shape {
	case Tool:
		members = append(members, g.member("content", g.array(g.part)))
		if g.r.IntN(3) == 0 {
			members = append(members, g.member("structuredContent", g.pick("null", `{"n":1}`, `{"rows":`+g.text()+`}`)))
		}
		if g.r.IntN(3) == 0 {
			members = append(members, g.member("isError", g.pick("false", "true")))
		}
	case Resource:
		members = append(members, g.member("contents", g.array(func() string {
			return g.object(g.member("uri", g.pick(`"a://x"`, `"a://y"`, "1")), g.pick(g.member("text", g.text()), g.member("blob", `"AA"`)))
		})))
	case Prompt:
		members = append(members, g.member("messages", g.array(func() string {
			return g.object(g.member("role", `"user"`), g.member("content", g.part()))
		})))
	}
	if g.r.IntN(2) == 0 {
		members = append(members, g.member("_meta", `{"k":"v"}`))
	}
	return g.ws() + g.object(members...) + g.ws()
}
