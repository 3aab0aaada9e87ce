package tasks

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/taskhandle"
)

// TestSealTask: wherever a result names the upstream's task, the caller
// reads the handle instead; a result that names another task, or none,
// passes unchanged.
func TestSealTask(t *testing.T) {
	s := &Routes{codec: taskhandle.New([]byte("k"))}
	caller := callers.Caller{Name: "alice", Level: autonomy.Full}
	task := taskhandle.Task{Replica: "r", Server: "ev", Tool: "research", ID: "up-1"}
	h := s.codec.Seal(caller.AppendKey(nil), task)
	for _, tc := range []struct {
		name, res string
		task      taskhandle.Task
		want      string // "" for unchanged
	}{
		{"created task, id from the result", `{"task":{"taskId":"up-1","status":"working"}}`, taskhandle.Task{Replica: "r", Server: "ev", Tool: "research"},
			`{"task":{"status":"working","taskId":"` + h + `"}}`},
		{"tasks/get", `{"taskId":"up-1","status":"completed"}`, task, `{"status":"completed","taskId":"` + h + `"}`},
		{"related-task of a result", `{"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"up-1"}},"content":[]}`, task,
			`{"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"` + h + `"}},"content":[]}`},
		{"another task's id", `{"taskId":"up-2","status":"completed"}`, task, ""},
		{"a plain result", `{"content":[{"type":"text","text":"taskId"}]}`, task, ""},
		{"not an object", `[1]`, task, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := string(s.sealTask(caller, tc.task, json.RawMessage(tc.res)))
			want := tc.want
			if want == "" {
				want = tc.res
			}
			if got != want {
				t.Fatalf("sealTask(%s) =\n%s\nwant\n%s", tc.res, got, want)
			}
		})
	}
}

// TestTaskIndex: each caller lists its own tasks, until their ttl, at
// most maxListedPerCaller of them.
func TestTaskIndex(t *testing.T) {
	var x taskIndex
	now := time.Now()
	task := func(id string) taskhandle.Task { return taskhandle.Task{Server: "ev", ID: id} }
	x.add("alice", "s1", task("a1"), 1000, now)
	x.add("alice", "", task("a2"), 0, now) // no ttl: defaultTaskTTL
	x.add("bob", "s2", task("b1"), 1000, now)
	if c, sid, _, ok := x.owner("ev", "b1", now); !ok || c != "bob" || sid != "s2" {
		t.Fatalf("owner of b1: %q %q %v", c, sid, ok)
	}
	if got := x.of("alice", now); len(got) != 2 || got[0].ID != "a1" || got[1].ID != "a2" {
		t.Fatalf("alice's tasks: %v", got)
	}
	if got := x.of("alice", now.Add(2*time.Second)); len(got) != 1 || got[0].ID != "a2" {
		t.Fatalf("alice's tasks after a1's ttl: %v", got)
	}
	x.drop("bob", task("b1"))
	if got := x.of("bob", now); len(got) != 0 {
		t.Fatalf("bob's tasks after drop: %v", got)
	}
	for i := range maxListedPerCaller + 5 {
		x.add("carol", "", task(strings.Repeat("c", i+1)), 0, now)
	}
	if got := x.of("carol", now); len(got) != maxListedPerCaller || got[0].ID != strings.Repeat("c", 6) {
		t.Fatalf("carol has %d tasks, the first %q; want the newest %d", len(got), got[0].ID, maxListedPerCaller)
	}
}
