package toollist

import (
	"io"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
)

// heapAfterGC is the live heap (HeapAlloc) and the heap in use (HeapInuse,
// whole spans) after a collection.
func heapAfterGC() (alloc, inuse uint64) {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc, m.HeapInuse
}

// settledHeap is heapAfterGC once two readings 50 ms apart agree within
// 64 KB (or after 5 s): what a hub holds just after its catalog came in
// still changes for a while (the registry's later rebuilds, upstream
// sessions settling), and that is not what a list adds.
func settledHeap() (alloc, inuse uint64) {
	alloc, inuse = heapAfterGC()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		a, i := heapAfterGC()
		if max(a, alloc)-min(a, alloc) < 64<<10 {
			return a, i
		}
		alloc, inuse = a, i
	}
	return alloc, inuse
}

// TestListMemoryStaysBounded (issue 34): whatever number of 5 MB lists a
// cache serves, over HTTP as clients ask for them, what it holds after
// them stays within twice the list's size of what it held before the
// first: one generation's encoded tools and the results of its views,
// never a copy per request, per session or per caller that sees the same
// tools. Measured after a collection, so it does not depend on when the
// runtime collects (the hub runs with GOGC=400); the margin, 2x for at
// most about 1.1x kept, leaves room for the test's own server and clients.
func TestListMemoryStaysBounded(t *testing.T) {
	cases := []struct {
		name string
		// requests are cycled through: the Accept-Encoding and the
		// X-Autonomy-Level of each list.
		requests [][2]string
	}{
		{"identity", [][2]string{{"", ""}}},
		{"gzip", [][2]string{{"gzip", ""}}},
		{"identity and gzip in turn", [][2]string{{"", ""}, {"gzip", ""}}},
		// Two levels, two views: full and the read-only half of it.
		{"full and restricted in turn", [][2]string{{"", "full"}, {"", "restricted"}}},
		// Every level but manual, which lists nothing: supervised sees
		// what full sees and shares its result.
		{"three levels", [][2]string{{"", "full"}, {"gzip", "supervised"}, {"", "restricted"}}},
	}
	cat := bigCatalog(100, 100)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := testCache(cat)
			hub := face(t, c)
			// The bytes on the wire, read and dropped: the client keeps
			// nothing of a list.
			client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
			defer client.CloseIdleConnections()
			list := func(k int) {
				enc, level := tc.requests[k%len(tc.requests)][0], tc.requests[k%len(tc.requests)][1]
				req, _ := listRequest(t, hub.URL+"/mcp", "1", listCase{acceptEncoding: enc})
				if level != "" {
					req.Header.Set("X-Autonomy-Level", level)
				}
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				n, err := io.Copy(io.Discard, resp.Body)
				if err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("Vary") == "" {
					t.Fatalf("list %d: %s, %d bytes, %v, %v (not the list cache's answer)", k, resp.Status, n, err, resp.Header)
				}
			}
			beforeAlloc, beforeInuse := settledHeap()
			// The list's size is the full view's result; measured after
			// the lists, which build it first.
			size := 0
			defer func() {
				if size < 4<<20 {
					t.Errorf("the list is %d bytes, want megabytes", size)
				}
			}()
			done := 0
			for _, n := range []int{20, 40, 100} {
				for ; done < n; done++ {
					list(done)
				}
				if size == 0 {
					v, err := c.view(cat, callers.Caller{Level: autonomy.Full})
					if err != nil {
						t.Fatal(err)
					}
					size = len(v.res)
				}
				alloc, inuse := heapAfterGC()
				grewAlloc, grewInuse := int64(alloc)-int64(beforeAlloc), int64(inuse)-int64(beforeInuse)
				t.Logf("after %3d lists of %d bytes: live heap %+.2f MB (%.2fx the list), heap in use %+.2f MB (%.2fx)",
					n, size, float64(grewAlloc)/1e6, float64(grewAlloc)/float64(size), float64(grewInuse)/1e6, float64(grewInuse)/float64(size))
				if grewAlloc > 2*int64(size) || grewInuse > 2*int64(size) {
					t.Errorf("after %d lists of %d bytes the heap grew by %d bytes live, %d in use: more than twice the list",
						n, size, grewAlloc, grewInuse)
				}
			}
		})
	}
}
