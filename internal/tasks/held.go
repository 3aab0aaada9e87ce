package tasks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/approvals"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/pipeline"
	"github.com/purko-io/mcp-hub/internal/taskhandle"
)

// A task-augmented call that waits for a person's approval (internal/
// approvals) is answered at once, as a caller that asks for a task
// expects, with a task of the hub's own: no upstream has one yet. Its
// handle is sealed like any (this replica, the tool, an id that names the
// approval), so tasks/get, tasks/result, tasks/cancel and tasks/list reach
// this replica and are answered here: "working" while it waits; once
// approved, the call goes on as any task-augmented call and the upstream's
// task answers behind the same handle; denied, expired or cancelled, the
// task failed (or was cancelled) with the BLOCKED text, and tasks/result
// returns it. Status notices of the upstream's task are not passed on
// under the hub's handle: a caller polls, as tasks/get and tasks/result let
// it.

// heldPrefix starts the id of a hub task; one is answered here while this
// replica keeps it (an upstream's id of that form still reaches its
// upstream).
const heldPrefix = "approval-"

// maxHeldTasks bounds the hub tasks kept: the calls waiting are bounded by
// approvals, the ended ones are kept for defaultTaskTTL.
const maxHeldTasks = 4096

// heldTask is a hub task: a task-augmented call held for approval.
type heldTask struct {
	handle  taskhandle.Task
	key     string // its caller's
	created time.Time
	pending approvals.Pending
	cancel  context.CancelFunc // ends the wait (tasks/cancel)
	// cancelled: tasks/cancel ended the wait (the call ended as any
	// cancelled hold: BLOCKED, nothing ran).
	cancelled atomic.Bool
	done      chan struct{} // closed when the call has ended

	// Set before done closes.
	ended    time.Time
	upstream *taskhandle.Task // the upstream's task, once the approved call made one
	final    pipeline.Result  // else how the call ended
}

// heldTasks are this replica's hub tasks by id.
type heldTasks struct {
	mu sync.Mutex
	by map[string]*heldTask
}

func (h *heldTasks) get(id string) *heldTask {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.by[id]
}

// put keeps ht, dropping the tasks that ended more than defaultTaskTTL ago
// and, over maxHeldTasks, the oldest ended ones.
func (h *heldTasks) put(ht *heldTask, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.by == nil {
		h.by = map[string]*heldTask{}
	}
	var oldest *heldTask
	for id, o := range h.by {
		select {
		case <-o.done:
			if now.Sub(o.ended) > defaultTaskTTL {
				delete(h.by, id)
			} else if oldest == nil || o.ended.Before(oldest.ended) {
				oldest = o
			}
		default:
		}
	}
	if len(h.by) >= maxHeldTasks && oldest != nil {
		delete(h.by, oldest.handle.ID)
	}
	h.by[ht.handle.ID] = ht
}

func (h *heldTasks) of(key string) []*heldTask {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*heldTask
	for _, ht := range h.by {
		if ht.key == key {
			out = append(out, ht)
		}
	}
	return out
}

// run runs a task-augmented call through the pipeline. When the call
// waits for approval it returns the hub task that stands for it at once
// (the call goes on without the request); otherwise the call's result.
func (t *Routes) run(r *http.Request, msg *jsonrpc.Message, caller callers.Caller, session string, call *jsonrpc.ToolCall) (pipeline.Result, *heldTask) {
	// The call may outlive its request once held: its own context, ended
	// with the request until then.
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	stop := context.AfterFunc(r.Context(), cancel)
	held := make(chan approvals.Pending, 1)
	ctx = approvals.WithHoldNotice(ctx, func(p approvals.Pending) { held <- p })
	out := make(chan pipeline.Result, 1)
	go func() { out <- t.pipe.Run(t.pipe.WithRequestID(ctx, msg.ID), caller, session, *call, nil) }()
	select {
	case res := <-out:
		stop()
		cancel()
		return res, nil
	case p := <-held:
		stop()
		now := time.Now()
		ht := &heldTask{handle: taskhandle.Task{Replica: t.peers.Self(), Server: p.Server, Tool: call.Name, ID: heldPrefix + p.ID},
			key: string(caller.AppendKey(nil)), created: now, pending: p, cancel: cancel, done: make(chan struct{})}
		t.held.put(ht, now)
		// Owned by the call: it ends when the call does (a decision, the
		// timeout, tasks/cancel or the hub's shutdown end the wait).
		go t.settle(ht, out)
		return pipeline.Result{}, ht
	}
}

// settle records how ht's call ended: the upstream's task when the
// approved call made one, else its result.
func (t *Routes) settle(ht *heldTask, out <-chan pipeline.Result) {
	res := <-out
	if res.Error == nil && res.Server != "" {
		var created struct {
			Task struct {
				TaskID string `json:"taskId"`
			} `json:"task"`
		}
		if json.Unmarshal(res.Result, &created) == nil && created.Task.TaskID != "" {
			ht.upstream = &taskhandle.Task{Replica: ht.handle.Replica, Server: res.Server, Tool: ht.handle.Tool, ID: created.Task.TaskID}
		}
	}
	if ht.upstream == nil {
		ht.final = res
	}
	ht.ended = time.Now()
	ht.cancel()
	close(ht.done)
}

// heldCreated is the CreateTaskResult of a call held for approval.
func (t *Routes) heldCreated(caller callers.Caller, ht *heldTask) json.RawMessage {
	return mustMarshal(map[string]any{"task": t.heldStatus(caller, ht, "working")})
}

// heldStatus is ht as a Task, in status.
func (t *Routes) heldStatus(caller callers.Caller, ht *heldTask, status string) map[string]any {
	msg := fmt.Sprintf("waiting for a person to approve %s (approval %s; approvers: %s; until %s)",
		ht.handle.Tool, ht.pending.ID, ht.pending.Approvers, ht.pending.Expires.UTC().Format(time.RFC3339))
	updated := ht.created
	switch status {
	case "cancelled", "failed", "completed":
		updated = ht.ended
		msg = heldText(ht.final)
	}
	return map[string]any{
		"taskId": t.codec.Seal(caller.AppendKey(nil), ht.handle), "status": status, "statusMessage": msg,
		"createdAt": ht.created.UTC().Format(time.RFC3339), "lastUpdatedAt": updated.UTC().Format(time.RFC3339),
		"ttl": int64((ht.pending.Expires.Sub(ht.created) + defaultTaskTTL) / time.Millisecond), "pollInterval": 5000,
	}
}

// heldText is the text of how a held call ended without an upstream task.
func heldText(res pipeline.Result) string {
	if res.Error != nil {
		return res.Error.Message
	}
	var r struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if json.Unmarshal(res.Result, &r) == nil {
		var b strings.Builder
		for _, c := range r.Content {
			b.WriteString(c.Text)
		}
		return b.String()
	}
	return ""
}

// finalStatus is the status of a hub task whose call ended without an
// upstream task.
func (ht *heldTask) finalStatus() string {
	switch {
	case ht.cancelled.Load():
		return "cancelled"
	case ht.final.Error != nil, ht.final.Outcome != pipeline.OK:
		return "failed"
	}
	return "completed"
}

// isHeld reports whether task is a hub task this replica keeps.
func (t *Routes) isHeld(task taskhandle.Task) bool {
	return strings.HasPrefix(task.ID, heldPrefix) && t.held.get(task.ID) != nil
}

// heldRequest answers tasks/get, tasks/result and tasks/cancel of a hub
// task (isHeld).
func (t *Routes) heldRequest(ctx context.Context, caller callers.Caller, session, method string, task taskhandle.Task) (json.RawMessage, error) {
	ht := t.held.get(task.ID)
	if ht == nil || ht.key != string(caller.AppendKey(nil)) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%s: unknown task (its call waited for approval and is gone)", method)}
	}
	ended := false
	select {
	case <-ht.done:
		ended = true
	default:
	}
	switch mcp.MCPMethod(method) {
	case mcp.MethodTasksGet:
		if !ended {
			return mustMarshal(t.heldStatus(caller, ht, "working")), nil
		}
	case mcp.MethodTasksCancel:
		if !ended {
			ht.cancelled.Store(true)
			ht.cancel() // the wait ends, canceled: nothing runs
			select {
			case <-ht.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if ht.upstream == nil {
				return mustMarshal(t.heldStatus(caller, ht, "cancelled")), nil
			}
		} else if ht.upstream == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tasks/cancel: the task has ended (" + ht.finalStatus() + ")"}
		}
	case mcp.MCPMethod("tasks/result"):
		select {
		case <-ht.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if ht.upstream == nil {
			if ht.final.Error != nil {
				return nil, ht.final.Error
			}
			return ht.final.Result, nil
		}
	}
	if ht.upstream == nil {
		return mustMarshal(t.heldStatus(caller, ht, ht.finalStatus())), nil
	}
	// Approved: the upstream's task answers, under the hub task's handle.
	res, err := t.legacyRequest(ctx, caller, session, method, *ht.upstream)
	return retag(res, t.codec.Seal(caller.AppendKey(nil), *ht.upstream), t.codec.Seal(caller.AppendKey(nil), ht.handle)), err
}

// retag writes the hub task's handle where a result names the upstream
// task's (both are opaque strings, so their quoted forms are exact).
func retag(res json.RawMessage, from, to string) json.RawMessage {
	if res == nil {
		return nil
	}
	return bytes.ReplaceAll(res, []byte(strconv.Quote(from)), []byte(strconv.Quote(to)))
}

// heldOwn are caller's hub tasks on this replica, for tasks/list.
func (t *Routes) heldOwn(ctx context.Context, caller callers.Caller, session string) []json.RawMessage {
	var out []json.RawMessage
	for _, ht := range t.held.of(string(caller.AppendKey(nil))) {
		if res, err := t.heldRequest(ctx, caller, session, string(mcp.MethodTasksGet), ht.handle); err == nil {
			out = append(out, res)
		}
	}
	return out
}
