package dispatch

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestStamp: the stamp adds what the result lacks and nothing it has, to
// the result's bytes: the members the handler wrote keep their bytes and
// their order, and the result means what decoding it into a map, adding
// the members and encoding it again (the stamp before it spliced) meant.
func TestStamp(t *testing.T) {
	d := New("mcp-hub", "9.9")
	info := `{"name":"mcp-hub","version":"9.9"}`
	for _, tc := range []struct {
		name, method, in string
		want             string // "" for the result unchanged
	}{
		{"a call's result", "tools/call", `{"content":[{"type":"text","text":"a \"b\" \u00e9"}]}`,
			`{"content":[{"type":"text","text":"a \"b\" \u00e9"}],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":` + info + `}}`},
		{"a list's", "tools/list", `{"tools":[]}`,
			`{"tools":[],"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":` + info + `},"ttlMs":0,"cacheScope":"private"}`},
		{"empty", "tools/call", `{}`, `{"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":` + info + `}}`},
		{"spaces kept", "tools/call", " { \"a\" : 1 } \n", " { \"a\" : 1 ,\"resultType\":\"complete\",\"_meta\":{\"io.modelcontextprotocol/serverInfo\":" + info + "}} \n"},
		{"its own _meta kept", "tools/call", `{"_meta":{"progressToken":7},"isError":false}`,
			`{"_meta":{"io.modelcontextprotocol/serverInfo":` + info + `,"progressToken":7},"isError":false,"resultType":"complete"}`},
		{"a _meta that is no object replaced", "tools/call", `{"_meta":null,"resultType":"complete"}`,
			`{"_meta":{"io.modelcontextprotocol/serverInfo":` + info + `},"resultType":"complete"}`},
		{"nothing to add", "tools/list", `{"resultType":"incomplete","ttlMs":5,"cacheScope":"shared","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"x"}},"tools":[]}`, ""},
		{"an array", "tools/call", `[1,2]`, ""},
		{"null", "tools/call", `null`, ""},
		{"not JSON", "tools/call", `{"a":`, ""},
		{"two values", "tools/call", `{} {}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := d.stamp(tc.method, json.RawMessage(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want
			if want == "" {
				want = tc.in
			}
			if string(got) != want {
				t.Fatalf("stamp(%s)\n got %s\nwant %s", tc.in, got, want)
			}
			if tc.want == "" || !json.Valid([]byte(tc.in)) {
				return
			}
			ref, err := stampByMap(d, tc.method, []byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			var a, b any
			if json.Unmarshal(got, &a) != nil || json.Unmarshal(ref, &b) != nil || !reflect.DeepEqual(a, b) {
				t.Fatalf("stamp(%s) = %s, which does not mean %s", tc.in, got, ref)
			}
		})
	}
}

// stampByMap is the stamp as it was: the result decoded into a map, the
// members added, the map encoded again.
func stampByMap(d *Dispatcher, method string, result []byte) ([]byte, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(result, &members); err != nil || members == nil {
		return result, nil
	}
	if _, ok := members["resultType"]; !ok {
		members["resultType"] = json.RawMessage(`"` + string(mcp.ResultTypeComplete) + `"`)
	}
	var meta map[string]json.RawMessage
	if raw, ok := members["_meta"]; ok {
		_ = json.Unmarshal(raw, &meta)
	}
	if meta == nil {
		meta = map[string]json.RawMessage{}
	}
	if _, ok := meta[mcp.MetaKeyServerInfo]; !ok {
		meta[mcp.MetaKeyServerInfo] = d.serverInfo
		raw, err := json.Marshal(meta)
		if err != nil {
			return nil, err
		}
		members["_meta"] = raw
	}
	if cacheable[method] {
		if _, ok := members["ttlMs"]; !ok {
			members["ttlMs"] = json.RawMessage(`0`)
		}
		if _, ok := members["cacheScope"]; !ok {
			members["cacheScope"] = json.RawMessage(`"private"`)
		}
	}
	return json.Marshal(members)
}

// FuzzStamp: on any bytes the stamp neither fails nor panics; on a JSON
// object it gives valid JSON that means what stampByMap's does (an object
// with a name twice is left as it is: not I-JSON).
func FuzzStamp(f *testing.F) {
	for _, s := range []string{`{"content":[]}`, `{}`, ` { "a" : 1 } `, `{"_meta":{"progressToken":7}}`, `{"_meta":null}`,
		`{"resultType":"complete","ttlMs":1}`, `[1]`, `null`, `{"a":`, `{"a":1,"a":2}`} {
		f.Add(s, true)
		f.Add(s, false)
	}
	d := New("mcp-hub", "9.9")
	f.Fuzz(func(t *testing.T, in string, list bool) {
		method := "tools/call"
		if list {
			method = "tools/list"
		}
		got, err := d.stamp(method, json.RawMessage(in))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) == in {
			return
		}
		ref, err := stampByMap(d, method, []byte(in))
		if err != nil {
			t.Fatal(err)
		}
		var a, b any
		if json.Unmarshal(got, &a) != nil || json.Unmarshal(ref, &b) != nil || !reflect.DeepEqual(a, b) {
			t.Fatalf("stamp(%q) = %s, which does not mean %s", in, got, ref)
		}
	})
}
