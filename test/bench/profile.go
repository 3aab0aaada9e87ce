package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"
)

// The optional profile of benchmark 1 (-profile DIR): a tools/call run
// through the hub at ProfileConcurrency sessions, of its own so that the
// profiler does not touch the measured figures, during which the hub's CPU
// profile is taken for the measuring time, and its allocations as the
// difference of two allocs profiles, one before and one after. Both go to
// DIR and their `go tool pprof -top` summaries to ProfileOut.

// ProfileCapture says what was captured.
type ProfileCapture struct {
	Title      string `json:"title"`
	Dir        string `json:"dir"`
	Seconds    int    `json:"seconds"`
	CPU        string `json:"cpuProfile"`
	AllocsBase string `json:"allocsBase"`
	Allocs     string `json:"allocs"`
	// For tools/call: the profiled run, and its calls/s over the
	// unprofiled hub run's at the same concurrency.
	Concurrency int     `json:"concurrency,omitempty"`
	Run         *Result `json:"run,omitempty"`
	RunRatio    float64 `json:"runRatio,omitempty"`
}

// newCapture names the files of a capture into the profile directory;
// prefix tells captures apart.
func (e *benchEnv) newCapture(title, prefix string) (*ProfileCapture, error) {
	cfg := e.cfg
	secs := cfg.ProfileSeconds
	if secs <= 0 {
		secs = max(1, int(cfg.Duration.Seconds()))
	}
	if err := os.MkdirAll(cfg.ProfileDir, 0o755); err != nil {
		return nil, err
	}
	return &ProfileCapture{Title: title, Dir: cfg.ProfileDir, Seconds: secs,
		CPU:        filepath.Join(cfg.ProfileDir, prefix+"-cpu.pb.gz"),
		AllocsBase: filepath.Join(cfg.ProfileDir, prefix+"-allocs-before.pb.gz"),
		Allocs:     filepath.Join(cfg.ProfileDir, prefix+"-allocs-after.pb.gz")}, nil
}

// runLength is how long a measured run must last to hold the CPU profile.
func (pc *ProfileCapture) runLength(d time.Duration) time.Duration {
	return max(d, time.Duration(pc.Seconds)*time.Second+200*time.Millisecond)
}

// start returns the function that begins the capture (when the measuring
// begins) and the one that waits for its end.
func (pc *ProfileCapture) start(ctx context.Context, pprofAddr string) (begin func(), wait func() error) {
	base := "http://" + pprofAddr + "/debug/pprof/"
	captured := make(chan error, 1)
	begin = func() {
		go func() {
			// The heap profile holds the allocation samples too (the allocs
			// profile is the same data); with gc=1 a GC runs first, which
			// brings it up to date: it lags up to two GC cycles behind
			// otherwise, and with the hub's GOGC=400 that can reach back to
			// start-up.
			err := fetchTo(ctx, base+"heap?gc=1", pc.AllocsBase)
			if err == nil {
				err = fetchTo(ctx, fmt.Sprintf("%sprofile?seconds=%d", base, pc.Seconds), pc.CPU)
			}
			if err == nil {
				err = fetchTo(ctx, base+"heap?gc=1", pc.Allocs)
			}
			captured <- err
		}()
	}
	wait = func() error {
		select {
		case err := <-captured:
			return err
		case <-time.After(time.Duration(pc.Seconds)*time.Second + 30*time.Second):
			return fmt.Errorf("the profiles did not arrive")
		}
	}
	return begin, wait
}

func (e *benchEnv) profileCalls(ctx context.Context, hubURL, pprofAddr string) (*ProfileCapture, error) {
	n := e.cfg.ProfileConcurrency
	if n <= 0 {
		n = 16
	}
	pc, err := e.newCapture(fmt.Sprintf("tools/call at %d sessions", n), "hub-call")
	if err != nil {
		return nil, err
	}
	pc.Concurrency = n
	runCfg := e.cfg
	runCfg.Duration = pc.runLength(runCfg.Duration)
	begin, wait := pc.start(ctx, pprofAddr)
	e.progress("concurrency %d: hub, profiled (%d s CPU profile, allocations) into %s", n, pc.Seconds, pc.Dir)
	res, err := measureHooked(ctx, hubURL, "hub, profiled", n, runCfg, window{begin: begin})
	if err != nil {
		return nil, err
	}
	if err := wait(); err != nil {
		return nil, err
	}
	pc.Run = &res
	return pc, nil
}

func fetchTo(ctx context.Context, url, path string) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// writeTops prints `go tool pprof -top` of the CPU profile and of the
// allocations (bytes, the difference of the two allocs profiles), by flat
// and by cumulative, 25 lines each.
// The profiles carry their symbols (net/http/pprof), so the hub binary is
// not needed.
func (pc *ProfileCapture) writeTops(ctx context.Context, w io.Writer) {
	fmt.Fprintf(w, "\nhub profile during %s (%d s), files in %s\n", pc.Title, pc.Seconds, pc.Dir)
	if r := pc.Run; r != nil {
		fmt.Fprintf(w, "profiled run: p50 %.3f ms, p99 %.3f ms, %.0f calls/s = %.2fx the unprofiled run's\n", r.P50Ms, r.P99Ms, r.CallsPerSec, pc.RunRatio)
	}
	for _, v := range []struct {
		title string
		args  []string
	}{
		{"CPU, by flat", []string{pc.CPU}},
		{"CPU, by cum", []string{"-cum", pc.CPU}},
		{"allocated bytes, by flat", []string{"-sample_index=alloc_space", "-base", pc.AllocsBase, pc.Allocs}},
		{"allocated bytes, by cum", []string{"-cum", "-sample_index=alloc_space", "-base", pc.AllocsBase, pc.Allocs}},
	} {
		fmt.Fprintf(w, "\n--- %s: go tool pprof -top -nodecount=25 %s\n", v.title, shortArgs(v.args))
		args := append([]string{"tool", "pprof", "-top", "-nodecount=25"}, v.args...)
		out, err := exec.CommandContext(ctx, "go", args...).CombinedOutput()
		if err != nil {
			fmt.Fprintf(w, "go tool pprof: %v\n", err)
		}
		_, _ = w.Write(out)
	}
}

func shortArgs(args []string) string {
	s := slices.Clone(args)
	for i, a := range s {
		s[i] = filepath.Base(a)
	}
	return fmt.Sprint(s)
}
