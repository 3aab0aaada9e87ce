package clientconfig

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestSetMember(t *testing.T) {
	v := obj{{"url", "U"}}
	for _, tc := range []struct{ name, in, want string }{
		{"empty file", "", "{\n  \"s\": {\n    \"hub\": {\n      \"url\": \"U\"\n    }\n  }\n}\n"},
		{"empty object", "{}", "{\n  \"s\": {\n    \"hub\": {\n      \"url\": \"U\"\n    }\n  }\n}"},
		{"added after the others, tabs kept", "{\n\t\"a\": 1,\n\t\"s\": {\n\t\t\"x\": {}\n\t}\n}", "{\n\t\"a\": 1,\n\t\"s\": {\n\t\t\"x\": {},\n\t\t\"hub\": {\n\t\t\t\"url\": \"U\"\n\t\t}\n\t}\n}"},
		{"replaced in place", "{\"s\": {\"hub\": 1, \"x\": 2}}", "{\"s\": {\"hub\": {\n      \"url\": \"U\"\n    }, \"x\": 2}}"},
		{"trailing comma and comments kept", "{\n  // c\n  \"s\": {\n    \"x\": 1, /* y */\n  },\n}", "{\n  // c\n  \"s\": {\n    \"x\": 1,\n    \"hub\": {\n      \"url\": \"U\"\n    }, /* y */\n  },\n}"},
		{"strings with braces", "{\"a\": \"}{\\\"\", \"s\": {}}", "{\"a\": \"}{\\\"\", \"s\": {\n    \"hub\": {\n      \"url\": \"U\"\n    }\n  }}"},
	} {
		got, err := setMember([]byte(tc.in), []string{"s", "hub"}, v)
		if err != nil || string(got) != tc.want {
			t.Errorf("%s: got %v\n%s\nwant\n%s", tc.name, err, got, tc.want)
		}
		if !json.Valid(plain(got)) {
			t.Errorf("%s: not valid once plain:\n%s", tc.name, plain(got))
		}
	}
	for _, tc := range []struct{ in, want string }{
		{`{"s": []}`, `"s" is not an object`},
		{`[1]`, "not a JSON object"},
		{`{"a": 1} x`, "text after"},
		{"{\n\"a\": tru }", "line 2, column 6"},
		{`{"a": "x`, "string not closed"},
		{"{/* x", "comment not closed"},
	} {
		if _, err := setMember([]byte(tc.in), []string{"s", "hub"}, v); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestUpsertElem(t *testing.T) {
	in := obj{{"id", "mcp-hub-token"}, {"type", "promptString"}}
	for _, tc := range []struct{ name, doc, want string }{
		{"created", `{"servers": {}}`, `{"servers": {},` + "\n" + `  "inputs": [` + "\n    {\n      \"id\": \"mcp-hub-token\",\n      \"type\": \"promptString\"\n    }\n  ]}"},
		{"appended", "{\n  \"inputs\": [\n    {\"id\": \"other\"}\n  ]\n}", "{\n  \"inputs\": [\n    {\"id\": \"other\"},\n    {\n      \"id\": \"mcp-hub-token\",\n      \"type\": \"promptString\"\n    }\n  ]\n}"},
		{"replaced", `{"inputs": [{"id": "mcp-hub-token", "old": true}, 3]}`, "{\"inputs\": [{\n    \"id\": \"mcp-hub-token\",\n    \"type\": \"promptString\"\n  }, 3]}"},
	} {
		got, err := upsertElem([]byte(tc.doc), "inputs", "mcp-hub-token", in)
		if err != nil || string(got) != tc.want {
			t.Errorf("%s: %v\n%s\nwant\n%s", tc.name, err, got, tc.want)
		}
	}
}

func TestPlainKeepsStrings(t *testing.T) {
	in := "{\"a\": \"// not a comment, \\\"/* nor this */\", // gone\n \"b\": [1, 2,],}"
	var m map[string]any
	if err := json.Unmarshal(plain([]byte(in)), &m); err != nil {
		t.Fatalf("%v: %s", err, plain([]byte(in)))
	}
	if m["a"] != "// not a comment, \"/* nor this */" {
		t.Errorf("a = %q", m["a"])
	}
}

// A file with CRLF line endings gets CRLF in what is added too.
func TestLineEndingsKept(t *testing.T) {
	for _, client := range []string{"cursor", "codex"} {
		c, _ := lookup(client)
		e, _ := c.entry(Hub{Name: "mcp-hub", URL: "http://h/mcp"})
		before := strings.ReplaceAll(existing(client), "\n", "\r\n")
		after, err := c.merge([]byte(before), "mcp-hub", e)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(after, "\n"); n != strings.Count(after, "\r\n") {
			t.Errorf("%s: %d of %d line ends are CRLF:\n%q", client, strings.Count(after, "\r\n"), n, after)
		}
	}
}
