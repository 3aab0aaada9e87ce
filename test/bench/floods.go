package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/purko-io/mcp-hub/internal/hubtest"
)

// Benchmark 7: what a flood from one caller makes the hub hold, and
// whether another caller is still served. One anonymous caller opens
// slowloris connections (a request header that never ends), then sends
// initialize after initialize and never comes back to the sessions. The
// benchmark reads the hub's memory after each phase and times another
// caller (its own token: initialize + tools/list) against the same call on
// the idle hub.

const (
	defaultFloodConns = 10000
	defaultFloodInits = 40000
	floodWorkers      = 32
	floodOtherSamples = 5
	floodToken        = "bench-other-caller"
)

// FloodBench is benchmark 7.
type FloodBench struct {
	SlowConns     int     `json:"slowConns"`     // slowloris connections opened
	SlowOpenAfter int     `json:"slowOpenAfter"` // of those still open after the header timeout
	HeaderTimeout string  `json:"headerTimeout"` // http.readHeaderTimeout of the hub
	Initializes   int     `json:"initializes"`
	Admitted      int     `json:"admitted"` // initialize calls that got a session
	Refused       int     `json:"refused"`  // refused at the session caps (429/503)
	Failed        int     `json:"failed"`   // anything else
	PerCallerCap  int     `json:"perCallerCap"`
	InitSeconds   float64 `json:"initSeconds"`
	// Memory: the idle hub, with the slow connections, once the hub closed
	// them, after the initialize flood, and the peak (VmHWM).
	Baseline  MemSample `json:"baseline"`
	WithSlow  MemSample `json:"withSlow"`
	AfterSlow MemSample `json:"afterSlow"`
	AfterInit MemSample `json:"afterInit"`
	PeakRSSKB int64     `json:"peakRSSKB"`
	// Another caller's initialize + tools/list, median ms: on the idle
	// hub, while the slow connections hang, after the initialize flood.
	OtherIdleMs, OtherSlowMs, OtherAfterMs float64
	OtherWorstRatio                        float64 `json:"otherWorstRatio"` // worst / idle
	OtherErrors                            int     `json:"otherErrors"`
}

func (e *benchEnv) runFloods(ctx context.Context) (*FloodBench, error) {
	out := &FloodBench{SlowConns: e.cfg.FloodConns, Initializes: e.cfg.FloodInits, PerCallerCap: 1000}
	if out.SlowConns <= 0 {
		out.SlowConns = defaultFloodConns
	}
	if out.Initializes <= 0 {
		out.Initializes = defaultFloodInits
	}
	headerTimeout := e.cfg.FloodHeaderTimeout
	if headerTimeout <= 0 {
		headerTimeout = 10 * time.Second
	}
	out.HeaderTimeout = headerTimeout.String()
	if _, _, err := raiseOpenFiles(); err != nil {
		return nil, fmt.Errorf("raise RLIMIT_NOFILE: %w", err)
	}
	pprofAddr, err := hubtest.FreeAddr()
	if err != nil {
		return nil, err
	}
	cfg := fmt.Sprintf(`servers: []
auth:
  anonymous: {enabled: true, maxLevel: restricted}
  tokens:
    - {name: other, token: {env: MCPHUB_BENCH_OTHER}, maxLevel: full}
http: {readHeaderTimeout: %s, maxSessionsPerCaller: %d}
`, headerTimeout, out.PerCallerCap)
	hub, err := hubtest.LaunchHub(ctx, hubtest.HubOptions{Bin: e.hubBin, LogLevel: "error", Config: cfg,
		Args: []string{"--pprof", pprofAddr}, Env: []string{"MCPHUB_BENCH_OTHER=" + floodToken}})
	if err != nil {
		return nil, fmt.Errorf("start hub: %w", err)
	}
	defer hub.Stop(5 * time.Second)
	base, pid := hub.Base, hub.PID()
	addr := strings.TrimPrefix(base, "http://")

	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}, Timeout: 30 * time.Second}
	defer hc.CloseIdleConnections()
	other := func() float64 {
		var took []float64
		for range floodOtherSamples {
			start := time.Now()
			s, err := openRaw(ctx, hc, base+"/mcp", "Authorization", "Bearer "+floodToken)
			if err == nil {
				_, _, _, _, err = s.listTools(ctx)
			}
			if err != nil {
				out.OtherErrors++
				continue
			}
			took = append(took, ms(time.Since(start)))
		}
		return median(took)
	}
	sample := func(m *MemSample) error {
		var err error
		*m, err = memSample(ctx, pid, pprofAddr)
		return err
	}
	out.OtherIdleMs = other()
	if err := sample(&out.Baseline); err != nil {
		return nil, err
	}

	e.progress("  %d slowloris connections", out.SlowConns)
	conns := make([]net.Conn, 0, out.SlowConns)
	opened := make([]time.Time, 0, out.SlowConns)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range out.SlowConns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("slow connection %d: %w", len(conns), err)
		}
		conns = append(conns, c)
		opened = append(opened, time.Now())
		_, _ = io.WriteString(c, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
	}
	out.OtherSlowMs = other()
	if err := sample(&out.WithSlow); err != nil {
		return nil, err
	}
	// Past the header timeout every slow connection must be gone: each is
	// judged from its own opening (opening 10,000 takes a while on a
	// loaded machine), with slowGrace for the hub's timer to fire. A
	// closed one reads EOF at once.
	for i, c := range conns {
		_ = c.SetReadDeadline(later(opened[i].Add(headerTimeout+slowGrace), time.Now().Add(time.Millisecond)))
		if _, err := c.Read(make([]byte, 1)); isTimeout(err) {
			out.SlowOpenAfter++
		}
		c.Close()
	}
	conns = conns[:0]
	if err := sample(&out.AfterSlow); err != nil {
		return nil, err
	}

	e.progress("  %d abandoned initialize calls", out.Initializes)
	var admitted, refused, failed atomic.Int64
	next := make(chan struct{})
	var wg sync.WaitGroup
	fc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: floodWorkers}, Timeout: 30 * time.Second}
	defer fc.CloseIdleConnections()
	initStart := time.Now()
	for range floodWorkers {
		wg.Go(func() {
			for range next {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/mcp", strings.NewReader(
					`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"flood","version":"1"}}}`))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				resp, err := fc.Do(req)
				if err != nil {
					failed.Add(1)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				switch resp.StatusCode {
				case http.StatusOK:
					admitted.Add(1)
				case http.StatusTooManyRequests, http.StatusServiceUnavailable:
					refused.Add(1)
				default:
					failed.Add(1)
				}
			}
		})
	}
	for range out.Initializes {
		next <- struct{}{}
	}
	close(next)
	wg.Wait()
	out.InitSeconds = time.Since(initStart).Seconds()
	out.Admitted, out.Refused, out.Failed = int(admitted.Load()), int(refused.Load()), int(failed.Load())
	out.OtherAfterMs = other()
	if err := sample(&out.AfterInit); err != nil {
		return nil, err
	}
	if out.PeakRSSKB, err = procStatus(pid, "VmHWM"); err != nil {
		return nil, err
	}
	out.OtherWorstRatio = ratio(max(out.OtherSlowMs, out.OtherAfterMs), out.OtherIdleMs)
	return out, nil
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

func (b *FloodBench) writeTable(w io.Writer) {
	fmt.Fprintf(w, "\n[7] floods from one anonymous caller: %d slowloris connections, then %d abandoned initialize calls\n", b.SlowConns, b.Initializes)
	fmt.Fprintf(w, "%-34s %10s %12s %10s %11s %14s\n", "hub", "RSS KB", "heap KB*", "stack KB", "goroutines", "other caller")
	for _, r := range []struct {
		name  string
		m     MemSample
		other string
	}{
		{"idle (baseline)", b.Baseline, fmt.Sprintf("%.2f ms", b.OtherIdleMs)},
		{fmt.Sprintf("%d slow connections open", b.SlowConns), b.WithSlow, fmt.Sprintf("%.2f ms", b.OtherSlowMs)},
		{fmt.Sprintf("after the header timeout (%s)", b.HeaderTimeout), b.AfterSlow, ""},
		{fmt.Sprintf("after %d initialize", b.Initializes), b.AfterInit, fmt.Sprintf("%.2f ms", b.OtherAfterMs)},
	} {
		fmt.Fprintf(w, "%-34s %10d %12d %10d %11d %14s\n", r.name, r.m.RSSKB, r.m.HeapInuseKB, r.m.StackKB, r.m.Goroutines, r.other)
	}
	fmt.Fprintf(w, "* heap in use after a forced GC; other caller: its own token, initialize + tools/list, median of %d\n", floodOtherSamples)
	fmt.Fprintf(w, "slow connections still open after the header timeout: %d of %d; peak RSS %d KB\n", b.SlowOpenAfter, b.SlowConns, b.PeakRSSKB)
	fmt.Fprintf(w, "initialize: %d admitted (per-caller cap %d), %d refused, %d failed, in %.1f s; other caller worst %.1fx its idle time, %d errors\n",
		b.Admitted, b.PerCallerCap, b.Refused, b.Failed, b.InitSeconds, b.OtherWorstRatio, b.OtherErrors)
}

// slowGrace is how long past the header timeout a slow connection may stay
// open before it counts as not closed.
const slowGrace = 2 * time.Second

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
