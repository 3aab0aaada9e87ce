package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/mcpws"
	"github.com/purko-io/mcp-hub/internal/ratelimit"
)

// stdioClient is an initialized mcp-go client of the hub's stdio face,
// served at level, and what ends it (also at the test's end). The hub
// has one stdio session at a time (mcp-go's is always called "stdio").
func (h *testHub) stdioClient(t *testing.T, level autonomy.Level) (*client.Client, func()) {
	t.Helper()
	tr, end := h.stdioTransport(level, "")
	c, _ := dialFace(t, tr)
	stop := sync.OnceFunc(func() { _ = c.Close(); end() })
	t.Cleanup(stop)
	return c, stop
}

// stdioTransport is a client transport of the hub's stdio face, served at
// level for endpoint ("" the whole catalog), and what ends the face.
func (h *testHub) stdioTransport(level autonomy.Level, endpoint string) (transport.Interface, func()) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = h.srv.ServeStdio(ctx, inR, outW, level, endpoint) }()
	return transport.NewIO(outR, inW, nil), func() { cancel(); inW.Close(); outR.Close(); <-done }
}

// wideTools are the tools of a wide upstream: n of them, a third each
// reads, creates and deletes, every description naming a widget.
func wideTools(n int) []string {
	verbs := []string{"get", "create", "delete"}
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s_widget_%02d", verbs[i%3], i)
	}
	return out
}

// TestCurationOnEveryFace is issue 27's measure: a server of 90 tools
// curated down to an allow-list of 12 (one renamed) publishes exactly
// those 12 to every face: tools/list on Streamable HTTP, SSE, WebSocket
// and stdio, the REST listing, and find_tools; a call by a published name
// runs on every face (the fast path, mcp-go's, SSE, WebSocket, stdio and
// REST), and a call of a tool left out, or of the renamed tool by the
// server's own name, is an unknown tool everywhere.
func TestCurationOnEveryFace(t *testing.T) {
	tools := wideTools(90)
	wide := newCountingUpstream(t, "wide", tools...)
	allow := tools[:12]
	spec := wide.spec
	spec.Tools = &config.ToolCuration{
		Allow: allow,
		Deny:  []string{"delete_widget_8*"}, // none of the 12: deny wins only where it matches
		Overrides: map[string]config.ToolOverride{
			"get_widget_00": {Name: "fetch_first_widget", Description: "The first widget, as the operator words it."},
		},
	}
	if err := spec.Normalize(); err != nil {
		t.Fatal(err)
	}
	callerLimits := map[string]*ratelimit.Limits{}
	for _, n := range faceCallers {
		callerLimits[n] = nil
	}
	h := newTestHubOpts(t, []config.ServerSpec{spec}, hubOpts{Auth: limitedTokens(callerLimits), FindToolsAbove: 50})
	h.waitConnected("wide")

	want := append([]string{"fetch_first_widget"}, allow[1:]...)
	slices.Sort(want)
	upstreamOnly := func(names []string) []string {
		var out []string
		for _, n := range names {
			if strings.Contains(n, "widget") {
				out = append(out, n)
			}
		}
		slices.Sort(out)
		return out
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	bearer := func(token string) transport.StreamableHTTPCOption {
		return transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token})
	}
	streamable, err := transport.NewStreamableHTTP(h.url("/mcp"), bearer("tok-mcpgo"))
	if err != nil {
		t.Fatal(err)
	}
	sse, err := transport.NewSSE(h.url("/sse"), transport.WithHeaders(map[string]string{"Authorization": "Bearer tok-sse"}))
	if err != nil {
		t.Fatal(err)
	}
	ws := mcpws.NewClientTransport(strings.Replace(h.url("/ws"), "http://", "ws://", 1), http.Header{"Authorization": {"Bearer tok-ws"}})
	lists := map[string]*client.Client{
		"streamable": func() *client.Client { c, _ := dialFace(t, streamable); return c }(),
		"sse":        func() *client.Client { c, _ := dialFace(t, sse); return c }(),
		"websocket":  func() *client.Client { c, _ := dialFace(t, ws); return c }(),
	}
	stdio, stopStdio := h.stdioClient(t, autonomy.Full)
	lists["stdio"] = stdio
	for face, c := range lists {
		if got := upstreamOnly(toolNames(t, c)); !slices.Equal(got, want) {
			t.Errorf("%s tools/list: %d tools %v, want the %d of the allow-list %v", face, len(got), got, len(want), want)
		}
	}
	res, err := lists["streamable"].ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range res.Tools {
		if tl.Name == "fetch_first_widget" && tl.Description != "The first widget, as the operator words it." {
			t.Errorf("the renamed tool is listed with %q, not the override's description", tl.Description)
		}
	}

	var rest struct {
		Servers []struct {
			Name  string `json:"name"`
			Tools []struct {
				Name         string `json:"name"`
				OriginalName string `json:"originalName"`
				Description  string `json:"description"`
			} `json:"tools"`
		} `json:"servers"`
	}
	getJSONAuth := func(path string, v any) {
		resp, body := h.send(t, http.MethodGet, path, nil, "Authorization", "Bearer tok-rest")
		mustf(t, resp.StatusCode == http.StatusOK, "GET %s: %s %s", path, resp.Status, body)
		mustf(t, json.Unmarshal([]byte(body), v) == nil, "GET %s: %s", path, body)
	}
	getJSONAuth("/api/mcp/tools", &rest)
	var listed []string
	for _, sv := range rest.Servers {
		if sv.Name != "wide" {
			continue
		}
		for _, tl := range sv.Tools {
			listed = append(listed, tl.Name)
			if tl.Name == "fetch_first_widget" {
				mustf(t, tl.OriginalName == "get_widget_00" && tl.Description == "The first widget, as the operator words it.",
					"REST listing of the renamed tool: originalName %q, description %q", tl.OriginalName, tl.Description)
			} else {
				mustf(t, tl.OriginalName == "", "%s listed with originalName %q", tl.Name, tl.OriginalName)
			}
		}
	}
	slices.Sort(listed)
	mustf(t, slices.Equal(listed, want), "/api/mcp/tools lists %v, want %v", listed, want)

	_, found := findResult(t, lists["streamable"], "widget", 50)
	mustf(t, slices.Equal(upstreamOnly(found), want), "find_tools finds %v, want %v", upstreamOnly(found), want)

	stopStdio() // everyFace opens its own
	for _, f := range h.everyFace(ctx, t) {
		t.Run(f.name, func(t *testing.T) {
			for _, tool := range []string{"fetch_first_widget", "create_widget_10"} {
				r := f.call(t, tool)
				mustf(t, r.Error == nil && strings.Contains(string(r.Result), "ran "), "%s: %+v %s, want it run", tool, r.Error, r.Result)
			}
			for _, tool := range []string{"get_widget_00", "get_widget_12", "delete_widget_89"} {
				r := f.call(t, tool)
				mustf(t, r.Error != nil && r.Error.Code == -32602 && strings.Contains(r.Error.Message, "'"+tool+"' not found"),
					"%s (not published): %+v %s, want unknown tool", tool, r.Error, r.Result)
			}
		})
	}
	mustf(t, wide.count("get_widget_00") == 6 && wide.count("create_widget_10") == 6, "the upstream ran get_widget_00 %d and create_widget_10 %d times, want 6 each",
		wide.count("get_widget_00"), wide.count("create_widget_10"))
	for _, tool := range []string{"get_widget_12", "delete_widget_89"} {
		mustf(t, wide.count(tool) == 0, "the upstream ran %s, which is not published", tool)
	}
}

// TestCurationClassifies: an override's readOnlyHint is the operator's
// statement, as toolPolicy is: a write tool marked read-only is listed and
// runs at restricted; a read-only tool marked readOnlyHint false is
// neither.
func TestCurationClassifies(t *testing.T) {
	gh := newCountingUpstream(t, "github", "create_issue", "get_issue", "list_issues")
	spec := gh.spec
	spec.Tools = &config.ToolCuration{Overrides: map[string]config.ToolOverride{
		"create_issue": {Annotations: &config.ToolAnnotations{ReadOnlyHint: ptrBool(true)}},
		"get_issue":    {Annotations: &config.ToolAnnotations{ReadOnlyHint: ptrBool(false), Title: "Issue"}},
	}}
	h := newTestHub(t, []config.ServerSpec{spec})
	h.waitConnected("github")
	c, _ := h.stdioClient(t, autonomy.Restricted)
	names := toolNames(t, c)
	mustf(t, contains(names, "create_issue") && contains(names, "list_issues") && !contains(names, "get_issue"),
		"restricted tools/list %v: want create_issue (read-only by override) and list_issues, not get_issue (a write by override)", names)
	got, isErr := call(t, c, "create_issue", nil)
	mustf(t, !isErr && got == "ran create_issue", "create_issue at restricted = %q", got)
	got, isErr = call(t, c, "get_issue", nil)
	mustf(t, isErr && strings.HasPrefix(got, "BLOCKED"), "get_issue at restricted = %q, want BLOCKED", got)
	mustf(t, gh.count("get_issue") == 0, "the upstream ran get_issue at restricted")
}

func ptrBool(b bool) *bool { return &b }
