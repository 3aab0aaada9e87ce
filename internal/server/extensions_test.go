package server

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/registry"
	"github.com/purko-io/mcp-hub/internal/upstream/carried"
)

// extUpstream is a server that declares extensions, with declared_NAME
// (declaredTool).
func extUpstream(t *testing.T, name, rev string, ext map[string]any) config.ServerSpec {
	t.Helper()
	opts := []mcpserver.ServerOption{mcpserver.WithToolCapabilities(true)}
	if ext != nil {
		opts = append(opts, mcpserver.WithExtensions(ext))
	}
	s := mcpserver.NewMCPServer(name, "1", opts...)
	s.AddTool(declaredTool(name))
	url := serveOn(t, mcpserver.NewStreamableHTTPServer(s, mcpserver.WithStreamableHTTPProtocolVersions(rev))) + "/mcp"
	return config.ServerSpec{Name: name, URL: url, Transport: config.TransportStreamableHTTP, Source: "test", ProtocolVersion: rev}
}

// declaredTool is declared_NAME, which answers with the extensions the
// hub declared to its server: on its session (initialize), or on the
// request (2026-07-28).
func declaredTool(name string) (mcp.Tool, mcpserver.ToolHandlerFunc) {
	return mcp.NewTool("declared_" + name), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var caps mcp.ClientCapabilities
		if info := mcpserver.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern && info.ClientCapabilities != nil {
			caps = *info.ClientCapabilities
		} else if cs, ok := mcpserver.ClientSessionFromContext(ctx).(mcpserver.SessionWithClientInfo); ok {
			caps = cs.GetClientCapabilities()
		}
		b, _ := json.Marshal(caps.Extensions)
		return mcp.NewToolResultText(string(b)), nil
	}
}

// declaredTo sends a raw initialize (2025-11-25) or server/discover
// (2026-07-28) to path as token and returns the extensions the hub
// declared in the result's capabilities.
func (h *testHub) declaredTo(t *testing.T, path, token string, modern bool) map[string]any {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	if modern {
		body = `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	}
	header := []string{"Authorization", "Bearer " + token}
	if modern {
		header = append(header, mcp.HeaderProtocolVersion, mcp.ProtocolVersion20260728, mcp.HeaderMethod, string(mcp.MethodServerDiscover))
	}
	_, reply := h.send(t, http.MethodPost, path, strings.NewReader(body), header...)
	var out struct {
		Result struct {
			Capabilities struct {
				Extensions map[string]any `json:"extensions"`
			} `json:"capabilities"`
		} `json:"result"`
		Error *json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal([]byte(reply), &out); err != nil || out.Error != nil {
		t.Fatalf("%s on %s: %v %s", map[bool]string{false: "initialize", true: "server/discover"}[modern], path, err, *out.Error)
	}
	return out.Result.Capabilities.Extensions
}

// TestExtensionNegotiation: the hub declares to each caller the Tasks
// extension (on the faces that route tasks, to callers who may call
// tools) and the carried extensions a server it may reach declares, in
// initialize and in server/discover; an extension the hub does not carry
// is declared to nobody; to its upstreams it declares what it carries, on
// their sessions and on every 2026-07-28 request, where a 2026-07-28
// caller's own extensions stand in for the hub's, pared to the carried.
func TestExtensionNegotiation(t *testing.T) {
	uiSettings := map[string]any{"csp": map[string]any{"connectDomains": []any{}}}
	appsExt := map[string]any{config.ExtensionUI: uiSettings, "com.example/unknown": map[string]any{}}
	specs := []config.ServerSpec{
		extUpstream(t, "apps", mcp.ProtocolVersion20251125, appsExt),
		extUpstream(t, "modern", mcp.ProtocolVersion20260728, appsExt),
		extUpstream(t, "plain", mcp.ProtocolVersion20251125, nil),
	}
	tokens := []callers.TokenCaller{
		{Name: "full", Token: "tok-full", Ceiling: autonomy.Full},
		{Name: "manual", Token: "tok-manual", Ceiling: autonomy.Manual},
	}
	h := newTestHubAuth(t, specs, callers.NewAuth(tokens, nil, nil))
	h.waitConnected("apps", "modern", "plain")

	tasksAndUI := map[string]any{config.ExtensionTasks: map[string]any{}, config.ExtensionUI: uiSettings}
	cases := []struct {
		name, path, token string
		want              map[string]any
	}{
		{"every server", "/mcp", "tok-full", tasksAndUI},
		{"a server that declares ui", "/servers/apps/mcp", "tok-full", tasksAndUI},
		{"a server without ui", "/servers/plain/mcp", "tok-full", map[string]any{config.ExtensionTasks: map[string]any{}}},
		{"manual", "/mcp", "tok-manual", nil},
	}
	for _, tc := range cases {
		for _, modern := range []bool{false, true} {
			t.Run(tc.name+map[bool]string{false: "/initialize", true: "/discover"}[modern], func(t *testing.T) {
				if got := h.declaredTo(t, tc.path, tc.token, modern); !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("declared %v, want %v", got, tc.want)
				}
			})
		}
	}
	t.Run("a face without tasks", func(t *testing.T) {
		c := h.dialAs(t, "ws", "tok-full")
		got := c.GetServerCapabilities().Extensions
		if _, ok := got[config.ExtensionTasks]; ok || got[config.ExtensionUI] == nil {
			t.Fatalf("/ws declared %v, want ui and not tasks", got)
		}
	})

	// A 2025-11-25 caller's call: the upstream knows what the hub
	// carries (a session's initialize, a 2026-07-28 request's _meta).
	carriedUI := `{\"io.modelcontextprotocol/ui\":{\"mimeTypes\":[\"text/html;profile=mcp-app\"]}}`
	for _, server := range []string{"apps", "modern"} {
		reply := h.post(t, "tok-full", "", "", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"declared_`+server+`"}}`)
		mustf(t, strings.Contains(reply, `"text":"`+carriedUI+`"`), "%s was declared %s, want %s", server, reply, carriedUI)
	}
	// A 2026-07-28 caller's own extensions reach a 2026-07-28 upstream,
	// pared to the carried ones.
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"declared_modern","_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{` +
		`"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app","text/html"]},"io.modelcontextprotocol/tasks":{},"com.example/unknown":{}}}}}}`
	reply := h.post(t, "tok-full", "tools/call", "declared_modern", body)
	mustf(t, strings.Contains(reply, `{\"io.modelcontextprotocol/ui\":{\"mimeTypes\":[\"text/html;profile=mcp-app\",\"text/html\"]}}`),
		"the modern upstream saw %s", reply)

	t.Run("nothing carried", func(t *testing.T) {
		none := newTestHub(t, specs[:2], func(o *registry.Options) { o.Upstream.Carried = carried.New(config.Extensions{}) })
		none.waitConnected("apps", "modern")
		got := none.declaredTo(t, "/mcp", "", false)
		mustf(t, reflect.DeepEqual(got, map[string]any{config.ExtensionTasks: map[string]any{}}), "declared %v with nothing carried", got)
		for _, server := range []string{"apps", "modern"} {
			reply := none.post(t, "", "", "", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"declared_`+server+`"}}`)
			mustf(t, strings.Contains(reply, `"text":"null"`), "%s was declared %s with nothing carried", server, reply)
		}
	})
}

// post posts body to /mcp as token and returns the reply's text: a
// 2026-07-28 request of method (and name) with its headers, or without a
// method a request of no revision's headers (a sessionless tools/call).
func (h *testHub) post(t *testing.T, token, method, name, body string) string {
	t.Helper()
	header := []string{"Authorization", "Bearer " + token}
	if method != "" {
		header = append(header, mcp.HeaderProtocolVersion, mcp.ProtocolVersion20260728, mcp.HeaderMethod, method, mcp.HeaderName, name)
	}
	_, reply := h.send(t, http.MethodPost, "/mcp", strings.NewReader(body), header...)
	return reply
}
