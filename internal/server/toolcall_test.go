package server

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/registry"
)

// smuggled are tools/call messages that name a tool twice, in the same or
// another letter case, or carry a second envelope member: a decoder that
// lets the last (case-insensitive) member win reads another tool than the
// first one. {read} is a read-only tool, {write} a write tool. All are
// refused with -32602 (invalid params), but a second envelope member is an
// invalid request (-32600).
var smuggled = []string{
	// The attack of issue 11: the upstream's own name of the write tool in
	// an other-case member, which the old fast path copied upstream.
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"NAME":"delete_file","name":"{read}","arguments":{}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"{read}","Name":"delete_file","arguments":{}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"NAME":"{write}","name":"{read}","arguments":{}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"{read}","NAME":"{write}","arguments":{}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"{read}","Name":"{write}"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"{read}","name":"{write}"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"{write}","name":"{read}"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"{read}","arguments":{},"ARGUMENTS":{"x":1}}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","PARAMS":{"name":"{write}"},"params":{"name":"{read}"}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"{read}","_meta":{"progressToken":"a","PROGRESSTOKEN":"b"}}}`,
}

// smuggleFixture is a restricted anonymous hub (the laptop default with a
// lower ceiling) in front of an upstream that counts every call.
func smuggleFixture(t *testing.T) (h *testHub, u *countingUpstream, read, write string) {
	t.Helper()
	u = newCountingUpstream(t, "A", "get_me", "delete_file")
	restricted := autonomy.Restricted
	h = newTestHubAuth(t, []config.ServerSpec{u.spec}, callers.NewAuth(nil, &restricted, nil), func(o *registry.Options) {
		o.Naming.Prefix = config.PrefixAlways
	})
	h.waitConnected("A")
	for _, tl := range h.reg.Catalog().Tools {
		switch tl.Original {
		case "get_me":
			read = tl.Name
		case "delete_file":
			write = tl.Name
		}
	}
	if read == "" || write == "" || h.reg.Catalog().Tools[0].Class.ReadOnly == h.reg.Catalog().Tools[1].Class.ReadOnly {
		t.Fatalf("fixture: want one read and one write tool, catalog %+v", h.reg.Catalog().Tools)
	}
	return h, u, read, write
}

// wantCode is the JSON-RPC error the smuggled message msg is refused with.
func wantCode(msg string) int {
	if strings.Contains(msg, `"PARAMS"`) {
		return -32600
	}
	return -32602
}

func fill(msg, read, write string) string {
	return strings.NewReplacer("{read}", read, "{write}", write).Replace(msg)
}

// rpcError reads the JSON-RPC error code of a reply, 0 when it has none.
func rpcErrorCode(t *testing.T, raw []byte) int {
	t.Helper()
	var m struct {
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Errorf("reply %q is no JSON-RPC message: %v", raw, err)
		return -1
	}
	if m.Error == nil {
		return 0
	}
	return m.Error.Code
}

// TestSmuggledToolNameOnStreamableHTTP is issue 11's attack: a restricted
// (here anonymous, sessionless) caller names a write tool in a second,
// other-case "name" member. Every variant must be refused with -32602 and
// the write tool must never run, on the fast path and on mcp-go's path.
func TestSmuggledToolNameOnStreamableHTTP(t *testing.T) {
	h, u, read, write := smuggleFixture(t)
	post := func(body string, headers map[string]string) (int, []byte) {
		req, _ := http.NewRequest("POST", h.url("/mcp"), strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if i := strings.Index(string(raw), "data: "); i >= 0 {
			raw = []byte(strings.SplitN(string(raw[i+6:]), "\n", 2)[0])
		}
		return resp.StatusCode, raw
	}
	for i, m := range smuggled {
		body := fill(m, read, write)
		status, raw := post(body, nil)
		if code := rpcErrorCode(t, raw); code != wantCode(m) {
			t.Errorf("%d: %s\n answered HTTP %d %s, want JSON-RPC error %d", i, body, status, raw, wantCode(m))
		}
		// A progress token sends the call to mcp-go's path; the gate is
		// the same.
		withProgress := strings.Replace(body, `"params":{`, `"params":{"_meta":{"progressToken":7},`, 1)
		if strings.Contains(body, `"_meta"`) {
			withProgress = body
		}
		if _, raw := post(withProgress, nil); rpcErrorCode(t, raw) != wantCode(m) {
			t.Errorf("%d (mcp-go path): %s\n answered %s, want %d", i, withProgress, raw, wantCode(m))
		}
	}
	if n := u.count("delete_file"); n != 0 {
		t.Fatalf("the restricted caller ran delete_file %d times", n)
	}
	// The honest call still works, and the honest write is still blocked.
	_, raw := post(fill(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"{read}","arguments":{}}}`, read, write), nil)
	if !strings.Contains(string(raw), "ran get_me") {
		t.Fatalf("plain read call answered %s", raw)
	}
	_, raw = post(fill(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"{write}","arguments":{}}}`, read, write), nil)
	if !strings.Contains(string(raw), "BLOCKED") || u.count("delete_file") != 0 {
		t.Fatalf("plain write call answered %s", raw)
	}
}

// TestSmuggledToolNameOnSSEWebSocketAndStdio: the other faces refuse the
// same messages before mcp-go reads them.
func TestSmuggledToolNameOnSSEWebSocketAndStdio(t *testing.T) {
	h, u, read, write := smuggleFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	t.Run("sse", func(t *testing.T) {
		req, _ := http.NewRequestWithContext(ctx, "GET", h.url("/sse"), nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		endpoint := ""
		for endpoint == "" && sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "data: ") {
				endpoint = strings.TrimPrefix(line, "data: ")
			}
		}
		if endpoint == "" {
			t.Fatal("no endpoint event on /sse")
		}
		for i, m := range smuggled {
			body := fill(m, read, write)
			pr, _ := http.NewRequest("POST", h.url(endpoint), strings.NewReader(body))
			pr.Header.Set("Content-Type", "application/json")
			presp, err := http.DefaultClient.Do(pr)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(presp.Body)
			presp.Body.Close()
			if presp.StatusCode != http.StatusBadRequest || rpcErrorCode(t, raw) != wantCode(m) {
				t.Errorf("%d: %s answered HTTP %d %s", i, body, presp.StatusCode, raw)
			}
		}
	})

	t.Run("websocket", func(t *testing.T) {
		ws, _, err := websocket.DefaultDialer.DialContext(ctx, strings.Replace(h.url("/ws"), "http://", "ws://", 1), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ws.Close()
		for i, m := range smuggled {
			body := fill(m, read, write)
			if err := ws.WriteMessage(websocket.TextMessage, []byte(body)); err != nil {
				t.Fatal(err)
			}
			_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, raw, err := ws.ReadMessage()
			if err != nil {
				t.Fatal(err)
			}
			if code := rpcErrorCode(t, raw); code != wantCode(m) {
				t.Errorf("%d: %s answered %s", i, body, raw)
			}
		}
	})

	t.Run("stdio", func(t *testing.T) {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		done := make(chan error, 1)
		go func() { done <- h.srv.ServeStdio(ctx, inR, outW, autonomy.Restricted, "") }()
		lines := bufio.NewScanner(outR)
		lines.Buffer(make([]byte, 1<<20), 1<<20)
		send := func(s string) {
			if _, err := io.WriteString(inW, s+"\n"); err != nil {
				t.Fatal(err)
			}
		}
		// An answer, not a notification: mcp-go keeps one stdio session
		// per process, which an earlier test may have initialized, so
		// the hub may announce tools/list_changed before initialize.
		answered := func() bool {
			for lines.Scan() {
				var m struct{ ID json.RawMessage }
				if json.Unmarshal(lines.Bytes(), &m) == nil && m.ID != nil {
					return true
				}
			}
			return false
		}
		send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		if !answered() {
			t.Fatal("no initialize answer on stdio")
		}
		for i, m := range smuggled {
			body := fill(m, read, write)
			send(body)
			if !answered() {
				t.Fatalf("%d: no answer on stdio", i)
			}
			if code := rpcErrorCode(t, lines.Bytes()); code != wantCode(m) {
				t.Errorf("%d: %s answered %s", i, body, lines.Text())
			}
		}
		inW.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("stdio did not end when its input closed")
		}
		outW.Close()
	})
	if n := u.count("delete_file"); n != 0 {
		t.Fatalf("the restricted caller ran delete_file %d times", n)
	}
}

// TestCallOfADownServerSaysWhy: a tool of a server that is down answers
// with the server and the reason on both paths, not "tool not found".
func TestCallOfADownServerSaysWhy(t *testing.T) {
	up := newFakeUpstream(t, "flaky")
	h := newTestHub(t, []config.ServerSpec{up.spec()})
	h.waitConnected("flaky")
	name := ""
	for _, tl := range h.reg.Catalog().Tools {
		if tl.Original == "echo" {
			name = tl.Name
		}
	}
	up.stop()
	waitFor(t, "flaky down", func() bool { return h.status("flaky").State != registry.StateConnected })
	ex := &executor{t: t, url: h.url("/mcp")}
	for _, viaMCP := range []bool{false, true} {
		text, isErr := ex.call(name, viaMCP)
		if !isErr || !strings.Contains(text, "flaky") || !strings.Contains(text, "unavailable") {
			t.Errorf("call of %s on a down server (mcp-go path %v) = %q, want it to name the server and say unavailable", name, viaMCP, text)
		}
	}
}

// TestUnknownToolNamesStayOutOfMetrics: a caller's made-up tool names are
// audited but never become metric labels (unbounded series).
func TestUnknownToolNamesStayOutOfMetrics(t *testing.T) {
	h := newTestHub(t, nil)
	ex := &executor{t: t, url: h.url("/mcp")}
	for _, name := range []string{"made_up_1", "made_up_2"} {
		if text, isErr := ex.call(name, false); !isErr {
			t.Fatalf("unknown tool %s answered %q", name, text)
		}
	}
	resp, err := http.Get(h.url("/metrics"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if strings.Contains(string(raw), "made_up_") {
		t.Fatal("an unknown tool name became a metric label")
	}
	if !strings.Contains(string(raw), `outcome="unknown_tool"`) {
		t.Fatal("unknown-tool calls are not counted")
	}
}
