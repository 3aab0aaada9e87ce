package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/purko-io/mcp-hub/internal/hubtest"
)

// Benchmark 4: what an idle downstream session costs the hub. An IDE
// session that is open but unused holds an initialized Streamable HTTP
// session (2025-11-25) and its standalone GET stream; the benchmark opens
// many of them, then reads the hub's resident memory (VmRSS) and its Go
// runtime figures (heap after a GC, stacks, goroutines, from pprof), and
// sets them against the same idle hub before the sessions. Every session
// must open: the bench's hub config raises the session caps
// (http.maxSessions, http.maxSessionsPerCaller) above the sessions opened
// from its one address, and a session that fails to open fails the run,
// rather than leaving a figure divided by sessions that are not there.
// Before that, the RSS of a hub on its embedded default config (what
// `make run` starts), ready and settled, against a bare reverse proxy's,
// each started cold (its binary not in the page cache, as on a node that
// starts an image: what the target is judged on) and warm (cached whole,
// as just built), told apart into what the process allocated (RssAnon)
// and its binary's pages it maps (RssFile).

const (
	defaultIdleSessions = 10000
	// Targets of issue 22, "light idle sessions".
	targetIdleGoKB       = 30.0            // Go heap + stacks per idle session, KB
	targetIdleGoroutines = 2.0             // goroutines per idle session
	targetIdleRSSMB      = 30.0            // RSS of the idle hub on its embedded default, MB
	idleOpeners          = 16              // sessions opened in parallel
	idleSettle           = 2 * time.Second // before reading memory; shorter for short runs
	// maxCachedCold is the most of the binary that may be in the page cache
	// before a start that counts as cold.
	maxCachedCold = 0.1
)

// MemSample is the hub's memory at one moment.
type MemSample struct {
	RSSKB       int64 `json:"rssKB"`       // VmRSS
	HeapInuseKB int64 `json:"heapInuseKB"` // after a forced GC
	StackKB     int64 `json:"stackInuseKB"`
	SysKB       int64 `json:"goSysKB"` // everything the Go runtime got from the OS
	Goroutines  int   `json:"goroutines"`
}

// IdleBench is benchmark 4.
type IdleBench struct {
	Wanted   int `json:"wanted"`
	Sessions int `json:"sessions"` // opened and still open at the end
	Failed   int `json:"failed"`   // could not be opened
	Closed   int `json:"closed"`   // streams the hub ended while idle
	// Catalog is the hub's catalog: upstreams x tools.
	Upstreams int     `json:"upstreams"`
	Tools     int     `json:"tools"`
	OpenMs    float64 `json:"openMs"` // time to open them all
	// Baseline is the idle hub with the same catalog, before the sessions;
	// Loaded with them; AfterClose once the streams are closed again
	// (without DELETE, as a client that goes away).
	// Mid is the hub with MidSessions (half of them) open.
	Baseline    MemSample `json:"baseline"`
	Mid         MemSample `json:"mid"`
	MidSessions int       `json:"midSessions"`
	Loaded      MemSample `json:"loaded"`
	AfterClose  MemSample `json:"afterClose"`
	// Per session: (Loaded - Baseline) / Sessions. The Go runtime's heap
	// (after a GC) and stacks are what the sessions hold, and what the
	// target is about; RSS is what the machine pays, which the idle hub's
	// spare memory flatters.
	RSSPerSessionKB   float64 `json:"rssPerSessionKB"`
	HeapPerSessionKB  float64 `json:"heapPerSessionKB"`
	StackPerSessionKB float64 `json:"stackPerSessionKB"`
	GoPerSessionKB    float64 `json:"goPerSessionKB"` // heap + stacks
	GoroutinesPerSess float64 `json:"goroutinesPerSession"`
	// MarginalRSSPerSessionKB is (Loaded - Mid) RSS over the second half's
	// sessions.
	MarginalRSSPerSessionKB float64 `json:"marginalRSSPerSessionKB"`
	LoadedRatio             float64 `json:"loadedRatio"` // Loaded / Baseline RSS
	// DefaultRSSKB is the RSS of a hub on its embedded default config,
	// started cold, ready and settled, without sessions; ProxyRSSKB that of
	// the bench's bare reverse proxy process (a Go net/http program with
	// the bench's packages linked in), idle, started cold too. Default and
	// Proxy tell each apart (allocated, mapped from the binary) and add the
	// warm start.
	DefaultRSSKB int64     `json:"defaultRssKB"`
	ProxyRSSKB   int64     `json:"proxyRssKB"`
	Default      IdleStart `json:"default"`
	Proxy        IdleStart `json:"proxy"`
	// Open-file limits: this process before and after raising it, and the
	// hub's (inherited).
	BenchNofileBefore uint64 `json:"benchNofileBefore"`
	BenchNofile       uint64 `json:"benchNofile"`
	HubNofile         string `json:"hubNofile"`
	HubNofileHard     string `json:"hubNofileHard"`
}

func (e *benchEnv) runIdle(ctx context.Context, s *scaleSetup) (*IdleBench, error) {
	want := e.cfg.IdleSessions
	if want <= 0 {
		want = defaultIdleSessions
	}
	out := &IdleBench{Wanted: want, Upstreams: s.upstreams, Tools: s.upstreams * s.tools}
	settle := min(idleSettle, max(e.cfg.Duration, 200*time.Millisecond))
	var err error
	if out.Default, out.Proxy, err = e.idleRSS(ctx, settle); err != nil {
		return nil, err
	}
	out.DefaultRSSKB, out.ProxyRSSKB = out.Default.Cold.RSSKB, out.Proxy.Cold.RSSKB
	// Before the hub starts, so that it inherits the raised limit.
	if out.BenchNofileBefore, out.BenchNofile, err = raiseOpenFiles(); err != nil {
		return nil, fmt.Errorf("raise RLIMIT_NOFILE: %w", err)
	}
	pprofAddr, err := hubtest.FreeAddr()
	if err != nil {
		return nil, err
	}
	hub, err := e.startHub(ctx, "--config", s.cfgPath, "--pprof", pprofAddr)
	if err != nil {
		return nil, err
	}
	defer hub.Stop(5 * time.Second)
	base, pid := hub.Base, hub.PID()
	out.HubNofile, out.HubNofileHard = openFilesLimit(pid)
	if _, err := waitCatalog(ctx, base, s.names, time.Minute); err != nil {
		return nil, err
	}
	// One session opened and closed first, so the baseline includes what
	// the first session initializes once.
	hc := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 0, MaxIdleConns: 2 * idleOpeners, MaxIdleConnsPerHost: 2 * idleOpeners, IdleConnTimeout: time.Minute}}
	defer hc.CloseIdleConnections()
	if warm, err := openRaw(ctx, hc, base+"/mcp"); err != nil {
		return nil, err
	} else if _, _, err := warm.call(ctx, "ping", map[string]any{}); err != nil {
		return nil, err
	}
	time.Sleep(settle)
	if out.Baseline, err = memSample(ctx, pid, pprofAddr); err != nil {
		return nil, err
	}
	e.progress("idle sessions: opening %d (hub RSS %d KB before; open files: bench %d, hub %s)", want, out.Baseline.RSSKB, out.BenchNofile, out.HubNofile)

	streamCtx, closeStreams := context.WithCancel(ctx)
	defer closeStreams()
	var (
		closed, failed atomic.Int64
		firstErr       error
		mu             sync.Mutex
		streams        sync.WaitGroup
		opened         atomic.Int64
	)
	// openSessions opens count more sessions, idleOpeners at a time, and
	// keeps their streams open (and read) until closeStreams.
	openSessions := func(count int) {
		jobs := make(chan struct{})
		var wg sync.WaitGroup
		for range idleOpeners {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range jobs {
					if failed.Load() > 0 {
						continue // the run fails: open no more
					}
					rs, err := openRaw(streamCtx, hc, base+"/mcp")
					var resp *http.Response
					if err == nil {
						resp, err = rs.listen(streamCtx)
					}
					if err != nil {
						failed.Add(1)
						mu.Lock()
						if firstErr == nil {
							firstErr = err
						}
						mu.Unlock()
						continue
					}
					streams.Add(1)
					go func() {
						defer streams.Done()
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if streamCtx.Err() == nil {
							closed.Add(1)
						}
					}()
					if n := opened.Add(1); n%2000 == 0 {
						e.progress("idle sessions: %d open", n)
					}
				}
			}()
		}
		for range count {
			if ctx.Err() != nil {
				break
			}
			jobs <- struct{}{}
		}
		close(jobs)
		wg.Wait()
	}
	// Half first, then the rest: the growth over the second half is the
	// marginal cost of a session, after the idle hub's spare memory (its
	// heap grows to 5x the live heap with the hub's GOGC=400) is used up.
	start := time.Now()
	openSessions(want / 2)
	out.OpenMs = msSince(start)
	// failedErr is the run's error when a session could not be opened.
	failedErr := func() error {
		if n := failed.Load(); n > 0 {
			mu.Lock()
			defer mu.Unlock()
			return fmt.Errorf("%d of %d idle sessions could not be opened (the rest were not tried), first error: %w", n, want, firstErr)
		}
		return nil
	}
	if err := failedErr(); err != nil {
		return nil, err
	}
	time.Sleep(settle)
	out.MidSessions = int(opened.Load() - closed.Load())
	if out.Mid, err = memSample(ctx, pid, pprofAddr); err != nil {
		return nil, err
	}
	start = time.Now()
	openSessions(want - want/2)
	out.OpenMs += msSince(start)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err := failedErr(); err != nil {
		return nil, err
	}
	time.Sleep(settle)
	out.Failed, out.Closed = int(failed.Load()), int(closed.Load())
	out.Sessions = int(opened.Load()) - out.Closed
	if out.Loaded, err = memSample(ctx, pid, pprofAddr); err != nil {
		return nil, err
	}
	if out.Sessions > 0 {
		n := float64(out.Sessions)
		out.RSSPerSessionKB = float64(out.Loaded.RSSKB-out.Baseline.RSSKB) / n
		out.HeapPerSessionKB = float64(out.Loaded.HeapInuseKB-out.Baseline.HeapInuseKB) / n
		out.StackPerSessionKB = float64(out.Loaded.StackKB-out.Baseline.StackKB) / n
		out.GoPerSessionKB = out.HeapPerSessionKB + out.StackPerSessionKB
		out.GoroutinesPerSess = float64(out.Loaded.Goroutines-out.Baseline.Goroutines) / n
	}
	if d := out.Sessions - out.MidSessions; d > 0 {
		out.MarginalRSSPerSessionKB = float64(out.Loaded.RSSKB-out.Mid.RSSKB) / float64(d)
	}
	out.LoadedRatio = ratio(float64(out.Loaded.RSSKB), float64(out.Baseline.RSSKB))
	e.progress("idle sessions: %d open, hub RSS %d KB; closing them", out.Sessions, out.Loaded.RSSKB)

	closeStreams()
	streams.Wait()
	hc.CloseIdleConnections()
	time.Sleep(settle)
	if out.AfterClose, err = memSample(ctx, pid, pprofAddr); err != nil {
		return nil, err
	}
	return out, nil
}

// ProcMem is a process's resident memory, told apart, from
// /proc/pid/status (KB).
type ProcMem struct {
	RSSKB  int64 `json:"rssKB"`  // VmRSS: RssAnon + RssFile + RssShmem
	AnonKB int64 `json:"anonKB"` // RssAnon: what the process allocated (heap, stacks, the runtime's)
	FileKB int64 `json:"fileKB"` // RssFile: file pages it has mapped, nearly all of them its binary's
}

// IdleStart is the memory of an idle process started twice from copies of
// one binary: cold, the binary not in the page cache (a node starting an
// image), and warm, the binary cached whole as just written (as the linker
// leaves it). See pagecache.go for why the two differ.
type IdleStart struct {
	Cold     ProcMem `json:"cold"`
	Warm     ProcMem `json:"warm"`
	BinaryKB int64   `json:"binaryKB"`
	// The share of the binary's pages in the page cache just before each
	// start: near 0 cold and 1 warm, or the measurement is not what it says.
	CachedCold float64 `json:"cachedCold"`
	CachedWarm float64 `json:"cachedWarm"`
}

// idleRSS is the memory of a hub on its embedded default config (no config
// file; LaunchHub leaves MCP_SERVERS out of its environment) once it is
// ready and has settled, and that of a bare reverse proxy, idle too: both
// started cold, then both warm. They run from copies of their binaries in
// the bench's temporary directory, so that no other process (the bench
// itself, for the proxy's) holds their pages in the cache, and each start
// finds its binary cached as it means to.
func (e *benchEnv) idleRSS(ctx context.Context, settle time.Duration) (hub, proxy IdleStart, err error) {
	e.progress("idle RSS: a hub on its embedded default config, and a bare reverse proxy, started cold and warm")
	dir := filepath.Join(e.tmp, "idle-rss")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return hub, proxy, err
	}
	hubBin, proxyBin := filepath.Join(dir, "mcp-hub-cold"), filepath.Join(dir, "bench-proxy-cold")
	if hub.CachedCold, err = coldCopy(e.hubBin, hubBin); err != nil {
		return hub, proxy, err
	}
	if proxy.CachedCold, err = coldCopy(e.self, proxyBin); err != nil {
		return hub, proxy, err
	}
	for _, b := range []struct {
		path string
		kb   *int64
	}{{hubBin, &hub.BinaryKB}, {proxyBin, &proxy.BinaryKB}} {
		fi, err := os.Stat(b.path)
		if err != nil {
			return hub, proxy, err
		}
		*b.kb = fi.Size() >> 10
	}
	if hub.Cold, proxy.Cold, err = e.idlePair(ctx, settle, hubBin, proxyBin); err != nil {
		return hub, proxy, err
	}
	// Fresh copies: the cold ones are now cached as read from disk.
	hubBin, proxyBin = filepath.Join(dir, "mcp-hub-warm"), filepath.Join(dir, "bench-proxy-warm")
	if hub.CachedWarm, err = warmCopy(e.hubBin, hubBin); err != nil {
		return hub, proxy, err
	}
	if proxy.CachedWarm, err = warmCopy(e.self, proxyBin); err != nil {
		return hub, proxy, err
	}
	hub.Warm, proxy.Warm, err = e.idlePair(ctx, settle, hubBin, proxyBin)
	return hub, proxy, err
}

// idlePair starts the hub from hubBin on its embedded default and a bare
// reverse proxy from proxyBin in front of it, lets them settle and reads
// their memory.
func (e *benchEnv) idlePair(ctx context.Context, settle time.Duration, hubBin, proxyBin string) (hub, proxy ProcMem, err error) {
	h, err := hubtest.LaunchHub(ctx, hubtest.HubOptions{Bin: hubBin, LogLevel: "info", Wait: hubtest.Ready})
	if err != nil {
		return hub, proxy, fmt.Errorf("start the hub on its embedded default: %w", err)
	}
	defer h.Stop(5 * time.Second)
	p, _, err := e.startRoleBin(ctx, proxyBin, "proxy", proxyTargetEnv+"="+h.Base)
	if err != nil {
		return hub, proxy, fmt.Errorf("start a bare reverse proxy: %w", err)
	}
	defer p.Kill()
	time.Sleep(2 * settle)
	if hub, err = procMem(h.PID()); err != nil {
		return hub, proxy, err
	}
	proxy, err = procMem(p.PID())
	return hub, proxy, err
}

// procMem reads VmRSS, RssAnon and RssFile of a process.
func procMem(pid int) (ProcMem, error) {
	var m ProcMem
	for _, f := range []struct {
		name string
		v    *int64
	}{{"VmRSS", &m.RSSKB}, {"RssAnon", &m.AnonKB}, {"RssFile", &m.FileKB}} {
		v, err := procStatus(pid, f.name)
		if err != nil {
			return m, err
		}
		*f.v = v
	}
	return m, nil
}

// verdicts judges what one idle session costs, and the idle hub.
func (b *IdleBench) verdicts() []Verdict {
	out := []Verdict{
		judge("idle", "Go heap + stacks per idle session", b.GoPerSessionKB, "<=", targetIdleGoKB, " KB"),
		judge("idle", "goroutines per idle session", b.GoroutinesPerSess, "<=", targetIdleGoroutines, ""),
		judge("idle", "RSS of the idle hub on its embedded default, started cold", mb(b.DefaultRSSKB), "<=", targetIdleRSSMB, " MB"),
	}
	if b.Sessions == 0 {
		for i := range out[:2] {
			out[i] = out[i].unjudged("no session open")
		}
	}
	if c := b.Default.CachedCold; c > maxCachedCold {
		out[2] = out[2].unjudged(fmt.Sprintf("%.0f%% of the binary stayed in the page cache (tmpfs?): not a cold start", 100*c))
	}
	return out
}

func (b *IdleBench) markdownLine() string {
	d, p := b.Default, b.Proxy
	return fmt.Sprintf("idle: %d sessions (initialize + GET stream): per session Go heap %.1f KB + stacks %.1f KB = %.1f KB, %.2f goroutines, RSS %.1f KB; the hub on its embedded default idles at %.1f MB RSS started cold (allocated %.1f + its binary's pages %.1f), %.1f MB warm (%.1f + %.1f; binary %.1f MB); a bare reverse proxy %.1f MB cold, %.1f MB warm",
		b.Sessions, b.HeapPerSessionKB, b.StackPerSessionKB, b.GoPerSessionKB, b.GoroutinesPerSess, b.RSSPerSessionKB,
		mb(d.Cold.RSSKB), mb(d.Cold.AnonKB), mb(d.Cold.FileKB), mb(d.Warm.RSSKB), mb(d.Warm.AnonKB), mb(d.Warm.FileKB), mb(d.BinaryKB),
		mb(p.Cold.RSSKB), mb(p.Warm.RSSKB))
}

// mb is KB in MB.
func mb(kb int64) float64 { return float64(kb) / 1024 }

// largeFolios is why the bench starts the idle hub cold as well as warm.
const largeFolios = "cold: the binary not in the page cache, as a node starting an image reads it; warm: cached whole as just written, as the linker leaves it. " +
	"A file written with large writes is cached in large folios where the filesystem supports them (ext4 on Linux 6.18 does), and a fault maps the whole cached folio around the page asked for, " +
	"so a warm binary ends up mapped nearly whole (RssFile close to its loaded size) although the process runs a fraction of it; read from disk, only what start-up touches is mapped."

// goroutineLooks and goroutineLookGap: how often and how far apart a
// sample counts the hub's goroutines.
const (
	goroutineLooks   = 3
	goroutineLookGap = 200 * time.Millisecond
)

// memSample reads the hub's RSS, then its runtime figures from pprof
// (the heap profile with gc=1 runs a GC first and ends with MemStats).
func memSample(ctx context.Context, pid int, pprofAddr string) (MemSample, error) {
	var m MemSample
	var err error
	if m.RSSKB, err = procStatus(pid, "VmRSS"); err != nil {
		return m, err
	}
	// The fewest goroutines of a few looks a moment apart: an idle hub's
	// are the ones that stay; a connection the bench's client is just
	// closing, or a timer's, is not the sessions'.
	m.Goroutines = -1
	for i := range goroutineLooks {
		if i > 0 {
			time.Sleep(goroutineLookGap)
		}
		body, err := httpGet(ctx, "http://"+pprofAddr+"/debug/pprof/goroutine?debug=1")
		if err != nil {
			return m, err
		}
		first, _, _ := strings.Cut(body, "\n")
		if v, ok := strings.CutPrefix(first, "goroutine profile: total "); ok {
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && (m.Goroutines < 0 || n < m.Goroutines) {
				m.Goroutines = n
			}
		}
	}
	body, err := httpGet(ctx, "http://"+pprofAddr+"/debug/pprof/heap?gc=1&debug=1")
	if err != nil {
		return m, err
	}
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		// "# HeapInuse = 123", "# Stack = inuse / sys"
		f := strings.Fields(sc.Text())
		if len(f) < 4 || f[0] != "#" || f[2] != "=" {
			continue
		}
		v, _ := strconv.ParseInt(f[3], 10, 64)
		switch f[1] {
		case "HeapInuse":
			m.HeapInuseKB = v / 1024
		case "Stack":
			m.StackKB = v / 1024
		case "Sys":
			m.SysKB = v / 1024
		}
	}
	return m, nil
}

func httpGet(ctx context.Context, url string) (string, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(data), err
}

func (b *IdleBench) writeTable(w io.Writer) {
	fmt.Fprintf(w, "\n[4] idle downstream sessions (initialize %s + standalone GET stream), hub with %d upstreams / %d tools\n", rawProtocol, b.Upstreams, b.Tools)
	fmt.Fprintf(w, "%-22s %10s %12s %10s %10s %11s\n", "hub", "RSS KB", "heap KB*", "stack KB", "Go sys KB", "goroutines")
	for _, r := range []struct {
		name string
		m    MemSample
	}{{"idle (baseline)", b.Baseline}, {fmt.Sprintf("%d sessions", b.MidSessions), b.Mid}, {fmt.Sprintf("%d sessions", b.Sessions), b.Loaded}, {"after closing them", b.AfterClose}} {
		fmt.Fprintf(w, "%-22s %10d %12d %10d %10d %11d\n", r.name, r.m.RSSKB, r.m.HeapInuseKB, r.m.StackKB, r.m.SysKB, r.m.Goroutines)
	}
	fmt.Fprintf(w, "* heap in use after a forced GC\n")
	fmt.Fprintf(w, "per session: RSS %.1f KB (second half alone: %.1f KB); Go heap %.1f KB + stacks %.1f KB = %.1f KB; %.2f goroutines\n",
		b.RSSPerSessionKB, b.MarginalRSSPerSessionKB, b.HeapPerSessionKB, b.StackPerSessionKB, b.GoPerSessionKB, b.GoroutinesPerSess)
	fmt.Fprintf(w, "hub RSS with them %.1fx the idle hub's; opened in %.0f ms, %d failed, %d closed by the hub\n", b.LoadedRatio, b.OpenMs, b.Failed, b.Closed)
	fmt.Fprintf(w, "open files limit: bench %d (was %d), hub %s (hard %s)\n", b.BenchNofile, b.BenchNofileBefore, b.HubNofile, b.HubNofileHard)
	fmt.Fprintf(w, "idle RSS, no sessions (KB)          %9s %9s %9s %9s %15s\n", "VmRSS", "RssAnon", "RssFile", "binary", "binary cached")
	for _, r := range []struct {
		name   string
		m      ProcMem
		binKB  int64
		cached float64
	}{
		{"hub, embedded default, cold", b.Default.Cold, b.Default.BinaryKB, b.Default.CachedCold},
		{"hub, embedded default, warm", b.Default.Warm, b.Default.BinaryKB, b.Default.CachedWarm},
		{"bare reverse proxy, cold", b.Proxy.Cold, b.Proxy.BinaryKB, b.Proxy.CachedCold},
		{"bare reverse proxy, warm", b.Proxy.Warm, b.Proxy.BinaryKB, b.Proxy.CachedWarm},
	} {
		fmt.Fprintf(w, "%-35s %9d %9d %9d %9d %14.0f%%\n", r.name, r.m.RSSKB, r.m.AnonKB, r.m.FileKB, r.binKB, 100*r.cached)
	}
	fmt.Fprintf(w, "%s\n", largeFolios)
}
