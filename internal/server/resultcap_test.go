package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/registry"
)

// TestResultCapOnEveryPath: results over upstream.maxResultChars are cut
// the same on the fast path, the mcp-go path and for the hub's own tools,
// a server's own setting overrides the default, structured content over
// the cap is dropped deliberately, and an answer over the byte limit fails
// with an error that says so (not a parse error) and leaves the upstream up.
func TestResultCapOnEveryPath(t *testing.T) {
	const limit = 1000
	long := func(n int) string { return strings.Repeat("é", n/2) + strings.Repeat("x", n-n/2) }
	addBig := func(f *fakeUpstream) {
		f.mcp.AddTool(mcp.NewTool("long_"+f.name, mcp.WithNumber("n")), func(_ context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(long(int(r.GetFloat("n", 0)))), nil
		})
		f.mcp.AddTool(mcp.NewTool("shaped_"+f.name), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultStructured(map[string]any{"rows": strings.Repeat("r", 3000)}, "rows"), nil
		})
	}
	big := newFakeUpstream(t, "big")
	addBig(big)
	raw := newFakeUpstream(t, "raw")
	addBig(raw)
	off := 0
	rawSpec := raw.spec()
	rawSpec.MaxResultChars = &off
	local := registry.LocalTool{Def: mcp.NewTool("long_api"), Kind: autonomy.API, Method: "GET",
		Run: func(context.Context, map[string]any, map[string]string) *mcp.CallToolResult {
			return mcp.NewToolResultText(long(5000))
		}}
	h := newTestHub(t, []config.ServerSpec{big.spec(), rawSpec}, func(o *registry.Options) {
		o.MaxResultChars = limit
		o.Local = []registry.LocalTool{local}
		o.Upstream.MaxResponseBytes = 64 << 10
	})
	h.waitConnected("big", "raw")
	ex := &executor{t: t, url: h.url("/mcp")}

	callRes := func(tool string, args map[string]any, viaMCP bool) map[string]any {
		t.Helper()
		params := map[string]any{"name": tool, "arguments": args}
		if viaMCP {
			params["_meta"] = map[string]any{"progressToken": "p"}
		}
		status, res := ex.post("tools/call", params)
		r, ok := res["result"].(map[string]any)
		mustf(t, status == 200 && ok, "tools/call %s: HTTP %d %v", tool, status, res)
		return r
	}
	texts := func(r map[string]any) []string {
		var out []string
		for _, c := range r["content"].([]any) {
			if s, ok := c.(map[string]any)["text"].(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	for _, viaMCP := range []bool{false, true} {
		for _, tc := range []struct {
			tool    string
			n       int
			cut     bool
			setting string
		}{
			{"long_big", 500, false, ""},
			{"long_big", 5000, true, "upstream.maxResultChars"},
			{"long_api", 0, true, "upstream.maxResultChars"},
			{"long_raw", 5000, false, ""}, // maxResultChars: 0 on the server
		} {
			t.Run(fmt.Sprintf("%s %d mcp=%v", tc.tool, tc.n, viaMCP), func(t *testing.T) {
				r := callRes(tc.tool, map[string]any{"n": tc.n}, viaMCP)
				got := texts(r)
				all := strings.Join(got, "")
				mustf(t, r["isError"] != true, "a cut result is no error: %v", r)
				if !tc.cut {
					mustf(t, len(got) == 1 && utf8.RuneCountInString(all) == max(tc.n, 0), "uncut result: %d parts, %d characters", len(got), utf8.RuneCountInString(all))
					return
				}
				mustf(t, len(got) == 2 && utf8.RuneCountInString(all) <= limit, "cut result: %d parts, %d characters (limit %d)", len(got), utf8.RuneCountInString(all), limit)
				mustf(t, strings.HasPrefix(got[0], strings.Repeat("é", 100)), "the start is not kept: %.40q", got[0])
				mustf(t, strings.Contains(got[1], "of 5000 characters") && strings.Contains(got[1], tc.setting) && strings.Contains(got[1], "Ask for less"),
					"notice %q", got[1])
			})
		}
		t.Run(fmt.Sprintf("structured mcp=%v", viaMCP), func(t *testing.T) {
			r := callRes("shaped_big", nil, viaMCP)
			_, hasSC := r["structuredContent"]
			got := texts(r)
			mustf(t, !hasSC && r["isError"] == true, "structured content over the cap must go, with isError: %v", r)
			mustf(t, strings.Contains(got[len(got)-1], "structured content of"), "notice %q", got[len(got)-1])
			r = callRes("shaped_raw", nil, viaMCP)
			_, hasSC = r["structuredContent"]
			mustf(t, hasSC && r["isError"] != true, "uncapped server lost its structured content: %v", r)
		})
		t.Run(fmt.Sprintf("over the byte limit mcp=%v", viaMCP), func(t *testing.T) {
			r := callRes("long_raw", map[string]any{"n": 100000}, viaMCP)
			text := strings.Join(texts(r), "")
			mustf(t, r["isError"] == true && strings.Contains(text, "upstream raw answered more than 65536 bytes") &&
				strings.Contains(text, "upstream.maxResponseBytes"), "answer over the byte limit: %d characters: %.200q", len(text), text)
			r = callRes("long_raw", map[string]any{"n": 10}, viaMCP)
			mustf(t, r["isError"] != true, "the upstream is still callable after a large answer: %v", r)
		})
	}
	resp, err := http.Get(h.url("/metrics"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	mustf(t, strings.Contains(string(body), `mcphub_tool_results_cut_total{server="big"} 4`), "metric of cut results:\n%s", grepLines(string(body), "results_cut"))
}

func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
