package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/purko-io/mcp-hub/internal/hubtest"
)

// maxListAttackGrowth is the most the hub's peak memory may grow in a
// phase of TestHostileListsAreBounded: measured at 26 to 39 MB for the red
// team's attacks and 91 to 132 MB for the costly listing, with the
// hub's GOGC of 400 and no memory limit.
const maxListAttackGrowth = 200 << 20

// TestHostileListsAreBounded is the red team's attack on the hub's memory
// through tools/list, by upstreams on loopback: one answers pages of 1,000
// tools with a next cursor forever, one a single page of 50,000 tools.
// Then, on its own, one answers pages of dense schemas: a listing as
// costly as the bounds let through. Each is listed in error naming the bound
// it went over and its setting, with no tools; the well-behaved server
// beside them is connected with its tool; and the hub's peak memory grows
// by less than maxListAttackGrowth while they are retried (README, "What
// an upstream lists is bounded", has the figures). Before the bounds the
// first took the hub to 1.55 GB in 20 s, the second published 50,000
// tools.
func TestHostileListsAreBounded(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads the hub's memory from /proc")
	}
	good, _ := startUpstream(t)
	endless := hubtest.StartPagingUpstream(t, "endless", func(method, cursor string) ([]byte, string) {
		if method != "tools/list" {
			return []byte("[]"), ""
		}
		i, _ := strconv.Atoi(cursor)
		return hubtest.ToolsJSON(fmt.Sprintf("p%d_", i), 1000, 1), strconv.Itoa(i + 1)
	})
	page := hubtest.ToolsJSON("t", 50000, 1)
	giant := hubtest.StartPagingUpstream(t, "giant", func(method, _ string) ([]byte, string) {
		if method != "tools/list" {
			return []byte("[]"), ""
		}
		return page, ""
	})
	// Decoding costs most per byte as schemas of many small properties:
	// pages of 250 tools of 100 properties, until the bytes are over.
	heavy := hubtest.StartPagingUpstream(t, "heavy", func(method, cursor string) ([]byte, string) {
		if method != "tools/list" {
			return []byte("[]"), ""
		}
		i, _ := strconv.Atoi(cursor)
		return hubtest.ToolsJSON(fmt.Sprintf("p%d_", i), 250, 100), strconv.Itoa(i + 1)
	})
	cfg := filepath.Join(t.TempDir(), "hub.yaml")
	goodOnly := "servers:\n- {name: good, url: " + good + "}\n"
	if err := os.WriteFile(cfg, []byte(goodOnly), 0o600); err != nil {
		t.Fatal(err)
	}
	h := startHub(t, nil, "--config", cfg)
	waitStatus(t, h, "good", "connected")

	phases := []struct {
		name      string
		upstreams map[string]*hubtest.PagingUpstream
		want      map[string]string // server -> its error
	}{
		{"the red team's attacks", map[string]*hubtest.PagingUpstream{"endless": endless, "giant": giant}, map[string]string{
			"endless": "tools/list of endless: more than 2000 tools (upstream.maxTools)",
			"giant":   "tools/list of giant: more than 2000 tools (upstream.maxTools)",
		}},
		{"a costly listing within the bounds", map[string]*hubtest.PagingUpstream{"heavy": heavy}, map[string]string{
			"heavy": "tools/list of heavy: its lists take more than 2 MiB (upstream.maxListBytes)",
		}},
	}
	for _, ph := range phases {
		servers := goodOnly
		for name, u := range ph.upstreams {
			servers += "- {name: " + name + ", url: " + u.URL + "}\n"
		}
		// The peak is the phase's own: VmHWM starts again at VmRSS.
		if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", h.PID()), []byte("5"), 0); err != nil {
			t.Fatalf("reset the hub's peak memory: %v", err)
		}
		before := procMemory(t, h.PID(), "VmRSS")
		if err := os.WriteFile(cfg, []byte(servers), 0o600); err != nil {
			t.Fatal(err)
		}
		for name, msg := range ph.want {
			sv := waitStatus(t, h, name, "error")
			if !strings.Contains(sv.Error, msg) || sv.ToolCount != 0 {
				t.Errorf("%s: %s listed with error %q and %d tools; want %q and none", ph.name, name, sv.Error, sv.ToolCount, msg)
			}
		}
		// The hub retries them (backoff from 250ms): let it, as the red
		// team did for 20 s, then take the peak.
		time.Sleep(10 * time.Second)
		l, err := h.Listing("?format=names")
		if err != nil {
			t.Fatal(err)
		}
		var pages int64
		for name, u := range ph.upstreams {
			if sv, _ := l.Server(name); sv.Status != "error" || sv.ToolCount != 0 {
				t.Errorf("%s, after 10 s of retries: %s", ph.name, l.Summary())
			}
			pages += u.Pages.Swap(0)
		}
		if sv, _ := l.Server("good"); sv.Status != "connected" || sv.ToolCount != 1 {
			t.Errorf("%s: the server beside them: %s", ph.name, l.Summary())
		}
		peak := procMemory(t, h.PID(), "VmHWM")
		t.Logf("%s: hub memory %d MB resident before, peak %d MB (+%d MB); %d list pages answered",
			ph.name, before>>20, peak>>20, (peak-before)>>20, pages)
		if peak-before > maxListAttackGrowth {
			t.Errorf("%s: the hub's peak memory grew by %d MB; the bound is %d MB", ph.name, (peak-before)>>20, maxListAttackGrowth>>20)
		}
	}
	terminate(t, h)
}

// procMemory reads field (VmRSS, VmHWM) of /proc/pid/status in bytes.
func procMemory(t *testing.T, pid int, field string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("%s of %s: %v", field, line, err)
			}
			return kb << 10
		}
	}
	t.Fatal(errors.New(field + " not in /proc/pid/status"))
	return 0
}
