package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/guardrails"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/peers"
	"github.com/purko-io/mcp-hub/internal/pipeline"
	"github.com/purko-io/mcp-hub/internal/taskhandle"
)

// tasks/list lists only the caller's own tasks, and no replica has them
// all: an upstream lists the tasks of one of its sessions, every caller's
// together, and each replica has its own session. So the replica that
// made a task keeps it in a small index of its own (by caller, until the
// task's ttl ends), and a tasks/list asks every peer for its part
// (peers.ForwardAll) and merges them. The index is this process's only: a
// replica that restarts has lost its upstream session, and its tasks with
// it.

const (
	// maxListedPerCaller bounds the tasks kept per caller (the oldest go
	// first), each listed with one tasks/get of its upstream.
	maxListedPerCaller = 64
	// maxListedCallers bounds the callers kept (the index is emptied of
	// expired tasks first).
	maxListedCallers = 4096
	// defaultTaskTTL keeps a task whose upstream named no ttl.
	defaultTaskTTL = time.Hour
)

// taskIndex is the tasks this replica made, by caller key.
type taskIndex struct {
	mu sync.Mutex
	by map[string][]listedTask
}

type listedTask struct {
	task taskhandle.Task
	// who made it: its status notices pass its content filters.
	who     callers.Caller
	session string // the session that made it, "" for none
	expires time.Time
}

// add keeps task of caller (who, by its key), made in session, until ttl
// (milliseconds; 0: defaultTaskTTL).
func (x *taskIndex) add(caller string, who callers.Caller, session string, task taskhandle.Task, ttl int64, now time.Time) {
	d := defaultTaskTTL
	if ttl > 0 {
		d = time.Duration(ttl) * time.Millisecond
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.by == nil {
		x.by = map[string][]listedTask{}
	}
	if _, ok := x.by[caller]; !ok && len(x.by) >= maxListedCallers {
		x.sweep(now)
		if len(x.by) >= maxListedCallers {
			return // listed by no one; it still runs, and its handle works
		}
	}
	l := append(x.by[caller], listedTask{task, who, session, now.Add(d)})
	if len(l) > maxListedPerCaller {
		l = slices.Delete(l, 0, len(l)-maxListedPerCaller)
	}
	x.by[caller] = l
}

// of returns caller's tasks that have not expired.
func (x *taskIndex) of(caller string, now time.Time) []taskhandle.Task {
	x.mu.Lock()
	defer x.mu.Unlock()
	l := slices.DeleteFunc(x.by[caller], func(t listedTask) bool { return now.After(t.expires) })
	if len(l) == 0 {
		delete(x.by, caller)
		return nil
	}
	x.by[caller] = l
	out := make([]taskhandle.Task, len(l))
	for i, t := range l {
		out[i] = t.task
	}
	return out
}

// owner finds the caller key and the entry of the upstream's task id of
// server, among the tasks that have not expired. It looks through every
// caller's: a status notice is rare next to the calls, and the index is
// bounded.
func (x *taskIndex) owner(server, id string, now time.Time) (caller string, t listedTask, ok bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for k, l := range x.by {
		for _, t := range l {
			if t.task.Server == server && t.task.ID == id && !now.After(t.expires) {
				return k, t, true
			}
		}
	}
	return "", listedTask{}, false
}

// drop forgets a task its upstream no longer knows.
func (x *taskIndex) drop(caller string, task taskhandle.Task) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.by[caller] = slices.DeleteFunc(x.by[caller], func(t listedTask) bool { return t.task == task })
}

// sweep drops expired tasks and callers left with none; x.mu is held.
func (x *taskIndex) sweep(now time.Time) {
	for k, l := range x.by {
		if l = slices.DeleteFunc(l, func(t listedTask) bool { return now.After(t.expires) }); len(l) == 0 {
			delete(x.by, k)
		} else {
			x.by[k] = l
		}
	}
}

// remember keeps the task a task-augmented call made (res, the upstream's
// CreateTaskResult, before its id is sealed) for tasks/list.
func (t *Routes) remember(caller callers.Caller, session string, task taskhandle.Task, res json.RawMessage) {
	var created struct {
		Task struct {
			TaskID string `json:"taskId"`
			TTL    *int64 `json:"ttl"`
		} `json:"task"`
	}
	if json.Unmarshal(res, &created) != nil || created.Task.TaskID == "" {
		return
	}
	task.ID = created.Task.TaskID
	var ttl int64
	if created.Task.TTL != nil {
		ttl = *created.Task.TTL
	}
	t.list.add(string(caller.AppendKey(nil)), caller, session, task, ttl, time.Now())
}

// Status passes an upstream's notifications/tasks/status (params as server
// sent them) on to the session that made the task, with the task's handle:
// on this replica, which made it and holds the upstream session that sends
// the notice. A session whose GET stream another replica holds does not
// get it (a caller that polls with tasks/get misses nothing). It is the
// registry's hook (registry.OnTaskStatus). The notice's text (a
// statusMessage) passes the maker's content filters like its task's
// result; one a blocking filter withholds is not sent (tasks/get, screened
// too, still tells the status).
func (t *Routes) Status(server string, params map[string]any) {
	id, _ := params["taskId"].(string)
	caller, made, ok := t.list.owner(server, id, time.Now())
	if !ok || made.session == "" {
		return
	}
	out := maps.Clone(params)
	out["taskId"] = t.codec.Seal([]byte(caller), made.task)
	method := string(mcp.MethodNotificationTasksStatus)
	if pipeline.Filters(made.who) {
		raw, err := json.Marshal(out)
		if err != nil {
			return
		}
		ctx := context.Background() // the notice belongs to no request of the caller's
		screened, denial := t.pipe.Screen(ctx, made.who, made.session, method, server, guardrails.Result, raw)
		out = nil
		if denial != "" || json.Unmarshal(screened, &out) != nil {
			t.log.Warn().Str("server", server).Str("caller", made.who.Name).Msg("notifications/tasks/status withheld by a content filter")
			return
		}
	}
	if err := t.mcp.SendNotificationToSpecificClient(made.session, method, out); err != nil {
		t.log.Debug().Err(err).Str("server", server).Msg("deliver notifications/tasks/status")
	}
}

// listTasks answers tasks/list: this replica's part (each task as its
// upstream's tasks/get tells it now), and unless a peer asked, every
// peer's part too.
func (t *Routes) listTasks(r *http.Request, body []byte) json.RawMessage {
	caller := callers.From(r.Context())
	seen := map[string]bool{}
	var list []json.RawMessage
	add := func(tasks []json.RawMessage) {
		for _, t := range tasks {
			var id struct {
				TaskID string `json:"taskId"`
			}
			if json.Unmarshal(t, &id) == nil && id.TaskID != "" && !seen[id.TaskID] {
				seen[id.TaskID] = true
				list = append(list, t)
			}
		}
	}
	add(t.ownTasks(r.Context(), caller))
	add(t.heldOwn(r.Context(), caller, r.Header.Get("Mcp-Session-Id")))
	if !peers.PassedOn(r) {
		for _, b := range t.peers.ForwardAll(r, body) {
			var reply struct {
				Result struct {
					Tasks []json.RawMessage `json:"tasks"`
				} `json:"result"`
			}
			if json.Unmarshal(b, &reply) == nil {
				add(reply.Result.Tasks)
			}
		}
	}
	if list == nil {
		list = []json.RawMessage{}
	}
	return mustMarshal(map[string]any{"tasks": list})
}

// ownTasks are caller's tasks made on this replica, as their upstreams
// tell them now; one an upstream no longer knows is forgotten.
func (t *Routes) ownTasks(ctx context.Context, caller callers.Caller) []json.RawMessage {
	key := string(caller.AppendKey(nil))
	var out []json.RawMessage
	for _, task := range t.list.of(key, time.Now()) {
		params, _ := json.Marshal(map[string]string{"taskId": task.ID})
		res, err := t.forwardTask(ctx, task, "tasks/get", params)
		if err != nil {
			var rpcErr *jsonrpc.Error
			if errors.As(err, &rpcErr) && rpcErr.Code == jsonrpc.CodeInvalidParams {
				t.list.drop(key, task) // the upstream's "task not found"
			}
			continue
		}
		if isExtension(res) {
			res = nestedTask(res, false) // a 2026-07-28 server's (extension.go)
		}
		out = append(out, t.sealTask(caller, task, res))
	}
	return out
}
