package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/purko-io/mcp-hub/internal/hubtest"
)

// Benchmark 3, issue 34's checks. A 10,000-tool tools/list measured by
// hand, 20 requests to the hub and to a static server in turn, took 2x the
// static server's time, where the wire rounds above said 0.88x, and the
// hub's RSS grew with the number of lists. Two measurements here:
//
//   - Interleaved: request by request, in turn (each step in a rotated
//     order), listInterleavedRequests lists of each target per round, by
//     three pairs: identity (hub and static server send the same identity
//     bytes, the goal), gzip (both send the same gzip bytes), and
//     a client that accepts gzip, as Go's default one does, against a
//     static server of the identity bytes: the hub compresses, the static
//     server does not, and the client inflates megabytes the static
//     server never made it inflate. That last pair is the 2x: the bytes
//     compared were not the same.
//   - Memory: the hub's heap in use after a GC and its RSS before its
//     first tools/list and after 20, 40 and 100 (identity and gzip in
//     turn), each growth in list sizes.

const (
	// listInterleavedRequests is how many lists of each target a round of
	// the interleaved pairs takes: the 20.
	listInterleavedRequests = 20
	// targetListMemoryGrowth bounds what the hub holds after any number
	// of lists over what it held before the first, in list sizes: one
	// generation's encoded tools and its views' results (about 1.1x for
	// one view and its gzip variant), never a copy per list.
	targetListMemoryGrowth = 2.0
	// listMemorySettle bounds the wait before the hub's first list until
	// its memory is steady: its heap the same in two reads, its RSS
	// falling less than listMemoryRSSDrift per listMemoryLook. A hub that
	// just started holds the garbage of its start-up, which a collection
	// frees, and the runtime returns those pages to the OS over the next
	// minute or so: an RSS read before that falls by more than lists
	// could add, and would hide what they add.
	listMemorySettle   = 90 * time.Second
	listMemoryLook     = 2 * time.Second
	listMemoryHeapSame = 256 << 10
	listMemoryRSSDrift = 1 << 20
)

// listMemoryCheckpoints are the numbers of lists after which the hub's
// memory is read.
func listMemoryCheckpoints() []int { return []int{20, 40, 100} }

// ListMemory is the hub's memory before its first tools/list and after
// lists of the full view.
type ListMemory struct {
	ListBytes int               `json:"listBytes"` // the full list, uncompressed
	Before    MemSample         `json:"before"`
	After     []ListMemoryPoint `json:"after"`
}

// ListMemoryPoint is the hub's memory after Lists lists, and its growth
// since before the first in list sizes.
type ListMemoryPoint struct {
	Lists      int       `json:"lists"`
	Mem        MemSample `json:"mem"`
	HeapGrowth float64   `json:"heapGrowth"` // (HeapInuse - before) / ListBytes
	RSSGrowth  float64   `json:"rssGrowth"`  // (RSS - before) / ListBytes
}

// runListMemory lists the hub's full view (header: a session's headers)
// with an identity client and a gzip-accepting one in turn, and reads its
// memory before the first list and at each checkpoint. It must run before
// anything else lists the hub.
func runListMemory(ctx context.Context, hub *hubtest.Hub, pprofAddr string, header http.Header) (*ListMemory, error) {
	out := &ListMemory{}
	var err error
	if out.Before, err = settledMem(ctx, hub.PID(), pprofAddr); err != nil {
		return nil, fmt.Errorf("memory before the first list: %w", err)
	}
	// Both read the bytes as sent and drop them.
	client := &http.Client{Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 2}}
	defer client.CloseIdleConnections()
	done := 0
	for _, n := range listMemoryCheckpoints() {
		for ; done < n; done++ {
			gzip := done%2 == 1
			size, err := listOnce(ctx, client, hub.MCPURL(), header, gzip)
			if err != nil {
				return nil, fmt.Errorf("list %d: %w", done+1, err)
			}
			if !gzip {
				out.ListBytes = size
			}
		}
		m, err := memSample(ctx, hub.PID(), pprofAddr)
		if err != nil {
			return nil, fmt.Errorf("memory after %d lists: %w", n, err)
		}
		out.After = append(out.After, ListMemoryPoint{Lists: n, Mem: m,
			HeapGrowth: float64(m.HeapInuseKB-out.Before.HeapInuseKB) * 1024 / float64(out.ListBytes),
			RSSGrowth:  float64(m.RSSKB-out.Before.RSSKB) * 1024 / float64(out.ListBytes)})
	}
	return out, nil
}

// settledMem is memSample once the hub's memory is steady, or once
// listMemorySettle has passed.
func settledMem(ctx context.Context, pid int, pprofAddr string) (MemSample, error) {
	m, err := memSample(ctx, pid, pprofAddr)
	for deadline := time.Now().Add(listMemorySettle); err == nil && time.Now().Before(deadline); {
		select {
		case <-ctx.Done():
			return m, ctx.Err()
		case <-time.After(listMemoryLook):
		}
		var next MemSample
		if next, err = memSample(ctx, pid, pprofAddr); err != nil {
			break
		}
		steady := max(next.HeapInuseKB-m.HeapInuseKB, m.HeapInuseKB-next.HeapInuseKB)*1024 < listMemoryHeapSame &&
			(m.RSSKB-next.RSSKB)*1024 < listMemoryRSSDrift
		m = next
		if steady {
			break
		}
	}
	return m, err
}

// listOnce posts listRequest and reads the answer to its end, as sent
// (gzip: asking for it); it returns the body's length.
func listOnce(ctx context.Context, hc *http.Client, url string, header http.Header, gzip bool) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(string(listRequest)))
	if err != nil {
		return 0, err
	}
	req.Header = header.Clone()
	if gzip {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("tools/list: %s", resp.Status)
	}
	return int(n), err
}

// InterleavedList is the hub against static servers, request by request,
// in three pairs.
type InterleavedList struct {
	Requests int               `json:"requests"` // lists of each target per round
	Pairs    []InterleavedPair `json:"pairs"`
}

// InterleavedPair is one client listing the hub and a static server in
// turn; its figures are the rounds' medians.
type InterleavedPair struct {
	Name string `json:"name"`
	// Client is the client's Accept-Encoding ("" none); HubEncoding and
	// StaticEncoding what each sent it.
	Client         string    `json:"client"`
	HubEncoding    string    `json:"hubEncoding"`
	StaticEncoding string    `json:"staticEncoding"`
	HubP50Ms       float64   `json:"hubP50Ms"`
	StaticP50Ms    float64   `json:"staticP50Ms"`
	P50Ratio       float64   `json:"p50Ratio"` // median of the rounds' hub p50 / static p50
	RoundRatios    []float64 `json:"roundRatios"`
}

// interleavedTarget is one side of a pair.
type interleavedTarget struct {
	pair int
	hub  bool
	op   listOp
}

// runInterleaved measures the pairs: raw reads the bytes as sent, gz
// accepts gzip and inflates (net/http's default); staticURL sends gzip to
// a client that accepts it, plainURL never does.
func (e *benchEnv) runInterleaved(ctx context.Context, raw, gz *http.Client, hubURL, staticURL, plainURL string, header http.Header, size int, hubGzip bool) (*InterleavedList, error) {
	out := &InterleavedList{Requests: listInterleavedRequests, Pairs: []InterleavedPair{
		{Name: "identity", HubEncoding: "identity", StaticEncoding: "identity"},
		{Name: "gzip-accepting client, static identity", Client: "gzip", HubEncoding: "identity", StaticEncoding: "identity"},
	}}
	targets := []interleavedTarget{
		{0, false, wireList(raw, staticURL, header, size)}, {0, true, wireList(raw, hubURL, header, size)},
		{1, false, wireList(gz, plainURL, header, size)}, {1, true, wireList(gz, hubURL, header, size)},
	}
	if hubGzip {
		out.Pairs[1].HubEncoding = "gzip"
		out.Pairs = append(out.Pairs, InterleavedPair{Name: "gzip", Client: "gzip", HubEncoding: "gzip", StaticEncoding: "gzip"})
		targets = append(targets, interleavedTarget{2, false, wireList(gz, staticURL, header, size)}, interleavedTarget{2, true, wireList(gz, hubURL, header, size)})
	}
	// One warm list each: connections open, and the hub's view (and its
	// gzip variant) built, as in the run after its first list.
	for _, t := range targets {
		if _, _, _, _, err := t.op(ctx); err != nil {
			return nil, err
		}
	}
	hubP50s, staticP50s := make([][]float64, len(out.Pairs)), make([][]float64, len(out.Pairs))
	rounds := e.cfg.rounds()
	for r := range rounds {
		e.progress("tools/list, interleaved round %d of %d: %d lists of each of %d targets, request by request", r+1, rounds, listInterleavedRequests, len(targets))
		lat := make([][]time.Duration, len(targets))
		for i := range listInterleavedRequests {
			// Each step starts one target later than the one before.
			for k := range targets {
				j := (i + k) % len(targets)
				_, _, _, d, err := targets[j].op(ctx)
				if err != nil {
					return nil, err
				}
				lat[j] = append(lat[j], d)
			}
		}
		p50 := make([][2]float64, len(out.Pairs)) // static, hub
		for j, t := range targets {
			slices.Sort(lat[j])
			side := 0
			if t.hub {
				side = 1
			}
			p50[t.pair][side] = pct(lat[j], 50)
		}
		for k := range out.Pairs {
			out.Pairs[k].RoundRatios = append(out.Pairs[k].RoundRatios, ratio(p50[k][1], p50[k][0]))
			staticP50s[k], hubP50s[k] = append(staticP50s[k], p50[k][0]), append(hubP50s[k], p50[k][1])
		}
	}
	for k := range out.Pairs {
		p := &out.Pairs[k]
		p.P50Ratio, p.HubP50Ms, p.StaticP50Ms = median(p.RoundRatios), median(hubP50s[k]), median(staticP50s[k])
	}
	return out, nil
}

// pair is the pair called name, nil when not measured.
func (l *InterleavedList) pair(name string) *InterleavedPair {
	for k := range l.Pairs {
		if l.Pairs[k].Name == name {
			return &l.Pairs[k]
		}
	}
	return nil
}

func (m *ListMemory) writeTable(w io.Writer) {
	fmt.Fprintf(w, "\nthe hub's memory before its first tools/list and after lists of the full view (identity and gzip in turn), growth in list sizes (%.1f KB)\n", float64(m.ListBytes)/1024)
	fmt.Fprintf(w, "%-7s %10s %12s %12s %12s\n", "lists", "RSS KB", "heap KB*", "RSS growth", "heap growth")
	fmt.Fprintf(w, "%-7s %10d %12d\n", "before", m.Before.RSSKB, m.Before.HeapInuseKB)
	for _, p := range m.After {
		fmt.Fprintf(w, "%-7d %10d %12d %11.2fx %11.2fx\n", p.Lists, p.Mem.RSSKB, p.Mem.HeapInuseKB, p.RSSGrowth, p.HeapGrowth)
	}
	fmt.Fprintf(w, "* heap in use after a forced GC\n")
}

func (l *InterleavedList) writeTable(w io.Writer, backToBack float64) {
	fmt.Fprintf(w, "\nthe full list, request by request: %d lists of each target per round in turn, rounds' medians\n", l.Requests)
	fmt.Fprintf(w, "%-40s %-9s %-9s %9s %9s %9s  %s\n", "pair", "hub", "static", "hub p50", "stat p50", "hub/stat", "rounds")
	for _, p := range l.Pairs {
		var per []string
		for _, r := range p.RoundRatios {
			per = append(per, fmt.Sprintf("%.2fx", r))
		}
		fmt.Fprintf(w, "%-40s %-9s %-9s %9.3f %9.3f %8.2fx  %s\n", p.Name, p.HubEncoding, p.StaticEncoding, p.HubP50Ms, p.StaticP50Ms, p.P50Ratio, strings.Join(per, ", "))
	}
	fmt.Fprintln(w, l.explain(backToBack))
}

// explain says why a hand-made comparison found the hub at 2x where the
// wire rounds find it at the floor, from this run's figures.
func (l *InterleavedList) explain(backToBack float64) string {
	id, mixed := l.pair("identity"), l.pair("gzip-accepting client, static identity")
	if id == nil || mixed == nil {
		return ""
	}
	s := fmt.Sprintf("the same bytes from both: %.2fx back to back, %.2fx request by request", backToBack, id.P50Ratio)
	if gz := l.pair("gzip"); gz != nil {
		s += fmt.Sprintf(" (gzip: %.2fx)", gz.P50Ratio)
	}
	if mixed.HubEncoding == "gzip" {
		s += fmt.Sprintf("; a client that accepts gzip against a static server of the identity bytes: %.2fx, the time the client takes to inflate what the hub compressed and the static server did not (not the same bytes)", mixed.P50Ratio)
	}
	return s
}
