package server

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/purko-io/mcp-hub/internal/config"
)

// memory is what the process holds: live heap after collections, stacks,
// goroutines.
type memory struct {
	heap, stack uint64
	goroutines  int
}

func memNow() memory {
	for range 3 { // a collection also shrinks the stacks of idle goroutines
		runtime.GC()
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return memory{ms.HeapAlloc, ms.StackInuse, runtime.NumGoroutine()}
}

// settle waits until the goroutines stop falling (connections closed,
// streams started) and returns the memory then.
func settle() memory {
	m := memNow()
	for range 50 {
		time.Sleep(20 * time.Millisecond)
		next := memNow()
		if next.goroutines == m.goroutines {
			return next
		}
		m = next
	}
	return m
}

// perSession is the cost of n sessions, from m0 to m1.
type perSession struct{ kb, goroutines float64 }

func costOf(m0, m1 memory, n int) perSession {
	grown := float64(m1.heap+m1.stack) - float64(m0.heap+m0.stack)
	return perSession{kb: grown / float64(n) / 1024, goroutines: float64(m1.goroutines-m0.goroutines) / float64(n)}
}

// openIdleSessions opens n sessions as clients that then go quiet:
// initialize, notifications/initialized, nothing more.
func openIdleSessions(t *testing.T, h *testHub, hc *http.Client, n int) []string {
	t.Helper()
	const workers = 8
	ids := make([]string, n)
	errs := make(chan error, workers)
	post := func(body, sid string) (*http.Response, error) {
		req, err := http.NewRequest(http.MethodPost, h.url("/mcp"), strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return nil, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp, nil
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				resp, err := post(initBody, "")
				if err != nil {
					errs <- fmt.Errorf("initialize: %w", err)
					return
				}
				sid := resp.Header.Get("Mcp-Session-Id")
				if resp.StatusCode != http.StatusOK || sid == "" {
					errs <- fmt.Errorf("initialize: %s", resp.Status)
					return
				}
				if resp, err = post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, sid); err != nil || resp.StatusCode != http.StatusAccepted {
					errs <- fmt.Errorf("notifications/initialized: %v %v", resp, err)
					return
				}
				ids[i] = sid
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("open idle sessions: %v", err)
	}
	return ids
}

// openStreams opens the GET stream of each session on a raw connection of
// its own, as an idle IDE holds it. The client side of a raw connection
// holds no goroutine and no buffer: what the process holds more is the
// hub's.
func openStreams(t *testing.T, h *testHub, ids []string) []net.Conn {
	t.Helper()
	conns := make([]net.Conn, 0, len(ids))
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for _, sid := range ids {
		c, err := net.Dial("tcp", h.addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		fmt.Fprintf(c, "GET /mcp HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\nMcp-Session-Id: %s\r\n\r\n", h.addr, sid)
		buf := make([]byte, len("HTTP/1.1 200"))
		if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "HTTP/1.1 200" {
			t.Fatalf("GET stream: %q %v", buf, err)
		}
	}
	return conns
}

// TestIdleSessionCost: what an idle Streamable HTTP session costs the hub,
// measured in process over 2,000 of them, before and after each opens its
// GET stream (as an IDE does): at most 30 KB of heap and stacks and no
// goroutine without a stream, 2 with one (the stream's writer and the
// reader that notices the client going). A session without a stream is
// measured with its client's connections closed: a keep-alive connection's
// buffers are the connection's, whatever sessions it carried.
func TestIdleSessionCost(t *testing.T) {
	const n, maxKB = 2000, 30.0
	a := newFakeUpstream(t, "alpha")
	h := newTestHubOpts(t, []config.ServerSpec{a.spec()}, hubOpts{MaxSessions: n + 100, MaxSessionsPerCaller: n + 100})
	h.waitConnected("alpha")
	tr := &http.Transport{MaxIdleConnsPerHost: 8}
	hc := &http.Client{Transport: tr}
	// Warm up: what the first sessions and streams build once.
	openStreams(t, h, openIdleSessions(t, h, hc, 16))
	tr.CloseIdleConnections()
	m0 := settle()

	ids := openIdleSessions(t, h, hc, n)
	tr.CloseIdleConnections()
	m1 := settle()
	conns := openStreams(t, h, ids)
	m2 := settle()
	runtime.KeepAlive(conns)

	for _, c := range []struct {
		name          string
		cost          perSession
		maxGoroutines float64
	}{
		{"without a stream", costOf(m0, m1, n), 0.01},
		{"with its GET stream open", costOf(m0, m2, n), 2},
	} {
		t.Logf("an idle session %s: %.2f KB of heap and stacks, %.3f goroutines (%d sessions)", c.name, c.cost.kb, c.cost.goroutines, n)
		if c.cost.kb > maxKB {
			t.Errorf("an idle session %s costs %.2f KB, over %.0f KB", c.name, c.cost.kb, maxKB)
		}
		if c.cost.goroutines > c.maxGoroutines+0.01 { // the test's other goroutines come and go
			t.Errorf("an idle session %s holds %.3f goroutines, over %g", c.name, c.cost.goroutines, c.maxGoroutines)
		}
	}
}
