package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// CPU per call: a process's user and system time (utime + stime of
// /proc/<pid>/stat, every thread) read when a measuring window begins and
// when its last call has returned, divided by the calls of the window. It
// is measured from outside, so it costs the measured processes nothing,
// and it counts what the process spends for a call wherever it spends it
// (the kernel's socket work included), which a profile of the process does
// not.

// clockTicks is USER_HZ, the unit of utime and stime: 100 on every Linux
// the bench runs on (it is fixed by the kernel ABI, whatever the CONFIG_HZ).
const clockTicks = 100

// procCPU is the CPU time pid has used so far, user and system.
func procCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("read the CPU time of process %d: %w", pid, err)
	}
	return parseStatCPU(string(data))
}

// parseStatCPU reads utime + stime from the text of /proc/<pid>/stat. The
// command name (field 2) is in parentheses and may hold spaces and
// parentheses itself, so the fields are counted after its last ')'.
func parseStatCPU(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc stat %.40q: no command name", stat)
	}
	f := strings.Fields(stat[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc stat: %d fields after the command name, want 13 or more", len(f))
	}
	var ticks int64
	for _, s := range f[11:13] { // fields 14 (utime) and 15 (stime)
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc stat: CPU time %q: %w", s, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// cpuMeter measures the CPU time of some processes over one window: begin
// and end sample them. They may run on different goroutines; the first
// failure to read is kept and reported by used.
type cpuMeter struct {
	pids []int

	mu      sync.Mutex
	started []time.Duration
	spent   []time.Duration
	began   bool
	ended   bool
	err     error
}

func newCPUMeter(pids ...int) *cpuMeter { return &cpuMeter{pids: pids} }

func (m *cpuMeter) sample() []time.Duration {
	out := make([]time.Duration, len(m.pids))
	for i, pid := range m.pids {
		d, err := procCPU(pid)
		if err != nil && m.err == nil {
			m.err = err
		}
		out[i] = d
	}
	return out
}

// begin samples the processes at the start of the window.
func (m *cpuMeter) begin() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.started, m.began = m.sample(), true
}

// end samples them at its end.
func (m *cpuMeter) end() {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.sample()
	m.spent = make([]time.Duration, len(now))
	for i := range now {
		if m.began {
			m.spent[i] = now[i] - m.started[i]
		}
	}
	m.ended = true
}

// usPer is the CPU the i-th process used in the window per operation, in
// µs: 0 when there were none.
func (m *cpuMeter) usPer(i, ops int) (float64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.err != nil:
		return 0, m.err
	case !m.began || !m.ended:
		return 0, fmt.Errorf("CPU of process %d: the measuring window was not both begun and ended", m.pids[i])
	case ops == 0:
		return 0, nil
	}
	return float64(m.spent[i].Microseconds()) / float64(ops), nil
}

// window is what a measurement runs at the edges of its measuring time:
// begin when the warm-up is over, end once the last measured call has
// returned (before its sessions are closed). Either may be nil.
type window struct{ begin, end func() }

// meterWindow samples m at a measurement's edges.
func meterWindow(m *cpuMeter) window { return window{begin: m.begin, end: m.end} }
