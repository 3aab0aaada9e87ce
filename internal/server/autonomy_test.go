package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/mcpws"
	"github.com/purko-io/mcp-hub/internal/pipeline"
	"github.com/purko-io/mcp-hub/internal/registry"
)

// countingUpstream serves the given tool names; every call is counted, so a
// test can prove a denied call never reached it.
type countingUpstream struct {
	spec  config.ServerSpec
	mu    sync.Mutex
	calls map[string]int
}

func newCountingUpstream(t *testing.T, name string, tools ...string) *countingUpstream {
	u := &countingUpstream{calls: map[string]int{}}
	s := mcpserver.NewMCPServer(name, "1")
	for _, tool := range tools {
		s.AddTool(mcp.NewTool(tool), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			u.mu.Lock()
			u.calls[tool]++
			u.mu.Unlock()
			return mcp.NewToolResultText("ran " + tool), nil
		})
	}
	url := serveOn(t, mcpserver.NewStreamableHTTPServer(s)) + "/mcp"
	u.spec = config.ServerSpec{Name: name, URL: url, Transport: config.TransportStreamableHTTP}
	return u
}

func (u *countingUpstream) count(tool string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.calls[tool]
}

// executor posts JSON-RPC like Purko's executor, with a token and a level.
type executor struct {
	t       *testing.T
	url     string
	token   string
	level   string
	nextID  int
	session string
	started bool
}

func (e *executor) post(method string, params any) (int, map[string]any) {
	e.t.Helper()
	if !e.started {
		// As Purko's executor: initialize (2025-03-26), no initialized
		// notification, then requests on the session.
		e.started = true
		status, res := e.post("initialize", map[string]any{"protocolVersion": "2025-03-26", "capabilities": map[string]any{},
			"clientInfo": map[string]any{"name": "executor", "version": "1"}})
		if status != 200 {
			return status, res
		}
	}
	e.nextID++
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": e.nextID, "method": method, "params": params})
	req, _ := http.NewRequest("POST", e.url, strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if e.token != "" {
		req.Header.Set("Authorization", "Bearer "+e.token)
	}
	if e.level != "" {
		req.Header.Set(callers.HeaderAutonomyLevel, e.level)
	}
	if e.session != "" {
		req.Header.Set("Mcp-Session-Id", e.session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		e.session = sid
	}
	raw, _ := io.ReadAll(resp.Body)
	if i := strings.Index(string(raw), "data: "); strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") && i >= 0 {
		raw = []byte(strings.SplitN(string(raw[i+6:]), "\n", 2)[0])
	}
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return resp.StatusCode, out
}

func (e *executor) tools() []string {
	e.t.Helper()
	status, res := e.post("tools/list", map[string]any{})
	if status != 200 {
		e.t.Fatalf("tools/list: HTTP %d %v", status, res)
	}
	result, ok := res["result"].(map[string]any)
	if !ok {
		e.t.Fatalf("tools/list answered %v", res)
	}
	var names []string
	tools, _ := result["tools"].([]any) // null when there are none
	for _, tl := range tools {
		names = append(names, tl.(map[string]any)["name"].(string))
	}
	return names
}

// call returns the result text and whether it was an error result; meta
// forces the MCP path (a progress token) instead of the fast path.
func (e *executor) call(tool string, viaMCP bool) (string, bool) {
	e.t.Helper()
	params := map[string]any{"name": tool, "arguments": map[string]any{}}
	if viaMCP {
		params["_meta"] = map[string]any{"progressToken": "p"}
	}
	status, res := e.post("tools/call", params)
	if status != 200 {
		e.t.Fatalf("tools/call %s: HTTP %d %v", tool, status, res)
	}
	if r, ok := res["result"].(map[string]any); ok {
		text := r["content"].([]any)[0].(map[string]any)["text"].(string)
		return text, r["isError"] == true
	}
	return fmt.Sprint(res["error"]), true
}

func authFor(tokens ...callers.TokenCaller) *callers.Auth { return callers.NewAuth(tokens, nil, nil) }

var githubTools = []string{"get_issue", "list_pull_requests", "search_code", "create_issue", "merge_pull_request", "delete_repository", "frobnicate"}

func TestAutonomyEnforcedPerCaller(t *testing.T) {
	gh := newCountingUpstream(t, "github", githubTools...)
	auth := authFor(
		callers.TokenCaller{Name: "manual-bot", Token: "tok-manual", Ceiling: autonomy.Manual},
		callers.TokenCaller{Name: "reader", Token: "tok-restricted", Ceiling: autonomy.Restricted},
		callers.TokenCaller{Name: "writer", Token: "tok-supervised", Ceiling: autonomy.Supervised},
		callers.TokenCaller{Name: "narrow", Token: "tok-narrow", Ceiling: autonomy.Full, Tools: []string{"get-ISSUE"}},
	)
	h := newTestHubAuth(t, []config.ServerSpec{gh.spec}, auth)
	h.waitConnected("github")
	url := h.url("/mcp")
	reads := []string{"get_issue", "list_pull_requests", "search_code"}

	manual := &executor{t: t, url: url, token: "tok-manual"}
	mustf(t, len(manual.tools()) == 0, "manual sees %v", manual.tools())

	restricted := &executor{t: t, url: url, token: "tok-restricted"}
	mustf(t, strings.Join(restricted.tools(), ",") == strings.Join(reads, ","), "restricted sees %v", restricted.tools())

	supervised := &executor{t: t, url: url, token: "tok-supervised"}
	mustf(t, len(supervised.tools()) == len(githubTools), "supervised sees %v", supervised.tools())

	for _, viaMCP := range []bool{false, true} {
		path := map[bool]string{false: "fast path", true: "MCP path"}[viaMCP]
		for _, w := range []string{"create_issue", "merge_pull_request", "delete_repository", "frobnicate"} {
			text, isErr := restricted.call(w, viaMCP)
			want := "BLOCKED: Restricted autonomy — write tool '" + w + "' not allowed."
			mustf(t, isErr && text == want, "%s: restricted %s = %q, want %q", path, w, text, want)
		}
		text, isErr := manual.call("get_issue", viaMCP)
		mustf(t, isErr && strings.HasPrefix(text, "BLOCKED: Manual autonomy"), "%s: manual get_issue = %q", path, text)
		text, isErr = restricted.call("get_issue", viaMCP)
		mustf(t, !isErr && text == "ran get_issue", "%s: restricted get_issue = %q", path, text)
	}
	for _, w := range []string{"create_issue", "merge_pull_request", "delete_repository", "frobnicate"} {
		mustf(t, gh.count(w) == 0, "denied %s reached the upstream %d times", w, gh.count(w))
	}
	text, isErr := supervised.call("create_issue", false)
	mustf(t, !isErr && text == "ran create_issue" && gh.count("create_issue") == 1, "supervised create_issue = %q", text)

	// A caller may ask for less than its ceiling, never for more.
	lowered := &executor{t: t, url: url, token: "tok-supervised", level: "shu"}
	mustf(t, len(lowered.tools()) == len(reads), "supervised asking for shu sees %v", lowered.tools())
	status, res := (&executor{t: t, url: url, token: "tok-restricted", level: "full"}).post("tools/list", map[string]any{})
	mustf(t, status == http.StatusForbidden && strings.Contains(fmt.Sprint(res), "at most restricted"), "asking above the ceiling: %d %v", status, res)
	status, _ = (&executor{t: t, url: url, token: "tok-supervised", level: "bogus"}).post("tools/list", map[string]any{})
	mustf(t, status == http.StatusBadRequest, "unknown level: %d", status)

	// No or wrong credentials: refused before any MCP processing.
	for _, tok := range []string{"", "tok-wrong"} {
		status, _ := (&executor{t: t, url: url, token: tok}).post("tools/list", map[string]any{})
		mustf(t, status == http.StatusUnauthorized, "token %q: HTTP %d", tok, status)
	}

	// The allowlist matches across case and separators, and cannot be dodged.
	narrow := &executor{t: t, url: url, token: "tok-narrow"}
	mustf(t, strings.Join(narrow.tools(), ",") == "get_issue", "narrow sees %v", narrow.tools())
	text, isErr = narrow.call("search_code", false)
	mustf(t, isErr && strings.HasPrefix(text, "BLOCKED: tool 'search_code' is not in the tool list of narrow"), "narrow search_code = %q", text)
	for _, dodge := range []string{"CREATE_ISSUE", "create-issue", "Create_Issue"} {
		text, isErr := restricted.call(dodge, false)
		mustf(t, isErr, "restricted %s = %q", dodge, text)
	}
	mustf(t, gh.count("create_issue") == 1, "a dodged name reached the upstream")
}

func TestListingShowsClassAndLevelViews(t *testing.T) {
	gh := newCountingUpstream(t, "github", githubTools...)
	h := newTestHub(t, []config.ServerSpec{gh.spec})
	h.waitConnected("github")
	var full struct {
		Servers []struct {
			Tools []struct {
				Name     string
				ReadOnly bool
				Reason   string `json:"readOnlyReason"`
			}
		}
		TotalTools int
	}
	getJSON(t, h.url("/api/mcp/tools"), &full)
	mustf(t, full.TotalTools == len(githubTools), "totalTools %d", full.TotalTools)
	for _, tl := range full.Servers[0].Tools {
		mustf(t, tl.Reason != "", "%s has no reason", tl.Name)
		if tl.Name == "merge_pull_request" {
			mustf(t, !tl.ReadOnly && strings.Contains(strings.ToLower(tl.Reason), "purko"), "merge_pull_request: %+v", tl)
		}
		if tl.Name == "get_issue" {
			mustf(t, tl.ReadOnly, "get_issue: %+v", tl)
		}
	}
	for level, want := range map[string]int{"restricted": 3, "ha": len(githubTools), "manual": 0} {
		var view struct{ TotalTools int }
		getJSON(t, h.url("/api/mcp/tools?autonomy="+level), &view)
		mustf(t, view.TotalTools == want, "?autonomy=%s shows %d tools, want %d", level, view.TotalTools, want)
	}
	resp, err := http.Get(h.url("/api/mcp/tools?autonomy=godmode"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	mustf(t, resp.StatusCode == http.StatusBadRequest, "unknown level in listing: %d", resp.StatusCode)
}

// TestRestrictedNeverReachesAWrite is a property test: random catalogs of
// random names; a restricted caller calls every name (and its case and
// separator variants) on both paths; no tool the catalog classifies as a
// write is ever run, by the upstreams' own counters.
func TestRestrictedNeverReachesAWrite(t *testing.T) {
	verbs := []string{"get", "list", "create", "delete", "search", "run", "read", "write", "merge", "describe", "sync", "fetch", "zap", "apply", "show", "push"}
	nouns := []string{"issue", "pod", "file", "repo", "branch", "query", "status", "log", "thing"}
	rng := rand.New(rand.NewPCG(7, 11))
	for round := 0; round < 3; round++ {
		var ups []*countingUpstream
		var specs []config.ServerSpec
		for s := 0; s < 2; s++ {
			seen := map[string]bool{}
			var tools []string
			for len(tools) < 8 {
				name := verbs[rng.IntN(len(verbs))] + []string{"_", "-", ""}[rng.IntN(3)] + nouns[rng.IntN(len(nouns))]
				if rng.IntN(4) == 0 {
					name = nouns[rng.IntN(len(nouns))] + "_" + verbs[rng.IntN(len(verbs))]
				}
				if !seen[name] {
					seen[name] = true
					tools = append(tools, name)
				}
			}
			u := newCountingUpstream(t, fmt.Sprintf("s%d%d", round, s), tools...)
			ups = append(ups, u)
			specs = append(specs, u.spec)
		}
		h := newTestHubAuth(t, specs, authFor(callers.TokenCaller{Name: "r", Token: "t", Ceiling: autonomy.Restricted}))
		h.waitConnected(specs[0].Name, specs[1].Name)
		ex := &executor{t: t, url: h.url("/mcp"), token: "t"}
		cat := h.reg.Catalog()
		for _, tool := range cat.Tools {
			for _, name := range []string{tool.Name, strings.ToUpper(tool.Name), strings.ReplaceAll(tool.Name, "_", "-")} {
				ex.call(name, false)
				ex.call(name, true)
			}
		}
		for _, tool := range cat.Tools {
			var n int
			for _, u := range ups {
				if u.spec.Name == tool.Server {
					n = u.count(tool.Original)
				}
			}
			if !tool.Class.ReadOnly && n > 0 {
				t.Fatalf("round %d: restricted caller ran write tool %s (%s) %d times", round, tool.Name, tool.Class.Reason, n)
			}
			if tool.Class.ReadOnly && n == 0 {
				t.Fatalf("round %d: read-only tool %s never ran: the test exercised nothing", round, tool.Name)
			}
		}
	}
}

// BenchmarkDecide measures the per-call decision for a full and a
// restricted caller: it is a table lookup made when the catalog changed, so
// both cost the same few nanoseconds.
func BenchmarkDecide(b *testing.B) {
	rt := registry.Route{Original: "get_issue", Class: autonomy.Class{ReadOnly: true, Reason: "read verb"}}
	for _, lvl := range []autonomy.Level{autonomy.Full, autonomy.Restricted} {
		caller := callers.Caller{Name: "bench", Ceiling: lvl, Level: lvl}
		b.Run(lvl.String(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if pipeline.Decide(caller, rt.ScopeServer(), "get_issue", rt.Original, rt.Class, rt.Agent, rt.Exchange) != "" {
					b.Fatal("denied")
				}
			}
		})
	}
}

// TestAutonomyOnEveryFace: the SSE and WebSocket faces authenticate and
// filter exactly like /mcp.
func TestAutonomyOnEveryFace(t *testing.T) {
	gh := newCountingUpstream(t, "github", githubTools...)
	h := newTestHubAuth(t, []config.ServerSpec{gh.spec}, authFor(callers.TokenCaller{Name: "reader", Token: "tok-r", Ceiling: autonomy.Restricted}))
	h.waitConnected("github")
	auth := map[string]string{"Authorization": "Bearer tok-r"}
	faces := map[string]func() transport.Interface{
		"sse": func() transport.Interface {
			tr, err := transport.NewSSE(h.url("/sse"), transport.WithHeaders(auth))
			if err != nil {
				t.Fatal(err)
			}
			return tr
		},
		"websocket": func() transport.Interface {
			return mcpws.NewClientTransport(strings.Replace(h.url("/ws"), "http://", "ws://", 1), http.Header{"Authorization": {"Bearer tok-r"}})
		},
	}
	for face, tr := range faces {
		t.Run(face, func(t *testing.T) {
			c := client.NewClient(tr())
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := c.Start(ctx); err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
				t.Fatal(err)
			}
			names := toolNames(t, c)
			mustf(t, strings.Join(names, ",") == "get_issue,list_pull_requests,search_code", "%s lists %v", face, names)
			got, isErr := call(t, c, "create_issue", nil)
			mustf(t, isErr && strings.HasPrefix(got, "BLOCKED: Restricted autonomy"), "%s create_issue = %q", face, got)
		})
	}
	mustf(t, gh.count("create_issue") == 0, "a denied call reached the upstream")

	// Without the token the faces refuse to open.
	resp, err := http.Get(h.url("/sse"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	mustf(t, resp.StatusCode == http.StatusUnauthorized, "/sse without a token: %d", resp.StatusCode)
}

// TestRepliesStayJSONDuringCatalogChanges: Purko's executor reads only the
// first data: line of an SSE reply, so a request without a progress token
// must get its answer as JSON even while list_changed notifications are
// being broadcast to every session.
func TestRepliesStayJSONDuringCatalogChanges(t *testing.T) {
	gh := newCountingUpstream(t, "github", githubTools...)
	h := newTestHub(t, []config.ServerSpec{gh.spec})
	h.waitConnected("github")
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				h.srv.mcp.SendNotificationToAllClients(string(mcp.MethodNotificationToolsListChanged), nil)
			}
		}
	}()
	defer func() { close(stop); <-done }()
	ex := &executor{t: t, url: h.url("/mcp")}
	for i := 0; i < 100; i++ {
		mustf(t, len(ex.tools()) == len(githubTools), "round %d: tools/list did not answer with the tools", i)
	}
}
