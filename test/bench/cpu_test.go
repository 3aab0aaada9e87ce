package main

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// TestParseStatCPU: utime + stime, in clock ticks, counted after the
// command name whatever it holds.
func TestParseStatCPU(t *testing.T) {
	for _, c := range []struct {
		name, stat string
		want       time.Duration
		fails      bool
	}{
		{"plain", "42 (mcp-hub) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 9 0 100 1000 200", 3 * time.Second, false},
		{"spaces and parentheses in the name", "7 (a (b) c) R 1 7 7 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 5 10 2", 30 * time.Millisecond, false},
		{"no name", "42 mcp-hub S 1", 0, true},
		{"too few fields", "42 (x) S 1 2 3", 0, true},
		{"not a number", "42 (x) S 1 42 42 0 -1 0 0 0 0 0 ten 5 0 0 20 0 1 0 5 10 2", 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseStatCPU(c.stat)
			if (err != nil) != c.fails || got != c.want {
				t.Errorf("parseStatCPU = %v, %v; want %v, fails %v", got, err, c.want, c.fails)
			}
		})
	}
}

// TestCPUMeter: this process's CPU over a window in which it spins, per
// operation; a window not begun is an error, not a zero. It spins until
// the kernel counted 150 ms of its CPU (a loaded machine gives a spinning
// goroutine less CPU than wall time), at most 20 s.
func TestCPUMeter(t *testing.T) {
	cpu := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	m := newCPUMeter(os.Getpid())
	m.begin()
	for start, deadline := cpu(), time.Now().Add(20*time.Second); cpu()-start < 150*time.Millisecond && time.Now().Before(deadline); {
	}
	m.end()
	us, err := m.usPer(0, 10)
	if err != nil || us < 5000 {
		t.Errorf("CPU per op after spinning 150 ms over 10 ops: %v µs, %v; want at least 5000", us, err)
	}
	if us, err := m.usPer(0, 0); err != nil || us != 0 {
		t.Errorf("no ops: %v, %v", us, err)
	}
	notBegun := newCPUMeter(os.Getpid())
	notBegun.end()
	if _, err := notBegun.usPer(0, 1); err == nil {
		t.Error("a window that never began gave a figure")
	}
	gone := newCPUMeter(-1)
	gone.begin()
	gone.end()
	if _, err := gone.usPer(0, 1); err == nil {
		t.Error("a process that does not exist gave a figure")
	}
}
