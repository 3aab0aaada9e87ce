package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/purko-io/mcp-hub/internal/hubtest"
)

// An MCP App through the hub (@modelcontextprotocol/ext-apps): the official
// basic example server (npm @modelcontextprotocol/server-basic-vanillajs,
// pinned in test/interop/package.json) runs behind the hub over stdio, next
// to a server of this test that lists a UI resource of the same URI and an
// app-only tool. The shared URI makes the hub rename both servers' ui://
// resources, so the get-time tool's _meta.ui.resourceUri only resolves if
// the hub renamed the pointer the same way.
//
// A client then sees the same app as directly (same _meta but the URI, same
// HTML, the app-only tool listed with its visibility), and a host page in
// chromium renders the app from the hub's resources/read in an iframe and
// relays the app's tools/call (a postMessage) to the hub: a click on the
// app's button shows the time the example server answered. Under naming
// prefix always the tool is renamed too, and the app's call by the
// server's own name still reaches it.

// appMIME is the MIME type of an MCP App's HTML (ext-apps RESOURCE_MIME_TYPE).
const appMIME = "text/html;profile=mcp-app"

// appURI is the example's UI resource at the server.
const appURI = "ui://get-time/mcp-app.html"

// appOnlyTool is the other server's tool meant for its app only.
const appOnlyTool = "other_refresh"

// otherServer lists a UI resource of appURI (so the hub prefixes both
// servers' URIs) and appOnlyTool, whose _meta.ui keeps it from the model.
func otherServer() *server.MCPServer {
	s := server.NewMCPServer("other", "1", server.WithToolCapabilities(true), server.WithResourceCapabilities(false, false))
	s.AddResource(mcp.NewResource(appURI, "other view", mcp.WithMIMEType(appMIME)),
		func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: appURI, MIMEType: appMIME, Text: "<p>other</p>"}}, nil
		})
	tool := mcp.NewTool(appOnlyTool, mcp.WithDescription("refresh the other view"))
	tool.Meta = mcp.NewMetaFromMap(map[string]any{"ui": map[string]any{"resourceUri": appURI, "visibility": []any{"app"}}})
	s.AddTool(tool, func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("refreshed"), nil
	})
	return s
}

// exampleServer is the basic example's entry point; make test-deps installs it.
func exampleServer(t *testing.T) string {
	t.Helper()
	root, err := hubtest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(root, "test", "interop", "node_modules", "@modelcontextprotocol", "server-basic-vanillajs", "dist", "index.js")
	if _, err := os.Stat(script); err != nil {
		t.Fatalf("the MCP Apps example server is missing (%v): run `make test-deps` (npm ci in test/interop) first", err)
	}
	return script
}

// initialized is the client newClient makes, initialized, closed at cleanup.
func initialized(t *testing.T, ctx context.Context, newClient func() (*client.Client, error)) *client.Client {
	t.Helper()
	c, err := newClient()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	// A stdio client has started its child; Start starts the others.
	if _, stdio := c.GetTransport().(*transport.Stdio); !stdio {
		if err := c.Start(ctx); err != nil {
			t.Fatalf("start client: %v", err)
		}
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: mcp.LATEST_PROTOCOL_VERSION,
		ClientInfo: mcp.Implementation{Name: "apps-test", Version: "0"}}}); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return c
}

// toolMeta lists c's tools and returns the _meta of each, as JSON values.
func toolMeta(t *testing.T, ctx context.Context, c *client.Client) map[string]map[string]any {
	t.Helper()
	res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	out := map[string]map[string]any{}
	for _, tool := range res.Tools {
		var meta map[string]any
		if tool.Meta != nil {
			raw, err := json.Marshal(tool.Meta)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(raw, &meta); err != nil {
				t.Fatal(err)
			}
		}
		out[tool.Name] = meta
	}
	return out
}

// readText reads uri from c: its one text content.
func readText(t *testing.T, ctx context.Context, c *client.Client, uri string) mcp.TextResourceContents {
	t.Helper()
	res, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: uri}})
	if err != nil {
		t.Fatalf("resources/read %s: %v", uri, err)
	}
	if len(res.Contents) != 1 {
		t.Fatalf("resources/read %s: %d contents, want 1", uri, len(res.Contents))
	}
	text, ok := res.Contents[0].(mcp.TextResourceContents)
	if !ok {
		t.Fatalf("resources/read %s: %T, want text", uri, res.Contents[0])
	}
	return text
}

// TestMCPAppThroughHubInABrowser runs under the default naming, where only
// the shared ui:// URI is renamed, and under prefix always, where the tools
// are renamed too and the app still calls get-time by its own name.
func TestMCPAppThroughHubInABrowser(t *testing.T) {
	script := exampleServer(t)
	for _, tc := range []struct {
		prefix, tool, appOnly string
	}{
		{"on-conflict", "get-time", appOnlyTool},
		{"always", "basic__get-time", "other__" + appOnlyTool},
	} {
		t.Run(tc.prefix, func(t *testing.T) { testAppThroughHub(t, script, tc.prefix, tc.tool, tc.appOnly) })
	}
}

// testAppThroughHub is the test under naming prefix, where the example's
// tool is published as tool and the other server's app-only one as appOnly.
func testAppThroughHub(t *testing.T, script, prefix, tool, appOnly string) {
	mux := http.NewServeMux()
	mux.Handle("/mcp", server.NewStreamableHTTPServer(otherServer()))
	other := httptest.NewServer(mux)
	t.Cleanup(other.Close)
	hub := hubtest.StartHub(t, hubtest.HubOptions{
		Config: fmt.Sprintf("naming:\n  prefix: %s\nservers:\n  - name: basic\n    command: node\n    args: [%q, \"--stdio\"]\n  - name: other\n    url: %s/mcp\n",
			prefix, script, other.URL),
		Wait: hubtest.Connected,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	direct := initialized(t, ctx, func() (*client.Client, error) { return client.NewStdioMCPClient("node", nil, script, "--stdio") })
	through := initialized(t, ctx, func() (*client.Client, error) { return client.NewStreamableHttpClient(hub.MCPURL()) })

	// The same tool, its pointer renamed as the resource is, nothing else.
	const published = "ui://basic+get-time/mcp-app.html"
	directMeta, hubMeta := toolMeta(t, ctx, direct)["get-time"], toolMeta(t, ctx, through)
	if directMeta == nil {
		t.Fatalf("the example's get-time tool has no _meta directly")
	}
	raw, _ := json.Marshal(directMeta)
	var want map[string]any
	if err := json.Unmarshal([]byte(strings.ReplaceAll(string(raw), appURI, published)), &want); err != nil {
		t.Fatal(err)
	}
	if got := hubMeta[tool]; !reflect.DeepEqual(got, want) {
		t.Errorf("%s's _meta through the hub = %v\nwant the server's with the published URI: %v", tool, got, want)
	}
	wantOther := map[string]any{"ui": map[string]any{"resourceUri": "ui://other+get-time/mcp-app.html", "visibility": []any{"app"}}}
	if got, listed := hubMeta[appOnly]; !listed || !reflect.DeepEqual(got, wantOther) {
		t.Errorf("the app-only tool through the hub: listed %v, _meta %v; want listed with %v", listed, got, wantOther)
	}

	// The pointer resolves through the hub to the server's own HTML.
	html := readText(t, ctx, direct, appURI)
	got := readText(t, ctx, through, published)
	if got.Text != html.Text || got.MIMEType != appMIME || got.URI != published || !reflect.DeepEqual(got.Meta, html.Meta) {
		t.Errorf("resources/read %s through the hub: %s, %q, %d bytes, _meta %v; want %s, %q, the server's %d bytes, _meta %v",
			published, got.URI, got.MIMEType, len(got.Text), got.Meta, published, appMIME, len(html.Text), html.Meta)
	}
	if o := readText(t, ctx, through, "ui://other+get-time/mcp-app.html"); o.Text != "<p>other</p>" {
		t.Errorf("the other server's view through the hub = %q", o.Text)
	}

	start := time.Now().Add(-time.Second) // the server's clock, to the second
	bctx := openHost(t, hub, tool)
	waitHost(t, bctx, "the app rendered from "+published+" and through its ui/initialize handshake",
		`host.told && host.uri === '`+published+`' && host.mimeType === '`+appMIME+`' && host.initialized &&
		 !!document.getElementById('app').contentDocument.getElementById('get-time-btn')`)
	if _, err := evaluate[bool](bctx, `(() => { document.getElementById('app').contentDocument.getElementById('get-time-btn').click(); return true; })()`); err != nil {
		t.Fatalf("click the app's button: %v", err)
	}
	waitHost(t, bctx, "the app's tools/call relayed through the hub and its answer in the app",
		`host.relayed.length === 1 && document.getElementById('app').contentDocument.getElementById('server-time').innerText
		 === host.relayed[0].result.structuredContent.time`)
	var relayed []struct {
		Request mcp.CallToolParams
		Result  struct{ StructuredContent struct{ Time string } }
	}
	if err := hostValue(bctx, "host.relayed", &relayed); err != nil {
		t.Fatal(err)
	}
	if relayed[0].Request.Name != "get-time" {
		t.Errorf("the app called %q, want get-time", relayed[0].Request.Name)
	}
	at, err := time.Parse(time.RFC3339Nano, relayed[0].Result.StructuredContent.Time)
	if err != nil || at.Before(start) || at.After(time.Now().Add(time.Second)) {
		t.Errorf("the app's call answered %q (%v); want the example server's time, between %s and now", relayed[0].Result.StructuredContent.Time, err, start)
	}
}

// openHost serves the host page for tool (hostPage) and the hub's /mcp on
// one origin, and opens the page in a browser.
func openHost(t *testing.T, hub *hubtest.Hub, tool string) context.Context {
	t.Helper()
	hubURL, err := url.Parse(hub.Base)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(hubURL)
	proxy.FlushInterval = -1
	page := http.NewServeMux()
	page.Handle("/mcp", hubtest.FullDuplex(proxy))
	page.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(strings.Replace(hostPage, "TOOL_NAME", tool, 1)))
	})
	hostSrv := httptest.NewServer(page)
	t.Cleanup(hostSrv.Close)
	bctx := browser(t)
	if err := within(bctx, 30*time.Second, chromedp.Navigate(hostSrv.URL+"/")); err != nil {
		t.Fatalf("open the host page: %v", err)
	}
	return bctx
}

// hostValue decodes the JSON of the page's expression expr into v.
func hostValue(ctx context.Context, expr string, v any) error {
	s, err := evaluate[string](ctx, `JSON.stringify(`+expr+`)`)
	if err != nil {
		return fmt.Errorf("read %s from the page: %w", expr, err)
	}
	return json.Unmarshal([]byte(s), v)
}

// waitHost waits until cond holds on the host page, failing t with the
// host's state when it does not within a minute (a loaded machine) or the
// host failed (host.errors) first.
func waitHost(t *testing.T, ctx context.Context, what, cond string) {
	t.Helper()
	pctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	_, err := chromedp.Run(pctx, chromedp.Poll[bool](`(() => { try { return host.errors.length > 0 || !!(`+cond+`); } catch (e) { return false; } })()`,
		chromedp.WithPollingInterval(100*time.Millisecond)))
	if err == nil {
		var failed []string
		if err = hostValue(ctx, "host.errors", &failed); err == nil && len(failed) > 0 {
			err = fmt.Errorf("the host failed: %s", strings.Join(failed, "; "))
		}
	}
	if err != nil {
		state, _ := evaluate[string](ctx, `JSON.stringify(window.host)`)
		t.Fatalf("the host page does not show %s: %v\n--- host: %s", what, err, state)
	}
}

// hostPage is a minimal MCP Apps host: it declares the MCP Apps extension
// (host.told: the hub declared it back), finds the tool TOOL_NAME (the
// published get-time) through the hub, reads the UI its
// _meta.ui.resourceUri names, renders it in an iframe and answers the
// app's messages: ui/initialize, and tools/call, which it relays to the
// hub. Its state is window.host.
const hostPage = `<!doctype html>
<html><head><meta charset="utf-8"><title>MCP Apps host</title></head>
<body><p id="status">starting</p>
<iframe id="app" style="width:100%;height:600px;border:0"></iframe>
<script>
const host = window.host = {uri: "", mimeType: "", told: false, initialized: false, relayed: [], errors: []};
let session = "", version = "", nextID = 1;

async function post(body) {
  const headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"};
  if (session) headers["Mcp-Session-Id"] = session;
  if (version) headers["MCP-Protocol-Version"] = version;
  const r = await fetch("/mcp", {method: "POST", headers, body: JSON.stringify(body)});
  session = r.headers.get("Mcp-Session-Id") || session;
  return r;
}

// rpc sends one request to the hub and returns its result.
async function rpc(method, params) {
  const id = nextID++;
  const r = await post({jsonrpc: "2.0", id, method, params});
  const text = await r.text();
  let msg;
  if ((r.headers.get("Content-Type") || "").includes("text/event-stream")) {
    for (const line of text.split("\n")) {
      if (!line.startsWith("data:")) continue;
      const m = JSON.parse(line.slice(5));
      if (m.id === id) msg = m;
    }
  } else if (text) {
    msg = JSON.parse(text);
  }
  if (!msg) throw new Error(method + ": no answer (HTTP " + r.status + ")");
  if (msg.error) throw new Error(method + ": " + msg.error.message);
  return msg.result;
}

(async () => {
  try {
    const init = await rpc("initialize", {protocolVersion: "2025-11-25",
      capabilities: {extensions: {"io.modelcontextprotocol/ui": {mimeTypes: ["text/html;profile=mcp-app"]}}},
      clientInfo: {name: "apps-test-host", version: "0"}});
    version = init.protocolVersion;
    host.told = !!(init.capabilities.extensions || {})["io.modelcontextprotocol/ui"];
    await post({jsonrpc: "2.0", method: "notifications/initialized"});
    const tool = (await rpc("tools/list", {})).tools.find(t => t.name === "TOOL_NAME");
    const uri = tool._meta.ui.resourceUri;
    if (!uri.startsWith("ui://")) throw new Error("not a ui:// resource: " + uri);
    const content = (await rpc("resources/read", {uri})).contents[0];
    host.uri = content.uri;
    host.mimeType = content.mimeType;
    const frame = document.getElementById("app");
    window.addEventListener("message", async (ev) => {
      const m = ev.data;
      if (ev.source !== frame.contentWindow || !m || m.jsonrpc !== "2.0" || !m.method) return;
      if (m.id === undefined) {
        if (m.method === "ui/notifications/initialized") host.initialized = true;
        return;
      }
      const reply = body => frame.contentWindow.postMessage(Object.assign({jsonrpc: "2.0", id: m.id}, body), "*");
      switch (m.method) {
      case "ui/initialize":
        reply({result: {protocolVersion: m.params.protocolVersion, hostInfo: {name: "apps-test-host", version: "0"},
          hostCapabilities: {serverTools: {}}, hostContext: {theme: "light", displayMode: "inline"}}});
        return;
      case "tools/call":
        try {
          const result = await rpc("tools/call", m.params);
          host.relayed.push({request: m.params, result});
          reply({result});
        } catch (e) {
          host.errors.push(String(e));
          reply({error: {code: -32603, message: String(e)}});
        }
        return;
      default:
        reply({error: {code: -32601, message: "this host does not offer " + m.method}});
      }
    });
    frame.srcdoc = content.text;
    document.getElementById("status").textContent = "rendered " + uri;
  } catch (e) {
    host.errors.push(String(e));
    document.getElementById("status").textContent = "failed: " + e;
  }
})();
</script></body></html>
`
