package server

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/registry"
	"github.com/purko-io/mcp-hub/internal/upstream"
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

// TestListCacheKeyedByContent: a caller authenticated anew on every
// request (a ServiceAccount's token review, an OAuth token) gets a new
// allow-list each time; equal lists must share one cached view, and
// other lists must not.
func TestListCacheKeyedByContent(t *testing.T) {
	s := &Server{}
	tool := func(name string) registry.Tool {
		return registry.Tool{Name: name, Original: name, Def: mcp.NewTool(name), Class: autonomy.Class{ReadOnly: true}}
	}
	cat := &registry.Catalog{Gen: 1, Tools: []registry.Tool{tool("a"), tool("b")}}
	list := func(names ...string) (string, int) {
		t.Helper()
		v, err := s.toolsView(cat, callers.Caller{Level: autonomy.Full, Allow: autonomy.NewAllowlist(names)})
		if err != nil {
			t.Fatal(err)
		}
		return string(v.res), v.tools
	}
	first, n := list("a")
	for range 4 {
		if again, _ := list("a"); again != first {
			t.Fatalf("the same allow-list listed %s, then %s", first, again)
		}
	}
	if n != 1 || s.lists.views.Len() != 1 {
		t.Errorf("five lists by allow-lists of the same names: %d tools, %d cached views; want 1 tool, 1 view", n, s.lists.views.Len())
	}
	if other, n := list("b"); other == first || n != 1 {
		t.Errorf("allow-list [b] listed %s (%d tools), the same as [a]", other, n)
	}
	if all, n := list(); n != 2 || s.lists.views.Len() != 3 {
		t.Errorf("no allow-list listed %s (%d tools), %d views; want both tools in a third view", all, n, s.lists.views.Len())
	}
}

// listServer is a hub server whose catalog is servers upstreams of tools
// tools each (mcp-go servers in one loopback process), for the list cache's
// tests and BenchmarkFastList; it is not serving HTTP itself: tests call
// its handler or fastList.
func listServer(tb testing.TB, servers, tools int) *Server {
	tb.Helper()
	mux := http.NewServeMux()
	for i := range servers {
		m := mcpserver.NewMCPServer(fmt.Sprintf("u%03d", i), "1", mcpserver.WithToolCapabilities(false))
		for k := range tools {
			m.AddTool(catalogTool(i, k), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText("ok"), nil
			})
		}
		path := fmt.Sprintf("/u%03d/mcp", i)
		mux.Handle(path, mcpserver.NewStreamableHTTPServer(m, mcpserver.WithEndpointPath(path)))
	}
	up := httptest.NewServer(mux)
	tb.Cleanup(up.Close)
	cfg, err := config.Default()
	if err != nil {
		tb.Fatal(err)
	}
	log := zerolog.Nop()
	reg := registry.New(registry.Options{
		Naming: cfg.Naming, RouteCacheSize: 64, NotifyDebounce: 20 * time.Millisecond,
		Upstream: upstream.Options{
			// No pings while a test counts the bytes a list allocates.
			Timeout: 10 * time.Second, ConnectTimeout: 10 * time.Second, PingInterval: time.Hour,
			BackoffMin: 50 * time.Millisecond, BackoffMax: 300 * time.Millisecond,
			BreakerFailures: 3, BreakerOpenFor: time.Second, DiscoverTimeout: 10 * time.Second,
			ClientInfo: mcp.Implementation{Name: "mcp-hub-test", Version: "0"},
		},
	}, log)
	srv := New(reg, Options{Name: "mcp-hub", Version: "test"}, log)
	src := chanSource{ch: make(chan []config.ServerSpec)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); reg.Run(ctx, src) }()
	tb.Cleanup(func() { cancel(); <-done })
	specs := make([]config.ServerSpec, servers)
	for i := range specs {
		specs[i] = config.ServerSpec{Name: fmt.Sprintf("u%03d", i), URL: fmt.Sprintf("%s/u%03d/mcp", up.URL, i), Transport: config.TransportStreamableHTTP, Source: "test"}
	}
	src.ch <- specs
	deadline := time.Now().Add(2 * time.Minute)
	for len(reg.Catalog().Tools) < servers*tools {
		if time.Now().After(deadline) {
			tb.Fatalf("catalog has %d tools, want %d", len(reg.Catalog().Tools), servers*tools)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return srv
}

// catalogTool is tool k of server i, about as large as a real one (~500
// bytes encoded) and as varied, so that compressing a list of them is not
// easier than compressing a real catalog.
func catalogTool(i, k int) mcp.Tool {
	entities := []string{"issue", "pull_request", "repository", "branch", "commit", "release", "workflow", "deployment", "comment", "label", "milestone", "project"}
	verbs := []string{"get", "list", "search", "create", "update", "delete", "close", "merge"}
	ent, verb := entities[(i*7+k/len(verbs))%len(entities)], verbs[k%len(verbs)]
	return mcp.NewTool(fmt.Sprintf("%s_%s_%d", verb, ent, k),
		mcp.WithDescription(fmt.Sprintf("%s one %s in service %d (tool %d). Returns the %s's identifiers, title, state, owner and labels; fails when it does not exist.", verb, strings.ReplaceAll(ent, "_", " "), i, k, ent)),
		mcp.WithString("id", mcp.Required(), mcp.Description(fmt.Sprintf("The %s's ID, as %s_%d_%d returns it.", ent, ent, i, k))),
		mcp.WithNumber("limit", mcp.Description(fmt.Sprintf("At most this many %ss (default %d).", ent, 10+k%40))),
		mcp.WithReadOnlyHintAnnotation(k%2 == 0),
	)
}

// oldListAnswer is what fastList wrote before it wrote lists in parts: one
// buffer holding the envelope and the view's result.
func oldListAnswer(id string, modernHead, res []byte) []byte {
	out := []byte(`{"jsonrpc":"2.0","id":` + id + `,"result":`)
	if modernHead != nil {
		out = append(append(out, modernHead...), res[1:]...)
	} else {
		out = append(out, res...)
	}
	return append(out, "}\n"...)
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

// modernListParams are the params of a 2026-07-28 tools/list that the
// list cache answers.
const modernListParams = `,"params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`

// TestListWire: a cached list answers with the bytes fastList always
// wrote, as they are or gzip compressed when the client accepts gzip, for
// ids of every kind and both heads, with a Content-Length that is the
// body's, whatever client decodes it.
func TestListWire(t *testing.T) {
	s := listServer(t, 3, 40)
	hub := httptest.NewServer(s.Handler())
	defer hub.Close()
	sid := (&testHub{t: t, addr: strings.TrimPrefix(hub.URL, "http://")}).initializeSession(t)
	view, err := s.toolsView(s.reg.Catalog(), callers.Caller{Level: autonomy.Full})
	if err != nil {
		t.Fatal(err)
	}
	// Wire bytes as sent: no transparent decoding by the client.
	raw := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	long := `"` + strings.Repeat("x", 70_000) + `"` // a head in two stored blocks
	for _, tc := range []struct {
		name, id, acceptEncoding string
		modern, gzipped          bool
	}{
		{"number id, identity", "7", "", false, false},
		{"number id, gzip", "7", "gzip", false, true},
		{"string id, gzip", `"req-\"1\""`, "gzip, deflate, br", false, true},
		{"null-like string id", `"null"`, "br;q=1.0, gzip;q=0.8", false, true},
		{"modern, identity", "12", "identity", true, false},
		{"modern, gzip", `"m-1"`, "gzip", true, true},
		{"gzip refused by q=0", "8", "gzip;q=0, deflate", false, false},
		{"gzip refused, q=0.000", "8", "gzip; q=0.000", true, false},
		{"x-gzip", "9", "x-gzip", false, true},
		{"star", "10", "*", false, true},
		{"star but not gzip", "11", "*, gzip;q=0", false, false},
		{"long id", long, "gzip", false, true},
		{"long id, identity", long, "", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			params := ""
			if tc.modern {
				params = modernListParams
			}
			req := listRequest(t, hub.URL+"/mcp", tc.id, params, tc.modern, sid)
			if tc.acceptEncoding != "" {
				req.Header.Set("Accept-Encoding", tc.acceptEncoding)
			}
			resp, err := raw.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			wire, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if cl := resp.Header.Get("Content-Length"); cl != strconv.Itoa(len(wire)) {
				t.Errorf("Content-Length %q, %d bytes sent", cl, len(wire))
			}
			if v := resp.Header.Values("Vary"); !slices.Contains(v, "Accept-Encoding") {
				t.Errorf("Vary %q lacks Accept-Encoding", v)
			}
			got := wire
			if ce := resp.Header.Get("Content-Encoding"); (ce == "gzip") != tc.gzipped {
				t.Fatalf("Content-Encoding %q, want gzip %v", ce, tc.gzipped)
			}
			if tc.gzipped {
				if got, err = gunzip(wire); err != nil {
					t.Fatal(err)
				}
				if sent, of := len(wire)-len(tc.id), len(got)-len(tc.id); sent > of/4 { // the head is stored as it is
					t.Errorf("gzip sent %d bytes for %d", sent, of)
				}
			}
			var modernHead []byte
			if tc.modern {
				modernHead = s.modernList
			}
			if want := oldListAnswer(tc.id, modernHead, view.res); !bytes.Equal(got, want) {
				t.Errorf("answer differs from the old path's:\n%.300s\n%.300s", got, want)
			}
		})
	}
}

// TestListAnswerEndsInTheListsWrite: an uncompressed cached list goes in
// two writes, the request's head and the view's bytes with the answer's
// end: written apart, the end was a last syscall and segment of its own
// after the megabytes (3.6 writes per 5 MB list, against a static server's
// 2.4, benchmark 3).
func TestListAnswerEndsInTheListsWrite(t *testing.T) {
	s := listServer(t, 3, 40)
	for _, c := range fastListCases {
		if c.acceptEncoding != "" {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			r, msg := fastListRequest(t, c)
			w := &writesRecorder{ResponseRecorder: httptest.NewRecorder()}
			if !s.fastList(w, r, msg) {
				t.Fatal("fastList left the request to mcp-go")
			}
			body := w.Body.Bytes()
			if len(w.writes) != 2 || w.writes[1] < len(body)/2 || !bytes.HasSuffix(body, []byte(jsonrpc.AnswerEnd)) {
				t.Errorf("%d bytes in writes of %v; want two, the second the list and the answer's end", len(body), w.writes)
			}
			if cl := w.Header().Get("Content-Length"); cl != strconv.Itoa(len(body)) {
				t.Errorf("Content-Length %q, %d bytes written", cl, len(body))
			}
		})
	}
}

// writesRecorder records the length of every Write.
type writesRecorder struct {
	*httptest.ResponseRecorder
	writes []int
}

func (w *writesRecorder) Write(p []byte) (int, error) {
	w.writes = append(w.writes, len(p))
	return w.ResponseRecorder.Write(p)
}

// gunzip decodes one gzip member and checks that nothing follows it: a
// browser reads no further than the first member.
func gunzip(b []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	zr.Multistream(false)
	out, err := io.ReadAll(zr)
	if err != nil {
		return nil, err
	}
	if rest, _ := io.ReadAll(zr); len(rest) > 0 {
		return nil, fmt.Errorf("%d bytes after the first gzip member", len(rest))
	}
	return out, nil
}

// TestCRCCombine: the CRC of a head spliced before a compressed suffix is
// that of the bytes joined, for lengths across the shift's bits.
func TestCRCCombine(t *testing.T) {
	data := make([]byte, 200_000)
	for i := range data {
		data[i] = byte(i*7 + i>>8)
	}
	for _, cut := range []int{0, 1, 7, 8, 255, 4096, 65_535, 65_536, 199_999, 200_000} {
		a, b := data[:cut], data[cut:]
		got := crcMulMod(crcShift(uint64(len(b))), crc32.ChecksumIEEE(a)) ^ crc32.ChecksumIEEE(b)
		if want := crc32.ChecksumIEEE(data); got != want {
			t.Errorf("cut at %d: combined %08x, want %08x", cut, got, want)
		}
	}
}

// TestAcceptsGzip reads Accept-Encoding as RFC 9110 does.
func TestAcceptsGzip(t *testing.T) {
	for _, tc := range []struct {
		values []string
		want   bool
	}{
		{nil, false},
		{[]string{""}, false},
		{[]string{"gzip"}, true},
		{[]string{"GZIP"}, true},
		{[]string{"deflate, gzip;q=1.0, *;q=0.5"}, true},
		{[]string{"br", "gzip;q=0.1"}, true},
		{[]string{"gzip;q=0"}, false},
		{[]string{"gzip ; q=0.0"}, false},
		{[]string{"gzip;q=bad"}, false},
		{[]string{"identity"}, false},
		{[]string{"br, deflate"}, false},
		{[]string{"*"}, true},
		{[]string{"*;q=0"}, false},
		{[]string{"*, gzip;q=0"}, false},
		{[]string{"gzip;q=0, *"}, false},
		{[]string{"x-gzip"}, true},
		{[]string{"gzipped"}, false},
	} {
		h := http.Header{}
		for _, v := range tc.values {
			h.Add("Accept-Encoding", v)
		}
		if got := acceptsGzip(h); got != tc.want {
			t.Errorf("Accept-Encoding %q: gzip %v, want %v", tc.values, got, tc.want)
		}
	}
}

// TestListViewsShareResults: callers whose views show the same tools share
// one result, kept at its exact size; the view that shows every tool is
// the generation's encoding itself; a tool that cannot be encoded fails
// only the views that show it. Every result is the tools encoded as
// json.Marshal encodes them, in the catalog's order.
func TestListViewsShareResults(t *testing.T) {
	tool := func(name string, readOnly bool) registry.Tool {
		return registry.Tool{Name: name, Original: name, Def: mcp.NewTool(name, mcp.WithDescription("<"+name+"> & co")), Class: autonomy.Class{ReadOnly: readOnly}}
	}
	broken := tool("broken", false)
	broken.Def.RawInputSchema = json.RawMessage(`{"type":"object"}`) // and InputSchema.Type: MarshalJSON refuses both
	cat := &registry.Catalog{Gen: 1, Tools: []registry.Tool{tool("a", true), tool("b", false), tool("c", true)}}
	withBroken := &registry.Catalog{Gen: 2, Tools: []registry.Tool{tool("a", true), broken, tool("c", true)}}
	want := func(names ...string) string {
		var parts []string
		for _, n := range names {
			b, err := json.Marshal(tool(n, false).Def)
			if err != nil {
				t.Fatal(err)
			}
			parts = append(parts, string(b))
		}
		return `{"tools":[` + strings.Join(parts, ",") + `]}`
	}
	full := callers.Caller{Level: autonomy.Full}
	for _, tc := range []struct {
		name    string
		cat     *registry.Catalog
		a, b    callers.Caller
		shared  bool   // a and b share one result
		want    string // a's result; "" when a's list fails
		isWhole bool   // a's result is the generation's encoding itself
	}{
		{"full, and an allow-list of every tool", cat, full, callers.Caller{Level: autonomy.Full, Allow: autonomy.NewAllowlist([]string{"a", "b", "c"})}, true, want("a", "b", "c"), true},
		{"restricted, and full allowed the read-only tools", cat, callers.Caller{Level: autonomy.Restricted}, callers.Caller{Level: autonomy.Full, Allow: autonomy.NewAllowlist([]string{"a", "c"})}, true, want("a", "c"), false},
		{"restricted and full", cat, callers.Caller{Level: autonomy.Restricted}, full, false, want("a", "c"), false},
		{"one tool, and none", cat, callers.Caller{Level: autonomy.Full, Allow: autonomy.NewAllowlist([]string{"b"})}, callers.Caller{Level: autonomy.Manual}, false, want("b"), false},
		{"nothing", cat, callers.Caller{Level: autonomy.Manual}, callers.Caller{Level: autonomy.Full, Allow: autonomy.NewAllowlist([]string{"nope"})}, true, `{"tools":[]}`, false},
		{"a broken tool shown", withBroken, full, callers.Caller{Level: autonomy.Restricted}, false, "", false},
		{"a broken tool not shown", withBroken, callers.Caller{Level: autonomy.Restricted}, callers.Caller{Level: autonomy.Full, Allow: autonomy.NewAllowlist([]string{"a", "c"})}, true, want("a", "c"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Server{}
			va, errA := s.toolsView(tc.cat, tc.a)
			vb, errB := s.toolsView(tc.cat, tc.b)
			if tc.want == "" {
				if errA == nil || !strings.Contains(errA.Error(), "broken") {
					t.Fatalf("a view showing the broken tool: %v, want its error", errA)
				}
				return
			}
			if errA != nil || errB != nil {
				t.Fatal(errA, errB)
			}
			if string(va.res) != tc.want {
				t.Errorf("result\n%s\nwant\n%s", va.res, tc.want)
			}
			if string(va.suffix) != tc.want[1:]+jsonrpc.AnswerEnd || cap(va.res) != len(va.res) || len(va.suffix) != cap(va.suffix) {
				t.Errorf("suffix %q, res cap %d len %d, suffix cap %d len %d: want the result and the answer's end, kept at their size",
					va.suffix, cap(va.res), len(va.res), cap(va.suffix), len(va.suffix))
			}
			if (va == vb) != tc.shared {
				t.Errorf("shared %v, want %v", va == vb, tc.shared)
			}
			if whole := &va.suffix[0] == &s.lists.tools.list[1]; whole != tc.isWhole {
				t.Errorf("result is the generation's encoding: %v, want %v", whole, tc.isWhole)
			}
		})
	}
}
