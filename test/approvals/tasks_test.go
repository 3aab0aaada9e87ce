package approvals

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/purko-io/mcp-hub/internal/hubtest"
)

// rpc posts one JSON-RPC request to url as token, sessionless (as an
// executor sends tasks/*), and returns its result or error.
type rpc struct {
	t     *testing.T
	url   string
	token string
	next  atomic.Int64
}

func (c *rpc) call(method, params string) (json.RawMessage, string) {
	c.t.Helper()
	return c.send(method, params, nil)
}

// callExtension is call as a 2026-07-28 caller that declares the Tasks
// extension; name is the Mcp-Name header (the tool, or the task).
func (c *rpc) callExtension(method, params, name string) (json.RawMessage, string) {
	c.t.Helper()
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`
	params = strings.TrimSuffix(strings.TrimSpace(params), "}") + "," + meta + "}"
	return c.send(method, params, http.Header{"Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {method}, "Mcp-Name": {name}})
}

func (c *rpc) send(method, params string, header http.Header) (json.RawMessage, string) {
	c.t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, c.next.Add(1), method, params)
	req, _ := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
	for k, v := range header {
		req.Header[k] = v
	}
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
		Error  *struct{ Message string }
	}
	if err := json.Unmarshal(b, &reply); err != nil {
		c.t.Fatalf("%s: %d %s", method, resp.StatusCode, b)
	}
	if reply.Error != nil {
		return nil, reply.Error.Message
	}
	return reply.Result, ""
}

// task is a Task as tasks/get and a CreateTaskResult show it.
type task struct {
	TaskID, Status, StatusMessage string
}

func (c *rpc) get(handle string) task {
	c.t.Helper()
	res, err := c.call("tasks/get", fmt.Sprintf(`{"taskId":%q}`, handle))
	var got task
	if err != "" || json.Unmarshal(res, &got) != nil {
		c.t.Fatalf("tasks/get: %s %s", res, err)
	}
	return got
}

// TestHeldCallAsATask: a caller that asks for a task gets one at once
// when its call waits for approval: a task of the hub's, "working" while
// it waits, listed by tasks/list. Approved, the call runs and the
// upstream's task answers behind the same handle until tasks/result gives
// its report; denied, the task fails with the reason and tasks/result is
// the BLOCKED text; cancelled while it waits, nothing runs.
func TestHeldCallAsATask(t *testing.T) {
	script, err := hubtest.EverythingScript()
	if err != nil {
		t.Fatal(err)
	}
	_, upPort := hubtest.StartServer(t, "server-everything", 0, func(port int) *exec.Cmd {
		return hubtest.EverythingCommand(script, "streamableHttp", port)
	})
	cfg := fmt.Sprintf(`builtins: {staticAnalysis: {enabled: false}, triggerWorkflow: {enabled: false}}
servers:
  - {name: ev, transport: streamable-http, url: "http://127.0.0.1:%d/mcp", toolPolicy: {write: [simulate-research-query]}}
auth:
  tokens:
    - {name: bot, token: {env: TOKEN_BOT}, maxLevel: supervised, guardrails: {humanApprovalRequired: true}}
    - {name: ops, token: {env: TOKEN_OPS}, maxLevel: full, admin: true}
`, upPort)
	hub := hubtest.StartHub(t, hubtest.HubOptions{Bin: hubtest.HubBinary(t), Config: cfg, Env: tokenEnv, LogLevel: "warn", Wait: hubtest.Connected})
	hubtest.Eventually(t, 60*time.Second, 150*time.Millisecond, "simulate-research-query listed", func() error {
		l, err := hub.Listing("?format=names")
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
	bot := &rpc{t: t, url: hub.MCPURL(), token: botToken}
	start := func(topic string) task {
		t.Helper()
		res, rpcErr := bot.call("tools/call", `{"name":"simulate-research-query","arguments":{"topic":"`+topic+`"},"task":{"ttl":60000}}`)
		var created struct{ Task task }
		if rpcErr != "" || json.Unmarshal(res, &created) != nil || !strings.HasPrefix(created.Task.TaskID, "mht1.") || created.Task.Status != "working" ||
			!strings.Contains(created.Task.StatusMessage, "waiting for a person to approve simulate-research-query (approval ") {
			t.Fatalf("a held task-augmented call = %s %s; want a working hub task at once", res, rpcErr)
		}
		return created.Task
	}
	held := func(topic string) pending {
		return heldCall(t, hub.Base, opsToken, "simulate-research-query", `{"topic":"`+topic+`"}`)
	}

	first := start("hubs")
	if got := bot.get(first.TaskID); got.Status != "working" || got.TaskID != first.TaskID {
		t.Fatalf("tasks/get while held: %+v", got)
	}
	if res, err := bot.call("tasks/list", `{}`); err != "" || !strings.Contains(string(res), first.TaskID) {
		t.Fatalf("tasks/list while held: %s %s", res, err)
	}
	p := held("hubs")
	if status, body := rest(t, http.MethodPost, hub.Base+"/api/mcp/approvals/"+p.ID, opsToken, `{"decision":"approve"}`); status != http.StatusOK {
		t.Fatalf("approve: %d %s", status, body)
	}
	hubtest.Eventually(t, 60*time.Second, 150*time.Millisecond, "the approved task completed", func() error {
		if got := bot.get(first.TaskID); got.Status != "completed" || got.TaskID != first.TaskID {
			return fmt.Errorf("tasks/get: %+v", got)
		}
		return nil
	})
	res, rpcErr := bot.call("tasks/result", fmt.Sprintf(`{"taskId":%q}`, first.TaskID))
	if rpcErr != "" || !strings.Contains(string(res), "Research Report") {
		t.Fatalf("tasks/result of the approved task: %s %s", res, rpcErr)
	}
	if strings.Contains(string(res), "related-task") && !strings.Contains(string(res), first.TaskID) {
		t.Errorf("tasks/result names another task than the hub's handle: %s", res)
	}

	second := start("rugs")
	p = held("rugs")
	if status, body := rest(t, http.MethodPost, hub.Base+"/api/mcp/approvals/"+p.ID, opsToken, `{"decision":"deny","reason":"not this quarter"}`); status != http.StatusOK {
		t.Fatalf("deny: %d %s", status, body)
	}
	res, rpcErr = bot.call("tasks/result", fmt.Sprintf(`{"taskId":%q}`, second.TaskID))
	if rpcErr != "" || !strings.Contains(string(res), "ops denied it: not this quarter") || !strings.Contains(string(res), `"isError":true`) {
		t.Fatalf("tasks/result of the denied task: %s %s", res, rpcErr)
	}
	if got := bot.get(second.TaskID); got.Status != "failed" || !strings.Contains(got.StatusMessage, "not this quarter") {
		t.Fatalf("tasks/get of the denied task: %+v", got)
	}

	third := start("cats")
	held("cats")
	res, rpcErr = bot.call("tasks/cancel", fmt.Sprintf(`{"taskId":%q}`, third.TaskID))
	var cancelled task
	if rpcErr != "" || json.Unmarshal(res, &cancelled) != nil || cancelled.Status != "cancelled" {
		t.Fatalf("tasks/cancel while held: %s %s", res, rpcErr)
	}
	_, body := rest(t, http.MethodGet, hub.Base+"/api/mcp/approvals", opsToken, "")
	if strings.Contains(body, `"topic": "cats"`) {
		t.Fatalf("a cancelled task still waits for approval: %s", body)
	}
	if _, err := (&rpc{t: t, url: hub.MCPURL(), token: opsToken}).call("tasks/get", fmt.Sprintf(`{"taskId":%q}`, first.TaskID)); !strings.Contains(err, "unknown task") {
		t.Errorf("another caller's tasks/get of the hub task: %q, want unknown task", err)
	}

	// A 2026-07-28 caller of the Tasks extension: the held call is a flat
	// task of the hub's at once, and once approved tasks/get inlines the
	// upstream task's result behind the same handle.
	res, rpcErr = bot.callExtension("tools/call", `{"name":"simulate-research-query","arguments":{"topic":"bees"}}`, "simulate-research-query")
	var flat struct{ ResultType, TaskID, Status, StatusMessage string }
	if rpcErr != "" || json.Unmarshal(res, &flat) != nil || flat.ResultType != "task" || !strings.HasPrefix(flat.TaskID, "mht1.") || flat.Status != "working" ||
		!strings.Contains(flat.StatusMessage, "waiting for a person to approve simulate-research-query") {
		t.Fatalf("a held call of a caller of the Tasks extension = %s %s; want a flat working hub task", res, rpcErr)
	}
	p = held("bees")
	if status, body := rest(t, http.MethodPost, hub.Base+"/api/mcp/approvals/"+p.ID, opsToken, `{"decision":"approve"}`); status != http.StatusOK {
		t.Fatalf("approve: %d %s", status, body)
	}
	hubtest.Eventually(t, 60*time.Second, 150*time.Millisecond, "the approved task completed, its result inlined", func() error {
		res, rpcErr := bot.callExtension("tasks/get", fmt.Sprintf(`{"taskId":%q}`, flat.TaskID), flat.TaskID)
		var got struct {
			ResultType, TaskID, Status string
			Result                     json.RawMessage
		}
		if rpcErr != "" || json.Unmarshal(res, &got) != nil || got.TaskID != flat.TaskID || got.ResultType != "complete" {
			return fmt.Errorf("tasks/get: %s %s", res, rpcErr)
		}
		if got.Status != "completed" || !strings.Contains(string(got.Result), "Research Report") {
			return fmt.Errorf("status %s, result %.80s", got.Status, got.Result)
		}
		return nil
	})
}
