package toollist

import (
	"bytes"
	"cmp"
	"compress/flate"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/edge"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
)

// discardWriter is a ResponseWriter that counts what it is given and
// keeps none of it, so that what a list allocates is the hub's alone.
type discardWriter struct {
	h http.Header
	n int
}

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) WriteHeader(int)             {}
func (d *discardWriter) Write(p []byte) (int, error) { d.n += len(p); return len(p), nil }

// listCase is one kind of tools/list request.
type listCase struct {
	name           string
	modern         bool
	acceptEncoding string
}

var listCases = []listCase{
	{"2025-11-25", false, ""},
	{"2025-11-25 gzip", false, "gzip"},
	{"2026-07-28", true, ""},
	{"2026-07-28 gzip", true, "gzip"},
}

// modernListParams are the params of a 2026-07-28 tools/list that the
// cache answers.
const modernListParams = `,"params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`

// listRequest is the tools/list of c with id, as a 2025-11-25 session or a
// 2026-07-28 client sends it to target (a URL, or a path for Serve), with
// a full-level caller in its context, and its message as the face reads it.
func listRequest(tb testing.TB, target, id string, c listCase) (*http.Request, *jsonrpc.Message) {
	tb.Helper()
	params := ""
	if c.modern {
		params = modernListParams
	}
	body := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/list"` + params + `}`
	msg, _, err := new(jsonrpc.Reader).ParseRequest([]byte(body))
	if err != nil {
		tb.Fatal(err)
	}
	ctx := callers.With(context.Background(), callers.Caller{Name: "bench", Ceiling: autonomy.Full, Level: autonomy.Full})
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, target, strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	if c.modern {
		r.Header.Set(mcp.HeaderProtocolVersion, "2026-07-28")
		r.Header.Set(mcp.HeaderMethod, string(mcp.MethodToolsList))
	} else {
		r.Header.Set("Mcp-Session-Id", edge.SessionIDs{}.ResolveSessionIdManager(r).Generate())
	}
	if c.acceptEncoding != "" {
		r.Header.Set("Accept-Encoding", c.acceptEncoding)
	}
	return r, msg
}

// face serves c over HTTP as the hub's /mcp face serves a plain
// tools/list: the message read, the caller (at the X-Autonomy-Level asked,
// full without) in the request's context, Serve. A request Serve leaves
// to mcp-go fails here.
func face(tb testing.TB, c *Cache) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		msg, _, err := new(jsonrpc.Reader).ParseRequest(body)
		level, lerr := autonomy.ParseLevel(cmp.Or(r.Header.Get("X-Autonomy-Level"), "full"))
		if err != nil || lerr != nil {
			http.Error(w, "unreadable request", http.StatusBadRequest)
			return
		}
		r = r.WithContext(callers.With(r.Context(), callers.Caller{Name: "t", Ceiling: autonomy.Full, Level: level}))
		if !c.Serve(w, r, msg) {
			http.Error(w, "left to mcp-go", http.StatusInternalServerError)
		}
	}))
	tb.Cleanup(srv.Close)
	return srv
}

// serveOnce answers r with Serve and returns the bytes written.
func serveOnce(tb testing.TB, c *Cache, r *http.Request, msg *jsonrpc.Message) int {
	w := &discardWriter{h: http.Header{}}
	if !c.Serve(w, r, msg) {
		tb.Fatal("Serve left the request to mcp-go")
	}
	return w.n
}

// BenchmarkFastList lists a catalog of 100 servers x 100 tools (~5 MB):
// B/op is what the hub allocates per list, which must not grow with the
// list.
func BenchmarkFastList(b *testing.B) {
	c := testCache(bigCatalog(100, 100))
	for _, lc := range listCases {
		b.Run(lc.name, func(b *testing.B) {
			r, msg := listRequest(b, "/mcp", `"req-1"`, lc)
			b.SetBytes(int64(serveOnce(b, c, r, msg))) // the first builds the view
			b.ReportAllocs()
			for b.Loop() {
				serveOnce(b, c, r, msg)
			}
		})
	}
}

// TestFastListAllocationsDoNotScale: listing a 5 MB catalog allocates a
// few KB per request, whatever the list's size, as it is and gzipped.
func TestFastListAllocationsDoNotScale(t *testing.T) {
	const budget = 64 << 10 // bytes allocated per list
	c := testCache(bigCatalog(100, 100))
	v, err := c.view(c.opts.Catalog(), callers.Caller{Level: autonomy.Full})
	if err != nil {
		t.Fatal(err)
	}
	if len(v.res) < 4<<20 {
		t.Fatalf("the catalog lists %d bytes, want a list of megabytes", len(v.res))
	}
	for _, lc := range listCases {
		r, msg := listRequest(t, "/mcp", `"req-1"`, lc)
		sent := serveOnce(t, c, r, msg) // builds what the view keeps
		const n = 20
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for range n {
			serveOnce(t, c, r, msg)
		}
		runtime.ReadMemStats(&after)
		perList := (after.TotalAlloc - before.TotalAlloc) / n
		allocs := (after.Mallocs - before.Mallocs) / n
		t.Logf("%-16s list %7d bytes, sent %7d bytes: %5d bytes in %3d allocations per list", lc.name, len(v.res), sent, perList, allocs)
		if perList > budget {
			t.Errorf("%s: %d bytes allocated per list of %d bytes, budget %d", lc.name, perList, len(v.res), budget)
		}
		if strings.HasSuffix(lc.name, "gzip") != (sent < len(v.res)/4) {
			t.Errorf("%s: sent %d bytes for a list of %d", lc.name, sent, len(v.res))
		}
	}
}

// BenchmarkListGeneration is the first list of a new catalog generation
// of 100 servers x 100 tools (~5 MB): every tool encoded (encode.go)
// and the full view's result. B/op, less the list's own bytes, is the
// garbage each new generation leaves (issue 34: 53 MB in 186 ms, when each
// tool was encoded by mcp-go's MarshalJSON apart and a result grew by
// doubling; 9.4 MB with the list's 5.2 MB, in 53 ms).
func BenchmarkListGeneration(b *testing.B) {
	cat := bigCatalog(100, 100)
	c := testCache(cat)
	caller := callers.Caller{Level: autonomy.Full}
	b.ReportAllocs()
	for b.Loop() {
		c.views = nil // a new generation
		v, err := c.view(cat, caller)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(v.res)))
	}
}

// BenchmarkListGzipLevels is what choosing listGzipLevel weighed: the time
// to compress a 5 MB list once, and the share of its bytes that every gzip
// answer then sends (ratio, %).
func BenchmarkListGzipLevels(b *testing.B) {
	c := testCache(bigCatalog(100, 100))
	v, err := c.view(c.opts.Catalog(), callers.Caller{Level: autonomy.Full})
	if err != nil {
		b.Fatal(err)
	}
	for _, level := range []int{flate.HuffmanOnly, flate.BestSpeed, 2, 4, flate.DefaultCompression, flate.BestCompression} {
		b.Run(fmt.Sprintf("level %d", level), func(b *testing.B) {
			var out bytes.Buffer
			b.SetBytes(int64(len(v.res)))
			for b.Loop() {
				out.Reset()
				zw, _ := flate.NewWriter(&out, level)
				_, _ = zw.Write(v.res)
				_ = zw.Close()
			}
			b.ReportMetric(100*float64(out.Len())/float64(len(v.res)), "ratio-%")
		})
	}
}

// BenchmarkListOverLoopback sets a 5 MB tools/list of the cache, served
// as the hub's face serves it, against a static Go server sending the same
// answer's bytes to the same client, as they are and gzipped: the static
// server is the floor for this client.
func BenchmarkListOverLoopback(b *testing.B) {
	c := testCache(bigCatalog(100, 100))
	hub := face(b, c)
	r, msg := listRequest(b, "/mcp", `"req-1"`, listCase{"2026-07-28", true, ""})
	rec := httptest.NewRecorder()
	c.Serve(rec, r, msg)
	answer := rec.Body.Bytes()
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, listGzipLevel)
	_, _ = zw.Write(answer)
	_ = zw.Close()
	static := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		body := answer
		if r.Header.Get("Accept-Encoding") == "gzip" {
			body = gz.Bytes()
			w.Header().Set("Content-Encoding", "gzip")
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	}))
	defer static.Close()
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	gr, gmsg := listRequest(b, "/mcp", `"req-1"`, listCase{"", true, "gzip"})
	c.Serve(httptest.NewRecorder(), gr, gmsg) // compresses the view
	for _, enc := range []string{"", "gzip"} {
		for _, target := range []struct{ name, url string }{{"static", static.URL}, {"hub", hub.URL}} {
			b.Run(target.name+" "+cmp.Or(enc, "identity"), func(b *testing.B) {
				b.SetBytes(int64(len(answer)))
				for b.Loop() {
					req, _ := listRequest(b, target.url+"/mcp", `"req-1"`, listCase{"", true, enc})
					resp, err := client.Do(req)
					if err != nil {
						b.Fatal(err)
					}
					var body io.Reader = resp.Body
					if resp.Header.Get("Content-Encoding") == "gzip" {
						if body, err = gzip.NewReader(resp.Body); err != nil {
							b.Fatal(err)
						}
					}
					n, err := io.Copy(io.Discard, body)
					resp.Body.Close()
					if err != nil || n != int64(len(answer)) {
						b.Fatalf("read %d bytes (%v), want %d", n, err, len(answer))
					}
				}
			})
		}
	}
}
