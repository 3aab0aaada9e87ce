package upstream

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/jsonrpc"
)

// The one builder of a tools/call's params (wire.go) sends the decided call
// and nothing of the caller's bytes beyond it, on every revision.
func TestForwardedParamsAreBuiltFromTheDecidedCall(t *testing.T) {
	call, err := jsonrpc.ParseToolCall(json.RawMessage(`{"name":"search","arguments":{"q":9007199254740993},` +
		`"_meta":{"progressToken":"p1","io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"x"},"com.example/trace":"abc"},"extra":{"name":"delete_file"}}`))
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string]string{"legacy": string((&out{}).params(call, nil))} {
		for _, want := range []string{`"name":"search"`, `"q":9007199254740993`, `"progressToken":"p1"`, `"com.example/trace":"abc"`} {
			if !strings.Contains(got, want) {
				t.Errorf("%s: forwarded params %s lack %s", name, got, want)
			}
		}
		for _, bad := range []string{"protocolVersion", "clientInfo", "delete_file", "extra"} {
			if strings.Contains(got, bad) {
				t.Errorf("%s: forwarded params %s carry %s", name, got, bad)
			}
		}
		var back struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal([]byte(got), &back); err != nil || back.Name != "search" {
			t.Errorf("%s: params %s decode to name %q (%v)", name, got, back.Name, err)
		}
	}
}

// On a 2026-07-28 connection the hub's own identity replaces the caller's,
// and the caller's capabilities travel so input requests reach it.
func TestParamsOnModernConnection(t *testing.T) {
	d := &out{modern: true, meta: map[string]json.RawMessage{
		mcp.MetaKeyProtocolVersion:    json.RawMessage(`"2026-07-28"`),
		mcp.MetaKeyClientInfo:         json.RawMessage(`{"name":"mcp-hub"}`),
		mcp.MetaKeyClientCapabilities: json.RawMessage(`{}`),
	}}
	call := jsonrpc.ToolCall{Name: "t", Meta: map[string]json.RawMessage{
		mcp.MetaKeyClientInfo:         json.RawMessage(`{"name":"caller"}`),
		mcp.MetaKeyClientCapabilities: json.RawMessage(`{"elicitation":{}}`),
	}, RequestState: json.RawMessage(`"s1"`)}
	var got struct {
		Name         string                     `json:"name"`
		Meta         map[string]json.RawMessage `json:"_meta"`
		RequestState string                     `json:"requestState"`
	}
	if err := json.Unmarshal(d.params(call, nil), &got); err != nil {
		t.Fatal(err)
	}
	if got.Name != "t" || got.RequestState != "s1" || string(got.Meta[mcp.MetaKeyClientInfo]) != `{"name":"mcp-hub"}` ||
		string(got.Meta[mcp.MetaKeyClientCapabilities]) != `{"elicitation":{}}` {
		t.Errorf("params = %+v", got)
	}
}

// FuzzForwardedCall: for any tools/call params the hub accepts, the
// request an upstream receives, read the way most servers read it (encoding/json: any letter
// case, last member wins), names exactly the tool the hub decided on and
// carries exactly the caller's arguments.
func FuzzForwardedCall(f *testing.F) {
	for _, s := range []string{
		`{"name":"get_me","arguments":{"x":1}}`,
		`{"NAME":"delete_file","name":"get_me","arguments":{}}`,
		`{"name":"get_me","extra":{"name":"delete_file"},"Extra":1}`,
		`{"name":"a","_meta":{"progressToken":1,"name":"delete_file"},"requestState":"s"}`,
		`{"name":"a","arguments":{"name":"delete_file","Name":"x"}}`,
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, params []byte, modern bool) {
		call, err := jsonrpc.ParseToolCall(params)
		if err != nil {
			return
		}
		d := &out{modern: modern, meta: map[string]json.RawMessage{mcp.MetaKeyProtocolVersion: json.RawMessage(`"2026-07-28"`)}}
		relayed := map[string]json.RawMessage{mcp.MetaKeyClientCapabilities: hubCapabilities}
		for path, sent := range map[string][]byte{"plain": d.params(call, nil), "relayed": d.params(call, relayed)} {
			var got struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			}
			if err := json.Unmarshal(sent, &got); err != nil {
				t.Fatalf("%s: the upstream cannot read %s (from %q): %v", path, sent, params, err)
			}
			if got.Name != call.Name {
				t.Fatalf("%s: decided %q, upstream reads %q in %s", path, call.Name, got.Name, sent)
			}
			if !sameJSON(got.Arguments, call.Arguments) {
				t.Fatalf("%s: arguments %s became %s", path, call.Arguments, got.Arguments)
			}
		}
	})
}

// sameJSON compares two JSON values by meaning (nil and null are equal).
func sameJSON(a, b json.RawMessage) bool {
	var va, vb any
	if len(a) == 0 {
		a = json.RawMessage("null")
	}
	if len(b) == 0 {
		b = json.RawMessage("null")
	}
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return string(a) == string(b)
	}
	ja, _ := json.Marshal(va)
	jb, _ := json.Marshal(vb)
	return string(ja) == string(jb)
}
