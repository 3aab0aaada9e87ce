package toollist

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/pipeline"
	"github.com/purko-io/mcp-hub/internal/registry"
)

// testCache is a cache of cat as the hub's server builds one: views by
// the pipeline's decision, each tool's own definition; no tool search, no
// tracing.
func testCache(cat *registry.Catalog) *Cache {
	return New(Options{
		Name: "mcp-hub", Version: "test",
		Catalog: func() *registry.Catalog { return cat },
		Visible: pipeline.Visible,
		Def:     func(t registry.Tool) mcp.Tool { return t.Def },
	})
}

// bigCatalog is a catalog of servers upstreams of tools tools each, as the
// registry publishes one: each tool under its server's prefix, its input
// schema raw as an upstream over HTTP listed it, sorted by name,
// classified by the default rules (no server trusted). 100 x 100 lists
// about 5 MB.
func bigCatalog(servers, tools int) *registry.Catalog {
	cat := &registry.Catalog{Gen: 1}
	var classifier *autonomy.Classifier // the default rules
	for i := range servers {
		server := fmt.Sprintf("u%03d", i)
		for k := range tools {
			def := catalogTool(i, k)
			original := def.Name
			def.Name = server + "__" + original
			def.RawInputSchema, _ = json.Marshal(def.InputSchema)
			def.InputSchema = mcp.ToolInputSchema{}
			cat.Tools = append(cat.Tools, registry.Tool{Name: def.Name, Original: original, Server: server, Def: def,
				Class: classifier.Classify(autonomy.Tool{Server: server, Name: original, Kind: autonomy.MCP,
					ReadOnlyHint: def.Annotations.ReadOnlyHint, DestructiveHint: def.Annotations.DestructiveHint})})
		}
	}
	slices.SortFunc(cat.Tools, func(a, b registry.Tool) int { return strings.Compare(a.Name, b.Name) })
	return cat
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

// TestListCacheKeyedByContent: a caller authenticated anew on every
// request (a ServiceAccount's token review, an OAuth token) gets a new
// allow-list each time; equal lists must share one cached view, and
// other lists must not.
func TestListCacheKeyedByContent(t *testing.T) {
	tool := func(name string) registry.Tool {
		return registry.Tool{Name: name, Original: name, Def: mcp.NewTool(name), Class: autonomy.Class{ReadOnly: true}}
	}
	cat := &registry.Catalog{Gen: 1, Tools: []registry.Tool{tool("a"), tool("b")}}
	c := testCache(cat)
	list := func(names ...string) (string, int) {
		t.Helper()
		v, err := c.view(cat, callers.Caller{Level: autonomy.Full, Allow: autonomy.NewAllowlist(names)})
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
	if n != 1 || c.views.Len() != 1 {
		t.Errorf("five lists by allow-lists of the same names: %d tools, %d cached views; want 1 tool, 1 view", n, c.views.Len())
	}
	if other, n := list("b"); other == first || n != 1 {
		t.Errorf("allow-list [b] listed %s (%d tools), the same as [a]", other, n)
	}
	if all, n := list(); n != 2 || c.views.Len() != 3 {
		t.Errorf("no allow-list listed %s (%d tools), %d views; want both tools in a third view", all, n, c.views.Len())
	}
}

// oldListAnswer is what the fast path wrote before it wrote lists in parts: one
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

// TestListWire: a cached list answers with the bytes the fast path always
// wrote, as they are or gzip compressed when the client accepts gzip, for
// ids of every kind and both heads, with a Content-Length that is the
// body's.
func TestListWire(t *testing.T) {
	c := testCache(bigCatalog(3, 40))
	view, err := c.view(c.opts.Catalog(), callers.Caller{Level: autonomy.Full})
	if err != nil {
		t.Fatal(err)
	}
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
			r, msg := listRequest(t, "/mcp", tc.id, listCase{modern: tc.modern, acceptEncoding: tc.acceptEncoding})
			w := httptest.NewRecorder()
			if !c.Serve(w, r, msg) {
				t.Fatal("Serve left the request to mcp-go")
			}
			wire := w.Body.Bytes()
			if cl := w.Header().Get("Content-Length"); cl != strconv.Itoa(len(wire)) {
				t.Errorf("Content-Length %q, %d bytes sent", cl, len(wire))
			}
			if v := w.Header().Values("Vary"); !slices.Contains(v, "Accept-Encoding") {
				t.Errorf("Vary %q lacks Accept-Encoding", v)
			}
			got := wire
			if ce := w.Header().Get("Content-Encoding"); (ce == "gzip") != tc.gzipped {
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
				modernHead = c.modern
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
	c := testCache(bigCatalog(3, 40))
	for _, lc := range listCases {
		if lc.acceptEncoding != "" {
			continue
		}
		t.Run(lc.name, func(t *testing.T) {
			r, msg := listRequest(t, "/mcp", `"req-1"`, lc)
			w := &writesRecorder{ResponseRecorder: httptest.NewRecorder()}
			if !c.Serve(w, r, msg) {
				t.Fatal("Serve left the request to mcp-go")
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
			c := testCache(tc.cat)
			va, errA := c.view(tc.cat, tc.a)
			vb, errB := c.view(tc.cat, tc.b)
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
			if whole := &va.suffix[0] == &c.tools.list[1]; whole != tc.isWhole {
				t.Errorf("result is the generation's encoding: %v, want %v", whole, tc.isWhole)
			}
		})
	}
}
