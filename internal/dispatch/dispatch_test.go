package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/purko-io/mcp-hub/internal/jsonrpc"
)

const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"info"}`

// Each message goes where it belongs: a hub method to its handler, with
// its result or error encoded by the dispatcher; anything else to the
// session layer; a message the gate refuses answered with why; a
// 2026-07-28 request stamped as the revision requires.
func TestMessage(t *testing.T) {
	d := New("mcp-hub", "9.9")
	d.Handle("tools/list", func(ctx context.Context, req *Request) (json.RawMessage, error) {
		if info := server.RequestProtocolInfoFromContext(ctx); info != nil {
			return json.RawMessage(`{"tools":[],"level":"` + string(info.LogLevel) + `"}`), nil
		}
		return json.RawMessage(`{"tools":[]}`), nil
	})
	d.Handle("tools/call", func(_ context.Context, req *Request) (json.RawMessage, error) {
		switch req.Call.Name {
		case "refused":
			return nil, &jsonrpc.Error{Code: -32003, Message: "BLOCKED: no", Data: json.RawMessage(`{"why":"policy"}`)}
		case "broken":
			return nil, errors.New("upstream went away")
		case "panics":
			panic("kaboom")
		}
		return json.RawMessage(`{"content":[]}`), nil
	})
	session := func(_ context.Context, raw []byte) []byte {
		return []byte(`{"session":` + strconv.Quote(string(raw)) + "}\n")
	}
	for _, tc := range []struct{ name, in, want string }{
		{"hub method", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, `{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`},
		{"its JSON-RPC error as it is", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"refused"}}`,
			`{"jsonrpc":"2.0","id":2,"error":{"code":-32003,"message":"BLOCKED: no","data":{"why":"policy"}}}`},
		{"any other error", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"broken"}}`,
			`{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"upstream went away"}}`},
		{"a panic", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"panics"}}`,
			`{"jsonrpc":"2.0","id":4,"error":{"code":-32603,"message":"panic recovered serving tools/call: kaboom"}}`},
		{"session layer", `{"jsonrpc":"2.0","id":5,"method":"initialize","params":{}}`, `{"session":"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"initialize\"`},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, `{"session":"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}"}`},
		{"refused by the gate", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"a","NAME":"b"}}`, `"code":-32602`},
		{"2026-07-28 stamped", `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{` + modernMeta + `}}`,
			`{"jsonrpc":"2.0","id":7,"result":{"tools":[],"level":"info","resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mcp-hub","version":"9.9"}},"ttlMs":0,"cacheScope":"private"}}`},
		{"2026-07-28 without capabilities", `{"jsonrpc":"2.0","id":8,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
			`"code":-32602,"message":"missing or invalid _meta field io.modelcontextprotocol/clientCapabilities"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := strings.TrimSpace(string(d.Message(context.Background(), []byte(tc.in), "s1", session)))
			if !strings.Contains(got, tc.want) {
				t.Fatalf("answer %s, want %s", got, tc.want)
			}
		})
	}
}

// A notifications/cancelled on the request's session ends a request the
// dispatcher serves; the same id on another session ends nothing.
func TestCancelled(t *testing.T) {
	d := New("mcp-hub", "1")
	started := make(chan struct{}, 2)
	d.Handle("tools/call", func(ctx context.Context, _ *Request) (json.RawMessage, error) {
		started <- struct{}{}
		select {
		case <-ctx.Done():
			return nil, &jsonrpc.Error{Code: -32800, Message: "cancelled"}
		case <-time.After(time.Second):
			return json.RawMessage(`{}`), nil
		}
	})
	none := func(context.Context, []byte) []byte { return nil }
	call := []byte(`{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"slow"}}`)
	var wg sync.WaitGroup
	answers := make([]string, 2)
	for i, sess := range []string{"a", "b"} {
		wg.Go(func() { answers[i] = string(d.Message(context.Background(), call, sess, none)) })
	}
	<-started
	<-started
	d.Message(context.Background(), []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c1"}}`), "a", none)
	wg.Wait()
	if !strings.Contains(answers[0], "cancelled") {
		t.Errorf("session a's request: %s, want it cancelled", answers[0])
	}
	if !strings.Contains(answers[1], `"result":{}`) {
		t.Errorf("session b's request: %s, want it run to its end", answers[1])
	}
}

// Spans: the dispatcher starts one for a method whose handler does not
// trace itself, and ends it with the handler's error.
func TestTrace(t *testing.T) {
	d := New("mcp-hub", "1")
	d.Handle("resources/list", func(context.Context, *Request) (json.RawMessage, error) { return nil, errors.New("down") })
	d.HandleTraced("tools/call", func(context.Context, *Request) (json.RawMessage, error) { return json.RawMessage(`{}`), nil })
	var traced []string
	d.Trace(func(ctx context.Context, req *Request) (context.Context, func(error)) {
		return ctx, func(err error) { traced = append(traced, req.Msg.Method+":"+errText(err)) }
	})
	none := func(context.Context, []byte) []byte { return nil }
	d.Message(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"resources/list"}`), "", none)
	d.Message(context.Background(), []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}`), "", none)
	if len(traced) != 1 || traced[0] != "resources/list:down" {
		t.Fatalf("spans %v, want one of resources/list ended with its error", traced)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// The revision is read from the request's _meta only when it names
// 2026-07-28 or later; an unknown later revision is refused.
func TestProtocolInfo(t *testing.T) {
	for _, tc := range []struct {
		meta    string
		modern  bool
		errCode int
	}{
		{`{}`, false, 0},
		{`{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}`, false, 0},
		{`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`, true, 0},
		{`{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}`, false, mcp.UNSUPPORTED_PROTOCOL_VERSION},
	} {
		var meta map[string]json.RawMessage
		if err := json.Unmarshal([]byte(tc.meta), &meta); err != nil {
			t.Fatal(err)
		}
		info, e := protocolInfo(meta)
		if tc.errCode != 0 {
			if e == nil || e.Code != tc.errCode {
				t.Errorf("%s: error %v, want code %d", tc.meta, e, tc.errCode)
			}
			continue
		}
		if e != nil || (info != nil) != tc.modern {
			t.Errorf("%s: info %+v, error %v; want modern %v", tc.meta, info, e, tc.modern)
		}
	}
}
