package server

import (
	"bytes"
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

// fastListCase is one kind of tools/list request against a listServer.
type fastListCase struct {
	name           string
	modern         bool
	acceptEncoding string
}

var fastListCases = []fastListCase{
	{"2025-11-25", false, ""},
	{"2025-11-25 gzip", false, "gzip"},
	{"2026-07-28", true, ""},
	{"2026-07-28 gzip", true, "gzip"},
}

// fastListRequest is the request of c, read as the gate reads it, with a
// full-level caller in its context.
func fastListRequest(tb testing.TB, c fastListCase) (*http.Request, *jsonrpc.Message) {
	tb.Helper()
	ctx := callers.With(context.Background(), callers.Caller{Name: "bench", Ceiling: autonomy.Full, Level: autonomy.Full})
	sid := edge.SessionIDs{}.ResolveSessionIdManager(httptest.NewRequestWithContext(ctx, http.MethodPost, "/mcp", nil)).Generate()
	params := ""
	if c.modern {
		params = modernListParams
	}
	r := listRequest(tb, "http://hub/mcp", `"req-1"`, params, c.modern, sid).WithContext(ctx)
	if c.acceptEncoding != "" {
		r.Header.Set("Accept-Encoding", c.acceptEncoding)
	}
	body := `{"jsonrpc":"2.0","id":"req-1","method":"tools/list"` + params + `}`
	msg, _, err := admit([]byte(body))
	if err != nil {
		tb.Fatal(err)
	}
	return r, msg
}

// fastListOnce answers r with fastList and returns the bytes written.
func fastListOnce(tb testing.TB, s *Server, r *http.Request, msg *jsonrpc.Message) int {
	w := &discardWriter{h: http.Header{}}
	if !s.fastList(w, r, msg) {
		tb.Fatal("fastList left the request to mcp-go")
	}
	return w.n
}

// BenchmarkFastList lists a catalog of 100 servers x 100 tools (~5 MB):
// B/op is what the hub allocates per list, which must not grow with the
// list.
func BenchmarkFastList(b *testing.B) {
	s := listServer(b, 100, 100)
	for _, c := range fastListCases {
		b.Run(c.name, func(b *testing.B) {
			r, msg := fastListRequest(b, c)
			b.SetBytes(int64(fastListOnce(b, s, r, msg))) // the first builds the view
			b.ReportAllocs()
			for b.Loop() {
				fastListOnce(b, s, r, msg)
			}
		})
	}
}

// TestFastListAllocationsDoNotScale: listing a 5 MB catalog allocates a
// few KB per request, whatever the list's size, as it is and gzipped.
func TestFastListAllocationsDoNotScale(t *testing.T) {
	const budget = 64 << 10 // bytes allocated per list
	s := listServer(t, 100, 100)
	v, err := s.toolsView(s.reg.Catalog(), callers.Caller{Level: autonomy.Full})
	if err != nil {
		t.Fatal(err)
	}
	if len(v.res) < 4<<20 {
		t.Fatalf("the catalog lists %d bytes, want a list of megabytes", len(v.res))
	}
	for _, c := range fastListCases {
		r, msg := fastListRequest(t, c)
		sent := fastListOnce(t, s, r, msg) // builds what the view keeps
		const n = 20
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for range n {
			fastListOnce(t, s, r, msg)
		}
		runtime.ReadMemStats(&after)
		perList := (after.TotalAlloc - before.TotalAlloc) / n
		allocs := (after.Mallocs - before.Mallocs) / n
		t.Logf("%-16s list %7d bytes, sent %7d bytes: %5d bytes in %3d allocations per list", c.name, len(v.res), sent, perList, allocs)
		if perList > budget {
			t.Errorf("%s: %d bytes allocated per list of %d bytes, budget %d", c.name, perList, len(v.res), budget)
		}
		if strings.HasSuffix(c.name, "gzip") != (sent < len(v.res)/4) {
			t.Errorf("%s: sent %d bytes for a list of %d", c.name, sent, len(v.res))
		}
	}
}

// BenchmarkListGeneration is the first list of a new catalog generation
// of 100 servers x 100 tools (~5 MB): every tool encoded (listencode.go)
// and the full view's result. B/op, less the list's own bytes, is the
// garbage each new generation leaves (issue 34: 53 MB in 186 ms, when each
// tool was encoded by mcp-go's MarshalJSON apart and a result grew by
// doubling; 9.4 MB with the list's 5.2 MB, in 53 ms).
func BenchmarkListGeneration(b *testing.B) {
	s := listServer(b, 100, 100)
	cat := s.reg.Catalog()
	caller := callers.Caller{Level: autonomy.Full}
	b.ReportAllocs()
	for b.Loop() {
		s.lists = listCache{} // a new generation
		v, err := s.toolsView(cat, caller)
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
	s := listServer(b, 100, 100)
	v, err := s.toolsView(s.reg.Catalog(), callers.Caller{Level: autonomy.Full})
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

// BenchmarkListOverLoopback sets a 5 MB tools/list of the hub against a
// static Go server sending the same answer's bytes to the same client, as
// they are and gzipped: the static server is the floor for this client.
func BenchmarkListOverLoopback(b *testing.B) {
	s := listServer(b, 100, 100)
	hub := httptest.NewServer(s.Handler())
	defer hub.Close()
	c := fastListCase{"2026-07-28", true, ""}
	r, msg := fastListRequest(b, c)
	rec := httptest.NewRecorder()
	s.fastList(rec, r, msg)
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
	gr, gmsg := fastListRequest(b, fastListCase{"", true, "gzip"})
	s.fastList(httptest.NewRecorder(), gr, gmsg) // compresses the view
	for _, enc := range []string{"", "gzip"} {
		for _, target := range []struct{ name, url string }{{"static", static.URL}, {"hub", hub.URL}} {
			b.Run(target.name+" "+cmpOr(enc, "identity"), func(b *testing.B) {
				b.SetBytes(int64(len(answer)))
				for b.Loop() {
					req := listRequest(b, target.url+"/mcp", `"req-1"`, modernListParams, true, "")
					if enc != "" {
						req.Header.Set("Accept-Encoding", enc)
					}
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
