package replicas

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/hubtest"
)

// TestTasksAcrossReplicas puts the reference server's task tool
// (simulate-research-query, four stages of a second) behind three hub
// replicas with one replicas.secret and a round-robin balancer with no
// affinity, and follows its tasks through the balancer: every tasks/get,
// tasks/result and tasks/cancel lands on a replica that did not necessarily
// make the task, and must succeed; another caller's use of the handle, and
// a forged handle, must not.
func TestTasksAcrossReplicas(t *testing.T) {
	const (
		taskWait = 60 * time.Second // generous: a loaded CI machine
		taskPoll = 150 * time.Millisecond
	)
	script, err := hubtest.EverythingScript()
	if err != nil {
		t.Fatal(err)
	}
	_, upPort := hubtest.StartServer(t, "server-everything", 0, func(port int) *exec.Cmd {
		return hubtest.EverythingCommand(script, "streamableHttp", port)
	})
	const replicaCount = 3
	listen := make([]string, replicaCount)
	for i := range listen {
		listen[i] = fmt.Sprintf("127.0.0.1:%d", hubtest.FreePort(t))
	}
	cfg := fmt.Sprintf(`builtins: {staticAnalysis: {enabled: false}}
upstream: {maxResultChars: 1000}
replicas: {secret: {env: TASK_SECRET}, peers: %q}
auth:
  tokens:
    - {name: alice, token: {env: ALICE_TOKEN}, maxLevel: full}
    - {name: bob, token: {env: BOB_TOKEN}, maxLevel: full}
servers:
  - {name: ev, transport: streamable-http, url: "http://127.0.0.1:%d/mcp"}
`, strings.Join(listen, ","), upPort)
	env := []string{"TASK_SECRET=interop-task-secret", "ALICE_TOKEN=alice-token-1", "BOB_TOKEN=bob-token-1"}
	bin := hubtest.HubBinary(t)
	backends := make([]string, replicaCount)
	hubs := make([]*hubtest.Hub, replicaCount)
	for i := range backends {
		h := hubtest.StartHub(t, hubtest.HubOptions{Bin: bin, Listen: listen[i], Config: cfg, Env: env, LogLevel: "warn", Wait: hubtest.Connected})
		backends[i], hubs[i] = h.MCPURL(), h
		// The task tool is registered after the hub's initialize.
		hubtest.Eventually(t, taskWait, taskPoll, "simulate-research-query listed", func() error {
			l, err := h.Listing("?format=names")
			if err != nil {
				return err
			}
			for _, sv := range l.Servers {
				if names, _ := sv.ToolNames(); slices.Contains(names, "simulate-research-query") {
					return nil
				}
			}
			return fmt.Errorf("not listed yet: %s", l.Summary())
		})
	}
	for i, h := range hubs {
		waitReplicas(t, h, i, replicaCount)
	}
	lb := newBalancer(t, backends)
	alice := taskClient{t: t, url: lb.url, token: "alice-token-1"}
	bob := taskClient{t: t, url: lb.url, token: "bob-token-1"}

	// The call returns the task as soon as the upstream made it, while it
	// works (four stages of a second): a task of minutes is the same to
	// the hub, whatever a caller's request limit.
	start := func() string {
		res, rpcErr := alice.call("tools/call", `{"name":"simulate-research-query","arguments":{"topic":"hubs"},"task":{"ttl":60000}}`)
		if rpcErr != nil {
			t.Fatalf("task-augmented tools/call: %s", rpcErr)
		}
		var created struct {
			Task struct{ TaskID, Status string }
		}
		if err := json.Unmarshal(res, &created); err != nil || !strings.HasPrefix(created.Task.TaskID, "mht1.") || created.Task.Status != "working" {
			t.Fatalf("tools/call with task = %s; want a working task whose id is a hub handle", res)
		}
		return created.Task.TaskID
	}
	handle := start()
	// The hub tells a session it takes tasks once a tool may run as one.
	res, rpcErr := alice.call("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)
	var init struct {
		Capabilities struct {
			Tasks *struct {
				List, Cancel json.RawMessage
				Requests     struct {
					Tools struct{ Call json.RawMessage }
				}
			}
		}
	}
	if rpcErr != nil || json.Unmarshal(res, &init) != nil || init.Capabilities.Tasks == nil ||
		init.Capabilities.Tasks.List == nil || init.Capabilities.Tasks.Cancel == nil || init.Capabilities.Tasks.Requests.Tools.Call == nil {
		t.Errorf("initialize = %s %v; want the tasks capability (list, cancel, tools/call)", res, rpcErr)
	}
	// Only /mcp routes tasks: a session of /sse or /ws is not told of them.
	t.Run("other faces", func(t *testing.T) {
		base := strings.TrimSuffix(backends[0], "/mcp")
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		auth := map[string]string{"Authorization": "Bearer alice-token-1"}
		sse, err := client.NewSSEMCPClient(base+"/sse", transport.WithHeaders(auth))
		if err == nil {
			err = sse.Start(ctx)
		}
		if err != nil {
			t.Fatalf("/sse: %v", err)
		}
		defer sse.Close()
		got, err := sse.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: "2024-11-05",
			ClientInfo: mcp.Implementation{Name: "t", Version: "1"}}})
		if err != nil || got.Capabilities.Tasks != nil {
			t.Errorf("initialize over /sse: %v, tasks capability %+v; want none", err, got)
		}
		ws, resp, err := websocket.DefaultDialer.DialContext(ctx, "ws"+strings.TrimPrefix(base, "http")+"/ws", http.Header{"Authorization": {"Bearer alice-token-1"}})
		if err != nil {
			t.Fatalf("dial /ws: %v (%v)", err, resp)
		}
		defer ws.Close()
		if err := ws.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)); err != nil {
			t.Fatal(err)
		}
		_ = ws.SetReadDeadline(time.Now().Add(30 * time.Second))
		_, msg, err := ws.ReadMessage()
		var answer struct {
			Result *struct {
				Capabilities map[string]json.RawMessage
			}
		}
		if err != nil || json.Unmarshal(msg, &answer) != nil || answer.Result == nil {
			t.Fatalf("initialize over /ws: %v %s", err, msg)
		}
		if _, told := answer.Result.Capabilities["tasks"]; told {
			t.Errorf("initialize over /ws told of tasks: %s", msg)
		}
	})

	t.Run("forged or another caller's handle", func(t *testing.T) {
		_, err := bob.call("tasks/get", fmt.Sprintf(`{"taskId":%q}`, handle))
		if err == nil || !strings.Contains(err.Message, "unknown task") {
			t.Errorf("bob's tasks/get of alice's task = %v; want unknown task", err)
		}
		forged := handle[:len(handle)-3] + "AAA"
		if _, err := alice.call("tasks/get", fmt.Sprintf(`{"taskId":%q}`, forged)); err == nil {
			t.Errorf("tasks/get of a forged handle succeeded")
		}
	})

	// 100 requests through the balancer: gets while it runs, then gets
	// and the result once it is done.
	ok, status := 0, ""
	forwarded, sent := peerRequests(t, hubs)["forward"], lb.spread()
	for i := range 100 {
		if i == 99 {
			hubtest.Eventually(t, taskWait, taskPoll, "task completed", func() error {
				if status = alice.status(handle); status != "completed" {
					return fmt.Errorf("status %s", status)
				}
				return nil
			})
			res, err := alice.call("tasks/result", fmt.Sprintf(`{"taskId":%q}`, handle))
			if err != nil {
				t.Fatalf("tasks/result: %s", err)
			}
			text := string(res)
			if !strings.Contains(text, "Research Report") || !strings.Contains(text, "result cut to its first") {
				t.Fatalf("tasks/result = %s; want the report, cut to upstream.maxResultChars", text)
			}
			if !strings.Contains(text, handle) && strings.Contains(text, "related-task") {
				t.Errorf("tasks/result names the upstream's task id, not the handle: %s", text)
			}
			ok++
			continue
		}
		res, err := alice.call("tasks/get", fmt.Sprintf(`{"taskId":%q}`, handle))
		var got struct{ TaskID, Status string }
		if err != nil || json.Unmarshal(res, &got) != nil || got.TaskID != handle || got.Status == "" {
			t.Errorf("tasks/get %d: %s %v", i, res, err)
			continue
		}
		ok++
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("%d of 100 task requests succeeded through %d replicas (spread %v)", ok, replicaCount, lb.spread())
	if ok != 100 {
		t.Fatalf("%d of 100 task requests succeeded", ok)
	}
	// A request of the task reaches the replica that made it alone (its
	// handle names it): at most one internal request each, not one per peer.
	requests := int64(0)
	for i, n := range lb.spread() {
		requests += n - sent[i]
	}
	if n := peerRequests(t, hubs)["forward"] - forwarded; n > float64(requests) || n == 0 {
		t.Fatalf("%v internal requests for %d task requests, want 1 for each that landed elsewhere", n, requests)
	}
	t.Logf("%d task requests through %d replicas cost %v internal requests", requests, replicaCount, peerRequests(t, hubs)["forward"]-forwarded)

	t.Run("cancel", func(t *testing.T) {
		h := start()
		res, err := alice.call("tasks/cancel", fmt.Sprintf(`{"taskId":%q}`, h))
		if err != nil {
			t.Fatalf("tasks/cancel: %s", err)
		}
		var got struct{ TaskID, Status string }
		if json.Unmarshal(res, &got) != nil || got.TaskID != h || got.Status != "cancelled" {
			t.Fatalf("tasks/cancel = %s; want the task cancelled, with its handle", res)
		}
		if s := alice.status(h); s != "cancelled" {
			t.Fatalf("tasks/get after cancel: status %q", s)
		}
	})
	t.Run("the Tasks extension", func(t *testing.T) {
		testTasksExtension(t, lb, taskWait, taskPoll)
	})
	t.Run("rounds across replicas", func(t *testing.T) {
		testRoundsAcrossReplicas(t, lb)
	})
	t.Run("list", func(t *testing.T) {
		// Each lands on another replica: the list is every replica's.
		for i := range replicaCount {
			res, err := alice.call("tasks/list", `{}`)
			var got struct {
				Tasks []struct{ TaskID, Status string }
			}
			if err != nil || json.Unmarshal(res, &got) != nil {
				t.Fatalf("tasks/list %d: %s %v", i, res, err)
			}
			if len(got.Tasks) != 2 || !slices.ContainsFunc(got.Tasks, func(x struct{ TaskID, Status string }) bool { return x.TaskID == handle }) {
				t.Fatalf("tasks/list %d = %s; want alice's two tasks with their handles", i, res)
			}
		}
		res, err := bob.call("tasks/list", `{}`)
		if err != nil || string(res) != `{"tasks":[]}` {
			t.Fatalf("bob's tasks/list = %s %v; want none", res, err)
		}
	})
	for i, n := range lb.spread() {
		if n == 0 {
			t.Errorf("replica %d got no request: %v", i, lb.spread())
		}
	}
}

// testTasksExtension follows 2026-07-28 tasks (the Tasks extension) of
// the reference server's task tool through the balancer: the hub answers
// a caller that declared the extension with the task, and one that did
// not with -32021; tasks/get lands on any replica and inlines the result
// (capped like any) once the task completed; tasks/cancel is an empty
// acknowledgement; the extension has no tasks/result; another caller's
// tasks/get and a request whose Mcp-Name is not its task are refused.
func testTasksExtension(t *testing.T, lb *balancer, taskWait, taskPoll time.Duration) {
	ext := &taskClient{t: t, url: lb.url, token: "alice-token-1", modern: true, extension: true}
	undeclared := &taskClient{t: t, url: lb.url, token: "alice-token-1", modern: true}
	bob := &taskClient{t: t, url: lb.url, token: "bob-token-1", modern: true, extension: true}
	const research = `{"name":"simulate-research-query","arguments":{"topic":"hubs"}}`
	if _, err := undeclared.call("tools/call", research); err == nil || err.Code != -32021 {
		t.Fatalf("tools/call of a tool that needs a task, without the extension = %v; want -32021", err)
	}
	start := func() string {
		res, err := ext.call("tools/call", research)
		var created struct {
			ResultType, TaskID, Status string
			TTLMs                      *int64 `json:"ttlMs"`
		}
		if err != nil || json.Unmarshal(res, &created) != nil || created.ResultType != "task" || !strings.HasPrefix(created.TaskID, "mht1.") ||
			created.Status != "working" || !strings.Contains(string(res), `"ttlMs"`) || strings.Contains(string(res), `"task":`) {
			t.Fatalf("tools/call with the extension = %s %v; want a flat working task (resultType task, ttlMs) whose id is a hub handle", res, err)
		}
		return created.TaskID
	}
	handle := start()
	param := fmt.Sprintf(`{"taskId":%q}`, handle)
	if _, err := undeclared.call("tasks/get", param); err == nil || err.Code != -32021 {
		t.Errorf("tasks/get without the extension = %v; want -32021", err)
	}
	if _, err := bob.call("tasks/get", param); err == nil || err.Code != -32602 {
		t.Errorf("bob's tasks/get of alice's task = %v; want -32602", err)
	}
	if _, err := ext.callNamed("tasks/get", param, "another-task"); err == nil || err.Code != -32020 {
		t.Errorf("tasks/get whose Mcp-Name is another task = %v; want -32020", err)
	}
	if _, err := ext.call("tasks/result", param); err == nil || err.Code != -32601 {
		t.Errorf("tasks/result under the extension = %v; want -32601", err)
	}
	var done struct {
		ResultType, TaskID, Status string
		Result                     json.RawMessage
	}
	gets, failed := 0, 0
	hubtest.Eventually(t, taskWait, taskPoll, "the task completed", func() error {
		res, err := ext.call("tasks/get", param)
		gets++
		if err != nil || json.Unmarshal(res, &done) != nil || done.TaskID != handle || done.ResultType != "complete" {
			failed++
			return fmt.Errorf("tasks/get = %s %v", res, err)
		}
		if done.Status != "completed" {
			return fmt.Errorf("status %s", done.Status)
		}
		return nil
	})
	if text := string(done.Result); !strings.Contains(text, "Research Report") || !strings.Contains(text, "result cut to its first") {
		t.Errorf("the completed task's inlined result = %s; want the report, cut to upstream.maxResultChars", text)
	}
	t.Logf("%d tasks/get of a 2026-07-28 task through the balancer (spread %v)", gets, lb.spread())
	if failed > 0 {
		t.Errorf("%d of %d tasks/get failed", failed, gets)
	}

	cancelled := start()
	res, err := ext.call("tasks/cancel", fmt.Sprintf(`{"taskId":%q}`, cancelled))
	if err != nil || string(res) != `{"resultType":"complete"}` {
		t.Fatalf("tasks/cancel = %s %v; want an empty acknowledgement", res, err)
	}
	if s := ext.status(cancelled); s != "cancelled" {
		t.Errorf("tasks/get after tasks/cancel: status %q", s)
	}
}

// testRoundsAcrossReplicas: a 2026-07-28 caller gets the reference
// server's URL elicitation (its upstream session is 2025-11-25's) as a
// round of its call, and answers it through the balancer: the next round
// lands on another replica, which passes it on to the one that keeps the
// call, and the call's result comes back. Another caller's round of the
// same state, and a state no replica keeps, are refused.
func testRoundsAcrossReplicas(t *testing.T, lb *balancer) {
	alice := &taskClient{t: t, url: lb.url, token: "alice-token-1", modern: true, elicit: true}
	bob := &taskClient{t: t, url: lb.url, token: "bob-token-1", modern: true, elicit: true}
	const consent = `"name":"trigger-url-elicitation","arguments":{"url":"https://example.com/consent/r","elicitationId":"round-trip","message":"consent"}`
	for i := range 3 {
		res, err := alice.call("tools/call", "{"+consent+"}")
		var round struct {
			ResultType, RequestState string
			InputRequests            map[string]json.RawMessage
		}
		if err != nil || json.Unmarshal(res, &round) != nil || round.ResultType != "input_required" || !strings.HasPrefix(round.RequestState, "mhr1.") || len(round.InputRequests) != 1 {
			t.Fatalf("round 1 of call %d = %s %v; want input_required with the hub's requestState", i, res, err)
		}
		var key string
		for k := range round.InputRequests {
			key = k
		}
		answer := fmt.Sprintf(`{%s,"inputResponses":{%q:{"action":"accept"}},"requestState":%q}`, consent, key, round.RequestState)
		if i == 0 {
			if _, err := bob.call("tools/call", answer); err == nil || err.Code != -32602 {
				t.Errorf("bob's round of alice's call = %v; want -32602", err)
			}
		}
		res, err = alice.call("tools/call", answer)
		if err != nil || !strings.Contains(string(res), "User completed the URL elicitation flow") {
			t.Fatalf("round 2 of call %d, through another replica = %s %v; want the server's result", i, res, err)
		}
	}
	gone := fmt.Sprintf(`{%s,"inputResponses":{},"requestState":"mhr1.AAAAAAAAAAAAAAAAAAAAAA"}`, consent)
	if _, err := alice.call("tools/call", gone); err == nil || err.Code != -32602 {
		t.Errorf("a round of a call no replica keeps = %v; want -32602", err)
	}
}

// taskClient posts JSON-RPC requests to /mcp as one caller, with no
// session (the hub serves tasks without one, on any replica).
type taskClient struct {
	t     *testing.T
	url   string
	token string
	next  atomic.Int64
	// modern: requests of 2026-07-28 (_meta and headers), declaring the
	// Tasks extension when extension is set, elicitation when elicit is.
	modern, extension, elicit bool
}

type rpcError struct {
	Code    int
	Message string
}

func (e *rpcError) String() string { return fmt.Sprintf("%d %s", e.Code, e.Message) }

func (c *taskClient) call(method, params string) (json.RawMessage, *rpcError) {
	c.t.Helper()
	return c.callNamed(method, params, "")
}

// callNamed is call whose 2026-07-28 Mcp-Name header is name, or, when
// name is "", what params name (the tool, the task).
func (c *taskClient) callNamed(method, params, name string) (json.RawMessage, *rpcError) {
	c.t.Helper()
	header := http.Header{}
	if c.modern {
		var p map[string]any
		if err := json.Unmarshal([]byte(params), &p); err != nil {
			c.t.Fatal(err)
		}
		caps := map[string]any{}
		if c.extension {
			caps["extensions"] = map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}
		}
		if c.elicit {
			caps["elicitation"] = map[string]any{"form": map[string]any{}, "url": map[string]any{}}
		}
		p["_meta"] = map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": caps,
			"io.modelcontextprotocol/clientInfo": map[string]any{"name": "tasks-extension-test", "version": "1"}}
		b, _ := json.Marshal(p)
		params = string(b)
		if name == "" {
			name, _ = p["name"].(string)
		}
		if name == "" {
			name, _ = p["taskId"].(string)
		}
		header.Set("Mcp-Protocol-Version", "2026-07-28")
		header.Set("Mcp-Method", method)
		if name != "" {
			header.Set("Mcp-Name", name)
		}
	}
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, c.next.Add(1), method, params)
	req, err := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header = header
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var reply struct {
		Result json.RawMessage
		Error  *rpcError
	}
	if err := json.Unmarshal(b, &reply); err != nil {
		c.t.Fatalf("%s: status %d, reply %q: %v", method, resp.StatusCode, b, err)
	}
	return reply.Result, reply.Error
}

func (c *taskClient) status(handle string) string {
	c.t.Helper()
	res, err := c.call("tasks/get", fmt.Sprintf(`{"taskId":%q}`, handle))
	if err != nil {
		c.t.Fatalf("tasks/get: %s", err)
	}
	var got struct{ Status string }
	_ = json.Unmarshal(res, &got)
	return got.Status
}

// TestTaskStatusNotifications: the reference server's
// notifications/tasks/status reach the session that made the task, with
// the hub's handle in place of the upstream's task id.
func TestTaskStatusNotifications(t *testing.T) {
	script, err := hubtest.EverythingScript()
	if err != nil {
		t.Fatal(err)
	}
	_, upPort := hubtest.StartServer(t, "server-everything", 0, func(port int) *exec.Cmd {
		return hubtest.EverythingCommand(script, "streamableHttp", port)
	})
	cfg := fmt.Sprintf(`builtins: {staticAnalysis: {enabled: false}}
servers:
  - {name: ev, transport: streamable-http, url: "http://127.0.0.1:%d/mcp"}
`, upPort)
	h := hubtest.StartHub(t, hubtest.HubOptions{Bin: hubtest.HubBinary(t), Config: cfg, LogLevel: "warn", Wait: hubtest.Connected})
	var notes []mcp.JSONRPCNotification
	var mu sync.Mutex
	tr, err := transport.NewStreamableHTTP(h.MCPURL(), transport.WithContinuousListening())
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		mu.Lock()
		defer mu.Unlock()
		notes = append(notes, n)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	var handle string
	hubtest.Eventually(t, 60*time.Second, 200*time.Millisecond, "a task made", func() error {
		params, _ := json.Marshal(map[string]any{"name": "simulate-research-query", "arguments": map[string]any{"topic": "hubs"}, "task": map[string]any{"ttl": 60000}})
		resp, err := tr.SendRequest(ctx, transport.JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId(int64(1)), Method: "tools/call", Params: json.RawMessage(params)})
		if err != nil {
			return err
		}
		var created struct{ Task struct{ TaskID string } }
		if resp.Error != nil || json.Unmarshal(resp.Result, &created) != nil || created.Task.TaskID == "" {
			return fmt.Errorf("tools/call with task: %s %+v", resp.Result, resp.Error)
		}
		handle = created.Task.TaskID
		return nil
	})
	hubtest.Eventually(t, 60*time.Second, 200*time.Millisecond, "notifications/tasks/status with the handle", func() error {
		mu.Lock()
		defer mu.Unlock()
		for _, n := range notes {
			if n.Method == string(mcp.MethodNotificationTasksStatus) && n.Params.AdditionalFields["taskId"] == handle {
				return nil
			}
		}
		return fmt.Errorf("%d notifications, none of task %s", len(notes), handle)
	})
}
