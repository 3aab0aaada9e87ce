package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/purko-io/mcp-hub/internal/hubtest"
)

// The tokens of TestConsoleDecidesHeldCalls: an admin deciding in the
// console, an agent whose write calls wait for a person, and a lead, an
// admin whose own write calls wait too.
const (
	adminToken = "console-approvals-admin-5d1c"
	agentToken = "console-approvals-agent-8e2a"
	leadToken  = "console-approvals-lead-27bf"
)

// TestConsoleDecidesHeldCalls: the Approvals panel. An agent's write call
// waits for a person (guardrails humanApprovalRequired) and shows up in
// the console of an admin without a reload, with its arguments; Approve
// lets it run, once. A second call, opened from the webhook's link
// (/console/#approval=ID), is denied with a reason the agent reads in its
// BLOCKED text. The agent's own console lists its held call read-only,
// and a lead (an approver) sees its own call without buttons beside the
// agent's, which it may decide.
func TestConsoleDecidesHeldCalls(t *testing.T) {
	var runs atomic.Int32
	up := server.NewMCPServer("ops", "1", server.WithToolCapabilities(true))
	// No annotations: a write tool.
	up.AddTool(mcp.NewTool("deploy", mcp.WithDescription("deploy a service"), mcp.WithString("service"), mcp.WithNumber("replicas")),
		func(_ context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			runs.Add(1)
			return mcp.NewToolResultText("deployed " + r.GetString("service", "")), nil
		})
	mux := http.NewServeMux()
	mux.Handle("/mcp", server.NewStreamableHTTPServer(up))
	upstream := httptest.NewServer(mux)
	t.Cleanup(upstream.Close) // after the hub's stop, registered below

	hub := hubtest.StartHub(t, hubtest.HubOptions{
		Config: "servers:\n  - name: ops\n    url: " + upstream.URL + "/mcp\n" +
			"auth:\n  tokens:\n" +
			"  - name: admin\n    token: {env: MCPHUB_CONSOLE_ADMIN}\n    maxLevel: full\n    admin: true\n" +
			"  - name: agent\n    token: {env: MCPHUB_CONSOLE_AGENT}\n    maxLevel: supervised\n    guardrails: {humanApprovalRequired: true}\n" +
			"  - name: lead\n    token: {env: MCPHUB_CONSOLE_LEAD}\n    maxLevel: full\n    admin: true\n    guardrails: {humanApprovalRequired: true}\n" +
			"approvals:\n  timeout: 10m\n",
		Env:  []string{"MCPHUB_CONSOLE_ADMIN=" + adminToken, "MCPHUB_CONSOLE_AGENT=" + agentToken, "MCPHUB_CONSOLE_LEAD=" + leadToken},
		Wait: hubtest.Ready,
	})
	agent := mcpClient(t, hub, agentToken)

	ctx := browser(t)
	openConsole(t, ctx, hub.Base, adminToken, "/console/")
	waitPage(t, ctx, "the upstream's deploy tool", `!!document.querySelector('#tools tr[data-tool="deploy"]')`)
	waitPage(t, ctx, "an empty Approvals panel",
		`!document.querySelector('#approvals-empty').hidden && document.querySelector('#approvals-count').hidden && document.querySelector('#approvals-pill').hidden`)
	if _, err := evaluate[int](ctx, `window.consoleTestMark = 7`); err != nil {
		t.Fatal(err)
	}

	// 1. Held, shown live, approved: the call runs once and returns.
	first := callDeploy(agent, "billing", 3)
	box := `document.querySelector('#approvals .ap[data-tool="deploy"]')`
	waitPage(t, ctx, "the held call in the panel, with its arguments and the buttons, without a reload",
		`(() => { const b = `+box+`; return !!b && window.consoleTestMark === 7
		  && b.querySelector('pre').innerText.includes('"service": "billing"') && b.querySelector('pre').innerText.includes('"replicas": 3')
		  && b.innerText.includes('asked by agent') && /waiting \d+s · \d+m \d+s left/.test(b.querySelector('.ap-time').innerText)
		  && !!b.querySelector('button[data-decide="approve"]') && !!b.querySelector('form.deny input')
		  && document.querySelector('#approvals-count').innerText === '1'
		  && document.querySelector('#approvals-pill').innerText === '1 call awaits approval'; })()`)
	id, err := evaluate[string](ctx, box+`.dataset.approval`)
	if err != nil {
		t.Fatal(err)
	}
	held := listApprovals(t, hub.Base, adminToken)
	if len(held) != 1 || held[0].ID != id {
		t.Fatalf("the hub holds %+v, the page shows approval %s", held, id)
	}
	if shown, err := evaluate[string](ctx, box+`.querySelector('.ap-digest').innerText`); err != nil || !strings.Contains(shown, held[0].ArgumentsSHA256) {
		t.Fatalf("the page shows the digest %q (%v), the hub holds %s", shown, err, held[0].ArgumentsSHA256)
	}
	select {
	case o := <-first:
		t.Fatalf("the held call returned before a decision: %+v %v", o.res, o.err)
	default:
	}
	if n := runs.Load(); n != 0 {
		t.Fatalf("the upstream ran %d times before the approval", n)
	}
	phoneFits(t, ctx)

	if _, err := evaluate[bool](ctx, `(() => { `+box+`.querySelector('button[data-decide="approve"]').click(); return true; })()`); err != nil {
		t.Fatalf("click Approve: %v", err)
	}
	if text := outcomeText(t, first, false); text != "deployed billing" {
		t.Fatalf("the approved call returned %q, want the upstream's answer", text)
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("the upstream ran %d times, want once", n)
	}
	waitPage(t, ctx, "the approval's result in its box, the count gone",
		`(() => { const b = document.querySelector('#approvals .ap[data-approval="`+id+`"]');
		  return !!b && b.dataset.verdict === 'approved' && b.querySelector('.msg').innerText.startsWith('Approved by admin')
		    && !b.querySelector('button[data-decide]') && document.querySelector('#approvals-count').hidden
		    && document.querySelector('#approvals-pill').hidden; })()`)
	waitPage(t, ctx, "the call in the recent calls, with who approved it",
		`[...document.querySelectorAll('#calls tr.call[data-tool="deploy"]')].some(r => r.dataset.decision === 'allowed'
		  && r.querySelector('.guardrail').innerText.includes('approval `+id+` approved by admin after'))`)

	// 2. The webhook's link: the page opens on the call's box; Deny wants
	// a reason, which the agent reads.
	second := callDeploy(agent, "payments", 3)
	id2 := waitHeld(t, hub.Base, adminToken, "payments")
	if err := within(ctx, 30*time.Second, chromedp.Navigate("about:blank"), chromedp.Navigate(hub.Base+"/console/#approval="+id2)); err != nil {
		t.Fatalf("open the webhook's link: %v", err)
	}
	box2 := `document.querySelector('#approvals .ap[data-approval="` + id2 + `"]')`
	waitPage(t, ctx, "the linked call's box highlighted and in view",
		`(() => { const b = `+box2+`; if (!b || !b.classList.contains('ap-focus')) return false;
		  const r = b.getBoundingClientRect(); return r.top >= 0 && r.top < window.innerHeight; })()`)
	if _, err := evaluate[bool](ctx, `(() => { `+box2+`.querySelector('button[data-decide="deny"]').click(); return true; })()`); err != nil {
		t.Fatalf("click Deny: %v", err)
	}
	waitPage(t, ctx, "Deny asking for a reason", box2+`.querySelector('.msg').innerText.includes('Say why')`)
	const reason = "not during the release freeze"
	if _, err := evaluate[bool](ctx, `(() => { const f = `+box2+`.querySelector('form.deny');
		f.querySelector('input').value = '`+reason+`'; f.requestSubmit(); return true; })()`); err != nil {
		t.Fatalf("deny with a reason: %v", err)
	}
	text := outcomeText(t, second, true)
	if !strings.HasPrefix(text, "BLOCKED: ") || !strings.Contains(text, "admin denied it: "+reason) {
		t.Fatalf("the denied call returned %q, want a BLOCKED text with the reason", text)
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("the upstream ran %d times, want once (the denied call must not run)", n)
	}
	waitPage(t, ctx, "the denial in its box",
		`(() => { const b = `+box2+`; return !!b && b.dataset.verdict === 'denied' && b.querySelector('.msg').innerText === 'Denied by admin: `+reason+`'; })()`)
	waitPage(t, ctx, "the denied call in the recent calls, with the reason",
		`[...document.querySelectorAll('#calls tr.call[data-tool="deploy"]')].some(r => r.dataset.decision === 'denied'
		  && r.querySelector('.guardrail').innerText.includes('approval `+id2+` denied by admin after') && r.innerText.includes('`+reason+`'))`)

	// 3. The agent's own console: its held call, read-only, saying who
	// may decide; a number no double holds shown as the call holds it.
	third := callDeploy(agent, "search", 1<<53+1)
	id3 := waitHeld(t, hub.Base, adminToken, "search")
	openConsole(t, ctx, hub.Base, agentToken, "/console/")
	box3 := `document.querySelector('#approvals .ap[data-approval="` + id3 + `"]')`
	waitPage(t, ctx, "the agent's held call, read-only",
		`(() => { const b = `+box3+`; const who = document.querySelector('#approvals-who');
		  return !!b && !b.querySelector('button, input') && !who.hidden
		    && b.querySelector('pre').innerText.includes('"replicas": 9007199254740993')
		    && who.innerText === "Read-only: only the hub's admins may approve or deny these calls."; })()`)

	// 4. A lead's own call: the console shows it without buttons (no one
	// decides their own), the agent's with them (the lead approves others'
	// calls); the hub refuses the lead's approval of its own all the same.
	lead := mcpClient(t, hub, leadToken)
	fourth := callDeploy(lead, "audit", 3)
	id4 := waitHeld(t, hub.Base, adminToken, "audit")
	openConsole(t, ctx, hub.Base, leadToken, "/console/")
	box4 := `document.querySelector('#approvals .ap[data-approval="` + id4 + `"]')`
	waitPage(t, ctx, "the lead's own call and the agent's", `!!`+box4+` && !!`+box3+` && document.querySelector('#approvals-count').innerText === '2'`)
	waitPage(t, ctx, "the lead's own call without buttons, the agent's with them",
		`(() => { const own = `+box4+`, other = `+box3+`;
		  return !own.querySelector('button, input') && own.querySelector('.ap-own').innerText.includes('Your own call')
		    && !!other.querySelector('button[data-decide="approve"]'); })()`)
	if status, body := rest(t, http.MethodPost, hub.Base+"/api/mcp/approvals/"+id4, leadToken, []byte(`{"decision":"approve"}`)); status != http.StatusForbidden || !strings.Contains(string(body), "a caller cannot decide its own call") {
		t.Fatalf("the lead approving its own call by REST: %d %s", status, body)
	}

	for _, o := range []struct {
		id  string
		out <-chan callOutcome
	}{{id3, third}, {id4, fourth}} {
		decide(t, hub.Base, adminToken, o.id, "cleanup")
		if text := outcomeText(t, o.out, true); !strings.Contains(text, "admin denied it: cleanup") {
			t.Fatalf("approval %s denied by REST: the call returned %q", o.id, text)
		}
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("the upstream ran %d times, want once", n)
	}
	waitPage(t, ctx, "the empty panel again", `!document.querySelector('#approvals .ap') && !document.querySelector('#approvals-empty').hidden`)
}

// openConsole opens the console at path as the caller of token (kept in
// the tab's sessionStorage, as the token prompt keeps it) and waits for its
// event stream.
func openConsole(t *testing.T, ctx context.Context, base, token, path string) {
	t.Helper()
	err := within(ctx, 30*time.Second,
		chromedp.Navigate(base+"/readyz"), // the hub's origin, without the page's requests
		chromedp.Evaluate[chromedp.Void](`sessionStorage.setItem('mcp-hub-token', '`+token+`')`),
		chromedp.Navigate(base+path))
	if err != nil {
		t.Fatalf("open the console as %s: %v", token, err)
	}
	waitPage(t, ctx, "the event stream live", `document.querySelector('#live').innerText === 'live' && document.querySelector('#token-bar').hidden`)
}

// phoneFits checks that the page, a held call shown, does not scroll
// sideways on a phone (390 px).
func phoneFits(t *testing.T, ctx context.Context) {
	t.Helper()
	if err := within(ctx, 30*time.Second, chromedp.EmulateViewport(390, 844), chromedp.Sleep(300*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	w, err := evaluate[int64](ctx, `document.documentElement.scrollWidth`)
	if err != nil || w > 390 {
		t.Fatalf("at 390 px the page with a held call is %d px wide (%v): it scrolls sideways", w, err)
	}
	if err := within(ctx, 30*time.Second, chromedp.EmulateViewport(1280, 800)); err != nil {
		t.Fatal(err)
	}
}

// mcpClient is an initialized MCP client of the hub with token.
func mcpClient(t *testing.T, hub *hubtest.Hub, token string) *client.Client {
	t.Helper()
	c, err := client.NewStreamableHttpClient(hub.MCPURL(), transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: mcp.LATEST_PROTOCOL_VERSION,
		ClientInfo: mcp.Implementation{Name: "console-approvals-test", Version: "0"}}}); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return c
}

type callOutcome struct {
	res *mcp.CallToolResult
	err error
}

// callDeploy calls deploy in the background: a held call returns once it
// is decided.
func callDeploy(c *client.Client, service string, replicas int64) <-chan callOutcome {
	out := make(chan callOutcome, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "deploy",
			Arguments: map[string]any{"service": service, "replicas": replicas}}})
		out <- callOutcome{res, err}
	}()
	return out
}

// outcomeText waits for a call's result and returns its text, failing t
// unless its isError is wantError.
func outcomeText(t *testing.T, out <-chan callOutcome, wantError bool) string {
	t.Helper()
	select {
	case o := <-out:
		if o.err != nil {
			t.Fatalf("the call failed: %v", o.err)
		}
		var b strings.Builder
		for _, c := range o.res.Content {
			if tc, ok := c.(mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		if o.res.IsError != wantError {
			t.Fatalf("the call returned isError %v, want %v: %s", o.res.IsError, wantError, b.String())
		}
		return b.String()
	case <-time.After(60 * time.Second):
		t.Fatal("the call did not return within 60s of its decision")
	}
	return ""
}

// heldCall is an entry of GET /api/mcp/approvals.
type heldCall struct {
	ID              string          `json:"id"`
	Caller          string          `json:"caller"`
	Tool            string          `json:"tool"`
	Arguments       json.RawMessage `json:"arguments"`
	ArgumentsSHA256 string          `json:"argumentsSha256"`
}

func rest(t *testing.T, method, url, token string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, answer
}

func listApprovals(t *testing.T, base, token string) []heldCall {
	t.Helper()
	status, body := rest(t, http.MethodGet, base+"/api/mcp/approvals", token, nil)
	var l struct {
		Approvals []heldCall `json:"approvals"`
	}
	if status != http.StatusOK || json.Unmarshal(body, &l) != nil {
		t.Fatalf("GET /api/mcp/approvals: %d %s", status, body)
	}
	return l.Approvals
}

// waitHeld waits until the hub holds the deploy call of service and
// returns its approval id.
func waitHeld(t *testing.T, base, token, service string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		for _, h := range listApprovals(t, base, token) {
			var args struct{ Service string }
			if h.Tool == "deploy" && json.Unmarshal(h.Arguments, &args) == nil && args.Service == service {
				return h.ID
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the hub holds no deploy call of %s", service)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// decide denies approval id with reason through the REST API.
func decide(t *testing.T, base, token, id, reason string) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"decision": "deny", "reason": reason})
	if status, answer := rest(t, http.MethodPost, base+"/api/mcp/approvals/"+id, token, body); status != http.StatusOK {
		t.Fatalf("deny %s: %d %s", id, status, answer)
	}
}
