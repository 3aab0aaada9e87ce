// Package tasks serves MCP Tasks on /mcp: a task-augmented tools/call,
// tasks/get, tasks/result, tasks/list and tasks/cancel, and the status
// notices of the tasks a replica made. It is one job beside the faces of
// internal/server, which hand it these requests whole (the HTTP request,
// its message, its body) because a task request may be answered by
// another replica (internal/peers) and that answer is written as it came.
//
// A task-augmented tools/call runs through the pipeline like any call
// (decided, limited, audited) and the upstream answers at once with the
// task it made; the caller gets that task with its id replaced by a hub
// handle (package taskhandle) naming the server, the tool, the upstream's
// id and the replica that made it, sealed for this caller. tasks/get,
// tasks/result and tasks/cancel open the handle on whichever replica gets
// them; the replica it names (whose upstream session holds the task)
// sends them to the server it names. No store is needed to route them.
// tasks/result goes through the pipeline's steps for results
// (pipeline.RunResult). A task outlives any request limit: the call
// returns the handle at once. tasks/list: list.go.
package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/peers"
	"github.com/purko-io/mcp-hub/internal/pipeline"
	"github.com/purko-io/mcp-hub/internal/registry"
	"github.com/purko-io/mcp-hub/internal/taskhandle"
)

// Options are the collaborators of Routes; only the wiring builds them.
type Options struct {
	// Codec seals and opens task handles; every replica needs the same key.
	Codec *taskhandle.Codec
	// Pipeline runs a task's call, its tasks/result and its other requests
	// through the steps of every call.
	Pipeline *pipeline.Pipeline
	// Registry names the upstream that runs a task.
	Registry *registry.Registry
	// MCP delivers notifications/tasks/status to the session that made the
	// task.
	MCP *server.MCPServer
	// Peers passes a request of another replica's task on to it; nil: this
	// replica alone.
	Peers *peers.Peers
	// Log takes what is not the caller's to read: a status notice that
	// could not be delivered.
	Log zerolog.Logger
}

// Routes routes MCP Tasks: the faces hand it task-augmented calls and
// tasks/* requests of /mcp, and the registry the upstreams' status notices.
type Routes struct {
	codec *taskhandle.Codec // task handles
	list  taskIndex         // the tasks made here, for tasks/list (list.go)
	pipe  *pipeline.Pipeline
	reg   *registry.Registry
	mcp   *server.MCPServer // notifications/tasks/status to sessions
	peers *peers.Peers
	log   zerolog.Logger
	held  heldTasks // calls waiting for approval, answered as tasks (held.go)
}

// New returns the routes of MCP Tasks over opts' collaborators.
func New(opts Options) *Routes {
	return &Routes{codec: opts.Codec, pipe: opts.Pipeline, reg: opts.Registry, mcp: opts.MCP, peers: opts.Peers, log: opts.Log}
}

// relatedTaskMeta is the _meta member that ties a message to its task.
const relatedTaskMeta = "io.modelcontextprotocol/related-task"

// IsMethod reports whether method is one Serve answers: the ones routed by
// a task's handle (tasks/update the Tasks extension's), and tasks/list.
func IsMethod(method string) bool {
	switch mcp.MCPMethod(method) {
	case mcp.MethodTasksGet, mcp.MethodTasksResult, mcp.MethodTasksCancel, mcp.MethodTasksList, methodTasksUpdate:
		return true
	}
	return false
}

// Call answers a task-augmented tools/call (msg, call): the pipeline's
// result, with the upstream's task id sealed into a handle; or, for a call
// that waits for a person's approval, a task of the hub's (held.go).
func (t *Routes) Call(w http.ResponseWriter, r *http.Request, msg *jsonrpc.Message, call *jsonrpc.ToolCall) {
	caller := callers.From(r.Context())
	out, held := t.run(r, msg, caller, r.Header.Get("Mcp-Session-Id"), call)
	if held != nil {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(jsonrpc.Reply(msg.ID, t.heldCreated(caller, held), nil))
		return
	}
	if out.Error == nil && out.Server != "" {
		if isExtension(out.Result) && isTask(out.Result) {
			out.Result = nestedTask(out.Result, true) // a 2026-07-28 server's (extension.go)
		}
		task := taskhandle.Task{Replica: t.peers.Self(), Server: out.Server, Tool: call.Name}
		t.remember(caller, r.Header.Get("Mcp-Session-Id"), task, out.Result)
		out.Result = t.sealTask(caller, task, out.Result)
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(callReply(msg.ID, out))
}

// Serve answers tasks/get, tasks/result, tasks/cancel and tasks/list
// (msg, read from body). A task lives in the upstream session of the
// replica that made it: a request of another replica's task is passed on
// to the peers, and the one whose handle it is answers.
func (t *Routes) Serve(w http.ResponseWriter, r *http.Request, msg *jsonrpc.Message, body []byte) {
	caller := callers.From(r.Context())
	modern, refusal := t.admitModern(r, msg)
	if refusal != nil {
		status := http.StatusOK
		if refusal.Code == codeHeaderMismatch {
			status = http.StatusBadRequest
		}
		jsonrpc.WriteReply(w, status, jsonrpc.ErrorReply(msg.ID, refusal))
		return
	}
	task, err := t.openTask(caller, msg)
	var res json.RawMessage
	session := r.Header.Get("Mcp-Session-Id")
	switch {
	case err != nil:
	case mcp.MCPMethod(msg.Method) == mcp.MethodTasksList && peers.PassedOn(r):
		res = t.listTasks(r, body) // list.go; the replica asked counted it
	case mcp.MCPMethod(msg.Method) == mcp.MethodTasksList:
		out := t.pipe.Serve(t.pipe.WithRequestID(r.Context(), msg.ID), caller, session, pipeline.Request{Method: msg.Method, List: true},
			func(context.Context, json.RawMessage) (json.RawMessage, error) { return t.listTasks(r, body), nil })
		if res = out.Result; out.Error != nil {
			err = out.Error
		}
	case task.Replica != t.peers.Self():
		if t.peers.Answer(w, r, body, task.Replica) {
			return // the replica that made it answers
		}
		err = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("%s: the replica that holds the task is gone, and the task with it", msg.Method)}
	case modern:
		held := t.isHeld(task)
		res, err = t.extensionRequest(t.pipe.WithRequestID(r.Context(), msg.ID), msg, func(ctx context.Context, method string, more map[string]json.RawMessage) (json.RawMessage, error) {
			if held {
				return t.heldRequest(ctx, caller, session, method, task)
			}
			return t.taskRequest(ctx, caller, session, method, task, more)
		})
	case mcp.MCPMethod(msg.Method) == methodTasksUpdate:
		err = &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("method %q is the %s extension's (2026-07-28)", msg.Method, extensionID)}
	case t.isHeld(task):
		res, err = t.heldRequest(t.pipe.WithRequestID(r.Context(), msg.ID), caller, session, msg.Method, task)
	default:
		res, err = t.legacyRequest(t.pipe.WithRequestID(r.Context(), msg.ID), caller, session, msg.Method, task)
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(jsonrpc.Reply(msg.ID, res, err))
}

// openTask reads the handle of a task request; tasks/list names none.
func (t *Routes) openTask(caller callers.Caller, msg *jsonrpc.Message) (taskhandle.Task, error) {
	if mcp.MCPMethod(msg.Method) == mcp.MethodTasksList {
		return taskhandle.Task{Replica: t.peers.Self()}, nil
	}
	var p struct {
		TaskID string `json:"taskId"`
	}
	if err := json.Unmarshal(msg.Params, &p); err != nil || p.TaskID == "" {
		return taskhandle.Task{}, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params: " + msg.Method + " needs a taskId"}
	}
	task, err := t.codec.Open(caller.AppendKey(nil), p.TaskID)
	if err != nil {
		// A forged handle, another caller's, or none of the hub's: the
		// answer to a task id the server never issued.
		return task, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%s: unknown task %q", msg.Method, p.TaskID)}
	}
	return task, nil
}

// taskRequest sends method of task to its server, with more in its
// params; tasks/result goes through the pipeline's steps for results.
func (t *Routes) taskRequest(ctx context.Context, caller callers.Caller, session, method string, task taskhandle.Task, more map[string]json.RawMessage) (json.RawMessage, error) {
	p := map[string]json.RawMessage{"taskId": mustMarshal(task.ID)}
	for k, v := range more {
		p[k] = v
	}
	params := mustMarshal(p)
	if mcp.MCPMethod(method) != mcp.MethodTasksResult {
		// tasks/get and tasks/cancel: limited, screened and recorded like
		// every request; decided when the task's call was (its handle is
		// sealed for this caller).
		out := t.pipe.Serve(ctx, caller, session, pipeline.Request{Method: method, Target: task.Tool, Server: task.Server, Decided: true},
			func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
				return t.forwardTask(ctx, task, method, params)
			})
		if out.Error != nil {
			return nil, out.Error
		}
		return t.sealTask(caller, task, out.Result), nil
	}
	out := t.pipe.RunResult(ctx, caller, session, jsonrpc.ToolCall{Name: task.Tool},
		func(ctx context.Context, rt registry.Route) (json.RawMessage, error) {
			if rt.Server() != task.Server {
				return nil, fmt.Errorf("tasks/result: tool %s is no longer served by %s", task.Tool, task.Server)
			}
			res, err := t.forwardTask(ctx, task, method, params)
			if e := (*jsonrpc.Error)(nil); errors.As(err, &e) && e.Code == jsonrpc.CodeMethodNotFound {
				return t.awaitResult(ctx, task) // a 2026-07-28 server's task (extension.go)
			}
			return res, err
		})
	if out.Error != nil {
		return nil, out.Error
	}
	return t.sealTask(caller, task, out.Result), nil
}

// forwardTask sends method with params to the server that runs task.
func (t *Routes) forwardTask(ctx context.Context, task taskhandle.Task, method string, params json.RawMessage) (json.RawMessage, error) {
	up, ok := t.reg.Catalog().Upstream(task.Server)
	if !ok {
		return nil, &registry.UnavailableError{Server: task.Server, Reason: "not connected"}
	}
	res, err := up.Request(ctx, method, params)
	var rpcErr *jsonrpc.Error
	if err != nil && !errors.As(err, &rpcErr) {
		return nil, fmt.Errorf("%s on %s: %w", method, task.Server, err)
	}
	return res, err
}

// sealTask replaces the upstream's task id in res with the caller's handle
// wherever a task result carries it: a CreateTaskResult's task, a Task
// (tasks/get, tasks/cancel), a result's related-task _meta. task.ID is
// taken from res when it is empty (a new task). A result that names no
// task passes unchanged.
func (t *Routes) sealTask(caller callers.Caller, task taskhandle.Task, res json.RawMessage) json.RawMessage {
	var top map[string]json.RawMessage
	if json.Unmarshal(res, &top) != nil {
		return res
	}
	key := caller.AppendKey(nil)
	seal := func(obj json.RawMessage) (json.RawMessage, bool) {
		var m map[string]json.RawMessage
		var id string
		if json.Unmarshal(obj, &m) != nil || json.Unmarshal(m["taskId"], &id) != nil || id == "" {
			return obj, false
		}
		if task.ID == "" {
			task.ID = id
		}
		if id != task.ID {
			return obj, false
		}
		m["taskId"] = mustMarshal(t.codec.Seal(key, task))
		return mustMarshal(m), true
	}
	if _, ok := top["taskId"]; ok { // a Task: tasks/get, tasks/cancel
		b, _ := seal(res)
		return b
	}
	changed := false
	if t, ok := top["task"]; ok { // a CreateTaskResult
		top["task"], changed = seal(t)
	}
	if meta, ok := top["_meta"]; ok {
		var m map[string]json.RawMessage
		if json.Unmarshal(meta, &m) == nil {
			if rt, ok := m[relatedTaskMeta]; ok {
				if b, c := seal(rt); c {
					m[relatedTaskMeta], changed = b, true
					top["_meta"] = mustMarshal(m)
				}
			}
		}
	}
	if !changed {
		return res
	}
	return mustMarshal(top)
}

// callReply is the answer to the request id of a call that ended in out:
// its result, or its JSON-RPC error.
func callReply(id json.RawMessage, out pipeline.Result) []byte {
	if out.Error != nil {
		return jsonrpc.ErrorReply(id, out.Error)
	}
	return jsonrpc.Reply(id, out.Result, nil)
}

func mustMarshal(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}
