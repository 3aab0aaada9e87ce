package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/jsonrpc"
)

// hubMethods are the methods the fuzzed dispatcher serves itself, as the
// hub wires them (internal/server, internal/features).
var hubMethods = []string{
	"tools/list", "tools/call", "resources/list", "resources/templates/list", "resources/read",
	"resources/subscribe", "resources/unsubscribe", "prompts/list", "prompts/get", "completion/complete",
}

// sessionMethods are what the fake session layer answers with a result,
// as mcp-go's does; any other request it answers -32601.
var sessionMethods = map[string]bool{"initialize": true, "ping": true, "logging/setLevel": true, "server/discover": true}

// codeBlocked is the code a fake handler refuses with (a policy's refusal).
const codeBlocked = -32003

// replyCodes are the codes an answer may carry: JSON-RPC's own, the hub's
// busy code, a 2026-07-28 revision the hub does not speak, and the fake
// handlers' refusal.
var replyCodes = map[int]bool{
	jsonrpc.CodeParseError: true, jsonrpc.CodeInvalidRequest: true, jsonrpc.CodeMethodNotFound: true,
	jsonrpc.CodeInvalidParams: true, jsonrpc.CodeInternalError: true, jsonrpc.CodeServerBusy: true,
	mcp.UNSUPPORTED_PROTOCOL_VERSION: true, codeBlocked: true,
}

// fuzzRig is a dispatcher with fake handlers for every hub method and a
// fake session layer, counting who was asked to serve what.
type fuzzRig struct {
	d                  *Dispatcher
	handled, sessioned atomic.Int32
}

func newFuzzRig() *fuzzRig {
	r := &fuzzRig{d: New("mcp-hub", "fuzz")}
	for _, m := range hubMethods {
		r.d.Handle(m, func(_ context.Context, req *Request) (json.RawMessage, error) {
			r.handled.Add(1)
			if req.Msg.Method != m {
				panic("handler of " + m + " given " + req.Msg.Method)
			}
			if req.Call != nil {
				switch req.Call.Name {
				case "blocked":
					return nil, &jsonrpc.Error{Code: codeBlocked, Message: "BLOCKED: policy"}
				case "broken":
					return nil, errors.New("upstream went away")
				case "panics":
					panic("kaboom")
				}
			}
			// The params back (the gate has read them: JSON), a result the
			// 2026-07-28 stamp rewrites when the request declared it.
			params := req.Msg.Params
			if len(params) == 0 {
				params = json.RawMessage("null")
			}
			return json.RawMessage(`{"echo":` + string(params) + `}`), nil
		})
	}
	return r
}

// session is the fake session layer: a request is answered (a result for
// the methods it knows, -32601 for the rest), anything else gets nothing.
func (r *fuzzRig) session(_ context.Context, raw []byte) []byte {
	r.sessioned.Add(1)
	msg, err := jsonrpc.Parse(raw)
	if err != nil {
		panic("the session layer was handed a message the gate refuses: " + err.Error())
	}
	if msg.Kind() != jsonrpc.KindRequest {
		return nil
	}
	if sessionMethods[msg.Method] {
		return jsonrpc.Reply(msg.ID, json.RawMessage(`{}`), nil)
	}
	return jsonrpc.ErrorReply(msg.ID, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found"})
}

// FuzzDispatch hands arbitrary bytes to the dispatcher as one message of a
// face that hands over messages one by one (WebSocket, legacy SSE) and
// checks, whatever the bytes:
//   - nothing panics (a handler's panic is the dispatcher's to answer);
//   - the message goes to exactly one place: refused by the gate, served by
//     the hub's handler of its method (a request of a hub method), or handed
//     to the session layer (everything else the gate accepts);
//   - a request the gate accepts gets exactly one answer, with its id byte
//     for byte; a notification or a response gets none;
//   - a message the gate refuses (a batch included: batches are not
//     supported) gets one error answer with the id jsonrpc.IDOf finds in
//     it, null when there is none, and a code of parse error, invalid
//     request or invalid params;
//   - every answer is one JSON-RPC 2.0 response: a JSON object with
//     jsonrpc "2.0", an id, exactly one of result and error, an error with
//     an integer code of the documented set and a string message, ending
//     with a newline.
func FuzzDispatch(f *testing.F) {
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"p","method":"ping"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"x"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"a":1}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"blocked"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"broken"}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"panics"}}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"a","NAME":"b"}}`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"echo","_meta":{"progressToken":1}}}`,
		`{"jsonrpc":"2.0","id":9,"method":"resources/read","params":{"uri":"file:///etc/hosts"}}`,
		`{"jsonrpc":"2.0","id":10,"method":"resources/subscribe","params":{"uri":"x://y"}}`,
		`{"jsonrpc":"2.0","id":11,"method":"prompts/get","params":{"name":"p","arguments":{"k":"v"}}}`,
		`{"jsonrpc":"2.0","id":12,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"a","value":"b"}}}`,
		`{"jsonrpc":"2.0","id":13,"method":"tools/list","params":{` + meta + `}}`,
		`{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"echo",` + meta + `}}`,
		`{"jsonrpc":"2.0","id":15,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`,
		`{"jsonrpc":"2.0","id":16,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		`{"jsonrpc":"2.0","id":17,"method":"no/such/method"}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"x"}}`,
		`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo"}}`,
		`{"jsonrpc":"2.0","id":null,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"x"}}`,
		`{"jsonrpc":"2.0","id":1}`,
		`{"jsonrpc":"1.0","id":1,"method":"ping"}`,
		`{"id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","ID":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":true,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1.5e308,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":-0,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":"\u00e9\ud83d\ude00","method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":"x"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":[1,2]}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"}]`,
		`[]`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":` + strings.Repeat(`[`, 200) + strings.Repeat(`]`, 200) + `}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":` + strings.Repeat(`{"a":`, 100) + `1` + strings.Repeat(`}`, 100) + `}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call"`,
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/\xff\"}",
		``, `null`, `1`, `"x"`, `{}`,
	} {
		f.Add([]byte(seed))
	}
	rig := newFuzzRig()
	var reader jsonrpc.Reader
	f.Fuzz(func(t *testing.T, raw []byte) {
		in := bytes.Clone(raw) // the dispatcher must not write into it
		rig.handled.Store(0)
		rig.sessioned.Store(0)
		reply := rig.d.Message(context.Background(), raw, "s1", rig.session)
		if !bytes.Equal(raw, in) {
			t.Fatalf("the message changed while it was dispatched")
		}
		handled, sessioned := rig.handled.Load(), rig.sessioned.Load()

		msg, _, err := reader.ParseRequest(raw)
		switch {
		case err != nil: // refused by the gate
			if handled+sessioned != 0 {
				t.Fatalf("a refused message reached a handler (%d) or the session layer (%d)", handled, sessioned)
			}
			id := jsonrpc.IDOf(raw)
			if len(id) == 0 {
				id = json.RawMessage("null")
			}
			// An id that is neither a string, a number nor null
			// ({"id":true}, {"id":{}}) is answered with null (IDOf).
			code := checkAnswerID(t, reply, id)
			if code != jsonrpc.CodeParseError && code != jsonrpc.CodeInvalidRequest && code != jsonrpc.CodeInvalidParams {
				t.Fatalf("refused with code %d: %s", code, reply)
			}
		case msg.Kind() == jsonrpc.KindRequest && rig.d.Owns(msg.Method):
			if sessioned != 0 || handled > 1 {
				t.Fatalf("a hub request served %d times, %d by the session layer", handled, sessioned)
			}
			code := checkAnswer(t, reply, msg.ID)
			if handled == 0 && code != jsonrpc.CodeInvalidParams && code != mcp.UNSUPPORTED_PROTOCOL_VERSION {
				// Only its 2026-07-28 _meta stops a hub request before its handler.
				t.Fatalf("a hub request answered %d without its handler: %s", code, reply)
			}
		case msg.Kind() == jsonrpc.KindRequest:
			if handled != 0 || sessioned != 1 {
				t.Fatalf("a session request: %d handler calls, %d session layer calls", handled, sessioned)
			}
			checkAnswer(t, reply, msg.ID)
		default: // a notification or a response
			if handled != 0 || sessioned != 1 {
				t.Fatalf("a notification or response: %d handler calls, %d session layer calls", handled, sessioned)
			}
			if reply != nil {
				t.Fatalf("a notification or response answered: %s", reply)
			}
		}
	})
}

// checkAnswer checks that reply is one JSON-RPC 2.0 response with id
// (byte for byte) and returns its error code, 0 for a result.
func checkAnswer(t *testing.T, reply []byte, id json.RawMessage) int {
	t.Helper()
	return checkAnswerID(t, reply, id)
}

// validID reports whether id is what JSON-RPC 2.0 allows in an answer: a
// string, a number, or null.
func validID(id json.RawMessage) bool {
	return len(id) > 0 && (id[0] == '"' || id[0] == '-' || id[0] >= '0' && id[0] <= '9' || string(id) == "null")
}

// checkAnswerID is checkAnswer; anyID leaves the id's type unchecked (it
// is still compared with id).
func checkAnswerID(t *testing.T, reply []byte, id json.RawMessage) int {
	t.Helper()
	if reply == nil {
		t.Fatalf("no answer, want one with id %s", id)
	}
	if !bytes.HasSuffix(reply, []byte("}\n")) || !json.Valid(reply) {
		t.Fatalf("answer is not one JSON object and a newline: %q", reply)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(reply, &members); err != nil {
		t.Fatalf("answer %s: %v", reply, err)
	}
	for k := range members {
		switch k {
		case "jsonrpc", "id", "result", "error":
		default:
			t.Fatalf("answer %s: member %q", reply, k)
		}
	}
	if string(members["jsonrpc"]) != `"2.0"` {
		t.Fatalf("answer %s: jsonrpc %s", reply, members["jsonrpc"])
	}
	if !validID(members["id"]) {
		// JSON-RPC 2.0: a string, a number, or null when the request's id
		// could not be read.
		t.Fatalf("answer %s: id %q is not a string, a number or null", reply, members["id"])
	}
	if !bytes.Equal(members["id"], id) {
		t.Fatalf("answer %s: id %s, want %s", reply, members["id"], id)
	}
	result, hasResult := members["result"]
	rawErr, hasError := members["error"]
	if hasResult == hasError {
		t.Fatalf("answer %s: want exactly one of result and error", reply)
	}
	if hasResult {
		if len(result) == 0 || string(result) == "null" {
			t.Fatalf("answer %s: a null result", reply)
		}
		return 0
	}
	var e struct {
		Code    *json.Number `json:"code"`
		Message *string      `json:"message"`
	}
	dec := json.NewDecoder(bytes.NewReader(rawErr))
	dec.UseNumber()
	if err := dec.Decode(&e); err != nil || e.Code == nil || e.Message == nil {
		t.Fatalf("answer %s: error object %s (%v)", reply, rawErr, err)
	}
	code, err := e.Code.Int64()
	if err != nil || !replyCodes[int(code)] {
		t.Fatalf("answer %s: code %s not of the documented set", reply, *e.Code)
	}
	return int(code)
}
