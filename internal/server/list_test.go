package server

import (
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/config"
)

// The cached tools/list is the list mcp-go would have given, for every
// view: the same tools, encoded the same way.
func TestToolsListFromCacheMatchesMCPGo(t *testing.T) {
	a := newFakeUpstream(t, "alpha", "get_thing", "delete_thing")
	b := newRichUpstream(t, "beta")
	h := newTestHub(t, []config.ServerSpec{a.spec(), b.spec("")})
	h.waitConnected("alpha", "beta")
	sid := h.initializeSession(t)
	const modernMeta = `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}`
	for _, tc := range []struct {
		level  string
		modern bool
	}{
		{"", false}, {"supervised", false}, {"restricted", false}, {"manual", false},
		{"", true}, {"restricted", true},
	} {
		level := tc.level
		list := func(params string) (map[string]any, []string) {
			if tc.modern {
				// The protocol's own _meta keeps the request on the cache;
				// any other member sends it to mcp-go.
				params = strings.Replace(params, `"_meta":{`, `"_meta":{`+modernMeta+`,`, 1)
				if params == "" {
					params = `,"params":{"_meta":{` + modernMeta + `}}`
				}
			}
			req := listRequest(t, h.url("/mcp"), "7", params, tc.modern, sid)
			if level != "" {
				req.Header.Set("X-Autonomy-Level", level)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			var out map[string]any
			if err := json.Unmarshal(raw, &out); err != nil {
				t.Fatalf("level %q: %v: %s", level, err, raw)
			}
			var names []string
			res, _ := out["result"].(map[string]any)
			tools, _ := res["tools"].([]any)
			for _, tl := range tools {
				names = append(names, tl.(map[string]any)["name"].(string))
			}
			return out, names
		}
		cached, names := list("")
		// A _meta member sends the request to mcp-go.
		viaMCPGo, _ := list(`,"params":{"_meta":{"x":1}}`)
		if !reflect.DeepEqual(cached, viaMCPGo) {
			t.Errorf("level %q, modern %v: cached list differs from mcp-go's:\n%v\n%v", level, tc.modern, cached, viaMCPGo)
		}
		if len(names) == 0 && level != "manual" {
			t.Errorf("level %q, modern %v: empty list", level, tc.modern)
		}
		lvl, _ := autonomy.ParseLevel(cmpOr(level, "full"))
		switch {
		case lvl == autonomy.Manual && len(names) != 0:
			t.Errorf("manual lists %v", names)
		case lvl == autonomy.Full && !contains(names, "delete_thing"):
			t.Errorf("full lacks delete_thing: %v", names)
		case lvl == autonomy.Restricted && contains(names, "delete_thing"):
			t.Errorf("restricted lists delete_thing: %v", names)
		}
	}
}

// initializeSession opens a 2025-11-25 session with a raw initialize.
func (h *testHub) initializeSession(t *testing.T) string {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	req, _ := http.NewRequest(http.MethodPost, h.url("/mcp"), strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatal("no session id")
	}
	return sid
}

// TestPublishedToolsChanged: a rebuild that hands over the same tools,
// listed the same way, tells no session that the list changed.
func TestPublishedToolsChanged(t *testing.T) {
	tool := func(name, desc string) mcp.Tool { return mcp.NewTool(name, mcp.WithDescription(desc)) }
	var p publishedTools
	steps := []struct {
		name   string
		tools  []mcp.Tool
		listed []string
		want   bool
	}{
		{"first", []mcp.Tool{tool("a", "x"), tool("b", "y")}, []string{"a", "b"}, true},
		{"same again", []mcp.Tool{tool("a", "x"), tool("b", "y")}, []string{"a", "b"}, false},
		{"b's server down", []mcp.Tool{tool("a", "x"), tool("b", "y")}, []string{"a"}, true},
		{"description changed", []mcp.Tool{tool("a", "x2"), tool("b", "y")}, []string{"a"}, true},
		{"tool added", []mcp.Tool{tool("a", "x2"), tool("b", "y"), tool("c", "z")}, []string{"a"}, true},
		{"same once more", []mcp.Tool{tool("a", "x2"), tool("b", "y"), tool("c", "z")}, []string{"a"}, false},
	}
	for _, s := range steps {
		if got := p.changed(s.tools, s.listed); got != s.want {
			t.Errorf("%s: changed = %v, want %v", s.name, got, s.want)
		}
	}
}

// listRequest is a tools/list request with id and params (a JSON member
// `,"params":...`, or ""), as a 2025-11-25 session (sid) or a 2026-07-28
// client (modern) sends it.
func listRequest(t testing.TB, url, id, params string, modern bool, sid string) *http.Request {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/list"` + params + `}`
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if modern {
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/list")
	} else {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	return req
}
