// Package approvals tests human approval of write calls end to end: the
// hub binary between MCP clients and an upstream that counts what reaches
// it, the approvers on the hub's REST API, one replica and two.
package approvals

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/purko-io/mcp-hub/internal/hubtest"
)

// upstream is an MCP server (mcp-go, Streamable HTTP, in this process)
// that counts every call that reaches it, by tool and arguments.
type upstream struct {
	URL   string
	mu    sync.Mutex
	calls map[string]int // "tool {args}" -> count
}

func startUpstream(t *testing.T) *upstream {
	t.Helper()
	u := &upstream{calls: map[string]int{}}
	s := server.NewMCPServer("forge", "1")
	run := func(_ context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args, _ := json.Marshal(r.Params.Arguments)
		u.mu.Lock()
		u.calls[r.Params.Name+" "+string(args)]++
		u.mu.Unlock()
		return mcp.NewToolResultText("ran " + r.Params.Name + " " + string(args)), nil
	}
	s.AddTool(mcp.NewTool("merge_pull_request", mcp.WithNumber("pr")), run)
	s.AddTool(mcp.NewTool("get_pull_request", mcp.WithNumber("pr"), mcp.WithReadOnlyHintAnnotation(true)), run)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: server.NewStreamableHTTPServer(s), ReadHeaderTimeout: 5 * time.Second}
	var wg sync.WaitGroup
	wg.Go(func() { _ = hs.Serve(ln) })
	t.Cleanup(func() { _ = hs.Close(); wg.Wait() })
	u.URL = "http://" + ln.Addr().String() + "/mcp"
	return u
}

// seen is how many calls of tool with args reached the upstream.
func (u *upstream) seen(tool, args string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.calls[tool+" "+args]
}

// hubConfig: bot is a supervised agent whose write calls need a person;
// ide a supervised IDE user asked in its own client; ops the admin who
// approves; peers, when set, the replicas; hook, when set, the webhook.
func hubConfig(up, peers, hook string) string {
	cfg := fmt.Sprintf(`builtins: {staticAnalysis: {enabled: false}, triggerWorkflow: {enabled: false}}
servers:
  - name: forge
    url: %s
    transport: streamable-http
    toolPolicy: {readOnly: [get_pull_request]}
auth:
  tokens:
    - {name: bot, token: {env: TOKEN_BOT}, maxLevel: supervised, guardrails: {humanApprovalRequired: true}}
    - {name: ide, token: {env: TOKEN_IDE}, maxLevel: supervised, guardrails: {humanApprovalRequired: true, approvalMode: elicit}}
    - {name: ops, token: {env: TOKEN_OPS}, maxLevel: full, admin: true}
approvals:
  timeout: 2m
`, up)
	if hook != "" {
		cfg += fmt.Sprintf("  webhook: {url: %q, token: {env: TOKEN_HOOK}, consoleURL: \"https://hub.example.com\"}\n", hook)
	}
	if peers != "" {
		cfg += fmt.Sprintf("replicas: {peers: %q}\n", peers)
	}
	return cfg
}

var tokenEnv = []string{"TOKEN_BOT=bot-token-0123456789", "TOKEN_IDE=ide-token-0123456789", "TOKEN_OPS=ops-token-0123456789", "TOKEN_HOOK=hook-token-0123456789"}

const (
	botToken = "bot-token-0123456789"
	ideToken = "ide-token-0123456789"
	opsToken = "ops-token-0123456789"
)

// caller is an MCP session of token at url, with the progress
// notifications it hears; elicit, when not nil, answers elicitation.
type caller struct {
	c        *client.Client
	mu       sync.Mutex
	progress []string // their messages
}

type elicitFunc func(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error)

func (f elicitFunc) Elicit(ctx context.Context, r mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return f(ctx, r)
}

func dial(t *testing.T, url, token string, elicit elicitFunc) *caller {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	return start(t, tr, "2025-06-18", elicit)
}

// dialSSE is dial over the legacy HTTP+SSE face (base+"/sse").
func dialSSE(t *testing.T, base, token string) *caller {
	t.Helper()
	tr, err := transport.NewSSE(base+"/sse", transport.WithHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	return start(t, tr, "2024-11-05", nil)
}

func start(t *testing.T, tr transport.Interface, protocol string, elicit elicitFunc) *caller {
	t.Helper()
	opts := []client.ClientOption{client.WithProtocolVersion(protocol)}
	if elicit != nil {
		opts = append(opts, client.WithElicitationHandler(elicit))
	}
	cl := &caller{c: client.NewClient(tr, opts...)}
	cl.c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/progress" {
			cl.mu.Lock()
			cl.progress = append(cl.progress, fmt.Sprint(n.Params.AdditionalFields["message"]))
			cl.mu.Unlock()
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	t.Cleanup(func() { _ = cl.c.Close() })
	return cl
}

// call runs tool with args (a progress token on every call) in the
// background; the channel gets its result's text and isError, or the
// error.
func (cl *caller) call(tool string, pr int) <-chan string {
	out := make(chan string, 1)
	go func() {
		req := mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: map[string]any{"pr": pr},
			Meta: &mcp.Meta{ProgressToken: fmt.Sprintf("p-%s-%d", tool, pr)}}}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		res, err := cl.c.CallTool(ctx, req)
		if err != nil {
			out <- "error: " + err.Error()
			return
		}
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		out <- fmt.Sprintf("%s (isError %v)", b.String(), res.IsError)
	}()
	return out
}

func (cl *caller) progressMessages() []string {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return append([]string(nil), cl.progress...)
}

func wait(t *testing.T, c <-chan string) string {
	t.Helper()
	select {
	case s := <-c:
		return s
	case <-time.After(90 * time.Second):
		t.Fatal("the call did not end within 90s")
		return ""
	}
}

// pending is one held call as GET /api/mcp/approvals lists it.
type pending struct {
	ID              string          `json:"id"`
	Caller          string          `json:"caller"`
	Tool            string          `json:"tool"`
	Server          string          `json:"server"`
	Arguments       json.RawMessage `json:"arguments"`
	ArgumentsSHA256 string          `json:"argumentsSha256"`
}

func rest(t *testing.T, method, url, token, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// heldCall waits until base lists a held call of tool for token's caller
// and returns it.
func heldCall(t *testing.T, base, token, tool string, args string) pending {
	t.Helper()
	var found pending
	hubtest.Eventually(t, 30*time.Second, 50*time.Millisecond, "a held call of "+tool+" "+args, func() error {
		status, body := rest(t, http.MethodGet, base+"/api/mcp/approvals", token, "")
		var l struct{ Approvals []pending }
		if status != http.StatusOK || json.Unmarshal([]byte(body), &l) != nil {
			return fmt.Errorf("GET /api/mcp/approvals: %d %s", status, body)
		}
		for _, p := range l.Approvals {
			var compact bytes.Buffer
			_ = json.Compact(&compact, p.Arguments)
			if p.Tool == tool && compact.String() == args {
				found = p
				return nil
			}
		}
		return fmt.Errorf("%d held calls, none of %s %s", len(l.Approvals), tool, args)
	})
	return found
}

// TestHumanApproval is the check on one hub: a supervised token
// caller whose guardrails require approval calls a write tool; the
// upstream sees nothing while an admin finds it at /api/mcp/approvals; the
// caller cannot approve it; the admin approves and the call runs once. A
// second call with other arguments is held anew and, denied with a
// reason, reaches the caller as BLOCKED with that reason and never the
// upstream. A read tool is not held. An IDE user configured approvalMode:
// elicit approves in its own client. Audit lines and metrics tell it all.
func TestHumanApproval(t *testing.T) {
	up := startUpstream(t)
	hooks := make(chan string, 16)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		hooks <- r.Header.Get("Authorization") + " " + string(b)
	}))
	defer hook.Close()
	hub := hubtest.StartHub(t, hubtest.HubOptions{Bin: hubtest.HubBinary(t), Config: hubConfig(up.URL, "", hook.URL+"/hooks/approvals"), Env: tokenEnv,
		LogLevel: "info", Wait: hubtest.Connected})
	bot := dial(t, hub.MCPURL(), botToken, nil)

	// A read tool runs at once.
	if got := wait(t, bot.call("get_pull_request", 1)); !strings.Contains(got, "ran get_pull_request") || up.seen("get_pull_request", `{"pr":1}`) != 1 {
		t.Fatalf("read tool: %s", got)
	}

	first := bot.call("merge_pull_request", 7)
	held := heldCall(t, hub.Base, opsToken, "merge_pull_request", `{"pr":7}`)
	if held.Caller != "bot" || held.Server != "forge" {
		t.Fatalf("held %+v", held)
	}
	select {
	case got := <-hooks:
		if !strings.HasPrefix(got, "Bearer hook-token-0123456789 ") || !strings.Contains(got, `"type":"approval.requested"`) ||
			!strings.Contains(got, `"console":"https://hub.example.com/console/#approval=`+held.ID+`"`) {
			t.Errorf("the webhook got %s", got)
		}
	case <-time.After(10 * time.Second):
		t.Error("the webhook heard nothing of the held call")
	}
	if n := up.seen("merge_pull_request", `{"pr":7}`); n != 0 {
		t.Fatalf("the upstream saw the held call %d times before any approval", n)
	}
	// The caller sees its own held call, and cannot approve it.
	heldCall(t, hub.Base, botToken, "merge_pull_request", `{"pr":7}`)
	if status, body := rest(t, http.MethodPost, hub.Base+"/api/mcp/approvals/"+held.ID, botToken, `{"decision":"approve"}`); status != http.StatusForbidden {
		t.Fatalf("the caller approving its own call: %d %s", status, body)
	}
	if status, body := rest(t, http.MethodPost, hub.Base+"/api/mcp/approvals/"+held.ID, opsToken,
		`{"decision":"approve","argumentsSha256":"`+held.ArgumentsSHA256+`"}`); status != http.StatusOK {
		t.Fatalf("the admin's approval: %d %s", status, body)
	}
	if got := wait(t, first); got != `ran merge_pull_request {"pr":7} (isError false)` {
		t.Fatalf("the approved call: %s", got)
	}
	if n := up.seen("merge_pull_request", `{"pr":7}`); n != 1 {
		t.Fatalf("the approved call reached the upstream %d times", n)
	}
	if msgs := bot.progressMessages(); len(msgs) == 0 || !strings.Contains(msgs[0], "waiting for a person to approve merge_pull_request (approval "+held.ID) {
		t.Errorf("progress while waiting: %q", msgs)
	}
	if status, body := rest(t, http.MethodPost, hub.Base+"/api/mcp/approvals/"+held.ID, opsToken, `{"decision":"approve"}`); status != http.StatusConflict {
		t.Errorf("a replayed approval: %d %s", status, body)
	}

	second := bot.call("merge_pull_request", 8)
	held2 := heldCall(t, hub.Base, opsToken, "merge_pull_request", `{"pr":8}`)
	if held2.ID == held.ID {
		t.Fatal("the second call was not held anew")
	}
	if status, body := rest(t, http.MethodPost, hub.Base+"/api/mcp/approvals/"+held2.ID, opsToken, `{"decision":"deny","reason":"release freeze until Monday"}`); status != http.StatusOK {
		t.Fatalf("deny: %d %s", status, body)
	}
	got := wait(t, second)
	if !strings.HasPrefix(got, "BLOCKED: tool 'merge_pull_request' on server 'forge' needs a person's approval (approval "+held2.ID+"), and ops denied it: release freeze until Monday") ||
		!strings.HasSuffix(got, "(isError true)") {
		t.Fatalf("the denied call: %s", got)
	}
	if n := up.seen("merge_pull_request", `{"pr":8}`); n != 0 {
		t.Fatalf("the denied call reached the upstream %d times", n)
	}

	// Over legacy SSE too: the call waits, its caller hears progress on
	// the stream, and the approval runs it.
	sse := dialSSE(t, hub.Base, botToken)
	third := sse.call("merge_pull_request", 10)
	held3 := heldCall(t, hub.Base, opsToken, "merge_pull_request", `{"pr":10}`)
	if status, body := rest(t, http.MethodPost, hub.Base+"/api/mcp/approvals/"+held3.ID, opsToken, `{"decision":"approve"}`); status != http.StatusOK {
		t.Fatalf("approve over SSE: %d %s", status, body)
	}
	if got := wait(t, third); got != `ran merge_pull_request {"pr":10} (isError false)` || up.seen("merge_pull_request", `{"pr":10}`) != 1 {
		t.Fatalf("the approved call over SSE: %s", got)
	}
	if msgs := sse.progressMessages(); len(msgs) == 0 || !strings.Contains(msgs[0], "(approval "+held3.ID) {
		t.Errorf("progress over SSE while waiting: %q", msgs)
	}

	// In band: the IDE user's client is asked, and its yes runs the call.
	var asked atomic.Int32
	ide := dial(t, hub.MCPURL(), ideToken, func(_ context.Context, r mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
		asked.Add(1)
		if !strings.Contains(r.Params.Message, "merge_pull_request") || !strings.Contains(r.Params.Message, `"pr":9`) {
			return nil, fmt.Errorf("unexpected question %q", r.Params.Message)
		}
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"approve": true}}}, nil
	})
	if got := wait(t, ide.call("merge_pull_request", 9)); got != `ran merge_pull_request {"pr":9} (isError false)` || asked.Load() != 1 {
		t.Fatalf("in band: %s (asked %d times)", got, asked.Load())
	}

	// The hub writes the decision's line before the call goes on, but the
	// test reads the hub's stderr through a pipe: the call's answer can
	// arrive here before the line does (seen on a loaded machine).
	// The checks below say what is missing if it never comes.
	waitCtx, cancelWait := context.WithTimeout(context.Background(), 5*time.Second)
	_ = hubtest.Poll(waitCtx, 20*time.Millisecond, func() error {
		if !strings.Contains(hub.Output(), `"in_band":true`) {
			return errors.New("no in-band decision line yet")
		}
		return nil
	})
	cancelWait()
	log := hub.Output()
	for _, want := range []string{
		`"audit":"approval","event":"requested","approval":"` + held.ID + `"`,
		`"event":"approved","approval":"` + held.ID + `"`, `"by":"ops"`,
		`"event":"denied","approval":"` + held2.ID + `"`, `"reason":"release freeze until Monday"`,
		`"guardrail":"approval ` + held.ID + ` approved by ops after `,
		`"in_band":true`,
	} {
		if !strings.Contains(log, want) {
			t.Errorf("the hub's log lacks %s", want)
		}
	}
	for _, secret := range []string{botToken, opsToken, ideToken} {
		if strings.Contains(log, secret) {
			t.Fatal("a token is in the hub's log")
		}
	}
	_, metrics := rest(t, http.MethodGet, hub.Base+"/metrics", opsToken, "")
	for _, want := range []string{"mcphub_approvals_pending 0", `mcphub_approval_decision_seconds_count{verdict="approved"} 3`, `mcphub_approval_decision_seconds_count{verdict="denied"} 1`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestApprovalAcrossReplicas: two replicas, nothing shared. A call held
// on one is listed and approved through the other, and runs once; the
// caller cannot approve it through the other either. A replica that stops
// ends its held calls: the caller hears that nothing ran, and nothing did.
func TestApprovalAcrossReplicas(t *testing.T) {
	up := startUpstream(t)
	bin := hubtest.HubBinary(t)
	addrs := []string{fmt.Sprintf("127.0.0.1:%d", hubtest.FreePort(t)), fmt.Sprintf("127.0.0.1:%d", hubtest.FreePort(t))}
	cfg := hubConfig(up.URL, strings.Join(addrs, ","), "")
	var hubs []*hubtest.Hub
	for _, a := range addrs {
		hubs = append(hubs, hubtest.StartHub(t, hubtest.HubOptions{Bin: bin, Listen: a, Config: cfg, Env: tokenEnv, LogLevel: "warn", Wait: hubtest.Connected}))
	}
	bot := dial(t, hubs[0].MCPURL(), botToken, nil)
	first := bot.call("merge_pull_request", 21)
	held := heldCall(t, hubs[1].Base, opsToken, "merge_pull_request", `{"pr":21}`)
	if status, body := rest(t, http.MethodPost, hubs[1].Base+"/api/mcp/approvals/"+held.ID, botToken, `{"decision":"approve"}`); status != http.StatusForbidden {
		t.Fatalf("the caller approving its own call through the other replica: %d %s", status, body)
	}
	if status, body := rest(t, http.MethodPost, hubs[1].Base+"/api/mcp/approvals/"+held.ID, opsToken, `{"decision":"approve"}`); status != http.StatusOK {
		t.Fatalf("approval through the other replica: %d %s", status, body)
	}
	if got := wait(t, first); got != `ran merge_pull_request {"pr":21} (isError false)` || up.seen("merge_pull_request", `{"pr":21}`) != 1 {
		t.Fatalf("the call approved on the other replica: %s", got)
	}
	if status, body := rest(t, http.MethodPost, hubs[1].Base+"/api/mcp/approvals/"+held.ID, opsToken, `{"decision":"approve"}`); status != http.StatusConflict {
		t.Errorf("a replay through the other replica: %d %s", status, body)
	}

	doomed := bot.call("merge_pull_request", 22)
	heldCall(t, hubs[1].Base, opsToken, "merge_pull_request", `{"pr":22}`)
	if err := hubs[0].Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	got := wait(t, doomed)
	if !strings.Contains(got, "did not run") && !strings.HasPrefix(got, "error:") {
		t.Fatalf("the caller of a call held on a replica that stopped: %s", got)
	}
	if n := up.seen("merge_pull_request", `{"pr":22}`); n != 0 {
		t.Fatalf("a call held on a replica that stopped reached the upstream %d times", n)
	}
}
