package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/toolspec"
)

// extTaskServer is a 2026-07-28 server of the Tasks extension, written
// from the extension's text (io.modelcontextprotocol/tasks, SEP-2663): no
// SDK on npm or the Go module proxy serves the extension yet (TypeScript
// SDK 2.4.0 routes its headers only; go-sdk v1.8.0 and mcp-go v1.2.1 have
// none), so this is the upstream the hub's bridges are tried against. It
// makes a task of every tools/call whose request declares the extension,
// and answers the others at once; brew's task completes on its third
// tasks/get, ask's wants input first (tasks/update).
type extTaskServer struct {
	mu    sync.Mutex
	tasks map[string]*extTask
	next  int
	// names are the Mcp-Name headers of its tasks/* requests.
	names []string
}

type extTask struct {
	tool, status string
	polls        int
	answer       string // ask's input, once given
}

const extSecret = "AKIAZ3MSJV5WKQ7TYRXB"

func newExtTaskServer(t *testing.T) (*extTaskServer, config.ServerSpec) {
	t.Helper()
	s := &extTaskServer{tasks: map[string]*extTask{}}
	url := serveOn(t, http.HandlerFunc(s.serve)) + "/mcp"
	return s, config.ServerSpec{Name: "ext", URL: url, Transport: config.TransportStreamableHTTP, Source: "test", ProtocolVersion: mcp.ProtocolVersion20260728}
}

func (s *extTaskServer) serve(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name           string          `json:"name"`
			TaskID         string          `json:"taskId"`
			InputResponses json.RawMessage `json:"inputResponses"`
			Meta           struct {
				Caps struct {
					Extensions map[string]any `json:"extensions"`
				} `json:"io.modelcontextprotocol/clientCapabilities"`
			} `json:"_meta"`
		} `json:"params"`
	}
	if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&req) != nil {
		http.Error(w, "POST a JSON-RPC message", http.StatusBadRequest)
		return
	}
	if len(req.ID) == 0 {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	_, declared := req.Params.Meta.Caps.Extensions["io.modelcontextprotocol/tasks"]
	s.mu.Lock()
	defer s.mu.Unlock()
	if strings.HasPrefix(req.Method, "tasks/") {
		s.names = append(s.names, r.Header.Get(mcp.HeaderName))
	}
	task := s.tasks[req.Params.TaskID]
	var result any
	var rpcErr *mcp.JSONRPCErrorDetails
	switch {
	case req.Method == "server/discover":
		result = map[string]any{"supportedVersions": []string{mcp.ProtocolVersion20260728},
			"capabilities": map[string]any{"tools": map[string]any{}, "extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}},
			"serverInfo":   map[string]any{"name": "ext", "version": "1"}}
	case req.Method == "tools/list":
		result = map[string]any{"tools": []any{
			map[string]any{"name": "brew", "inputSchema": map[string]any{"type": "object"}},
			map[string]any{"name": "ask", "inputSchema": map[string]any{"type": "object"}},
		}}
	case req.Method == "tools/call" && !declared:
		result = map[string]any{"content": []any{map[string]any{"type": "text", "text": "brewed at once"}}}
	case req.Method == "tools/call":
		s.next++
		id := fmt.Sprintf("t-%d", s.next)
		s.tasks[id] = &extTask{tool: req.Params.Name, status: "working"}
		result = s.task(id, "task")
	case task == nil && strings.HasPrefix(req.Method, "tasks/"):
		rpcErr = &mcp.JSONRPCErrorDetails{Code: -32602, Message: "Failed to retrieve task: Task not found"}
	case !declared:
		rpcErr = &mcp.JSONRPCErrorDetails{Code: -32021, Message: "Missing required client capability"}
	case req.Method == "tasks/get":
		task.polls++
		switch {
		case task.status != "working":
		case task.tool == "ask" && task.answer == "":
			task.status = "input_required"
		case task.polls >= 3:
			task.status = "completed"
		}
		result = s.task(req.Params.TaskID, "complete")
	case req.Method == "tasks/update":
		var answers map[string]struct {
			Content struct{ Strength string } `json:"content"`
		}
		_ = json.Unmarshal(req.Params.InputResponses, &answers)
		task.answer, task.status = answers["strength"].Content.Strength, "working"
		result = map[string]any{}
	case req.Method == "tasks/cancel":
		task.status = "cancelled"
		result = map[string]any{}
	default:
		rpcErr = &mcp.JSONRPCErrorDetails{Code: -32601, Message: "Method not found: " + req.Method}
	}
	w.Header().Set("Content-Type", "application/json")
	if rpcErr != nil {
		_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": rpcErr})
		return
	}
	b, _ := json.Marshal(result)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	if _, ok := m["resultType"]; !ok {
		m["resultType"] = "complete"
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": m})
}

// task is task id as a result of resultType: with what its status
// inlines.
func (s *extTaskServer) task(id, resultType string) map[string]any {
	task := s.tasks[id]
	out := map[string]any{"resultType": resultType, "taskId": id, "status": task.status, "createdAt": "2026-12-06T10:00:00Z",
		"lastUpdatedAt": "2026-12-06T10:00:01Z", "ttlMs": 60000, "pollIntervalMs": 50}
	switch task.status {
	case "completed":
		text := "brewed with key " + extSecret
		if task.tool == "ask" {
			text = "brewed " + task.answer
		}
		out["result"] = map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}, "isError": false}
	case "input_required":
		out["inputRequests"] = map[string]any{"strength": map[string]any{"method": "elicitation/create", "params": map[string]any{
			"mode": "form", "message": "How strong?", "requestedSchema": map[string]any{"type": "object",
				"properties": map[string]any{"strength": map[string]any{"type": "string"}}}}}}
	}
	return out
}

// extCaller sends sessionless requests to the hub as token: of 2026-07-28
// (declaring the Tasks extension when tasks is set), or of no revision's
// headers (a 2025-11-25 caller's task requests).
type extCaller struct {
	h     *testHub
	token string
	// modern callers declare the Tasks extension when tasks is set, MCP
	// Apps when ui is.
	modern, tasks, ui bool
	session           string // a 2025-11-25 caller's (open)
}

// open gives a 2025-11-25 caller a session.
func (c extCaller) open(t *testing.T) extCaller {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	resp, _ := c.h.send(t, http.MethodPost, "/mcp", strings.NewReader(body), "Authorization", "Bearer "+c.token)
	c.session = resp.Header.Get("Mcp-Session-Id")
	mustf(t, c.session != "", "initialize: no session")
	return c
}

func (c extCaller) call(t *testing.T, method, params string) (json.RawMessage, *mcp.JSONRPCErrorDetails) {
	t.Helper()
	var p map[string]any
	if err := json.Unmarshal([]byte(params), &p); err != nil {
		t.Fatal(err)
	}
	header := []string{"Authorization", "Bearer " + c.token}
	if c.session != "" {
		header = append(header, "Mcp-Session-Id", c.session, mcp.HeaderProtocolVersion, mcp.ProtocolVersion20251125)
	}
	if c.modern {
		caps, ext := map[string]any{}, map[string]any{}
		if c.tasks {
			ext["io.modelcontextprotocol/tasks"] = map[string]any{}
		}
		if c.ui {
			ext[config.ExtensionUI] = map[string]any{"mimeTypes": []string{"text/html;profile=mcp-app"}}
		}
		if len(ext) > 0 {
			caps["extensions"] = ext
		}
		p["_meta"] = map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": caps}
		name, _ := p["name"].(string)
		if id, ok := p["taskId"].(string); ok {
			name = id
		}
		header = append(header, mcp.HeaderProtocolVersion, mcp.ProtocolVersion20260728, mcp.HeaderMethod, method, mcp.HeaderName, name)
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": p})
	_, reply := c.h.send(t, http.MethodPost, "/mcp", strings.NewReader(string(body)), header...)
	var out struct {
		Result json.RawMessage
		Error  *mcp.JSONRPCErrorDetails
	}
	if err := json.Unmarshal([]byte(reply), &out); err != nil {
		t.Fatalf("%s: %q: %v", method, reply, err)
	}
	return out.Result, out.Error
}

// TestTasksExtensionUpstream: a 2026-07-28 server of the Tasks extension
// behind the hub. A 2026-07-28 caller that declares the extension gets its
// tasks behind hub handles: tasks/get polled (the result inlined, through
// the caller's content filters), input given with tasks/update, tasks
// cancelled, each request to the server named by its own task id in
// Mcp-Name. A 2025-11-25 caller gets the same tasks in its revision's
// shape (the bridge the other way): tools offered with taskSupport
// optional, a CreateTaskResult, tasks/get, tasks/result (awaited by
// polling), tasks/cancel and tasks/list. A caller that declares nothing
// gets the server's direct answer.
func TestTasksExtensionUpstream(t *testing.T) {
	srv, spec := newExtTaskServer(t)
	auth := callers.NewAuth([]callers.TokenCaller{{Name: "guarded", Token: "tok-g", Ceiling: autonomy.Full,
		Guardrails: &toolspec.Guardrails{ContentFilters: []string{"no-secrets-in-output"}}}}, nil, nil)
	h := newTestHubAuth(t, []config.ServerSpec{spec}, auth)
	h.waitConnected("ext")
	ext := extCaller{h: h, token: "tok-g", modern: true, tasks: true}
	handleOf := func(res json.RawMessage, nested bool) string {
		t.Helper()
		var got struct {
			ResultType, TaskID, Status string
			Task                       *struct{ TaskID, Status string }
		}
		_ = json.Unmarshal(res, &got)
		if nested && got.Task != nil {
			got.TaskID, got.Status = got.Task.TaskID, got.Task.Status
		}
		mustf(t, strings.HasPrefix(got.TaskID, "mht1.") && got.Status == "working" && (nested || got.ResultType == "task"), "a task made = %s", res)
		return got.TaskID
	}
	status := func(c extCaller, handle string) (string, json.RawMessage) {
		t.Helper()
		res, err := c.call(t, "tasks/get", fmt.Sprintf(`{"taskId":%q}`, handle))
		mustf(t, err == nil, "tasks/get: %+v", err)
		var got struct{ Status string }
		_ = json.Unmarshal(res, &got)
		return got.Status, res
	}

	t.Run("2026-07-28 caller", func(t *testing.T) {
		res, err := extCaller{h: h, token: "tok-g", modern: true}.call(t, "tools/call", `{"name":"brew"}`)
		mustf(t, err == nil && strings.Contains(string(res), "brewed at once"), "a call without the extension = %s %+v", res, err)

		res, err = ext.call(t, "tools/call", `{"name":"brew"}`)
		mustf(t, err == nil, "tools/call: %+v", err)
		brew := handleOf(res, false)
		var last json.RawMessage
		waitFor(t, "brew's task completed", func() bool {
			var s string
			s, last = status(ext, brew)
			return s == "completed"
		})
		text := string(last)
		mustf(t, strings.Contains(text, `"resultType":"complete"`) && strings.Contains(text, "brewed with key") &&
			strings.Contains(text, "[redacted") && !strings.Contains(text, extSecret), "the completed task, filtered = %s", text)

		res, err = ext.call(t, "tools/call", `{"name":"ask"}`)
		mustf(t, err == nil, "tools/call ask: %+v", err)
		ask := handleOf(res, false)
		s, res := status(ext, ask)
		mustf(t, s == "input_required" && strings.Contains(string(res), `"inputRequests":{"strength"`), "ask's task = %s", res)
		ack, err := ext.call(t, "tasks/update", fmt.Sprintf(`{"taskId":%q,"inputResponses":{"strength":{"action":"accept","content":{"strength":"strong"}}}}`, ask))
		mustf(t, err == nil && string(ack) == `{"resultType":"complete"}`, "tasks/update = %s %+v", ack, err)
		waitFor(t, "ask's task completed with the input", func() bool {
			s, last = status(ext, ask)
			return s == "completed" && strings.Contains(string(last), "brewed strong")
		})

		res, err = ext.call(t, "tools/call", `{"name":"brew"}`)
		mustf(t, err == nil, "tools/call: %+v", err)
		cancelled := handleOf(res, false)
		ack, err = ext.call(t, "tasks/cancel", fmt.Sprintf(`{"taskId":%q}`, cancelled))
		mustf(t, err == nil && string(ack) == `{"resultType":"complete"}`, "tasks/cancel = %s %+v", ack, err)
		s, _ = status(ext, cancelled)
		mustf(t, s == "cancelled", "after tasks/cancel: %s", s)
	})

	t.Run("2025-11-25 caller", func(t *testing.T) {
		old := extCaller{h: h, token: "tok-g"}.open(t)
		tools, err := old.call(t, "tools/list", `{}`)
		mustf(t, err == nil && strings.Contains(string(tools), `"execution":{"taskSupport":"optional"}`), "tools/list = %s %+v", tools, err)
		res, err := old.call(t, "tools/call", `{"name":"brew","task":{"ttl":60000}}`)
		mustf(t, err == nil && !strings.Contains(string(res), "resultType") && strings.Contains(string(res), `"ttl":60000`) &&
			strings.Contains(string(res), `"pollInterval":50`), "a 2025-11-25 task-augmented call = %s %+v", res, err)
		brew := handleOf(res, true)
		s, got := status(old, brew)
		mustf(t, s == "working" && !strings.Contains(string(got), "resultType") && strings.Contains(string(got), `"ttl":60000`), "tasks/get = %s", got)
		res, err = old.call(t, "tasks/result", fmt.Sprintf(`{"taskId":%q}`, brew))
		mustf(t, err == nil && strings.Contains(string(res), "brewed with key") && !strings.Contains(string(res), extSecret),
			"tasks/result (awaited by polling, filtered) = %s %+v", res, err)

		res, _ = old.call(t, "tools/call", `{"name":"brew","task":{"ttl":60000}}`)
		cancelled := handleOf(res, true)
		res, err = old.call(t, "tasks/cancel", fmt.Sprintf(`{"taskId":%q}`, cancelled))
		mustf(t, err == nil && strings.Contains(string(res), `"status":"cancelled"`) && strings.Contains(string(res), cancelled), "tasks/cancel = %s %+v", res, err)
		res, err = old.call(t, "tasks/list", `{}`)
		mustf(t, err == nil && strings.Contains(string(res), brew) && strings.Contains(string(res), cancelled) && !strings.Contains(string(res), "resultType"),
			"tasks/list = %s %+v", res, err)
	})

	// Every request of a task reached the server named by its own id in
	// Mcp-Name, never by the caller's handle.
	srv.mu.Lock()
	defer srv.mu.Unlock()
	mustf(t, len(srv.names) > 10, "the server got %d task requests", len(srv.names))
	for _, name := range srv.names {
		mustf(t, strings.HasPrefix(name, "t-"), "a task request reached the server with Mcp-Name %q", name)
	}
}

// TestListenForTasksNeedsTheExtension: a 2026-07-28 subscriptions/listen
// that names tasks (notifications.taskIds) is refused with -32021 unless
// the request declares the Tasks extension; declared, the stream opens.
func TestListenForTasksNeedsTheExtension(t *testing.T) {
	h := newTestHub(t, nil)
	listen := func(declared bool) (*http.Response, string) {
		caps := `{}`
		if declared {
			caps = `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`
		}
		body := `{"jsonrpc":"2.0","id":5,"method":"subscriptions/listen","params":{"notifications":{"taskIds":["mht1.x"]},"_meta":{` +
			`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}}}`
		req, _ := http.NewRequest(http.MethodPost, h.url("/mcp"), strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set(mcp.HeaderProtocolVersion, mcp.ProtocolVersion20260728)
		req.Header.Set(mcp.HeaderMethod, string(mcp.MethodSubscriptionsListen))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = resp.Body.Close() })
		if declared {
			return resp, "" // a stream: its head is enough
		}
		var out struct {
			Error *mcp.JSONRPCErrorDetails `json:"error"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&out)
		if out.Error == nil {
			return resp, ""
		}
		return resp, fmt.Sprint(out.Error.Code, " ", out.Error.Message)
	}
	_, refused := listen(false)
	mustf(t, strings.HasPrefix(refused, "-32021 "), "listen for tasks without the extension = %q; want -32021", refused)
	resp, refused := listen(true)
	mustf(t, refused == "" && resp.StatusCode == http.StatusOK && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"),
		"listen for tasks with the extension: %s %q %q", resp.Status, resp.Header.Get("Content-Type"), refused)
}
