package tasks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

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
// hub decides as a server would: a tool that may run as a task (its
// server's execution.taskSupport "optional" or "required": one that may
// run long) runs as one for a caller that declared the extension; one
// that must is refused with -32021 to a 2026-07-28 caller that did not;
// any other call runs to its result. A task's
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
// one ExtensionCall answers: of a caller that declared the extension, to a
// tool that may run as a task (its server's execution.taskSupport, which
// the registry sets to optional for a server of the extension, which then
// decides); of another caller, to a tool that runs only as a task (which
// it is refused). Cheap for any other call (no lookup unless the call is
// of 2026-07-28).
func (t *Routes) RequiresTask(call *jsonrpc.ToolCall) bool {
	if _, ok := call.Meta[mcp.MetaKeyProtocolVersion]; !ok || call.Task != nil {
		return false
	}
	modern, declared := extensionOf(call.Meta)
	if !modern {
		return false
	}
	tool, ok := t.reg.Catalog().Tool(call.Name)
	if !ok || tool.Def.Execution == nil {
		return false
	}
	support := tool.Def.Execution.TaskSupport
	return support == mcp.TaskSupportRequired || declared && support == mcp.TaskSupportOptional
}

// ExtensionCall answers call (RequiresTask) with its task, in the
// extension's shape, or with its result when the server made none; to a
// caller that did not declare the extension, with -32021.
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
	switch {
	case out.Error != nil:
	case out.Server != "" && isTask(out.Result):
		task := taskhandle.Task{Replica: t.peers.Self(), Server: out.Server, Tool: call.Name}
		out.Result = flatTask(t.sealTask(caller, task, out.Result), "task", nil)
	case !isExtension(out.Result):
		// The server made none: its result, complete as 2026-07-28 says.
		var m map[string]json.RawMessage
		if json.Unmarshal(out.Result, &m) == nil && m != nil {
			m["resultType"] = json.RawMessage(`"complete"`)
			out.Result = mustMarshal(m)
		}
	}
	_, _ = w.Write(callReply(msg.ID, out))
}

// extensionRequest answers a 2026-07-28 tasks/* request (msg) of a task
// of this replica's: tasks/get in the extension's shape, with the result
// or the error inlined once the task has ended; tasks/cancel and
// tasks/update with an empty result. source sends a method of the task,
// with more params, to whoever holds it (taskRequest, or heldRequest for
// a hub task), which answers in its own revision's shape.
func (t *Routes) extensionRequest(ctx context.Context, msg *jsonrpc.Message, source func(ctx context.Context, method string, more map[string]json.RawMessage) (json.RawMessage, error)) (json.RawMessage, error) {
	switch mcp.MCPMethod(msg.Method) {
	case mcp.MethodTasksCancel:
		if _, err := source(ctx, msg.Method, nil); err != nil {
			return nil, err
		}
		return json.RawMessage(`{"resultType":"complete"}`), nil
	case methodTasksUpdate:
		var p struct {
			InputResponses json.RawMessage `json:"inputResponses"`
		}
		if json.Unmarshal(msg.Params, &p) != nil || len(p.InputResponses) == 0 {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tasks/update needs inputResponses"}
		}
		_, err := source(ctx, msg.Method, map[string]json.RawMessage{"inputResponses": p.InputResponses})
		if e := (*jsonrpc.Error)(nil); errors.As(err, &e) && e.Code == jsonrpc.CodeMethodNotFound {
			// Input reaches a 2025-11-25 server's task only through
			// tasks/result on its session, which a 2026-07-28 caller does
			// not hold: the task asks for none the hub can pass on.
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
				Message: "tasks/update: this task takes no input through the hub (its server keeps task input to 2025-11-25 sessions)"}
		}
		if err != nil {
			return nil, err
		}
		return json.RawMessage(`{"resultType":"complete"}`), nil
	}
	res, err := source(ctx, msg.Method, nil)
	if err != nil {
		return nil, err
	}
	var st struct {
		Status        mcp.TaskStatus  `json:"status"`
		InputRequests json.RawMessage `json:"inputRequests"`
	}
	_ = json.Unmarshal(res, &st)
	if st.Status == mcp.TaskStatusInputRequired && len(st.InputRequests) == 0 {
		// A 2025-11-25 server's task waits for input it takes only through
		// tasks/result on its session: nothing a 2026-07-28 caller can
		// answer (the extension's input_required carries its requests).
		return flatTask(res, "complete", map[string]json.RawMessage{"status": json.RawMessage(`"working"`),
			"statusMessage": mustMarshal("the server waits for input it takes only on a 2025-11-25 session, which the hub cannot pass on")}), nil
	}
	if st.Status != mcp.TaskStatusCompleted && st.Status != mcp.TaskStatusFailed {
		return flatTask(res, "complete", nil), nil
	}
	// Ended: its result, through the pipeline's steps for results (a
	// 2026-07-28 server's inlined one too: tasks/result fetches it), or
	// the JSON-RPC error it ended with.
	final, err := source(ctx, string(mcp.MethodTasksResult), nil)
	if err == nil {
		return flatTask(res, "complete", map[string]json.RawMessage{"status": json.RawMessage(`"completed"`), "result": final}), nil
	}
	e := jsonrpc.AsError(err)
	if e.Code == jsonrpc.CodeInternalError && ctx.Err() != nil {
		return nil, err // the caller went away: nothing to say of the task
	}
	return flatTask(res, "complete", map[string]json.RawMessage{"status": json.RawMessage(`"failed"`), "error": mustMarshal(e)}), nil
}

// A 2026-07-28 server's task (one that serves the Tasks extension) is
// bridged to a 2025-11-25 caller as a task of that revision: the flat
// task nested in a CreateTaskResult, tasks/get's answer without what it
// inlines, tasks/cancel followed by tasks/get (2025-11-25 answers it with
// the task), and tasks/result by polling tasks/get until the task ends
// (awaitResult). A 2026-07-28 server's answers say their resultType; a
// 2025-11-25 server's do not.

// isExtension reports whether res is a 2026-07-28 server's answer.
func isExtension(res json.RawMessage) bool {
	var m struct {
		ResultType *string `json:"resultType"`
	}
	return json.Unmarshal(res, &m) == nil && m.ResultType != nil
}

// isTask reports whether res, the result of a tools/call, is a task of
// either revision (a CreateTaskResult).
func isTask(res json.RawMessage) bool {
	var m struct {
		ResultType string          `json:"resultType"`
		Task       json.RawMessage `json:"task"`
	}
	return json.Unmarshal(res, &m) == nil && (m.ResultType == "task" || len(m.Task) > 0 && string(m.Task) != "null")
}

// nestedTask is a 2026-07-28 server's task in 2025-11-25's shape: ttlMs
// and pollIntervalMs as ttl and pollInterval, without resultType or what
// tasks/get inlines, and, for a created one, nested in "task".
func nestedTask(res json.RawMessage, created bool) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(res, &m) != nil {
		return res
	}
	for _, k := range []string{"resultType", "result", "error", "inputRequests"} {
		delete(m, k)
	}
	rename(m, "ttlMs", "ttl")
	rename(m, "pollIntervalMs", "pollInterval")
	if !created {
		return mustMarshal(m)
	}
	top := map[string]json.RawMessage{}
	if meta, ok := m["_meta"]; ok {
		delete(m, "_meta")
		top["_meta"] = meta
	}
	top["task"] = mustMarshal(m)
	return mustMarshal(top)
}

// legacyRequest is taskRequest for a 2025-11-25 caller: a 2026-07-28
// server's answer in 2025-11-25's shape.
func (t *Routes) legacyRequest(ctx context.Context, caller callers.Caller, session, method string, task taskhandle.Task) (json.RawMessage, error) {
	res, err := t.taskRequest(ctx, caller, session, method, task, nil)
	if err != nil || !isExtension(res) {
		return res, err
	}
	if mcp.MCPMethod(method) == mcp.MethodTasksCancel { // an empty acknowledgement
		if res, err = t.taskRequest(ctx, caller, session, string(mcp.MethodTasksGet), task, nil); err != nil {
			return nil, err
		}
	}
	return nestedTask(res, false), nil
}

// awaitResult is tasks/result of a 2026-07-28 server's task, which has
// none: tasks/get until the task ends, every pollIntervalMs it asks for
// (within 100 ms and 5 s), then its inlined result, or its error.
func (t *Routes) awaitResult(ctx context.Context, task taskhandle.Task) (json.RawMessage, error) {
	params := mustMarshal(map[string]string{"taskId": task.ID})
	for {
		res, err := t.forwardTask(ctx, task, string(mcp.MethodTasksGet), params)
		if err != nil {
			return nil, err
		}
		var got struct {
			Status       mcp.TaskStatus  `json:"status"`
			Message      string          `json:"statusMessage"`
			Result       json.RawMessage `json:"result"`
			Error        *jsonrpc.Error  `json:"error"`
			PollInterval int64           `json:"pollIntervalMs"`
		}
		if err := json.Unmarshal(res, &got); err != nil {
			return nil, fmt.Errorf("tasks/get on %s: %w", task.Server, err)
		}
		switch got.Status {
		case mcp.TaskStatusCompleted:
			return got.Result, nil
		case mcp.TaskStatusFailed:
			if got.Error == nil {
				got.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the task failed: " + got.Message}
			}
			return nil, got.Error
		case mcp.TaskStatusCancelled:
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the task was cancelled"}
		}
		wait := min(max(time.Duration(got.PollInterval)*time.Millisecond, 100*time.Millisecond), 5*time.Second)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
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
	rename(top, "ttl", "ttlMs") // the extension's names of two members
	rename(top, "pollInterval", "pollIntervalMs")
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

// ListenRefusal is the answer to a 2026-07-28 subscriptions/listen (msg)
// that asks for notifications/tasks (notifications.taskIds) without
// declaring the Tasks extension: -32021, as the extension requires; nil
// for any other. A declaring caller's listen goes on, and the hub agrees
// to send it no task's notices (it acknowledges no taskIds): a caller
// polls tasks/get, which misses nothing.
func ListenRefusal(msg *jsonrpc.Message) *jsonrpc.Error {
	var p struct {
		Notifications struct {
			TaskIDs []string `json:"taskIds"`
		} `json:"notifications"`
	}
	if json.Unmarshal(msg.Params, &p) != nil || len(p.Notifications.TaskIDs) == 0 {
		return nil
	}
	if _, declared := extensionOf(msg.Meta()); declared {
		return nil
	}
	return missingExtension("notifications/tasks")
}

// rename moves member from of m to to, if m has it.
func rename(m map[string]json.RawMessage, from, to string) {
	if v, ok := m[from]; ok {
		delete(m, from)
		m[to] = v
	}
}
