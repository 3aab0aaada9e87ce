package jsonrpc

import (
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestReply(t *testing.T) {
	for _, tc := range []struct {
		name   string
		id     json.RawMessage
		result json.RawMessage
		err    error
		want   string
	}{
		{"result", json.RawMessage(`7`), json.RawMessage(`{"ok":true}`), nil, `{"jsonrpc":"2.0","id":7,"result":{"ok":true}}` + "\n"},
		{"no id is null", nil, nil, &Error{Code: CodeInvalidRequest, Message: "no"}, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"no"}}` + "\n"},
		{"data kept", json.RawMessage(`"a"`), nil, &Error{Code: CodeServerBusy, Message: "busy", Data: json.RawMessage(`{"retryAfterMs":5}`)},
			`{"jsonrpc":"2.0","id":"a","error":{"code":-32000,"message":"busy","data":{"retryAfterMs":5}}}` + "\n"},
		{"plain error is internal", json.RawMessage(`1`), nil, errors.New("boom"), `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"boom"}}` + "\n"},
	} {
		if got := string(Reply(tc.id, tc.result, tc.err)); got != tc.want {
			t.Errorf("%s: Reply = %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestResultParts: head, the result from where open ends, and tail are
// Reply's answer, for any id and any cut of the result.
func TestResultParts(t *testing.T) {
	result := json.RawMessage(`{"tools":[{"name":"a"}]}`)
	for _, tc := range []struct {
		name string
		id   json.RawMessage
		open int // bytes of the result that head carries
	}{
		{"number id, result whole", json.RawMessage(`7`), 0},
		{"string id, after the brace", json.RawMessage(`"r-\"1\""`), 1},
		{"no id is null", nil, 1},
		{"all in head", json.RawMessage(`2`), len(result)},
	} {
		head, tail := ResultParts(tc.id, result[:tc.open])
		got := string(head) + string(result[tc.open:]) + string(tail)
		if want := string(Reply(tc.id, result, nil)); got != want {
			t.Errorf("%s: parts make %s, want %s", tc.name, got, want)
		}
		if cap(head) != len(head)+len(tail) {
			t.Errorf("%s: head and tail in %d bytes of capacity, want one allocation of %d", tc.name, cap(head), len(head)+len(tail))
		}
	}
}

func TestRefuse(t *testing.T) {
	w := httptest.NewRecorder()
	Refuse(w, 403, CodeInvalidRequest, json.RawMessage(`3`), "Host refused")
	if w.Code != 403 || w.Header().Get("Content-Type") != "application/json" || w.Header().Get("X-Content-Type-Options") != "nosniff" ||
		w.Body.String() != `{"jsonrpc":"2.0","id":3,"error":{"code":-32600,"message":"Host refused"}}`+"\n" {
		t.Errorf("Refuse wrote %d %v %s", w.Code, w.Header(), w.Body)
	}
	if got := string(ErrorReplyTo([]byte(`{"jsonrpc":"2.0","id":9,"method":"x"}`), errors.New("e"))); got != `{"jsonrpc":"2.0","id":9,"error":{"code":-32603,"message":"e"}}`+"\n" {
		t.Errorf("ErrorReplyTo = %s", got)
	}
}

// TestIDOfAnswersOnlyReadableIDs: a refusal carries the request's id when
// it is a string or a number, and null for anything else, as JSON-RPC 2.0
// asks of an id that could not be read (found by FuzzDispatch).
func TestIDOfAnswersOnlyReadableIDs(t *testing.T) {
	for _, tc := range []struct{ raw, want string }{
		{`{"jsonrpc":"2.0","id":7,"method":"ping"}`, `7`},
		{`{"jsonrpc":"2.0","id":-1.5e3,"method":"ping"}`, `-1.5e3`},
		{`{"jsonrpc":"2.0","id":"a\"b","method":"ping"}`, `"a\"b"`},
		{`{"jsonrpc":"2.0","id":null,"method":"ping"}`, ``},
		{`{"jsonrpc":"2.0","id":true,"method":"ping"}`, ``},
		{`{"jsonrpc":"2.0","id":{},"method":"ping"}`, ``},
		{`{"jsonrpc":"2.0","ID":[1],"method":"ping"}`, ``},
		{`{"jsonrpc":"2.0","method":"ping"}`, ``},
		{`not json`, ``},
	} {
		if got := string(IDOf([]byte(tc.raw))); got != tc.want {
			t.Errorf("IDOf(%s) = %q, want %q", tc.raw, got, tc.want)
		}
		reply := ErrorReplyTo([]byte(tc.raw), errors.New("refused"))
		want := tc.want
		if want == "" {
			want = "null"
		}
		if !strings.Contains(string(reply), `"id":`+want+`,`) {
			t.Errorf("refusal of %s: %s, want id %s", tc.raw, reply, want)
		}
	}
}
