package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/purko-io/mcp-hub/internal/hubtest"
)

// Benchmark 3: tools/list of a large catalog (100 upstreams x 100 tools,
// about 5 MB). The baselines are listing the upstreams directly and, for
// the wire itself, a static Go server (role "static", a plain net/http
// handler in a process of its own) that sends the very bytes of the hub's
// reply: fetched once from the hub, written to a file, served with
// Content-Length, and gzip-compressed when the hub compresses them too.
// The hub and the static server are measured in interleaved rounds by the
// same client code, and the hub's CPU per list is read from /proc.

const (
	// targetListVsStatic bounds the hub's p50 over the static server's,
	// sending the same bytes to the same client.
	targetListVsStatic = 1.1

	staticBodyEnv = "MCPHUB_BENCH_STATIC_BODY" // file with the reply
	staticGzipEnv = "MCPHUB_BENCH_STATIC_GZIP" // file with it gzip-compressed; unset: no gzip
	staticTypeEnv = "MCPHUB_BENCH_STATIC_TYPE" // its Content-Type
)

// ListResult is one way of listing the catalog, measured back to back on
// one session.
type ListResult struct {
	Target string  `json:"target"`
	Lists  int     `json:"lists"`
	Tools  int     `json:"tools"` // per full list
	Pages  int     `json:"pages"` // per full list
	Bytes  int     `json:"bytes"` // per full list
	P50Ms  float64 `json:"p50Ms"`
	P99Ms  float64 `json:"p99Ms"`
	// P50Ratio and P99Ratio set this against listing one upstream directly.
	P50Ratio float64 `json:"p50Ratio"`
	P99Ratio float64 `json:"p99Ratio"`
	// CPUMsPerList is the serving process's CPU per list (the hub's, the
	// static server's), from /proc; measured for the wire comparison.
	CPUMsPerList float64 `json:"cpuMsPerList,omitempty"`
}

// ListBench is benchmark 3.
type ListBench struct {
	Upstreams        int `json:"upstreams"`
	ToolsPerUpstream int `json:"toolsPerUpstream"`
	// Direct lists one upstream's tools directly: the baseline.
	Direct ListResult `json:"direct"`
	// DirectAll lists every upstream directly, one after the other: what a
	// client without the hub would do.
	DirectAll ListResult `json:"directAll"`
	// Full and Restricted list the whole catalog through the hub.
	Full       ListResult `json:"full"`
	Restricted ListResult `json:"restricted"`
	// Wire is the hub against the static server with the same bytes, one
	// entry per encoding (identity, and gzip when HubGzip).
	Wire    []WireList `json:"wire"`
	HubGzip bool       `json:"hubGzip"` // the hub compressed its reply for a client that accepts gzip
	// Interleaved and Memory are issue 34's checks (listmem.go): the full
	// list request by request against static servers, and the hub's
	// memory after many lists.
	Interleaved *InterleavedList `json:"interleaved"`
	Memory      *ListMemory      `json:"memory"`
}

// WireList is the full list of the hub against the static server, in one
// encoding, in interleaved rounds; Static and Hub are the rounds' medians.
type WireList struct {
	Encoding  string      `json:"encoding"`  // identity or gzip
	WireBytes int         `json:"wireBytes"` // on the wire per list
	Rounds    []WireRound `json:"rounds"`
	Static    ListResult  `json:"static"`
	Hub       ListResult  `json:"hub"`
	P50Ratio  float64     `json:"p50Ratio"` // median of the rounds' hub p50 / static p50
}

// WireRound is one round of a WireList.
type WireRound struct {
	Static   ListResult `json:"static"`
	Hub      ListResult `json:"hub"`
	P50Ratio float64    `json:"p50Ratio"` // hub p50 / static p50
}

// listOp lists once and says what it got.
type listOp func(ctx context.Context) (tools, pages, size int, elapsed time.Duration, err error)

// measureList runs op back to back: the warm-up, then for the measuring
// time, and at least minLists measured lists; w runs at the edges of the
// measured time.
func measureList(ctx context.Context, target string, cfg Config, op listOp, w window) (ListResult, error) {
	const minLists = 5
	res := ListResult{Target: target}
	var lat []time.Duration
	warmEnd := time.Now().Add(cfg.Warmup)
	for first := true; first || time.Now().Before(warmEnd); first = false {
		if _, _, _, _, err := op(ctx); err != nil {
			return res, fmt.Errorf("%s: %w", target, err)
		}
	}
	if w.begin != nil {
		w.begin()
	}
	end := time.Now().Add(cfg.Duration)
	for (time.Now().Before(end) || len(lat) < minLists) && ctx.Err() == nil {
		tools, pages, size, d, err := op(ctx)
		if err != nil {
			return res, fmt.Errorf("%s: %w", target, err)
		}
		if len(lat) > 0 && (tools != res.Tools || pages != res.Pages) {
			return res, fmt.Errorf("%s: %d tools in %d pages, before %d in %d", target, tools, pages, res.Tools, res.Pages)
		}
		res.Tools, res.Pages, res.Bytes = tools, pages, size
		lat = append(lat, d)
	}
	if w.end != nil {
		w.end()
	}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	slices.Sort(lat)
	res.Lists, res.P50Ms, res.P99Ms = len(lat), pct(lat, 50), pct(lat, 99)
	return res, nil
}

// runList measures benchmark 3 on a hub that has not served tools/list
// yet, whose profiles pprofAddr serves: first the hub's memory over many
// lists (it must see the hub before its first), and with -profile, a
// profile of the hub in a run of its own after the wire rounds (runWire).
func (e *benchEnv) runList(ctx context.Context, s *scaleSetup, hub *hubtest.Hub, pprofAddr string) (*ListBench, *ProfileCapture, error) {
	hc := newHTTPClient(64)
	defer hc.CloseIdleConnections()
	out := &ListBench{Upstreams: s.upstreams, ToolsPerUpstream: s.tools}
	e.progress("tools/list: the hub's memory before its first list and after %v", listMemoryCheckpoints())
	ms, err := openRaw(ctx, hc, hub.MCPURL(), "X-Autonomy-Level", "full")
	if err != nil {
		return nil, nil, err
	}
	if out.Memory, err = runListMemory(ctx, hub, pprofAddr, ms.request(ctx, http.MethodPost, nil).Header); err != nil {
		return nil, nil, err
	}
	e.progress("tools/list: one upstream directly (%d tools)", s.tools)
	one, err := openRaw(ctx, hc, s.urls[0])
	if err != nil {
		return nil, nil, err
	}
	if out.Direct, err = measureList(ctx, "direct (1 upstream)", e.cfg, one.listTools, window{}); err != nil {
		return nil, nil, err
	}
	e.progress("tools/list: every upstream directly, one after the other")
	all := make([]*rawSession, s.upstreams)
	for i := range all {
		if all[i], err = openRaw(ctx, hc, s.urls[i]); err != nil {
			return nil, nil, fmt.Errorf("upstream %d: %w", i, err)
		}
	}
	out.DirectAll, err = measureList(ctx, fmt.Sprintf("direct (%d upstreams)", s.upstreams), e.cfg, func(ctx context.Context) (tools, pages, size int, elapsed time.Duration, err error) {
		for _, rs := range all {
			t, p, b, d, err := rs.listTools(ctx)
			if err != nil {
				return 0, 0, 0, 0, err
			}
			tools, pages, size, elapsed = tools+t, pages+p, size+b, elapsed+d
		}
		return
	}, window{})
	if err != nil {
		return nil, nil, err
	}
	for _, v := range []struct {
		level string
		into  *ListResult
	}{{"full", &out.Full}, {"restricted", &out.Restricted}} {
		e.progress("tools/list: through the hub, %s view", v.level)
		rs, err := openRaw(ctx, hc, hub.MCPURL(), "X-Autonomy-Level", v.level)
		if err != nil {
			return nil, nil, err
		}
		if *v.into, err = measureList(ctx, "hub, "+v.level, e.cfg, rs.listTools, window{}); err != nil {
			return nil, nil, err
		}
	}
	for _, r := range []*ListResult{&out.Direct, &out.DirectAll, &out.Full, &out.Restricted} {
		r.P50Ratio, r.P99Ratio = ratio(r.P50Ms, out.Direct.P50Ms), ratio(r.P99Ms, out.Direct.P99Ms)
	}
	prof, err := e.runWire(ctx, out, hub, pprofAddr)
	if err != nil {
		return nil, nil, fmt.Errorf("against a static server: %w", err)
	}
	return out, prof, nil
}

// hubReply is the hub's reply to one tools/list, as sent.
type hubReply struct {
	contentType string
	body, gzip  []byte // gzip nil: the hub does not compress
}

// listRequest is the tools/list every wire measurement sends.
var listRequest = []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`)

// runWire measures the full list of the hub against a static server that
// sends the same bytes, in each encoding the hub speaks, back to back and
// request by request (runInterleaved); with -profile, it then profiles the
// hub listing as in the identity rounds, in a run of its own. (Profiled while a raw session listed the full view, the hub idled:
// that client decodes each 5 MB list between its requests.)
func (e *benchEnv) runWire(ctx context.Context, out *ListBench, hub *hubtest.Hub, pprofAddr string) (*ProfileCapture, error) {
	raw := &http.Client{Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 4}}
	defer raw.CloseIdleConnections()
	rs, err := openRaw(ctx, raw, hub.MCPURL(), "X-Autonomy-Level", "full")
	if err != nil {
		return nil, err
	}
	header := rs.request(ctx, http.MethodPost, nil).Header
	reply, err := fetchReply(ctx, raw, hub.MCPURL(), header, out.Full.Tools)
	if err != nil {
		return nil, err
	}
	out.HubGzip = reply.gzip != nil
	env := []string{staticTypeEnv + "=" + reply.contentType}
	for _, f := range []struct {
		env, name string
		data      []byte
	}{{staticBodyEnv, "tools-list.body", reply.body}, {staticGzipEnv, "tools-list.gz", reply.gzip}} {
		if f.data == nil {
			continue
		}
		path := filepath.Join(e.tmp, f.name)
		if err := os.WriteFile(path, f.data, 0o644); err != nil {
			return nil, fmt.Errorf("write the hub's reply: %w", err)
		}
		env = append(env, f.env+"="+path)
	}
	static, staticURL, err := e.startRole(ctx, "static", env...)
	if err != nil {
		return nil, fmt.Errorf("start the static server: %w", err)
	}
	defer static.Kill()

	// One client per encoding, the same for both targets: identity asks
	// for no compression; gzip is net/http's default, which asks for gzip
	// and decompresses it, as most clients do.
	type target struct {
		name, url string
		pid       int
	}
	targets := []target{{"static", staticURL, static.PID()}, {"hub", hub.MCPURL(), hub.PID()}}
	// run is one target in one encoding: out.Wire[k].
	type run struct {
		k      int
		client *http.Client
		t      target
	}
	type encoding struct {
		name   string
		client *http.Client
		wire   int
	}
	encodings := []encoding{{"identity", raw, len(reply.body)}}
	if reply.gzip != nil {
		gz := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
		defer gz.CloseIdleConnections()
		encodings = append(encodings, encoding{"gzip", gz, len(reply.gzip)})
	}
	var runs []run
	out.Wire = make([]WireList, len(encodings))
	for k, enc := range encodings {
		out.Wire[k] = WireList{Encoding: enc.name, WireBytes: enc.wire}
		for _, t := range targets {
			runs = append(runs, run{k, enc.client, t})
		}
	}
	rounds := e.cfg.rounds()
	for r := range rounds {
		got := make([]WireRound, len(out.Wire))
		// Each round starts one run later than the one before, so that
		// no target always runs first or after the same other.
		for i := range runs {
			rn := runs[(i+r)%len(runs)]
			enc := out.Wire[rn.k].Encoding
			e.progress("tools/list, round %d of %d: %s, %s", r+1, rounds, rn.t.name, enc)
			m := newCPUMeter(rn.t.pid)
			res, err := measureList(ctx, rn.t.name+", "+enc, e.cfg, wireList(rn.client, rn.t.url, header, len(reply.body)), meterWindow(m))
			if err != nil {
				return nil, err
			}
			us, err := m.usPer(0, res.Lists)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", res.Target, err)
			}
			res.Tools, res.CPUMsPerList = out.Full.Tools, us/1000
			if rn.t.name == "hub" {
				got[rn.k].Hub = res
			} else {
				got[rn.k].Static = res
			}
		}
		for k := range got {
			got[k].P50Ratio = ratio(got[k].Hub.P50Ms, got[k].Static.P50Ms)
			out.Wire[k].Rounds = append(out.Wire[k].Rounds, got[k])
		}
	}
	for k := range out.Wire {
		out.Wire[k].summarize()
	}
	// Request by request, and against a static server that never
	// compresses (what a client that accepts gzip gets from a server of
	// the identity bytes).
	plain, plainURL, err := e.startRole(ctx, "static", staticTypeEnv+"="+reply.contentType, staticBodyEnv+"="+filepath.Join(e.tmp, "tools-list.body"))
	if err != nil {
		return nil, fmt.Errorf("start the static server of the identity bytes: %w", err)
	}
	defer plain.Kill()
	gz := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	defer gz.CloseIdleConnections()
	if out.Interleaved, err = e.runInterleaved(ctx, raw, gz, hub.MCPURL(), staticURL, plainURL, header, len(reply.body), out.HubGzip); err != nil {
		return nil, fmt.Errorf("request by request: %w", err)
	}
	if e.cfg.ProfileDir == "" {
		return nil, nil
	}
	prof, err := e.newCapture(fmt.Sprintf("tools/list of %d tools, identity, back to back", out.Full.Tools), "hub-list")
	if err != nil {
		return nil, err
	}
	runCfg := e.cfg
	runCfg.Duration = prof.runLength(runCfg.Duration)
	begin, wait := prof.start(ctx, pprofAddr)
	e.progress("tools/list: hub, identity, profiled (%d s CPU profile, allocations) into %s", prof.Seconds, prof.Dir)
	if _, err := measureList(ctx, "hub, identity, profiled", runCfg, wireList(raw, hub.MCPURL(), header, len(reply.body)), window{begin: begin}); err != nil {
		return nil, err
	}
	if err := wait(); err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	return prof, nil
}

// summarize fills the medians from the rounds.
func (w *WireList) summarize() {
	var static, hub []ListResult
	var ratios []float64
	for _, r := range w.Rounds {
		static, hub, ratios = append(static, r.Static), append(hub, r.Hub), append(ratios, r.P50Ratio)
	}
	w.Static, w.Hub, w.P50Ratio = medianList(static), medianList(hub), median(ratios)
}

// medianList is the median of runs of one target, field by field.
func medianList(rs []ListResult) ListResult {
	if len(rs) == 0 {
		return ListResult{}
	}
	out := rs[0]
	out.Lists = int(medianBy(rs, func(r ListResult) float64 { return float64(r.Lists) }))
	out.P50Ms = medianBy(rs, func(r ListResult) float64 { return r.P50Ms })
	out.P99Ms = medianBy(rs, func(r ListResult) float64 { return r.P99Ms })
	out.CPUMsPerList = medianBy(rs, func(r ListResult) float64 { return r.CPUMsPerList })
	return out
}

// fetchReply gets the hub's reply to listRequest twice: as it is, and
// with the client accepting gzip (kept when the hub compressed it). The
// reply must list tools tools.
func fetchReply(ctx context.Context, hc *http.Client, url string, header http.Header, tools int) (hubReply, error) {
	var out hubReply
	for _, enc := range []string{"", "gzip"} {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(listRequest))
		if err != nil {
			return out, err
		}
		req.Header = header.Clone()
		if enc != "" {
			req.Header.Set("Accept-Encoding", enc)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return out, fmt.Errorf("tools/list: %w", err)
		}
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return out, fmt.Errorf("tools/list: %w", err)
		}
		if resp.StatusCode != http.StatusOK {
			return out, fmt.Errorf("tools/list: %s: %.200s", resp.Status, data)
		}
		coding := resp.Header.Get("Content-Encoding")
		switch {
		case enc == "" && coding != "":
			return out, fmt.Errorf("tools/list: Content-Encoding %q to a client that accepts none", coding)
		case enc == "":
			out.body, out.contentType = data, resp.Header.Get("Content-Type")
		case coding == "gzip":
			out.gzip = data
		}
	}
	msg := out.body
	if strings.HasPrefix(out.contentType, "text/event-stream") {
		if msg = sseReply(msg, 1); msg == nil {
			return out, fmt.Errorf("tools/list: no reply in the event stream")
		}
	}
	var reply struct {
		Result struct {
			Tools []json.RawMessage `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(msg, &reply); err != nil {
		return out, fmt.Errorf("tools/list: %w", err)
	}
	if len(reply.Result.Tools) != tools {
		return out, fmt.Errorf("tools/list: %d tools in one reply, want %d", len(reply.Result.Tools), tools)
	}
	return out, nil
}

// wireList is one tools/list on the wire: listRequest posted with header,
// the reply read to its end (decompressed when the client asked for
// gzip), which must be size bytes. The same code lists from the hub and
// from the static server.
func wireList(hc *http.Client, url string, header http.Header, size int) listOp {
	return func(ctx context.Context) (int, int, int, time.Duration, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(listRequest))
		if err != nil {
			return 0, 0, 0, 0, err
		}
		req.Header = header.Clone()
		t0 := time.Now()
		resp, err := hc.Do(req)
		if err != nil {
			return 0, 0, 0, 0, err
		}
		n, err := io.Copy(io.Discard, resp.Body)
		elapsed := time.Since(t0)
		resp.Body.Close()
		switch {
		case err != nil:
			return 0, 0, 0, 0, err
		case resp.StatusCode != http.StatusOK:
			return 0, 0, 0, 0, fmt.Errorf("tools/list: %s", resp.Status)
		case int(n) != size:
			return 0, 0, 0, 0, fmt.Errorf("tools/list: %d bytes, want %d", n, size)
		}
		return 0, 1, int(n), elapsed, nil
	}
}

// staticHandler serves body (or gz, to a client that accepts gzip, when
// gz is set) to every request, with Content-Length: the least any server
// can do to send those bytes.
func staticHandler(body, gz []byte, contentType string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		h := w.Header()
		h.Set("Content-Type", contentType)
		out := body
		if gz != nil {
			h.Set("Vary", "Accept-Encoding")
			if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
				out = gz
				h.Set("Content-Encoding", "gzip")
			}
		}
		h.Set("Content-Length", strconv.Itoa(len(out)))
		_, _ = w.Write(out)
	})
}

// staticFromEnv is the static role's handler, from the files its
// environment names.
func staticFromEnv() (http.Handler, error) {
	body, err := os.ReadFile(os.Getenv(staticBodyEnv))
	if err != nil {
		return nil, fmt.Errorf("read the reply to serve: %w", err)
	}
	var gz []byte
	if path := os.Getenv(staticGzipEnv); path != "" {
		if gz, err = os.ReadFile(path); err != nil {
			return nil, fmt.Errorf("read the compressed reply to serve: %w", err)
		}
	}
	return staticHandler(body, gz, os.Getenv(staticTypeEnv)), nil
}

// verdicts judges the hub against the static server, in each encoding.
func (l *ListBench) verdicts(rounds int) []Verdict {
	var out []Verdict
	for _, w := range l.Wire {
		v := judge("list", fmt.Sprintf("hub p50 / static server p50, %s", w.Encoding), w.P50Ratio, "<=", targetListVsStatic, "x")
		if rounds < minRounds {
			v = v.unjudged(fmt.Sprintf("%d rounds, fewer than %d", rounds, minRounds))
		}
		out = append(out, v)
	}
	gz := 0.0
	if l.HubGzip {
		gz = 1
	}
	out = append(out, judge("list", "hub sends the list gzip-compressed to a client that accepts gzip (1 yes, 0 no)", gz, ">=", 1, ""))
	if l.Interleaved != nil {
		if p := l.Interleaved.pair("identity"); p != nil {
			v := judge("list", fmt.Sprintf("hub p50 / static server p50, identity, %d requests each in turn", l.Interleaved.Requests), p.P50Ratio, "<=", targetListVsStatic, "x")
			if rounds < minRounds {
				v = v.unjudged(fmt.Sprintf("%d rounds, fewer than %d", rounds, minRounds))
			}
			out = append(out, v)
		}
	}
	if m := l.Memory; m != nil {
		for _, p := range m.After {
			out = append(out,
				judge("list", fmt.Sprintf("hub heap in use after GC, after %d lists, over before the first, in list sizes", p.Lists), p.HeapGrowth, "<=", targetListMemoryGrowth, "x"),
				judge("list", fmt.Sprintf("hub RSS after %d lists over before the first, in list sizes", p.Lists), p.RSSGrowth, "<=", targetListMemoryGrowth, "x"))
		}
	}
	return out
}

func (l *ListBench) writeTable(w io.Writer) {
	fmt.Fprintf(w, "\n[3] tools/list, %d upstreams x %d tools, one session listing back to back (ms: request sent -> reply read, summed over pages)\n", l.Upstreams, l.ToolsPerUpstream)
	fmt.Fprintf(w, "%-22s %6s %6s %10s %9s %9s %11s %11s\n", "target", "tools", "pages", "KB", "p50 ms", "p99 ms", "p50 ratio", "p99 ratio")
	for _, r := range []ListResult{l.Direct, l.DirectAll, l.Full, l.Restricted} {
		fmt.Fprintf(w, "%-22s %6d %6d %10.1f %9.3f %9.3f %10.1fx %10.1fx\n", r.Target, r.Tools, r.Pages, float64(r.Bytes)/1024, r.P50Ms, r.P99Ms, r.P50Ratio, r.P99Ratio)
	}
	fmt.Fprintf(w, "ratios against listing one upstream directly\n")
	fmt.Fprintf(w, "\nthe full list against a static Go server sending the same bytes, same client, %d interleaved rounds, medians (the hub compresses: %v)\n", roundsOf(l.Wire), l.HubGzip)
	fmt.Fprintf(w, "%-9s %-7s %10s %9s %9s %13s %7s\n", "encoding", "target", "wire KB", "p50 ms", "p99 ms", "CPU ms/list", "lists")
	for _, wl := range l.Wire {
		for _, r := range []ListResult{wl.Static, wl.Hub} {
			fmt.Fprintf(w, "%-9s %-7s %10.1f %9.3f %9.3f %13.2f %7d\n", wl.Encoding, strings.SplitN(r.Target, ",", 2)[0], float64(wl.WireBytes)/1024, r.P50Ms, r.P99Ms, r.CPUMsPerList, r.Lists)
		}
		var per []string
		for _, r := range wl.Rounds {
			per = append(per, fmt.Sprintf("%.2fx", r.P50Ratio))
		}
		fmt.Fprintf(w, "%-9s hub/static p50 %.2fx (rounds: %s)\n", wl.Encoding, wl.P50Ratio, strings.Join(per, ", "))
	}
	if l.Interleaved != nil {
		l.Interleaved.writeTable(w, l.identityRatio())
	}
	if l.Memory != nil {
		l.Memory.writeTable(w)
	}
}

// identityRatio is the back-to-back hub/static p50 of the identity bytes.
func (l *ListBench) identityRatio() float64 {
	for _, w := range l.Wire {
		if w.Encoding == "identity" {
			return w.P50Ratio
		}
	}
	return 0
}

func roundsOf(ws []WireList) int {
	if len(ws) == 0 {
		return 0
	}
	return len(ws[0].Rounds)
}

func (l *ListBench) markdownLine() string {
	var parts []string
	for _, w := range l.Wire {
		parts = append(parts, fmt.Sprintf("%s (%.1f MB on the wire): hub p50 %.1f ms, a static Go server sending the same bytes %.1f ms, %.2fx; hub CPU per list %.1f ms (static %.1f ms)",
			w.Encoding, float64(w.WireBytes)/(1<<20), w.Hub.P50Ms, w.Static.P50Ms, w.P50Ratio, w.Hub.CPUMsPerList, w.Static.CPUMsPerList))
	}
	if !l.HubGzip {
		parts = append(parts, "the hub does not compress")
	}
	if il := l.Interleaved; il != nil && il.explain(l.identityRatio()) != "" {
		parts = append(parts, "request by request, "+il.explain(l.identityRatio()))
	}
	if m := l.Memory; m != nil {
		var grew []string
		for _, p := range m.After {
			grew = append(grew, fmt.Sprintf("%d lists %+.2fx heap in use, %+.2fx RSS", p.Lists, p.HeapGrowth, p.RSSGrowth))
		}
		parts = append(parts, fmt.Sprintf("hub memory over before its first list, in list sizes: %s", strings.Join(grew, ", ")))
	}
	return fmt.Sprintf("list: tools/list of %d upstreams x %d tools, %s", l.Upstreams, l.ToolsPerUpstream, strings.Join(parts, "; "))
}
