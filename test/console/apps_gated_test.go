package console_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/purko-io/mcp-hub/internal/hubtest"
)

// An Apps SDK server that shows its UI only to a client that declares the
// MCP Apps extension (test/interop/ui_gated_server.mjs, on the Apps SDK's
// getUiCapability) reaches a host through the hub because the hub declares
// the extension to it (upstream.extensions, MCP Apps by default): the app
// tool and its ui:// view are listed, the hub declares the extension back
// to the host, and a host in chromium renders the view. With nothing
// carried, the server offers its text-only tool, and the hub declares no
// UI to anyone.

// gatedServer is the gated server's script.
func gatedServer(t *testing.T) string {
	t.Helper()
	root, err := hubtest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(root, "test", "interop", "ui_gated_server.mjs")
	if _, err := os.Stat(filepath.Join(root, "test", "interop", "node_modules", "@modelcontextprotocol", "ext-apps")); err != nil {
		t.Fatalf("the Apps SDK is missing (%v): run `make test-deps` (npm ci in test/interop) first", err)
	}
	return script
}

func TestGatedAppThroughHub(t *testing.T) {
	script := gatedServer(t)
	const gatedURI = "ui://gated/view.html"
	for _, tc := range []struct {
		name, upstream, tool string
		told                 bool
	}{
		{"apps carried", "", "show-view", true},
		{"nothing carried", "upstream: {extensions: {}}\n", "show-view-as-text", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hub := hubtest.StartHub(t, hubtest.HubOptions{
				Config: fmt.Sprintf("%sservers:\n  - name: gated\n    command: node\n    args: [%q]\n", tc.upstream, script),
				Wait:   hubtest.Connected,
			})
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			through := initialized(t, ctx, func() (*client.Client, error) { return client.NewStreamableHttpClient(hub.MCPURL()) })
			if _, told := through.GetServerCapabilities().Extensions["io.modelcontextprotocol/ui"]; told != tc.told {
				t.Errorf("the hub declared MCP Apps to its caller: %v, want %v (%v)", told, tc.told, through.GetServerCapabilities().Extensions)
			}
			meta := toolMeta(t, ctx, through)
			for _, name := range []string{"show-view", "show-view-as-text"} {
				if _, listed := meta[name]; listed != (name == tc.tool) {
					t.Errorf("%s listed through the hub: %v; want only %s", name, listed, tc.tool)
				}
			}
			if !tc.told {
				return
			}
			ui, _ := meta["show-view"]["ui"].(map[string]any)
			if ui["resourceUri"] != gatedURI {
				t.Fatalf("show-view's _meta through the hub = %v, want ui.resourceUri %s", meta["show-view"], gatedURI)
			}
			if view := readText(t, ctx, through, gatedURI); view.MIMEType != appMIME {
				t.Errorf("the gated view through the hub is %q, want %q", view.MIMEType, appMIME)
			}
			bctx := openHost(t, hub, "show-view")
			waitHost(t, bctx, "the gated view rendered by a host the hub told of MCP Apps",
				`host.told && host.uri === '`+gatedURI+`' && host.mimeType === '`+appMIME+`' &&
				 document.getElementById('app').contentDocument.getElementById('gated').innerText === 'gated view'`)
		})
	}
}
