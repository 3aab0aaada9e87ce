package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/findtools"
	"github.com/purko-io/mcp-hub/internal/mcpws"
)

// searchTools are an upstream's tools for the find_tools tests: reads and
// writes by name.
var searchTools = []string{"get_issue", "list_issues", "list_pull_requests", "search_code",
	"create_issue", "create_pull_request", "merge_pull_request", "delete_repository"}

// dialFace is an initialized mcp-go client of the hub on transport tr and
// a channel that receives every tools/list_changed (testHub.dial on
// Streamable HTTP; the find_tools tests on SSE too).
func dialFace(t *testing.T, tr transport.Interface) (*client.Client, <-chan struct{}) {
	t.Helper()
	c := client.NewClient(tr)
	changed := make(chan struct{}, 16)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationToolsListChanged) {
			select {
			case changed <- struct{}{}:
			default:
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, changed
}

// findResult calls find_tools and returns its text and the names in its
// structuredContent.
func findResult(t *testing.T, c *client.Client, query string, limit int) (string, []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = findtools.Name
	req.Params.Arguments = map[string]any{"query": query, "limit": limit}
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("find_tools: %v", err)
	}
	if res.IsError {
		t.Fatalf("find_tools error: %s", resultText(res))
	}
	return resultText(res), structuredNames(t, res.StructuredContent)
}

func structuredNames(t *testing.T, sc any) []string {
	t.Helper()
	b, _ := json.Marshal(sc)
	var out struct {
		Tools []mcp.Tool `json:"tools"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("structuredContent %s: %v", b, err)
	}
	var names []string
	for _, tl := range out.Tools {
		if tl.Name == "" || (len(tl.RawInputSchema) == 0 && tl.InputSchema.Type == "") {
			t.Errorf("structuredContent tool without a full definition: %s", b)
		}
		names = append(names, tl.Name)
	}
	return names
}

// TestFindToolsThroughHub is the flow of a client behind a low threshold,
// on the fast path (Streamable HTTP) and on mcp-go's own (SSE).
func TestFindToolsThroughHub(t *testing.T) {
	up := newCountingUpstream(t, "github", searchTools...)
	h := newTestHubOpts(t, []config.ServerSpec{up.spec}, hubOpts{FindToolsAbove: 3})
	h.waitConnected("github")
	faces := []struct {
		name string
		tr   func() (transport.Interface, error)
	}{
		{"streamable", func() (transport.Interface, error) {
			return transport.NewStreamableHTTP(h.url("/mcp"), transport.WithContinuousListening())
		}},
		{"sse", func() (transport.Interface, error) { return transport.NewSSE(h.url("/sse")) }},
		{"websocket", func() (transport.Interface, error) {
			return mcpws.NewClientTransport(strings.Replace(h.url("/ws"), "http://", "ws://", 1), nil), nil
		}},
	}
	for _, f := range faces {
		t.Run(f.name, func(t *testing.T) {
			tr, err := f.tr()
			if err != nil {
				t.Fatal(err)
			}
			c, changed := dialFace(t, tr)
			if got := toolNames(t, c); !slices.Equal(got, []string{findtools.Name}) {
				t.Fatalf("tools/list above the threshold = %v, want only find_tools", got)
			}
			text, found := findResult(t, c, "create a pull request", 1)
			if !slices.Equal(found, []string{"create_pull_request"}) || !strings.HasPrefix(text, "create_pull_request: ") {
				t.Fatalf("find_tools found %v, text %q", found, text)
			}
			waitNotified(t, changed, "find_tools")
			if got := toolNames(t, c); !slices.Equal(got, []string{findtools.Name, "create_pull_request"}) {
				t.Fatalf("tools/list after find_tools = %v", got)
			}
			if text, isErr := call(t, c, "create_pull_request", nil); isErr || text != "ran create_pull_request" {
				t.Errorf("found tool: %q (error %v)", text, isErr)
			}
			// Never found, still callable by name.
			if text, isErr := call(t, c, "delete_repository", nil); isErr || text != "ran delete_repository" {
				t.Errorf("tool not found: %q (error %v)", text, isErr)
			}
			// Finding it again changes nothing and says nothing.
			findResult(t, c, "create a pull request", 1)
			select {
			case <-changed:
				t.Error("list_changed although nothing new was found")
			case <-time.After(200 * time.Millisecond):
			}
		})
	}
}

// TestFindToolsExecutor is Purko's executor (plain JSON, a session id, no
// stream): the short list, then the found tool in it, calls by name.
func TestFindToolsExecutor(t *testing.T) {
	up := newCountingUpstream(t, "github", searchTools...)
	h := newTestHubOpts(t, []config.ServerSpec{up.spec}, hubOpts{FindToolsAbove: 3})
	h.waitConnected("github")
	e := &executor{t: t, url: h.url("/mcp")}
	mustf(t, slices.Equal(e.tools(), []string{findtools.Name}), "executor lists %v", e.tools())
	status, res := e.post("tools/call", map[string]any{"name": findtools.Name, "arguments": map[string]any{"query": "merge pull request", "limit": 1}})
	r, _ := res["result"].(map[string]any)
	mustf(t, status == 200 && r != nil && r["isError"] != true, "find_tools: %d %v", status, res)
	text := r["content"].([]any)[0].(map[string]any)["text"].(string)
	mustf(t, strings.HasPrefix(text, "merge_pull_request: "), "find_tools text %q", text)
	mustf(t, slices.Equal(structuredNames(t, r["structuredContent"]), []string{"merge_pull_request"}), "structured %v", r["structuredContent"])
	mustf(t, slices.Equal(e.tools(), []string{findtools.Name, "merge_pull_request"}), "executor lists %v after find_tools", e.tools())
	for _, tool := range []string{"merge_pull_request", "get_issue"} {
		got, isErr := e.call(tool, false)
		mustf(t, !isErr && got == "ran "+tool, "%s: %q", tool, got)
	}
	// Another session has found nothing.
	other := &executor{t: t, url: h.url("/mcp")}
	mustf(t, slices.Equal(other.tools(), []string{findtools.Name}), "another session lists %v", other.tools())
}

// TestFindToolsPerCallerView: find_tools ranks only what the caller may
// run, and a caller that may run nothing cannot search.
func TestFindToolsPerCallerView(t *testing.T) {
	up := newCountingUpstream(t, "github", searchTools...)
	auth := authFor(
		callers.TokenCaller{Name: "reader", Token: "tok-restricted", Ceiling: autonomy.Restricted},
		callers.TokenCaller{Name: "writer", Token: "tok-full", Ceiling: autonomy.Full},
		callers.TokenCaller{Name: "manual-bot", Token: "tok-manual", Ceiling: autonomy.Manual},
	)
	h := newTestHubOpts(t, []config.ServerSpec{up.spec}, hubOpts{Auth: auth, FindToolsAbove: 2})
	h.waitConnected("github")
	reads := map[string]bool{"get_issue": true, "list_issues": true, "list_pull_requests": true, "search_code": true}
	tests := []struct {
		token     string
		query     string
		wantFirst string // "" when nothing may be found
		writes    bool   // whether write tools may be found
	}{
		{"tok-restricted", "create a pull request", "list_pull_requests", false},
		{"tok-restricted", "delete repository", "", false},
		{"tok-restricted", "merge pull request", "list_pull_requests", false},
		{"tok-full", "create a pull request", "create_pull_request", true},
		{"tok-full", "delete repository", "delete_repository", true},
	}
	for _, tt := range tests {
		t.Run(tt.token+" "+tt.query, func(t *testing.T) {
			e := &executor{t: t, url: h.url("/mcp"), token: tt.token}
			mustf(t, slices.Equal(e.tools(), []string{findtools.Name}), "lists %v", e.tools())
			_, res := e.post("tools/call", map[string]any{"name": findtools.Name, "arguments": map[string]any{"query": tt.query, "limit": 50}})
			r, _ := res["result"].(map[string]any)
			mustf(t, r != nil && r["isError"] != true, "find_tools: %v", res)
			names := structuredNames(t, r["structuredContent"])
			if tt.wantFirst == "" {
				mustf(t, len(names) == 0, "found %v, want nothing", names)
			} else {
				mustf(t, len(names) > 0 && names[0] == tt.wantFirst, "found %v, want %s first", names, tt.wantFirst)
			}
			for _, n := range names {
				mustf(t, tt.writes || reads[n], "restricted caller found write tool %s", n)
			}
			for _, n := range e.tools()[1:] {
				mustf(t, tt.writes || reads[n], "restricted caller lists write tool %s", n)
			}
		})
	}
	manual := &executor{t: t, url: h.url("/mcp"), token: "tok-manual"}
	mustf(t, len(manual.tools()) == 0, "manual lists %v", manual.tools())
	text, isErr := manual.call(findtools.Name, false)
	mustf(t, isErr && strings.HasPrefix(text, "BLOCKED: Manual autonomy"), "manual find_tools = %q", text)
}

// TestFindToolsBelowThresholdChangesNothing: at or below the threshold the
// list is the full one, byte for byte the list of a hub without tool
// search, on the fast path and on mcp-go's.
func TestFindToolsBelowThresholdChangesNothing(t *testing.T) {
	up := newCountingUpstream(t, "github", searchTools...)
	off := newTestHubOpts(t, []config.ServerSpec{up.spec}, hubOpts{})
	on := newTestHubOpts(t, []config.ServerSpec{up.spec}, hubOpts{FindToolsAbove: len(searchTools)})
	off.waitConnected("github")
	on.waitConnected("github")
	// What each hub's list cache answers a plain tools/list with.
	cached := func(h *testHub) (answer []byte, tools int) {
		resp, err := http.DefaultClient.Do(listRequest(t, h.url("/mcp"), "1", "", false, h.initializeSession(t)))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		answer, err = io.ReadAll(resp.Body)
		var out struct{ Result mcp.ListToolsResult }
		mustf(t, err == nil && json.Unmarshal(answer, &out) == nil && resp.Header.Get("Vary") != "", "not the list cache's answer: %s %v %s", resp.Status, resp.Header, answer)
		return answer, len(out.Result.Tools)
	}
	want, _ := cached(off)
	got, n := cached(on)
	mustf(t, bytes.Equal(got, want) && n == len(searchTools), "cached list differs:\n%s\n%s", got, want)
	e := &executor{t: t, url: on.url("/mcp")}
	mustf(t, len(e.tools()) == len(searchTools) && !slices.Contains(e.tools(), findtools.Name), "executor lists %v", e.tools())
	tr, err := transport.NewSSE(on.url("/sse"))
	if err != nil {
		t.Fatal(err)
	}
	c, _ := dialFace(t, tr)
	names := toolNames(t, c)
	mustf(t, len(names) == len(searchTools) && !slices.Contains(names, findtools.Name), "sse lists %v", names)
}

// TestFoundSetGoesWithTheSession: a session's DELETE drops what it found.
func TestFoundSetGoesWithTheSession(t *testing.T) {
	up := newCountingUpstream(t, "github", searchTools...)
	h := newTestHubOpts(t, []config.ServerSpec{up.spec}, hubOpts{FindToolsAbove: 3})
	h.waitConnected("github")
	c, _ := h.dial()
	_, found := findResult(t, c, "search code", 1)
	mustf(t, slices.Equal(found, []string{"search_code"}), "found %v", found)
	id := c.GetSessionId()
	mustf(t, id != "" && len(h.srv.tools.find.Found(id)) == 1, "no found set kept for session %q", id)
	_ = c.Close() // DELETE /mcp
	waitFor(t, "the found set forgotten", func() bool { return len(h.srv.tools.find.Found(id)) == 0 })
}

// TestFindToolsModernCaller: a 2026-07-28 caller has no session to keep
// what it found; its list is find_tools alone, and it calls by name.
func TestFindToolsModernCaller(t *testing.T) {
	up := newCountingUpstream(t, "github", searchTools...)
	h := newTestHubOpts(t, []config.ServerSpec{up.spec}, hubOpts{FindToolsAbove: 3})
	h.waitConnected("github")
	s := h.dialSession("", false)
	mustf(t, slices.Equal(toolNames(t, s.c), []string{findtools.Name}), "modern caller lists %v", toolNames(t, s.c))
	_, found := findResult(t, s.c, "list issues", 1)
	mustf(t, slices.Equal(found, []string{"list_issues"}), "found %v", found)
	text, isErr := call(t, s.c, "list_issues", nil)
	mustf(t, !isErr && text == "ran list_issues", "list_issues = %q", text)
}

// TestFindToolsLeavesAppOnlyTools: find_tools answers the model, so a tool
// meant for its MCP App alone (_meta.ui.visibility without "model") is
// never found; the app still calls it by name.
func TestFindToolsLeavesAppOnlyTools(t *testing.T) {
	s := mcpserver.NewMCPServer("charts", "1")
	for name, vis := range map[string][]any{"show_chart": {"model", "app"}, "refresh_chart": {"app"}, "export_chart": nil} {
		tool := mcp.NewTool(name, mcp.WithDescription("chart "+name))
		if vis != nil {
			tool.Meta = mcp.NewMetaFromMap(map[string]any{"ui": map[string]any{"resourceUri": "ui://charts/app.html", "visibility": vis}})
		}
		s.AddTool(tool, func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("ran " + name), nil
		})
	}
	spec := config.ServerSpec{Name: "charts", URL: serveOn(t, mcpserver.NewStreamableHTTPServer(s)) + "/mcp", Transport: config.TransportStreamableHTTP}
	h := newTestHubOpts(t, []config.ServerSpec{spec}, hubOpts{FindToolsAbove: 1})
	h.waitConnected("charts")
	e := &executor{t: t, url: h.url("/mcp")}
	_, res := e.post("tools/call", map[string]any{"name": findtools.Name, "arguments": map[string]any{"query": "chart", "limit": 50}})
	r, _ := res["result"].(map[string]any)
	mustf(t, r != nil && r["isError"] != true, "find_tools: %v", res)
	found := structuredNames(t, r["structuredContent"])
	slices.Sort(found)
	mustf(t, slices.Equal(found, []string{"export_chart", "show_chart"}), "find_tools found %v, want every chart tool but the app-only refresh_chart", found)
	got, isErr := e.call("refresh_chart", false)
	mustf(t, !isErr && got == "ran refresh_chart", "the app's call of refresh_chart: %q", got)
}
