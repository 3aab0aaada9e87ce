package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/purko-io/mcp-hub/internal/hubtest"
)

// maxStartAnonKB bounds the memory of its own (anonymous: Go heap,
// stacks, the runtime's, C allocations) a hub holds once started on the
// embedded default: what start-up builds before anyone calls. It is about
// 8 MiB; tables, documents and engines a tool or a face may never need
// are built on first use, not at start.
const maxStartAnonKB = 16 << 10

// TestIdleRSS: the resident memory of a hub started on the embedded
// default, told apart: the binary's own pages (its code and read-only
// data, mapped from the file: the kernel maps them in large pages, so
// nearly all of them are resident whether or not they run) and the
// memory the hub allocated. Only the latter is start-up's to keep small;
// the former is the binary's size.
func TestIdleRSS(t *testing.T) {
	h := hubtest.StartHub(t, hubtest.HubOptions{Bin: hubBin, LogLevel: "warn", Wait: hubtest.Ready, Timeout: 30 * time.Second})
	// Read once the start's garbage is returned: RssAnon stops falling.
	var st map[string]int
	for prev := -1; ; time.Sleep(200 * time.Millisecond) {
		var err error
		if st, err = procStatus(h.PID()); err != nil {
			t.Fatal(err)
		}
		if prev >= 0 && st["RssAnon"] >= prev {
			break
		}
		prev = st["RssAnon"]
	}
	fi, err := os.Stat(hubBin)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("idle hub on the embedded default: VmRSS %d KiB = RssFile %d KiB (the binary's mapped pages; binary %d KiB) + RssAnon %d KiB (allocated)",
		st["VmRSS"], st["RssFile"], fi.Size()>>10, st["RssAnon"])
	if st["RssAnon"] > maxStartAnonKB {
		t.Errorf("the idle hub holds %d KiB of its own (RssAnon), over %d KiB", st["RssAnon"], maxStartAnonKB)
	}
	terminate(t, h)
}

// procStatus reads the kB figures of /proc/pid/status.
func procStatus(pid int) (map[string]int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, fmt.Errorf("read the hub's status: %w", err)
	}
	out := map[string]int{}
	for line := range strings.SplitSeq(string(b), "\n") {
		name, v, ok := strings.Cut(line, ":")
		if v, isKB := strings.CutSuffix(strings.TrimSpace(v), " kB"); ok && isKB {
			if n, err := strconv.Atoi(v); err == nil {
				out[name] = n
			}
		}
	}
	return out, nil
}
