package jsonrpc

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestParseClassifies(t *testing.T) {
	for _, tc := range []struct {
		body   string
		kind   Kind
		hasID  bool
		method string
	}{
		{`{"jsonrpc":"2.0","id":0,"result":{}}`, KindResponse, true, ""},
		{`{"jsonrpc":"2.0","id":"a","error":{"code":1,"message":"x"}}`, KindResponse, true, ""},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, KindRequest, true, "tools/list"},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, KindNotification, false, "notifications/initialized"},
		{`{"jsonrpc":"2.0","id":null,"result":{}}`, KindResponse, false, ""},
		{`{"jsonrpc":"2.0","id":7}`, KindRequest, true, ""},
		{` {"jsonrpc":"2.0","method":"x","params":[1]} `, KindNotification, false, "x"},
	} {
		m, err := Parse([]byte(tc.body))
		if err != nil {
			t.Errorf("Parse(%s): %v", tc.body, err)
			continue
		}
		if m.Kind() != tc.kind || m.HasID() != tc.hasID || m.Method != tc.method {
			t.Errorf("Parse(%s) = kind %v id %v method %q, want %v %v %q", tc.body, m.Kind(), m.HasID(), m.Method, tc.kind, tc.hasID, tc.method)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct {
		body string
		code int
		says string
	}{
		{`not json`, CodeParseError, "not JSON"},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, CodeInvalidRequest, "batches are not supported"},
		{`"x"`, CodeInvalidRequest, "not a JSON object"},
		{`{"jsonrpc":"2.0","id":1,"method":"ping"} {}`, CodeParseError, "data after"},
		{`{"jsonrpc":"1.0","id":1,"method":"ping"}`, CodeInvalidRequest, `"2.0"`},
		{`{"id":1,"method":"ping"}`, CodeInvalidRequest, `"2.0"`},
		{`{"jsonrpc":"2.0","id":{},"method":"ping"}`, CodeInvalidRequest, "id must be"},
		{`{"jsonrpc":"2.0","id":1,"method":7}`, CodeInvalidRequest, "method must be"},
		{`{"jsonrpc":"2.0","id":1,"method":"a","METHOD":"b"}`, CodeInvalidRequest, `"method" and "METHOD"`},
		{`{"jsonrpc":"2.0","id":1,"id":2,"method":"a"}`, CodeInvalidRequest, `"id" appears twice`},
		{`{"jsonrpc":"2.0","id":1,"method":"a","params":{"uri":"x","URI":"y"}}`, CodeInvalidParams, `"uri" and "URI"`},
		{`{"jsonrpc":"2.0","id":1,"method":"a","params":{"_meta":{"progressToken":1,"progressToken":2}}}`, CodeInvalidParams, "progressToken"},
		{`{"jsonrpc":"2.0","id":1,"method":"a","params":{"_meta":{"progressToken":1,"PROGRESSTOKEN":2}}}`, CodeInvalidParams, "_meta"},
		{`{"jsonrpc":"2.0","id":1,"method":"a","params":{"arguments":{"deep":{"x":1,"x":2}}}}`, CodeInvalidParams, "appears twice"},
		{`{"jsonrpc":"2.0","id":1,"method":"a","params":"x"}`, CodeInvalidParams, "must be an object"},
		// A lone member in another letter case: the hub reads no method,
		// a case-insensitive server would read "tools/call".
		{`{"jsonrpc":"2.0","id":1,"Method":"tools/call"}`, CodeInvalidRequest, `"Method" must be spelt "method"`},
		{`{"jsonrpc":"2.0","id":1,"method":"a","params":{"_Meta":{}}}`, CodeInvalidParams, `"_Meta"`},
		{`{"jsonrpc":"2.0","id":1,"method":"a","params":{"_meta":{"ProgressToken":1}}}`, CodeInvalidParams, `"ProgressToken"`},
		{`{"jsonrpc":"2.0","id":1,"method":"a","params":{"_meta":{"TraceParent":"x"}}}`, CodeInvalidParams, `"TraceParent"`},
		// The Kelvin sign folds onto k in encoding/json.
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\",\"params\":{\"kind\":1,\"\u212aind\":2}}", CodeInvalidParams, "letter case"},
	} {
		_, err := Parse([]byte(tc.body))
		var e *Error
		if !errors.As(err, &e) || e.Code != tc.code || !strings.Contains(e.Message, tc.says) {
			t.Errorf("Parse(%s) = %v, want code %d saying %q", tc.body, err, tc.code, tc.says)
		}
	}
}

func TestParseToolCall(t *testing.T) {
	good, err := ParseToolCall(json.RawMessage(`{"name":"t","arguments":{"a":1,"A":2},"_meta":{"progressToken":"p"},"task":{"ttl":1},` +
		`"inputResponses":{"k":{}},"requestState":"s","unknown":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if good.Name != "t" || string(good.Arguments) != `{"a":1,"A":2}` || string(good.ProgressToken()) != `"p"` ||
		string(good.Task) != `{"ttl":1}` || string(good.InputResponses) != `{"k":{}}` || string(good.RequestState) != `"s"` {
		t.Errorf("ParseToolCall = %+v", good)
	}
	for _, bad := range []string{
		``, `null`, `[]`, `{}`, `{"name":""}`, `{"name":1}`,
		`{"name":"a","NAME":"b"}`, `{"NAME":"b","name":"a"}`, `{"name":"a","name":"b"}`,
		`{"name":"a","arguments":[1]}`, `{"name":"a","arguments":"x"}`,
		`{"name":"a","arguments":{"x":1,"x":2}}`,
		`{"name":"a","_meta":{"progressToken":1,"ProgressToken":2}}`, `{"name":"a","_meta":1}`,
		`{"name":"a","arguments":{},"Arguments":{}}`,
		// Found by the fuzzer: strict read no arguments, a lenient
		// decoder read these.
		`{"name":"0","ArGuments":{}}`, `{"Name":"a"}`, `{"name":"a","_META":{}}`,
		`{"name":"a","inputresponses":{}}`, `{"name":"a","_meta":{"progresstoken":1}}`,
	} {
		if _, err := ParseToolCall(json.RawMessage(bad)); err == nil {
			t.Errorf("ParseToolCall(%s) accepted", bad)
		} else if e, ok := err.(*Error); !ok || e.Code != CodeInvalidParams {
			t.Errorf("ParseToolCall(%s) = %v, want -32602", bad, err)
		}
	}
}

// FuzzParseToolCall: whatever the bytes, a call the strict reading accepts
// names the same tool for a lenient decoder (encoding/json, as mcp-go and
// most upstreams read), and its arguments are the same object.
func FuzzParseToolCall(f *testing.F) {
	for _, s := range []string{
		`{"name":"a","arguments":{"x":1}}`,
		`{"NAME":"delete","name":"get"}`,
		`{"name":"get","Name":"delete"}`,
		`{"name":"g\u0065t","arguments":{}}`,
		"{\"name\":\"a\",\"\u212aey\":1,\"key\":2}",
		`{"name":"a","_meta":{"progressToken":1}}`,
		`{"name":"0","ArGuments":{}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		call, err := ParseToolCall(raw)
		if err != nil {
			return
		}
		var lenient struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if err := json.Unmarshal(raw, &lenient); err != nil {
			t.Fatalf("strict reading accepted %q, lenient one refused it: %v", raw, err)
		}
		if lenient.Name != call.Name {
			t.Fatalf("%q: strict name %q, lenient name %q", raw, call.Name, lenient.Name)
		}
		if string(lenient.Arguments) != "null" && string(lenient.Arguments) != string(call.Arguments) {
			t.Fatalf("%q: strict arguments %s, lenient %s", raw, call.Arguments, lenient.Arguments)
		}
	})
}

// FuzzParse: whatever the bytes, a message the strict reading accepts has
// the same method, id and params for a lenient decoder.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}`,
		`{"jsonrpc":"2.0","id":1,"Method":"tools/call"}`,
		`{"jsonrpc":"2.0","method":"a","METHOD":"b"}`,
		`{"jsonrpc":"2.0","id":"x","result":{}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, err := Parse(raw)
		if err != nil {
			return
		}
		var lenient struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if err := json.Unmarshal(raw, &lenient); err != nil {
			t.Fatalf("strict reading accepted %q, lenient one refused it: %v", raw, err)
		}
		if lenient.Method != m.Method || string(lenient.ID) != string(m.ID) || string(lenient.Params) != string(m.Params) {
			t.Fatalf("%q: strict %q %s %s, lenient %q %s %s", raw, m.Method, m.ID, m.Params, lenient.Method, lenient.ID, lenient.Params)
		}
	})
}
