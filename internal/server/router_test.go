package server

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/ratelimit"
	"github.com/purko-io/mcp-hub/internal/registry"
)

// faceReply is one face's answer to a tools/call: the JSON-RPC error (or
// REST's status and body) as the caller reads it.
type faceReply struct {
	status int // REST only
	Result json.RawMessage
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	}
}

// face sends tools/calls over one of the hub's faces as caller.
type face struct {
	name, caller string
	call         func(t *testing.T, tool string) faceReply
}

// TestOneRouterOnEveryFace: a tools/call of a name no server offers
// reaches the pipeline on every face: it is answered the same way
// everywhere (mcp-go answers none of them itself), audited as
// unknown_tool, counted, and limited like any call (the third call of a
// caller with a burst of 2 is refused as rate_limited).
func TestOneRouterOnEveryFace(t *testing.T) {
	a := newFakeUpstream(t, "alpha")
	audit := &lockedBuffer{}
	callers := map[string]*ratelimit.Limits{}
	for _, n := range faceCallers {
		callers[n] = nil
	}
	h := newTestHubLog(t, []config.ServerSpec{a.spec()}, hubOpts{
		Auth:      limitedTokens(callers),
		PerCaller: ratelimit.Limits{Rate: 0.001, Burst: 2, Where: "limits.perCaller"},
	}, audit)
	h.waitConnected("alpha")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	faces := h.everyFace(ctx, t)
	const tool = "no_such_tool"
	var first *faceReply
	unknownCalls := func() int {
		m := regexp.MustCompile(`mcphub_tool_calls_total\{outcome="unknown_tool",server="",tool=""\} (\d+)`).FindStringSubmatch(metricsText(t, h))
		n := 0
		if m != nil {
			fmt.Sscan(m[1], &n)
		}
		return n
	}
	for i, f := range faces {
		t.Run(f.name, func(t *testing.T) {
			before := unknownCalls()
			r := f.call(t, tool)
			if f.caller == "rest" {
				mustf(t, r.status == http.StatusNotFound && r.Error != nil && r.Error.Code == -32602 && r.Error.Message == first.Error.Message,
					"REST: HTTP %d %+v, want 404 with the MCP faces' error %q", r.status, r.Error, first.Error.Message)
			} else {
				mustf(t, r.Error != nil && r.Error.Code == -32602 && strings.HasPrefix(r.Error.Message, "tool 'no_such_tool' not found: "),
					"answer %+v, want -32602 tool 'no_such_tool' not found", r.Error)
				if first == nil {
					answer := r
					first = &answer
				}
				mustf(t, r.Error.Message == first.Error.Message, "answer %q, the fast path's %q", r.Error.Message, first.Error.Message)
			}
			mustf(t, unknownCalls() == before+1, "unknown_tool calls %d, want %d", unknownCalls(), before+1)
			mustf(t, auditCount(t, audit, f.caller, "unknown_tool") == 1, "audit lines of %s's unknown tool: %d, want 1", f.caller, auditCount(t, audit, f.caller, "unknown_tool"))

			f.call(t, tool) // the burst's second
			r = f.call(t, tool)
			if f.caller == "rest" {
				mustf(t, r.status == http.StatusTooManyRequests && r.Error != nil && r.Error.Code == jsonrpc.CodeServerBusy, "REST third call: HTTP %d %+v, want 429", r.status, r.Error)
			} else {
				var data struct{ Limit, Kind string }
				mustf(t, r.Error != nil && r.Error.Code == jsonrpc.CodeServerBusy && json.Unmarshal(r.Error.Data, &data) == nil && data.Limit == "caller" && data.Kind == "rate",
					"third unknown call: %+v, want -32000 with the refusal's data", r.Error)
				mustf(t, strings.Contains(r.Error.Message, fmt.Sprintf(`caller %q is over its limit`, f.caller)), "refusal %q", r.Error.Message)
			}
			mustf(t, auditCount(t, audit, f.caller, "rate_limited") == 1, "audit lines of %s's refusal: %d, want 1", f.caller, auditCount(t, audit, f.caller, "rate_limited"))
		})
		if first == nil && i == 0 {
			t.Fatal("the fast path gave no answer to compare with")
		}
	}
	mustf(t, a.calls.Load() == 0, "the upstream saw %d calls", a.calls.Load())
}

// faceCallers are the callers of everyFace, for limitedTokens.
var faceCallers = []string{"fast", "mcpgo", "sse", "ws", "rest"}

// everyFace opens a caller on each face of h: faceCallers by their tokens
// (limitedTokens), and stdio.
func (h *testHub) everyFace(ctx context.Context, t *testing.T) []face {
	return []face{
		{"streamable fast path", "fast", h.fastFace("tok-fast")},
		{"streamable reply stream", "mcpgo", h.mcpGoFace(t, "tok-mcpgo")},
		{"sse", "sse", h.sseFace(ctx, t, "tok-sse")},
		{"websocket", "ws", h.wsFace(ctx, t, "tok-ws")},
		{"stdio", "stdio", h.stdioFace(ctx, t)},
		{"rest", "rest", h.restFace("tok-rest")},
	}
}

// auditCount counts caller's tools/call audit lines with outcome.
func auditCount(t *testing.T, audit *lockedBuffer, caller, outcome string) int {
	n := 0
	for _, l := range audit.auditLines(t) {
		if l["caller"] == caller && l["outcome"] == outcome {
			n++
		}
	}
	return n
}

func callMessage(id int, tool string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{}}}`, id, tool)
}

// faceMessage is what a face of everyFace sends for tool: a call of it, or,
// when tool is a whole message (`{...}` with "id":0), that message.
func faceMessage(id int, tool string) string {
	if strings.HasPrefix(tool, "{") {
		return strings.Replace(tool, `"id":0`, fmt.Sprintf(`"id":%d`, id), 1)
	}
	return callMessage(id, tool)
}

// readReply reads the JSON-RPC answer to id from raw (a JSON body, an SSE
// data line).
func readReply(t *testing.T, raw []byte, id int) (faceReply, bool) {
	t.Helper()
	var r struct {
		faceReply
		ID *int `json:"id"`
	}
	if json.Unmarshal(raw, &r) != nil || r.ID == nil || *r.ID != id {
		return faceReply{}, false
	}
	return r.faceReply, true
}

func (h *testHub) fastFace(token string) func(*testing.T, string) faceReply {
	return func(t *testing.T, tool string) faceReply {
		resp, body := h.send(t, http.MethodPost, "/mcp", strings.NewReader(faceMessage(7, tool)),
			"Authorization", "Bearer "+token, "Content-Type", "application/json", "Accept", "application/json")
		r, ok := readReply(t, []byte(body), 7)
		mustf(t, ok, "fast path: %s %s", resp.Status, body)
		return r
	}
}

// mcpGoFace calls with a progress token on a session: its answer comes on
// a reply stream (replystream.go).
func (h *testHub) mcpGoFace(t *testing.T, token string) func(*testing.T, string) faceReply {
	resp, body := h.send(t, http.MethodPost, "/mcp", strings.NewReader(initBody),
		"Authorization", "Bearer "+token, "Content-Type", "application/json", "Accept", "application/json, text/event-stream")
	sid := resp.Header.Get("Mcp-Session-Id")
	mustf(t, sid != "", "initialize: %s %s", resp.Status, body)
	id := 100
	return func(t *testing.T, tool string) faceReply {
		id++
		msg := faceMessage(id, tool)
		if strings.Contains(msg, `"params":{}`) {
			msg = strings.Replace(msg, `"params":{}`, `"params":{"_meta":{"progressToken":"p"}}`, 1)
		} else {
			msg = strings.Replace(msg, `"params":{`, `"params":{"_meta":{"progressToken":"p"},`, 1)
		}
		resp, body := h.send(t, http.MethodPost, "/mcp", strings.NewReader(msg), "Authorization", "Bearer "+token,
			"Mcp-Session-Id", sid, "Content-Type", "application/json", "Accept", "application/json, text/event-stream")
		for line := range strings.Lines(body) {
			if r, ok := readReply(t, []byte(strings.TrimPrefix(strings.TrimSpace(line), "data: ")), id); ok {
				return r
			}
		}
		t.Fatalf("reply stream: %s %s", resp.Status, body)
		return faceReply{}
	}
}

func (h *testHub) sseFace(ctx context.Context, t *testing.T, token string) func(*testing.T, string) faceReply {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, h.url("/sse"), nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	events := bufio.NewScanner(resp.Body)
	endpoint := ""
	for endpoint == "" && events.Scan() {
		if data, ok := strings.CutPrefix(events.Text(), "data: "); ok {
			endpoint = strings.TrimSpace(data)
		}
	}
	mustf(t, endpoint != "", "no endpoint on /sse: %s", resp.Status)
	id := 0
	send := func(t *testing.T, msg string) faceReply {
		id++
		r, _ := http.NewRequest(http.MethodPost, h.url(endpoint), strings.NewReader(strings.Replace(msg, `"id":0`, fmt.Sprintf(`"id":%d`, id), 1)))
		r.Header.Set("Authorization", "Bearer "+token)
		r.Header.Set("Content-Type", "application/json")
		presp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		presp.Body.Close()
		for events.Scan() {
			if data, ok := strings.CutPrefix(events.Text(), "data: "); ok {
				if r, ok := readReply(t, []byte(data), id); ok {
					return r
				}
			}
		}
		t.Fatalf("no answer to %d on /sse: %v", id, events.Err())
		return faceReply{}
	}
	send(t, strings.Replace(initBody, `"id":1`, `"id":0`, 1))
	return func(t *testing.T, tool string) faceReply { return send(t, faceMessage(0, tool)) }
}

func (h *testHub) wsFace(ctx context.Context, t *testing.T, token string) func(*testing.T, string) faceReply {
	conn, resp, err := websocket.DefaultDialer.DialContext(ctx, "ws://"+h.addr+"/ws", http.Header{"Authorization": {"Bearer " + token}})
	if err != nil {
		t.Fatalf("dial /ws: %v (%v)", err, resp)
	}
	t.Cleanup(func() { conn.Close() })
	id := 0
	send := func(t *testing.T, msg string) faceReply {
		id++
		if err := conn.WriteMessage(websocket.TextMessage, []byte(strings.Replace(msg, `"id":0`, fmt.Sprintf(`"id":%d`, id), 1))); err != nil {
			t.Fatal(err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		for {
			_, data, err := conn.ReadMessage()
			if err != nil {
				t.Fatalf("read /ws: %v", err)
			}
			if r, ok := readReply(t, data, id); ok {
				return r
			}
		}
	}
	send(t, strings.Replace(initBody, `"id":1`, `"id":0`, 1))
	return func(t *testing.T, tool string) faceReply { return send(t, faceMessage(0, tool)) }
}

func (h *testHub) stdioFace(ctx context.Context, t *testing.T) func(*testing.T, string) faceReply {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = h.srv.ServeStdio(ctx, inR, outW, autonomy.Full, "") }()
	t.Cleanup(func() { cancel(); inW.Close(); outR.Close(); <-done })
	lines := bufio.NewScanner(outR)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	id := 0
	send := func(t *testing.T, msg string) faceReply {
		id++
		if _, err := io.WriteString(inW, strings.Replace(msg, `"id":0`, fmt.Sprintf(`"id":%d`, id), 1)+"\n"); err != nil {
			t.Fatal(err)
		}
		for lines.Scan() {
			if r, ok := readReply(t, lines.Bytes(), id); ok {
				return r
			}
		}
		t.Fatalf("no answer to %d on stdio", id)
		return faceReply{}
	}
	send(t, strings.Replace(initBody, `"id":1`, `"id":0`, 1))
	return func(t *testing.T, tool string) faceReply { return send(t, faceMessage(0, tool)) }
}

func (h *testHub) restFace(token string) func(*testing.T, string) faceReply {
	return func(t *testing.T, tool string) faceReply {
		resp, body := h.send(t, http.MethodPost, "/api/mcp/tools/"+tool+"/run", strings.NewReader(`{}`),
			"Authorization", "Bearer "+token, "Content-Type", "application/json")
		var b struct {
			Error string          `json:"error"`
			Code  int             `json:"code"`
			Data  json.RawMessage `json:"data"`
		}
		mustf(t, json.Unmarshal([]byte(body), &b) == nil, "REST: %s %s", resp.Status, body)
		r := faceReply{status: resp.StatusCode, Result: json.RawMessage(body)}
		if b.Error != "" {
			r.Result = nil
			r.Error = &struct {
				Code    int             `json:"code"`
				Message string          `json:"message"`
				Data    json.RawMessage `json:"data"`
			}{b.Code, b.Error, b.Data}
		}
		return r
	}
}

// TestDispatchedCallsKeepTheirShape: what a call carries besides the name
// reaches the pipeline through the dispatcher: a task-augmented call runs
// as a plain one on a stream (the hub routes tasks only on plain HTTP), a
// tools/list cursor is honoured as mcp-go's (the names after it), and
// mcp-go's tool table, which stays empty, names nothing a caller sees.
func TestDispatchedCallsKeepTheirShape(t *testing.T) {
	a := newFakeUpstream(t, "alpha")
	h := newTestHub(t, []config.ServerSpec{a.spec()})
	h.waitConnected("alpha")
	resp, body := h.send(t, http.MethodPost, "/mcp", strings.NewReader(initBody))
	sid := resp.Header.Get("Mcp-Session-Id")
	mustf(t, sid != "", "initialize: %s %s", resp.Status, body)
	post := func(msg string) map[string]any {
		t.Helper()
		resp, body := h.send(t, http.MethodPost, "/mcp", strings.NewReader(msg), "Mcp-Session-Id", sid)
		var out map[string]any
		for line := range strings.Lines(body) {
			if json.Unmarshal([]byte(strings.TrimPrefix(strings.TrimSpace(line), "data: ")), &out) == nil && out["id"] != nil {
				return out
			}
		}
		t.Fatalf("%s: %s %s", msg, resp.Status, body)
		return nil
	}
	names := func(res map[string]any) []string {
		var out []string
		tools, _ := res["result"].(map[string]any)["tools"].([]any)
		for _, tl := range tools {
			out = append(out, tl.(map[string]any)["name"].(string))
		}
		return out
	}

	res := post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"t"},"task":{"ttl":60000}}}`)
	text, _ := json.Marshal(res["result"])
	mustf(t, strings.Contains(string(text), `alpha:t`), "task-augmented call: %v", res)

	all := names(post(`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{}}`))
	mustf(t, len(all) == 4, "tools/list: %v", all)
	after := names(post(`{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"cursor":"` + base64.StdEncoding.EncodeToString([]byte(all[1])) + `"}}`))
	mustf(t, slices.Equal(after, all[2:]), "tools/list after %s: %v, want %v", all[1], after, all[2:])

	// The old router's name is a name no server offers.
	res = post(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"mcp-hub/router","arguments":{},"_meta":{"progressToken":"p"}}}`)
	e, _ := res["error"].(map[string]any)
	mustf(t, e != nil && e["code"] == float64(-32602), "a call of the router's old name: %v", res)
}

// TestParamHeadersCheckedThroughTheRouter: a 2026-07-28 call whose
// Mcp-Param-* header disagrees with its arguments (or is missing) is
// refused as mcp-go refused it when it knew every tool (HEADER_MISMATCH),
// although mcp-go's table holds the router alone, on the fast path too;
// one that agrees runs.
func TestParamHeadersCheckedThroughTheRouter(t *testing.T) {
	a := newFakeUpstream(t, "alpha")
	a.mcp.AddTool(mcp.NewToolWithRawSchema("regional", "", json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`)),
		func(_ context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("ran in " + r.GetString("region", "")), nil
		})
	h := newTestHub(t, []config.ServerSpec{a.spec()})
	h.waitConnected("alpha")
	const meta = `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}`
	for _, tc := range []struct {
		header, meta string // meta: more _meta, a progress token to go through mcp-go
		ok           bool
	}{
		{"us", "", true}, {"eu", "", false}, {"", "", false},
		{"us", `,"progressToken":"p"`, true}, {"eu", `,"progressToken":"p"`, false},
	} {
		msg := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"regional","arguments":{"region":"us"},"_meta":{` + meta + tc.meta + `}}}`
		headers := []string{"Mcp-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "regional"}
		if tc.header != "" {
			headers = append(headers, "Mcp-Param-Region", tc.header)
		}
		resp, body := h.send(t, http.MethodPost, "/mcp", strings.NewReader(msg), headers...)
		var r faceReply
		found := false
		for line := range strings.Lines(body) {
			if r, found = readReply(t, []byte(strings.TrimPrefix(strings.TrimSpace(line), "data: ")), 3); found {
				break
			}
		}
		mustf(t, found, "header %s: %s %s", tc.header, resp.Status, body)
		if tc.ok {
			mustf(t, r.Error == nil && strings.Contains(string(r.Result), "ran in us"), "header %s: %s", tc.header, body)
		} else {
			mustf(t, r.Error != nil && r.Error.Code == mcp.HEADER_MISMATCH && strings.Contains(r.Error.Message, "Mcp-Param-Region"), "header %q%s: %s", tc.header, tc.meta, body)
		}
	}
}

// TestPanicNamesTheTool: a tool that panics under a face mcp-go serves is
// answered with mcp-go's recovery error naming the tool, never the router.
func TestPanicNamesTheTool(t *testing.T) {
	boom := registry.LocalTool{Def: mcp.NewTool("boom", mcp.WithReadOnlyHintAnnotation(true)), Kind: autonomy.Builtin,
		Run: func(context.Context, map[string]any, map[string]string) *mcp.CallToolResult { panic("kaboom") }}
	h := newTestHub(t, nil, func(o *registry.Options) { o.Local = []registry.LocalTool{boom} })
	h.waitPublished()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r := h.wsFace(ctx, t, "")(t, "boom")
	mustf(t, r.Error != nil && r.Error.Code == jsonrpc.CodeInternalError && r.Error.Message == "panic recovered in boom tool handler: kaboom",
		"a panicking tool over /ws: %+v", r.Error)
}
