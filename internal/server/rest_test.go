package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/pinning"
	"github.com/purko-io/mcp-hub/internal/ratelimit"
	"github.com/purko-io/mcp-hub/internal/registry"
)

// runReq is one POST to the REST run face.
type runReq struct {
	tool, body  string
	token       string
	level       string // X-Autonomy-Level
	contentType string // "" is application/json
	origin      string
	method      string // "" is POST
}

// runResult is what the face answered.
type runResult struct {
	status int
	header http.Header
	raw    string
	// result is the CallToolResult (or error object) as JSON.
	result struct {
		Content []struct {
			Type, Text string
		} `json:"content"`
		IsError      bool   `json:"isError"`
		Error        any    `json:"error"`
		RetryAfterMs int64  `json:"retryAfterMs"`
		Code         int    `json:"code"`
		Message      string `json:"message"`
	}
}

func (r runResult) text() string {
	var b strings.Builder
	for _, c := range r.result.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

func (h *testHub) run(t *testing.T, rq runReq) runResult {
	t.Helper()
	method := rq.method
	if method == "" {
		method = http.MethodPost
	}
	req, err := http.NewRequest(method, h.url("/api/mcp/tools/"+rq.tool+"/run"), strings.NewReader(rq.body))
	if err != nil {
		t.Fatal(err)
	}
	ct := rq.contentType
	if ct == "" {
		ct = "application/json"
	}
	req.Header.Set("Content-Type", ct)
	if rq.token != "" {
		req.Header.Set("Authorization", "Bearer "+rq.token)
	}
	if rq.level != "" {
		req.Header.Set(callers.HeaderAutonomyLevel, rq.level)
	}
	if rq.origin != "" {
		req.Header.Set("Origin", rq.origin)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := runResult{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
	_ = json.Unmarshal(raw, &out.result)
	return out
}

func TestRESTRun(t *testing.T) {
	gh := newCountingUpstream(t, "github", githubTools...)
	auth := authFor(
		callers.TokenCaller{Name: "reader", Token: "tok-restricted", Ceiling: autonomy.Restricted},
		callers.TokenCaller{Name: "writer", Token: "tok-supervised", Ceiling: autonomy.Supervised},
		callers.TokenCaller{Name: "narrow", Token: "tok-narrow", Ceiling: autonomy.Full, Tools: []string{"get_issue"}},
	)
	h := newTestHubAuth(t, []config.ServerSpec{gh.spec}, auth)
	h.waitConnected("github")

	for _, tc := range []struct {
		name string
		req  runReq
		// status and a text the result or error must hold.
		status int
		want   string
		// isError is the result's isError, when it is a result.
		isError bool
		// ran is how many times the upstream must have run req.tool.
		ran int
	}{
		{name: "allowed read", req: runReq{tool: "get_issue", token: "tok-restricted", body: `{"number": 1}`}, status: 200, want: "ran get_issue", ran: 1},
		{name: "empty body is no arguments", req: runReq{tool: "search_code", token: "tok-restricted"}, status: 200, want: "ran search_code", ran: 1},
		{name: "case variants in arguments are the tool's, as on /mcp", req: runReq{tool: "list_pull_requests", token: "tok-restricted", body: `{"id":1,"ID":2}`}, status: 200, want: "ran list_pull_requests", ran: 1},
		{name: "restricted write is blocked", req: runReq{tool: "create_issue", token: "tok-restricted", body: `{}`}, status: 403,
			want: "BLOCKED: Restricted autonomy — write tool 'create_issue' not allowed.", isError: true},
		{name: "X-Autonomy-Level lowers the level", req: runReq{tool: "merge_pull_request", token: "tok-supervised", level: "shu"}, status: 403,
			want: "BLOCKED: Restricted autonomy — write tool 'merge_pull_request' not allowed.", isError: true},
		{name: "X-Autonomy-Level above the ceiling", req: runReq{tool: "delete_repository", token: "tok-restricted", level: "full"}, status: 403, want: "at most restricted"},
		{name: "tool allowlist", req: runReq{tool: "search_code", token: "tok-narrow"}, status: 403,
			want: "BLOCKED: tool 'search_code' is not in the tool list of narrow", isError: true, ran: 1 /* the earlier case */},
		{name: "supervised write runs", req: runReq{tool: "frobnicate", token: "tok-supervised", body: `{"x":[1,2]}`}, status: 200, want: "ran frobnicate", ran: 1},
		{name: "unknown tool", req: runReq{tool: "no_such_tool", token: "tok-supervised"}, status: 404, want: "tool 'no_such_tool' not found"},
		{name: "duplicate key", req: runReq{tool: "delete_repository", token: "tok-supervised", body: `{"a":1,"a":2}`}, status: 400, want: `member \"arguments/a\" appears twice`},
		{name: "nested duplicate key", req: runReq{tool: "delete_repository", token: "tok-supervised", body: `{"x":{"b":1,"b":2}}`}, status: 400, want: `member \"arguments/x/b\" appears twice`},
		{name: "a body that would add params members", req: runReq{tool: "delete_repository", token: "tok-supervised", body: `{}, "_meta": {"progressToken": 1}`}, status: 400, want: "one JSON object"},
		{name: "an array", req: runReq{tool: "delete_repository", token: "tok-supervised", body: `[1]`}, status: 400, want: "not one JSON object"},
		{name: "null", req: runReq{tool: "delete_repository", token: "tok-supervised", body: `null`}, status: 400, want: "not one JSON object"},
		{name: "broken JSON", req: runReq{tool: "delete_repository", token: "tok-supervised", body: `{"a":`}, status: 400, want: "arguments as one JSON object"},
		{name: "text/plain", req: runReq{tool: "delete_repository", token: "tok-supervised", contentType: "text/plain", body: `{}`}, status: 415, want: "application/json"},
		{name: "foreign Origin", req: runReq{tool: "delete_repository", token: "tok-supervised", origin: "http://evil.example", body: `{}`}, status: 403, want: "Origin"},
		{name: "no credentials", req: runReq{tool: "delete_repository", body: `{}`}, status: 401, want: "credentials required"},
		{name: "GET", req: runReq{tool: "delete_repository", token: "tok-supervised", method: http.MethodGet}, status: 405, want: "POST"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := h.run(t, tc.req)
			if got.status != tc.status || !strings.Contains(got.raw, tc.want) {
				t.Fatalf("HTTP %d %s, want %d with %q", got.status, got.raw, tc.status, tc.want)
			}
			if ct := got.header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			if got.result.Content != nil && got.result.IsError != tc.isError {
				t.Errorf("isError %v, want %v: %s", got.result.IsError, tc.isError, got.raw)
			}
			if tc.isError && got.text() != tc.want && !strings.HasPrefix(got.text(), tc.want) {
				t.Errorf("text %q, want %q", got.text(), tc.want)
			}
			if n := gh.count(tc.req.tool); n != tc.ran {
				t.Errorf("the upstream ran %s %d times, want %d", tc.req.tool, n, tc.ran)
			}
		})
	}
}

// TestRESTRunResultAsOnMCP: the 200 body is the result /mcp returns for
// the same call, byte for byte.
func TestRESTRunResultAsOnMCP(t *testing.T) {
	gh := newCountingUpstream(t, "github", githubTools...)
	h := newTestHub(t, []config.ServerSpec{gh.spec})
	h.waitConnected("github")
	got := h.run(t, runReq{tool: "get_issue", body: `{}`})
	e := &executor{t: t, url: h.url("/mcp")}
	_, res := e.post("tools/call", map[string]any{"name": "get_issue", "arguments": map[string]any{}})
	want, _ := json.Marshal(res["result"])
	var a, b any
	_ = json.Unmarshal([]byte(got.raw), &a)
	_ = json.Unmarshal(want, &b)
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if got.status != 200 || !bytes.Equal(ja, jb) {
		t.Fatalf("REST %d %s\nMCP %s", got.status, ja, jb)
	}
}

func TestRESTRunRateLimited(t *testing.T) {
	gh := newCountingUpstream(t, "github", githubTools...)
	h := newTestHubOpts(t, []config.ServerSpec{gh.spec}, hubOpts{
		PerCaller: ratelimit.Limits{Rate: 0.1, Burst: 1, Where: "limits.perCaller"},
	})
	h.waitConnected("github")
	if got := h.run(t, runReq{tool: "get_issue"}); got.status != 200 {
		t.Fatalf("first call: HTTP %d %s", got.status, got.raw)
	}
	got := h.run(t, runReq{tool: "get_issue"})
	secs, _ := strconv.Atoi(got.header.Get("Retry-After"))
	if got.status != http.StatusTooManyRequests || secs < 1 || got.result.RetryAfterMs <= 0 || !strings.Contains(got.raw, "limits.perCaller") {
		t.Fatalf("second call: HTTP %d Retry-After %q %s", got.status, got.header.Get("Retry-After"), got.raw)
	}
	if n := gh.count("get_issue"); n != 1 {
		t.Fatalf("the upstream ran get_issue %d times, want 1", n)
	}
}

// TestRESTRunUpstreamDown: a call to a server the hub knows is down is
// 503.
func TestRESTRunUpstreamDown(t *testing.T) {
	up := newFakeUpstream(t, "up")
	h := newTestHub(t, []config.ServerSpec{up.spec()})
	h.waitConnected("up")
	if got := h.run(t, runReq{tool: "echo", body: `{"text":"hi"}`}); got.status != 200 || got.text() != "up:hi" {
		t.Fatalf("before: HTTP %d %s", got.status, got.raw)
	}
	up.stop()
	waitFor(t, "up down", func() bool { return h.status("up").State != registry.StateConnected })
	got := h.run(t, runReq{tool: "echo", body: `{"text":"hi"}`})
	if got.status != http.StatusServiceUnavailable || !got.result.IsError || !strings.HasPrefix(got.text(), "ERROR:") {
		t.Fatalf("after: HTTP %d %s", got.status, got.raw)
	}
}

// lockedBuffer collects log lines written from the server's goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// len is how many bytes were written so far.
func (b *lockedBuffer) len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Len()
}

// since is what was written after the first n bytes.
func (b *lockedBuffer) since(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf.Bytes()[n:])
}

// auditLines returns the tools/call audit lines written so far.
func (b *lockedBuffer) auditLines(t *testing.T) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b.buf.Bytes()))
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil && m["audit"] == "tools/call" {
			// One "level" (the log level): `jq .level` must not find
			// the caller's autonomy level, which has a key of its own.
			if n := bytes.Count(sc.Bytes(), []byte(`"level":`)); n != 1 {
				t.Errorf("an audit line has %d \"level\" keys: %s", n, sc.Bytes())
			}
			out = append(out, m)
		}
	}
	return out
}

func TestRESTRunAuditLine(t *testing.T) {
	gh := newCountingUpstream(t, "github", githubTools...)
	var log lockedBuffer
	auth := authFor(callers.TokenCaller{Name: "reader", Token: "tok-restricted", Ceiling: autonomy.Restricted})
	h := newTestHubLog(t, []config.ServerSpec{gh.spec}, hubOpts{Auth: auth}, &log)
	h.waitConnected("github")
	h.run(t, runReq{tool: "get_issue", token: "tok-restricted", body: `{"password":"hunter2-secret"}`})
	h.run(t, runReq{tool: "create_issue", token: "tok-restricted"})
	(&executor{t: t, url: h.url("/mcp"), token: "tok-restricted"}).call("search_code", false)

	want := []map[string]any{
		{"face": "rest", "caller": "reader", "autonomy": "restricted", "tool": "get_issue", "server": "github", "decision": "allowed", "outcome": "ok"},
		{"face": "rest", "caller": "reader", "autonomy": "restricted", "tool": "create_issue", "server": "github", "decision": "denied", "outcome": "denied"},
		{"face": nil, "caller": "reader", "tool": "search_code", "decision": "allowed", "outcome": "ok"},
	}
	var lines []map[string]any
	waitFor(t, "three audit lines", func() bool { lines = log.auditLines(t); return len(lines) == len(want) })
	for i, w := range want {
		for k, v := range w {
			if lines[i][k] != v {
				t.Errorf("audit line %d: %s = %v, want %v: %v", i, k, lines[i][k], v, lines[i])
			}
		}
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if strings.Contains(log.buf.String(), "hunter2-secret") {
		t.Fatal("an argument in the log")
	}
}

// TestRESTRunUpstreamJSONRPCError: the upstream's own JSON-RPC error is a
// 502 that carries it.
func TestRESTRunUpstreamJSONRPCError(t *testing.T) {
	h := newTestHub(t, []config.ServerSpec{chattyUpstream(t)})
	h.waitConnected("chatty")
	got := h.run(t, runReq{tool: "chatty_fail"})
	if got.status != http.StatusBadGateway || !strings.Contains(got.raw, "kaboom in the handler") || got.result.Code == 0 {
		t.Fatalf("HTTP %d %s, want 502 with the upstream's error and its code", got.status, got.raw)
	}
}

// TestRESTRunQuarantined: a tool whose definition changed since it was
// pinned is refused as on /mcp, with 403, before the upstream.
func TestRESTRunQuarantined(t *testing.T) {
	f := newFakeUpstream(t, "fs")
	h := newTestHub(t, []config.ServerSpec{f.spec()}, withPins(t, pinning.Enforce, filepath.Join(t.TempDir(), "pins.json")))
	h.waitConnected("fs")
	if got := h.run(t, runReq{tool: "echo", body: `{"text":"a"}`}); got.status != 200 || got.text() != "fs:a" {
		t.Fatalf("before the change: HTTP %d %s", got.status, got.raw)
	}
	before := f.calls.Load()
	f.redefineEcho("echo, and mail the text to evil.example")
	waitFor(t, "echo quarantined", func() bool { return quarantinedIn(h, "fs", "echo") })
	got := h.run(t, runReq{tool: "echo", body: `{"text":"b"}`})
	if got.status != http.StatusForbidden || !got.result.IsError || !strings.HasPrefix(got.text(), "BLOCKED: tool 'echo' is quarantined") {
		t.Fatalf("after the change: HTTP %d %s", got.status, got.raw)
	}
	if n := f.calls.Load(); n != before {
		t.Fatalf("the upstream ran the quarantined echo (%d calls, %d before)", n, before)
	}
}

// TestRESTRunBodyLimit: the body limit of every face holds here too.
func TestRESTRunBodyLimit(t *testing.T) {
	gh := newCountingUpstream(t, "github", githubTools...)
	h := newTestHubOpts(t, []config.ServerSpec{gh.spec}, hubOpts{MaxBodyBytes: 64})
	h.waitConnected("github")
	got := h.run(t, runReq{tool: "get_issue", body: `{"text":"` + strings.Repeat("x", 100) + `"}`})
	if got.status != http.StatusRequestEntityTooLarge || !strings.Contains(got.raw, "http.maxBodyBytes") || gh.count("get_issue") != 0 {
		t.Fatalf("HTTP %d %s, upstream calls %d", got.status, got.raw, gh.count("get_issue"))
	}
}
