package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/registry"
	"github.com/purko-io/mcp-hub/internal/upstream/carried"
)

// The revision matrix's extensions axis: every caller revision with every
// upstream revision, each extension once with it and once without.
//
//	U  MCP Apps with: the hub carries it (the default) and a 2026-07-28
//	   caller declares it itself. The caller is told of the extension,
//	   the upstream was declared it (by the hub on its session and its own
//	   requests; by the caller on a 2026-07-28 caller's request to a
//	   2026-07-28 upstream), and the app tool's _meta.ui.resourceUri
//	   reads, through the hub, as the app's HTML.
//	u  MCP Apps without: a hub that carries nothing (upstream.extensions:
//	   {}) and a caller that declares nothing. Nobody is told of it, the
//	   upstream is declared nothing, and the app tool still answers.
//	T  Tasks with: the caller asks for a task (a 2025-11-25 caller with the
//	   call's task member, a 2026-07-28 caller by declaring the Tasks
//	   extension), gets a hub handle, and reads the result when the task
//	   ends (tasks/result; tasks/get's inlined result). Only where both
//	   revisions have tasks: 2025-11-25's, or the extension (its upstream
//	   here is the server of taskext_test.go: no SDK serves it yet).
//	t  Tasks without: the same tool, called plainly, answers at once.
//	-  the cell's revisions have no tasks.
var extMatrixWant = [][]string{
	{"Uu-t", "Uu-t", "Uu-t", "Uu-t", "Uu-t"},
	{"Uu-t", "Uu-t", "Uu-t", "Uu-t", "Uu-t"},
	{"Uu-t", "Uu-t", "Uu-t", "Uu-t", "Uu-t"},
	{"Uu-t", "Uu-t", "Uu-t", "UuTt", "UuTt"},
	{"Uu-t", "Uu-t", "Uu-t", "UuTt", "UuTt"},
}

// extMatrixUpstream is an mcp-go server of one revision with an MCP App
// (app_NAME, its UI at ui://NAME/app.html), a tool that may run as a task
// (brew_NAME, 2025-11-25's tasks) and declared_NAME (extUpstream).
func extMatrixUpstream(t *testing.T, rev string) config.ServerSpec {
	t.Helper()
	name := "x" + strings.ReplaceAll(rev, "-", "")
	s := mcpserver.NewMCPServer(name, "1", mcpserver.WithToolCapabilities(true), mcpserver.WithResourceCapabilities(false, false),
		mcpserver.WithTaskCapabilities(true, true, true))
	tool, handler := declaredTool(name)
	s.AddTool(tool, handler)
	uri := "ui://" + name + "/app.html"
	app := mcp.NewTool("app_" + name)
	app.Meta = mcp.NewMetaFromMap(map[string]any{"ui": map[string]any{"resourceUri": uri}})
	s.AddTool(app, func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("app of " + name), nil
	})
	s.AddResource(mcp.NewResource(uri, "app", mcp.WithMIMEType(appMIMEType)), func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, MIMEType: appMIMEType, Text: "<p>" + name + "</p>"}}, nil
	})
	brew := mcp.NewTool("brew_" + name)
	brew.Execution = &mcp.ToolExecution{TaskSupport: mcp.TaskSupportOptional}
	s.AddTool(brew, func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("brewed by " + name), nil
	})
	var handlerOf http.Handler = mcpserver.NewStreamableHTTPServer(s, mcpserver.WithStreamableHTTPProtocolVersions(rev))
	tr, path := config.TransportStreamableHTTP, "/mcp"
	if rev == rev20241105 {
		handlerOf, tr, path = mcpserver.NewSSEServer(s), config.TransportSSE, "/sse"
	}
	return config.ServerSpec{Name: name, URL: serveOn(t, handlerOf) + path, Transport: tr, Source: "test", ProtocolVersion: rev}
}

// appMIMEType is an MCP App's HTML.
const appMIMEType = "text/html;profile=mcp-app"

// extCell is what one cell's caller does: call a tool (its text), list
// the tools' _meta.ui.resourceUri, read a resource, and say whether the
// hub told it of MCP Apps.
type extCell struct {
	call  func(t *testing.T, tool string) string
	uiURI func(t *testing.T, tool string) string
	read  func(t *testing.T, uri string) string
	told  func(t *testing.T) bool
	// tasks is the caller's task client, nil below 2025-11-25.
	tasks *extCaller
}

// extCellCaller is the caller of rev on h: a session (an mcp-go client)
// below 2026-07-28, sessionless requests at it (declaring MCP Apps when
// ui is set).
func extCellCaller(t *testing.T, h *testHub, rev string, ui bool) extCell {
	if rev == rev20260728 {
		c := &extCaller{h: h, modern: true, ui: ui}
		tasks := *c
		tasks.tasks = true
		return extCell{
			call: func(t *testing.T, tool string) string {
				res, err := c.call(t, "tools/call", fmt.Sprintf(`{"name":%q}`, tool))
				mustf(t, err == nil, "tools/call %s: %+v", tool, err)
				return string(res)
			},
			uiURI: func(t *testing.T, tool string) string {
				res, err := c.call(t, "tools/list", `{}`)
				mustf(t, err == nil, "tools/list: %+v", err)
				return uiURIOf(t, res, tool)
			},
			read: func(t *testing.T, uri string) string {
				res, err := c.call(t, "resources/read", fmt.Sprintf(`{"uri":%q}`, uri))
				mustf(t, err == nil, "resources/read %s: %+v", uri, err)
				return contentOf(t, res)
			},
			told:  func(t *testing.T) bool { return h.declaredTo(t, "/mcp", "", true)[config.ExtensionUI] != nil },
			tasks: &tasks,
		}
	}
	s := h.matrixCaller(rev)
	cell := extCell{
		call: func(t *testing.T, tool string) string { text, _ := call(t, s.c, tool, nil); return text },
		uiURI: func(t *testing.T, tool string) string {
			res, err := s.c.ListTools(ctx10(t), mcp.ListToolsRequest{})
			mustf(t, err == nil, "tools/list: %v", err)
			raw, _ := json.Marshal(res)
			return uiURIOf(t, raw, tool)
		},
		read: func(t *testing.T, uri string) string {
			rr := mcp.ReadResourceRequest{}
			rr.Params.URI = uri
			res, err := s.c.ReadResource(ctx10(t), rr)
			mustf(t, err == nil, "resources/read %s: %v", uri, err)
			raw, _ := json.Marshal(res)
			return contentOf(t, raw)
		},
		told: func(*testing.T) bool { return s.c.GetServerCapabilities().Extensions[config.ExtensionUI] != nil },
	}
	if rev == rev20251125 {
		cell.tasks = &extCaller{h: h}
		*cell.tasks = cell.tasks.open(t)
	}
	return cell
}

// contentOf is the MIME type and text of a resources/read result's one
// content.
func contentOf(t *testing.T, res json.RawMessage) string {
	t.Helper()
	var got struct {
		Contents []struct{ MIMEType, Text string }
	}
	mustf(t, json.Unmarshal(res, &got) == nil && len(got.Contents) == 1, "resources/read = %s", res)
	return got.Contents[0].MIMEType + " " + got.Contents[0].Text
}

// uiURIOf is tool's _meta.ui.resourceUri in a tools/list result.
func uiURIOf(t *testing.T, list json.RawMessage, tool string) string {
	t.Helper()
	var got struct {
		Tools []struct {
			Name string `json:"name"`
			Meta struct {
				UI struct {
					ResourceURI string `json:"resourceUri"`
				} `json:"ui"`
			} `json:"_meta"`
		} `json:"tools"`
	}
	mustf(t, json.Unmarshal(list, &got) == nil, "tools/list = %s", list)
	for _, tl := range got.Tools {
		if tl.Name == tool {
			return tl.Meta.UI.ResourceURI
		}
	}
	t.Fatalf("tools/list lacks %s", tool)
	return ""
}

// TestExtensionMatrix runs the extensions axis in every cell of the
// revision matrix and prints it as TestRevisionMatrix prints its own.
func TestExtensionMatrix(t *testing.T) {
	var specs []config.ServerSpec
	for _, rev := range matrixRevisions {
		specs = append(specs, extMatrixUpstream(t, rev))
	}
	_, ext := newExtTaskServer(t)
	specs = append(specs, ext)
	names := func() (out []string) {
		for _, s := range specs {
			out = append(out, s.Name)
		}
		return out
	}
	with := newTestHub(t, specs)
	without := newTestHub(t, specs, func(o *registry.Options) { o.Upstream.Carried = carried.New(config.Extensions{}) })
	with.waitConnected(names()...)
	without.waitConnected(names()...)

	start := time.Now()
	ran := map[[2]string]string{}
	for _, callerRev := range matrixRevisions {
		withUI, withoutUI := extCellCaller(t, with, callerRev, true), extCellCaller(t, without, callerRev, false)
		for _, upRev := range matrixRevisions {
			var done []string
			ok := t.Run("caller="+callerRev+"/upstream="+upRev, func(t *testing.T) {
				extMatrixCell(t, withUI, withoutUI, callerRev, upRev, func(check string) { done = append(done, check) })
			})
			result := strings.Join(done, "")
			if !ok {
				result = "FAIL after " + result
			}
			ran[[2]string{callerRev, upRev}] = result
		}
	}
	reportMatrix(t, "extension matrix", time.Since(start), ran, extMatrixWant)
}

// extMatrixCell runs one cell's checks (TestExtensionMatrix), calling done
// with each check's letter once it passed.
func extMatrixCell(t *testing.T, withUI, withoutUI extCell, callerRev, upRev string, done func(string)) {
	name := "x" + strings.ReplaceAll(upRev, "-", "")

	mustf(t, withUI.told(t), "a caller of the hub that carries MCP Apps was not told of it")
	declared := withUI.call(t, "declared_"+name)
	mustf(t, strings.Contains(declared, config.ExtensionUI), "the upstream was declared %s, want MCP Apps", declared)
	uri := withUI.uiURI(t, "app_"+name)
	html := withUI.read(t, uri)
	mustf(t, html == appMIMEType+" <p>"+name+"</p>", "resources/read %s = %s", uri, html)
	done("U")

	mustf(t, !withoutUI.told(t), "a caller of the hub that carries nothing was told of MCP Apps")
	declared = withoutUI.call(t, "declared_"+name)
	mustf(t, !strings.Contains(declared, config.ExtensionUI), "the upstream was declared %s, want nothing", declared)
	mustf(t, strings.Contains(withoutUI.call(t, "app_"+name), "app of "+name), "the app tool without MCP Apps did not answer")
	done("u")

	brew, brewed := "brew_"+name, "brewed by "+name
	if upRev == rev20260728 {
		brew, brewed = "brew", "brewed"
	}
	switch {
	case withUI.tasks != nil && callerRev == rev20260728 && upRev < rev20251125:
		// Declared, to a server of a revision without tasks: whatever the
		// server made of the hub's request (mcp-go makes a task at any
		// revision), in 2026-07-28's shape.
		res, err := withUI.tasks.call(t, "tools/call", fmt.Sprintf(`{"name":%q}`, brew))
		var got struct{ ResultType, TaskID string }
		_ = json.Unmarshal(res, &got)
		mustf(t, err == nil && (got.ResultType == "task" && strings.HasPrefix(got.TaskID, "mht1.") ||
			got.ResultType == "complete" && strings.Contains(string(res), brewed)),
			"tools/call %s with the Tasks extension, to a server of %s = %s %+v", brew, upRev, res, err)
		done("-")
	case withUI.tasks == nil || upRev < rev20251125:
		done("-")
	case callerRev == rev20260728:
		c := withUI.tasks
		res, err := c.call(t, "tools/call", fmt.Sprintf(`{"name":%q}`, brew))
		var task struct{ ResultType, TaskID string }
		mustf(t, err == nil && json.Unmarshal(res, &task) == nil && task.ResultType == "task" && strings.HasPrefix(task.TaskID, "mht1."),
			"tools/call %s with the Tasks extension = %s %+v", brew, res, err)
		var last json.RawMessage
		waitFor(t, "the task completed", func() bool {
			last, err = c.call(t, "tasks/get", fmt.Sprintf(`{"taskId":%q}`, task.TaskID))
			return err == nil && strings.Contains(string(last), `"status":"completed"`)
		})
		mustf(t, strings.Contains(string(last), brewed), "the completed task = %s", last)
		done("T")
	default:
		c := withUI.tasks
		res, err := c.call(t, "tools/call", fmt.Sprintf(`{"name":%q,"task":{"ttl":60000}}`, brew))
		var created struct{ Task struct{ TaskID string } }
		mustf(t, err == nil && json.Unmarshal(res, &created) == nil && strings.HasPrefix(created.Task.TaskID, "mht1."),
			"a task-augmented tools/call of %s = %s %+v", brew, res, err)
		res, err = c.call(t, "tasks/result", fmt.Sprintf(`{"taskId":%q}`, created.Task.TaskID))
		mustf(t, err == nil && strings.Contains(string(res), brewed), "tasks/result = %s %+v", res, err)
		done("T")
	}
	text := withoutUI.call(t, brew)
	mustf(t, strings.Contains(text, brewed) || upRev == rev20260728 && strings.Contains(text, "brewed at once"), "%s called plainly = %s", brew, text)
	done("t")
}
