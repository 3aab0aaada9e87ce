package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/hubtest"
	"github.com/purko-io/mcp-hub/internal/mcpws"
	"github.com/purko-io/mcp-hub/internal/registry"
	"github.com/purko-io/mcp-hub/internal/secrets"
)

// An answer is how a call ended, as its caller reads it on any face.
type answer struct {
	kind string // result, tool error, rpc error, failure (an "ERROR: ..." result)
	text string // the result's text without "ERROR: ", or the error's message
	code int    // an rpc error's
	data string // an rpc error's data, compacted
}

// answerOf reads a JSON-RPC response to a tools/call.
func answerOf(t *testing.T, raw []byte) answer {
	t.Helper()
	var msg struct {
		Result *struct {
			IsError bool                    `json:"isError"`
			Content []struct{ Text string } `json:"content"`
		} `json:"result"`
		Error *struct {
			Code    int             `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &msg); err != nil {
		t.Fatalf("answer %s: %v", raw, err)
	}
	switch {
	case msg.Error != nil:
		return answer{kind: "rpc error", text: msg.Error.Message, code: msg.Error.Code, data: compactJSON(msg.Error.Data)}
	case msg.Result == nil || len(msg.Result.Content) != 1:
		t.Fatalf("answer %s is neither a result with one text nor an error", raw)
	}
	text := msg.Result.Content[0].Text
	switch {
	case msg.Result.IsError && strings.HasPrefix(text, "ERROR: "):
		return answer{kind: "failure", text: strings.TrimPrefix(text, "ERROR: ")}
	case msg.Result.IsError:
		return answer{kind: "tool error", text: text}
	}
	return answer{kind: "result", text: text}
}

func compactJSON(b json.RawMessage) string {
	var v any
	if len(b) == 0 || json.Unmarshal(b, &v) != nil {
		return string(b)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// A face sends the tools/call with params as its caller would and returns
// the caller's answer.
type face struct {
	name string
	// mcpGoEncodes: mcp-go writes this face's error replies, with -32603
	// and the error's text, whatever the pipeline's error was: an
	// upstream's JSON-RPC error arrives as a JSON-RPC error with its
	// message, without its code and data. Issue 21 items 3 and 4 (every
	// tools/call reaches the pipeline, one error encoder per face) take
	// this away.
	mcpGoEncodes bool
	call         func(t *testing.T, params string) answer
	// end, when set, ends the face's caller once the face is done.
	end func()
}

// oneWayFaces opens a caller on each face of h.
func oneWayFaces(t *testing.T, h *testHub) []face {
	ids := 100
	next := func() int { ids++; return ids }
	viaTransport := func(tr transport.Interface, opts ...client.ClientOption) func(t *testing.T, params string) answer {
		c := client.NewClient(tr, opts...)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := c.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
			t.Fatalf("initialize: %v", err)
		}
		return func(t *testing.T, params string) answer {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			resp, err := tr.SendRequest(ctx, transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(int64(next())),
				Method: string(mcp.MethodToolsCall), Params: json.RawMessage(params)})
			if err != nil {
				t.Fatalf("tools/call: %v", err)
			}
			raw, _ := json.Marshal(resp)
			return answerOf(t, raw)
		}
	}
	sse, err := transport.NewSSE(h.url("/sse"))
	if err != nil {
		t.Fatal(err)
	}
	plain := func(t *testing.T, params string) answer {
		res, _ := rpc(t, h.url("/mcp"), "", fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, next(), params))
		raw, _ := json.Marshal(res)
		return answerOf(t, raw)
	}
	streamable, err := transport.NewStreamableHTTP(h.url("/mcp"))
	if err != nil {
		t.Fatal(err)
	}
	session := viaTransport(streamable, client.WithProtocolVersion("2025-11-25"))
	withProgress := func(t *testing.T, params string) answer {
		// A progress token: the caller takes progress, mcp-go's way.
		return session(t, strings.Replace(params, "{", `{"_meta":{"progressToken":"p1"},`, 1))
	}
	return []face{
		{name: "streamable HTTP plain POST", call: plain},
		{name: "streamable HTTP session with progress", mcpGoEncodes: true, call: withProgress},
		{name: "legacy SSE", mcpGoEncodes: true, call: viaTransport(sse)},
		{name: "WebSocket", call: viaTransport(mcpws.NewClientTransport(strings.Replace(h.url("/ws"), "http://", "ws://", 1), nil))},
		stdioFace(t, h, next),
		{name: "REST run", call: func(t *testing.T, params string) answer { return restAnswer(t, h, params) }},
	}
}

// answerWithID reads lines until the JSON-RPC message with id, passing
// over notifications.
func answerWithID(t *testing.T, lines *bufio.Scanner, id int) []byte {
	t.Helper()
	for lines.Scan() {
		var m struct{ ID json.RawMessage }
		if json.Unmarshal(lines.Bytes(), &m) == nil && string(m.ID) == fmt.Sprint(id) {
			return lines.Bytes()
		}
	}
	t.Fatalf("no answer with id %d", id)
	return nil
}

// stdioFace serves h on a pipe as the hub's stdio face does.
func stdioFace(t *testing.T, h *testHub, next func() int) face {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = h.srv.ServeStdio(ctx, inR, outW, autonomy.Full) }()
	lines := bufio.NewScanner(outR)
	// mcp-go has one stdio session per process: a notification left in
	// its queue (tools/list_changed, as upstreams reconnect) would be the
	// next stdio test's first line. So the face reads until the hub has
	// been quiet a while before it ends.
	var ended bool
	end := func() {
		if ended {
			return
		}
		ended = true
		read := make(chan struct{})
		go func() {
			for lines.Scan() {
				read <- struct{}{}
			}
			close(read)
		}()
		for quiet := false; !quiet; {
			select {
			case <-read:
			case <-time.After(300 * time.Millisecond):
				quiet = true
			}
		}
		cancel()
		inW.Close()
		go func() {
			for range read { // the last words, until the pipe closes
			}
		}()
		<-done
		outW.Close()
	}
	t.Cleanup(end)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	ask := func(t *testing.T, id int, msg string) []byte {
		if _, err := io.WriteString(inW, msg+"\n"); err != nil {
			t.Fatal(err)
		}
		return answerWithID(t, lines, id)
	}
	ask(t, 1, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	return face{name: "stdio", mcpGoEncodes: true, end: end, call: func(t *testing.T, params string) answer {
		id := next()
		return answerOf(t, ask(t, id, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, id, params)))
	}}
}

// restAnswer runs the call on the REST face, whose HTTP mapping of
// outcomes (rest.go) is checked here against the one answer: a result or
// a tool error is 200 with the result, a JSON-RPC error 502 with its
// code, message and data, a failure 502 with the "ERROR: ..." result.
func restAnswer(t *testing.T, h *testHub, params string) answer {
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal([]byte(params), &p); err != nil {
		t.Fatal(err)
	}
	got := h.run(t, runReq{tool: p.Name, body: string(p.Arguments)})
	var rpcErr struct {
		Error string          `json:"error"`
		Code  int             `json:"code"`
		Data  json.RawMessage `json:"data"`
	}
	if json.Unmarshal([]byte(got.raw), &rpcErr) == nil && rpcErr.Code != 0 {
		if got.status != http.StatusBadGateway {
			t.Errorf("REST: a JSON-RPC error answered with HTTP %d, want 502", got.status)
		}
		return answer{kind: "rpc error", text: rpcErr.Error, code: rpcErr.Code, data: compactJSON(rpcErr.Data)}
	}
	a := answerOf(t, []byte(`{"result":`+got.raw+`}`))
	want := http.StatusOK
	if a.kind == "failure" {
		want = http.StatusBadGateway
	}
	if got.status != want {
		t.Errorf("REST: %s answered with HTTP %d, want %d", a.kind, got.status, want)
	}
	return a
}

// TestOneWayOutEveryFace: the same upstream behaviour reaches the caller
// as the same answer on every face of the hub and over every upstream
// transport, and is audited as the same outcome: a result; a tool error;
// the upstream's JSON-RPC error, code, message and data kept (redacted of
// the server's credential), audited rpc_error; a dropped connection and
// the timeout, each an "ERROR: ..." result that names the tool and the
// server, audited error. Each upstream is asked for its tools once per
// connect.
func TestOneWayOutEveryFace(t *testing.T) {
	const timeout = 400 * time.Millisecond
	ups := []*hubtest.OutcomeUpstream{
		hubtest.StartOutcomeStreamable(t, "http"),
		hubtest.StartOutcomeSSE(t, "sse"),
		hubtest.StartOutcomeWebSocket(t, "ws"),
	}
	var specs []config.ServerSpec
	for _, u := range ups {
		specs = append(specs, config.ServerSpec{Name: u.Name, URL: u.URL, Transport: config.Transport(u.Transport),
			BearerToken: config.Secret(hubtest.Secret), Timeout: config.Duration(timeout)})
	}
	var log lockedBuffer
	h := newTestHubLog(t, specs, Options{}, &log, func(o *registry.Options) { o.Upstream.BreakerFailures = 1000 })
	h.waitConnected("http", "sse", "ws")
	for _, u := range ups {
		if n := u.ToolsLists(); n != 1 {
			t.Errorf("%s: tools/list asked %d times on connect, want 1", u.Name, n)
		}
	}

	redact := func(s string) string { return strings.ReplaceAll(s, hubtest.Secret, secrets.Marker) }
	for _, f := range oneWayFaces(t, h) {
		for _, u := range ups {
			t.Run(f.name+" to "+u.Transport, func(t *testing.T) {
				failure := func(kind, says string) answer {
					return answer{kind: "failure", text: "call " + u.Tool(kind) + " on " + u.Name + ": " + says}
				}
				for _, tc := range []struct {
					kind    string
					want    answer
					audited string
				}{
					{hubtest.ToolOK, answer{kind: "result", text: "ok from " + u.Name}, outcomeOK},
					{hubtest.ToolError, answer{kind: "tool error", text: "bad input"}, outcomeToolError},
					{hubtest.ToolRPCError, answer{kind: "rpc error", code: hubtest.RPCErrorCode, text: redact(hubtest.RPCErrorMessage),
						data: compactJSON(json.RawMessage(redact(hubtest.RPCErrorData)))}, outcomeRPCError},
					{hubtest.ToolSleep, failure(hubtest.ToolSleep, "timed out after "+timeout.String()), outcomeError},
					{hubtest.ToolDrop, failure(hubtest.ToolDrop, "connection lost during the call: "), outcomeError},
				} {
					tool := u.Tool(tc.kind)
					audits := len(log.auditLines(t))
					got := f.call(t, `{"name":"`+tool+`","arguments":{"text":"x"}}`)
					if strings.Contains(fmt.Sprint(got), hubtest.Secret) {
						t.Errorf("%s: the server's credential reached the caller: %+v", tc.kind, got)
					}
					switch {
					case tc.kind == hubtest.ToolDrop:
						// What broke is the transport's to say; that it
						// broke, and where, is the same everywhere.
						if got.kind != tc.want.kind || !strings.HasPrefix(got.text, tc.want.text) {
							t.Errorf("%s = %+v, want a failure starting %q", tc.kind, got, tc.want.text)
						}
					case tc.kind == hubtest.ToolRPCError && f.mcpGoEncodes:
						if got.kind != "rpc error" || !strings.Contains(got.text, tc.want.text) {
							t.Errorf("%s = %+v, want a JSON-RPC error saying %q", tc.kind, got, tc.want.text)
						}
						if got != tc.want {
							t.Logf("%s: mcp-go's encoder answered %+v (want %+v)", tc.kind, got, tc.want)
						}
					case got != tc.want:
						t.Errorf("%s = %+v, want %+v", tc.kind, got, tc.want)
					}
					var line map[string]any
					waitFor(t, "the audit line of "+tool, func() bool {
						lines := log.auditLines(t)
						if len(lines) > audits {
							line = lines[len(lines)-1]
						}
						return line != nil
					})
					if line["tool"] != tool || line["outcome"] != tc.audited {
						t.Errorf("%s audited %v as %v, want %s", tool, line["tool"], line["outcome"], tc.audited)
					}
					if tc.kind == hubtest.ToolDrop {
						waitCallable(t, h, u)
					}
				}
			})
		}
		if f.end != nil {
			f.end()
		}
	}
	for _, u := range ups {
		t.Logf("%s: %d tools/list in all", u.Name, u.ToolsLists())
	}
}

// waitCallable waits until u, reconnected after a drop, answers a call.
func waitCallable(t *testing.T, h *testHub, u *hubtest.OutcomeUpstream) {
	t.Helper()
	waitFor(t, u.Name+" back", func() bool {
		rt, err := h.reg.Lookup(u.Tool(hubtest.ToolOK))
		if err != nil {
			return false
		}
		call := registry.Call{}
		call.Name = rt.Original
		_, err = rt.Backend.Call(context.Background(), call)
		return err == nil
	})
}
