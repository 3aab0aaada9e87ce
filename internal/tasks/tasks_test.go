package tasks

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/callfeed"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/pipeline"
	"github.com/purko-io/mcp-hub/internal/taskhandle"
	"github.com/purko-io/mcp-hub/internal/toolspec"
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
	x.add("alice", callers.Caller{Name: "alice"}, "s1", task("a1"), 1000, now)
	x.add("alice", callers.Caller{Name: "alice"}, "", task("a2"), 0, now) // no ttl: defaultTaskTTL
	x.add("bob", callers.Caller{Name: "bob"}, "s2", task("b1"), 1000, now)
	if c, made, ok := x.owner("ev", "b1", now); !ok || c != "bob" || made.session != "s2" || made.who.Name != "bob" {
		t.Fatalf("owner of b1: %q %+v %v", c, made, ok)
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
		x.add("carol", callers.Caller{Name: "carol"}, "", task(strings.Repeat("c", i+1)), 0, now)
	}
	if got := x.of("carol", now); len(got) != maxListedPerCaller || got[0].ID != strings.Repeat("c", 6) {
		t.Fatalf("carol has %d tasks, the first %q; want the newest %d", len(got), got[0].ID, maxListedPerCaller)
	}
}

// noticeSession is a session of the MCP server that keeps what it is sent.
type noticeSession struct {
	id    string
	notes chan mcp.JSONRPCNotification
}

func (s *noticeSession) SessionID() string                                   { return s.id }
func (s *noticeSession) NotificationChannel() chan<- mcp.JSONRPCNotification { return s.notes }
func (s *noticeSession) Initialize()                                         {}
func (s *noticeSession) Initialized() bool                                   { return true }

// TestStatusNoticePassesTheCallersFilters: an upstream's
// notifications/tasks/status reaches the session that made the task with
// the handle, its statusMessage redacted by the maker's content filters
// (issue 35, part 6); a blocking filter withholds it; a caller without
// filters reads it as sent.
func TestStatusNoticePassesTheCallersFilters(t *testing.T) {
	const msg = "mailing the report to olga@fabrikam.de"
	for _, tc := range []struct {
		name    string
		guard   *toolspec.Guardrails
		want    string // the statusMessage delivered; "" for none delivered
		handled bool
	}{
		{"no filters", nil, msg, true},
		{"redact", &toolspec.Guardrails{ContentFilters: []string{toolspec.FilterPII}}, "mailing the report to [redacted: email]", true},
		{"block", &toolspec.Guardrails{ContentFilters: []string{toolspec.FilterPII}, ContentFilterMode: toolspec.ModeBlock}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := server.NewMCPServer("hub", "test")
			sess := &noticeSession{id: "s1", notes: make(chan mcp.JSONRPCNotification, 4)}
			if err := srv.RegisterSession(context.Background(), sess); err != nil {
				t.Fatal(err)
			}
			r := New(Options{
				Codec:    taskhandle.New([]byte("k")),
				Pipeline: pipeline.New(pipeline.Options{Feed: callfeed.New(100), Log: zerolog.Nop()}),
				MCP:      srv,
				Log:      zerolog.Nop(),
			})
			caller := callers.Caller{Name: "alice", Level: autonomy.Full, Guardrails: tc.guard}
			task := taskhandle.Task{Server: "ev", Tool: "research", ID: "up-1"}
			r.list.add(string(caller.AppendKey(nil)), caller, "s1", task, 0, time.Now())
			r.Status("ev", map[string]any{"taskId": "up-1", "status": "working", "statusMessage": msg})
			select {
			case n := <-sess.notes:
				if !tc.handled {
					t.Fatalf("a blocked notice was sent: %v", n.Params.AdditionalFields)
				}
				got := n.Params.AdditionalFields
				if got["statusMessage"] != tc.want || got["taskId"] != r.codec.Seal(caller.AppendKey(nil), task) {
					t.Fatalf("notice %v, want statusMessage %q and the handle", got, tc.want)
				}
			default:
				if tc.handled {
					t.Fatal("no notice sent")
				}
			}
		})
	}
}

// TestFlatTask: a 2025-11-25 task in the Tasks extension's shape.
func TestFlatTask(t *testing.T) {
	for _, tc := range []struct {
		name, res, resultType string
		more                  map[string]json.RawMessage
		want                  string
	}{
		{"created", `{"task":{"taskId":"h","status":"working","ttl":60000,"pollInterval":500},"_meta":{"k":1}}`, "task", nil,
			`{"_meta":{"k":1},"pollIntervalMs":500,"resultType":"task","status":"working","taskId":"h","ttlMs":60000}`},
		{"unlimited ttl", `{"taskId":"h","status":"working","ttl":null}`, "complete", nil,
			`{"resultType":"complete","status":"working","taskId":"h","ttlMs":null}`},
		{"no ttl at all", `{"taskId":"h","status":"working"}`, "complete", nil,
			`{"resultType":"complete","status":"working","taskId":"h","ttlMs":null}`},
		{"completed, result inlined", `{"taskId":"h","status":"completed","ttl":1}`, "complete",
			map[string]json.RawMessage{"result": json.RawMessage(`{"content":[]}`)},
			`{"result":{"content":[]},"resultType":"complete","status":"completed","taskId":"h","ttlMs":1}`},
		{"not an object", `[1]`, "task", nil, `[1]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(flatTask(json.RawMessage(tc.res), tc.resultType, tc.more)); got != tc.want {
				t.Fatalf("flatTask(%s) =\n%s\nwant\n%s", tc.res, got, tc.want)
			}
		})
	}
}

// TestExtensionOf: which requests are of 2026-07-28, and which of those
// declare the Tasks extension.
func TestExtensionOf(t *testing.T) {
	for _, tc := range []struct {
		name, meta       string
		modern, declared bool
	}{
		{"no meta", `{}`, false, false},
		{"2025-11-25", `{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}`, false, false},
		{"2026-07-28 without", `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`, true, false},
		{"2026-07-28 with", `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`, true, true},
		{"named elsewhere only", `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"experimental":{"io.modelcontextprotocol/tasks":{}}}}`, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var meta map[string]json.RawMessage
			if err := json.Unmarshal([]byte(tc.meta), &meta); err != nil {
				t.Fatal(err)
			}
			if modern, declared := extensionOf(meta); modern != tc.modern || declared != tc.declared {
				t.Fatalf("extensionOf(%s) = %v, %v; want %v, %v", tc.meta, modern, declared, tc.modern, tc.declared)
			}
		})
	}
}

// TestExtensionRequest: a 2026-07-28 caller's tasks/* request answered
// from what the task's holder says in its own revision's shape.
func TestExtensionRequest(t *testing.T) {
	type answer struct {
		res string
		err error
	}
	for _, tc := range []struct {
		name, method, params string
		holder               map[string]answer // by method
		want, wantErr        string
	}{
		{"working", "tasks/get", `{"taskId":"h"}`, map[string]answer{"tasks/get": {res: `{"taskId":"h","status":"working","ttl":5}`}},
			`{"resultType":"complete","status":"working","taskId":"h","ttlMs":5}`, ""},
		{"input only a session takes", "tasks/get", `{"taskId":"h"}`, map[string]answer{"tasks/get": {res: `{"taskId":"h","status":"input_required","ttl":5}`}},
			`{"resultType":"complete","status":"working","statusMessage":"the server waits for input it takes only on a 2025-11-25 session, which the hub cannot pass on","taskId":"h","ttlMs":5}`, ""},
		{"completed", "tasks/get", `{"taskId":"h"}`, map[string]answer{"tasks/get": {res: `{"taskId":"h","status":"completed","ttl":5}`},
			"tasks/result": {res: `{"content":[]}`}},
			`{"result":{"content":[]},"resultType":"complete","status":"completed","taskId":"h","ttlMs":5}`, ""},
		{"failed", "tasks/get", `{"taskId":"h"}`, map[string]answer{"tasks/get": {res: `{"taskId":"h","status":"failed","ttl":5}`},
			"tasks/result": {err: &jsonrpc.Error{Code: -32000, Message: "boom"}}},
			`{"error":{"code":-32000,"message":"boom"},"resultType":"complete","status":"failed","taskId":"h","ttlMs":5}`, ""},
		{"cancel", "tasks/cancel", `{"taskId":"h"}`, map[string]answer{"tasks/cancel": {res: `{"taskId":"h","status":"cancelled"}`}},
			`{"resultType":"complete"}`, ""},
		{"update of a 2025-11-25 task", "tasks/update", `{"taskId":"h","inputResponses":{"a":{}}}`,
			map[string]answer{"tasks/update": {err: &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "no"}}}, "", "takes no input through the hub"},
		{"update without responses", "tasks/update", `{"taskId":"h"}`, nil, "", "needs inputResponses"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := &jsonrpc.Message{Method: tc.method, Params: json.RawMessage(tc.params)}
			got, err := new(Routes).extensionRequest(context.Background(), msg, func(_ context.Context, method string, _ map[string]json.RawMessage) (json.RawMessage, error) {
				a, ok := tc.holder[method]
				if !ok {
					t.Fatalf("asked the holder %s", method)
				}
				return json.RawMessage(a.res), a.err
			})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("= %s, %v; want an error with %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("=\n%s %v\nwant\n%s", got, err, tc.want)
			}
		})
	}
}
