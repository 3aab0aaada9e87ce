package server

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/registry"
)

// echoLocal is a hub-run tool that answers with its arguments and bindings.
func echoLocal(name string, kind autonomy.Kind, method string) registry.LocalTool {
	return registry.LocalTool{
		Def: mcp.NewTool(name, mcp.WithString("x")), Kind: kind, Method: method,
		Run: func(ctx context.Context, args map[string]any, b map[string]string) *mcp.CallToolResult {
			return mcp.NewToolResultText(fmt.Sprintf("%s x=%v caller=%s workflow=%s step=%s", name, args["x"], b["caller"], b["workflow"], b["step"]))
		},
	}
}

func TestLocalToolsBesideUpstreams(t *testing.T) {
	// An upstream that also offers a tool named like the builtin.
	up := newCountingUpstream(t, "lint", "static-analysis", "get_issue")
	local := []registry.LocalTool{
		echoLocal("static-analysis", autonomy.Builtin, ""),
		echoLocal("post_note", autonomy.API, "POST"),
		echoLocal("get_weather", autonomy.API, "GET"),
	}
	auth := authFor(callers.TokenCaller{Name: "reader", Token: "r", Ceiling: autonomy.Restricted},
		callers.TokenCaller{Name: "writer", Token: "w", Ceiling: autonomy.Full})
	h := newTestHubAuth(t, []config.ServerSpec{up.spec}, auth, func(o *registry.Options) { o.Local = local })
	h.waitConnected("lint")

	writer := &executor{t: t, url: h.url("/mcp"), token: "w"}
	names := writer.tools()
	for _, want := range []string{"static-analysis", "lint__static-analysis", "post_note", "get_weather", "get_issue"} {
		mustf(t, contains(names, want), "tools/list %v lacks %s", names, want)
	}
	for _, viaMCP := range []bool{false, true} {
		text, isErr := writer.call("static-analysis", viaMCP)
		mustf(t, !isErr && strings.HasPrefix(text, "static-analysis x=<nil> caller=writer"), "builtin (mcp path %v) = %q", viaMCP, text)
	}
	mustf(t, up.count("static-analysis") == 0, "the builtin's name reached the upstream")
	text, _ := writer.call("lint__static-analysis", false)
	mustf(t, text == "ran static-analysis" && up.count("static-analysis") == 1, "prefixed upstream tool = %q", text)

	// Workflow and step come from the executor's headers, the caller from
	// the identity.
	_, res := writer.post("tools/call", map[string]any{"name": "post_note", "arguments": map[string]any{"x": 1}})
	mustf(t, strings.Contains(fmt.Sprint(res), "post_note x=1 caller=writer"), "api tool = %v", res)

	reader := &executor{t: t, url: h.url("/mcp"), token: "r"}
	rnames := reader.tools()
	mustf(t, contains(rnames, "static-analysis") && contains(rnames, "get_weather") && !contains(rnames, "post_note"), "restricted sees %v", rnames)
	text, isErr := reader.call("post_note", false)
	mustf(t, isErr && strings.HasPrefix(text, "BLOCKED: Restricted autonomy — write tool 'post_note'"), "restricted post_note = %q", text)

	var l struct {
		Servers []struct {
			Name, Transport, Status string
			Tools                   []string
		}
	}
	getJSON(t, h.url("/api/mcp/tools?format=names"), &l)
	mustf(t, len(l.Servers) == 3 && l.Servers[0].Name == "hub" && l.Servers[2].Name == "api" && l.Servers[0].Status == "connected", "listing = %+v", l)
}
