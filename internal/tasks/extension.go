package tasks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/taskhandle"
)

// The Tasks extension (io.modelcontextprotocol/tasks) is how 2026-07-28
// callers get tasks: the caller declares the extension in a request's
// capabilities, the server alone decides to answer a tools/call with a
// task (resultType "task", the task's members at the top of the result),
// and the caller polls tasks/get, whose answer inlines the result (or the
// JSON-RPC error) once the task has ended, gives input with tasks/update
// and ends it with tasks/cancel (both answered with an empty result).
// There is no tasks/list and no tasks/result.
//
// The hub serves it over the same routes as 2025-11-25's tasks: an
// upstream's task (made by a task-augmented call on its session) or a
// hub task (a call held for approval, held.go), behind the same sealed
// handles, so any replica takes any request of it (peers.Forward). The
// hub decides as a server would: a tool whose server requires a task
// (execution.taskSupport "required") runs as one for a caller that
// declared the extension, and is refused with -32021 to a 2026-07-28
// caller that did not; any other call runs to its result. A task's
// result takes the pipeline's steps for results (RunResult: filters, cap,
// record) when tasks/get inlines it, as tasks/result's does.

// extensionID is the Tasks extension's identifier.
const extensionID = "io.modelcontextprotocol/tasks"

// codeMissingCapability is 2026-07-28's "Missing required client
// capability", and codeHeaderMismatch its "headers disagree with the
// body" (answered with HTTP 400).
const (
	codeMissingCapability = mcp.MISSING_REQUIRED_CLIENT_CAPABILITY
	codeHeaderMismatch    = mcp.HEADER_MISMATCH
)

// extensionOf reads a request's _meta: whether it is a 2026-07-28
// request, and whether that request declares the Tasks extension.
func extensionOf(meta map[string]json.RawMessage) (modern, declared bool) {
	var version string
	if json.Unmarshal(meta[mcp.MetaKeyProtocolVersion], &version) != nil || !mcp.IsModernProtocol(version) {
		return false, false
	}
	caps := meta[mcp.MetaKeyClientCapabilities]
	if !bytes.Contains(caps, []byte(extensionID)) {
		return true, false
	}
	var c struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	_ = json.Unmarshal(caps, &c)
	_, declared = c.Extensions[extensionID]
	return true, declared
}

// missingExtension is the answer to a 2026-07-28 request that needs the
// Tasks extension from a caller that did not declare it.
func missingExtension(what string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: codeMissingCapability,
		Message: fmt.Sprintf("Missing required client capability: %s needs the %s extension declared in the request's capabilities", what, extensionID),
		Data:    json.RawMessage(`{"requiredCapabilities":{"extensions":{"` + extensionID + `":{}}}}`)}
}

// RequiresTask reports whether call, a 2026-07-28 caller's tools/call, is
// one ExtensionCall answers: its tool runs only as a task. Cheap for any
// other call (no lookup unless the call is of 2026-07-28).
func (t *Routes) RequiresTask(call *jsonrpc.ToolCall) bool {
	if _, ok := call.Meta[mcp.MetaKeyProtocolVersion]; !ok || call.Task != nil {
		return false
	}
	if modern, _ := extensionOf(call.Meta); !modern {
		return false
	}
	tool, ok := t.reg.Catalog().Tool(call.Name)
	return ok && tool.Def.Execution != nil && tool.Def.Execution.TaskSupport == mcp.TaskSupportRequired
}

// ExtensionCall answers call (RequiresTask) with its task, in the
// extension's shape, or, to a caller that did not declare the extension,
// with -32021.
func (t *Routes) ExtensionCall(w http.ResponseWriter, r *http.Request, msg *jsonrpc.Message, call *jsonrpc.ToolCall) {
	w.Header().Set("Content-Type", "application/json")
	if _, declared := extensionOf(call.Meta); !declared {
		_, _ = w.Write(jsonrpc.ErrorReply(msg.ID, missingExtension("tool "+call.Name)))
		return
	}
	caller := callers.From(r.Context())
	augmented := *call
	augmented.Task = json.RawMessage(`{}`) // the server's default TTL
	out, held := t.run(r, msg, caller, "", &augmented)
	if held != nil {
		_, _ = w.Write(jsonrpc.Reply(msg.ID, flatTask(t.heldCreated(caller, held), "task", nil), nil))
		return
	}
	if out.Error == nil && out.Server != "" {
		task := taskhandle.Task{Replica: t.peers.Self(), Server: out.Server, Tool: call.Name}
		out.Result = flatTask(t.sealTask(caller, task, out.Result), "task", nil)
	}
	_, _ = w.Write(callReply(msg.ID, out))
}

// extensionRequest answers a 2026-07-28 tasks/* request (msg) of task, a
// task of this replica's: tasks/get in the extension's shape, with the
// result or the error inlined once the task has ended; tasks/cancel and
// tasks/update with an empty result. source answers the 2025-11-25 form
// of a method for the task (taskRequest, or heldRequest for a hub task).
func (t *Routes) extensionRequest(ctx context.Context, caller callers.Caller, msg *jsonrpc.Message, source func(ctx context.Context, method string) (json.RawMessage, error)) (json.RawMessage, error) {
	switch mcp.MCPMethod(msg.Method) {
	case mcp.MethodTasksCancel:
		if _, err := source(ctx, msg.Method); err != nil {
			return nil, err
		}
		return json.RawMessage(`{"resultType":"complete"}`), nil
	case mcp.MethodTasksGet:
	case methodTasksUpdate:
		// Input reaches a 2025-11-25 server's task only through
		// tasks/result on its session, which a 2026-07-28 caller does not
		// hold: the task asks for none the hub can pass on.
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: "tasks/update: this task takes no input through the hub (its server keeps task input to 2025-11-25 sessions)"}
	}
	res, err := source(ctx, msg.Method)
	if err != nil {
		return nil, err
	}
	var st struct {
		Status mcp.TaskStatus `json:"status"`
	}
	_ = json.Unmarshal(res, &st)
	if st.Status != mcp.TaskStatusCompleted && st.Status != mcp.TaskStatusFailed {
		return flatTask(res, "complete", nil), nil
	}
	// Ended: its result (through the pipeline's steps for results), or
	// the JSON-RPC error it ended with.
	final, err := source(ctx, string(mcp.MethodTasksResult))
	if err == nil {
		return flatTask(res, "complete", map[string]json.RawMessage{"status": json.RawMessage(`"completed"`), "result": final}), nil
	}
	e := jsonrpc.AsError(err)
	if e.Code == jsonrpc.CodeInternalError && ctx.Err() != nil {
		return nil, err // the caller went away: nothing to say of the task
	}
	return flatTask(res, "complete", map[string]json.RawMessage{"status": json.RawMessage(`"failed"`), "error": mustMarshal(e)}), nil
}

// methodTasksUpdate gives a task the input it asked for (the Tasks
// extension only).
const methodTasksUpdate = "tasks/update"

// flatTask is a 2025-11-25 task (a Task, or a CreateTaskResult's task) in
// the extension's shape: the task's members at the top, ttl and
// pollInterval as ttlMs and pollIntervalMs, resultType set, and more's
// members added (a status, the inlined result or error).
func flatTask(res json.RawMessage, resultType string, more map[string]json.RawMessage) json.RawMessage {
	var top map[string]json.RawMessage
	if json.Unmarshal(res, &top) != nil {
		return res
	}
	if inner, ok := top["task"]; ok { // a CreateTaskResult
		var task map[string]json.RawMessage
		if json.Unmarshal(inner, &task) == nil {
			delete(top, "task")
			for k, v := range task {
				top[k] = v
			}
		}
	}
	for from, to := range map[string]string{"ttl": "ttlMs", "pollInterval": "pollIntervalMs"} {
		if v, ok := top[from]; ok {
			delete(top, from)
			top[to] = v
		}
	}
	if _, ok := top["ttlMs"]; !ok {
		top["ttlMs"] = json.RawMessage(`null`) // required: null is unlimited
	}
	top["resultType"] = mustMarshal(resultType)
	for k, v := range more {
		top[k] = v
	}
	return mustMarshal(top)
}

// admitModern reads whether msg is a 2026-07-28 tasks/* request, and
// refuses one the extension does not admit: from a caller that did not
// declare it (-32021), of a method it does not have (tasks/list,
// tasks/result: -32601), or whose Mcp-Name header is not its taskId
// (-32020: a load balancer may have routed it by the header).
func (t *Routes) admitModern(r *http.Request, msg *jsonrpc.Message) (modern bool, refusal *jsonrpc.Error) {
	modern, declared := extensionOf(msg.Meta())
	switch {
	case !modern:
		return false, nil
	case !declared:
		return true, missingExtension(msg.Method)
	case mcp.MCPMethod(msg.Method) == mcp.MethodTasksList || mcp.MCPMethod(msg.Method) == mcp.MethodTasksResult:
		return true, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
			Message: fmt.Sprintf("method %q is not part of the %s extension: poll tasks/get, which carries the result", msg.Method, extensionID)}
	}
	var p struct {
		TaskID string `json:"taskId"`
	}
	_ = json.Unmarshal(msg.Params, &p)
	if r.Header.Get(mcp.HeaderMethod) != msg.Method || r.Header.Get(mcp.HeaderName) != p.TaskID {
		return true, &jsonrpc.Error{Code: codeHeaderMismatch,
			Message: fmt.Sprintf("%s: the %s and %s headers must be the method and params.taskId", msg.Method, mcp.HeaderMethod, mcp.HeaderName)}
	}
	return true, nil
}
