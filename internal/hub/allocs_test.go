//go:build !race

package hub

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// maxHubAllocsPerCall is the allocation budget of one fast-path tools/call
// in the hub (issue 22): net/http's server and client included, the
// caller's and the upstream's allocations excluded.
const maxHubAllocsPerCall = 120

// TestFastPathAllocations counts the allocations one plain tools/call
// makes in the hub. The caller, the hub and the upstream share this
// process, so the hub's share is what a call through the hub allocates
// beyond the same call sent by the same caller straight to the upstream,
// measured in alternating rounds; the least of the rounds counts, as the
// other goroutines of the process (a ping, the GC) only ever add.
//
// The race detector changes what allocates (sync.Pool keeps nothing under
// it), so the file builds without it; `make test` runs it so.
func TestFastPathAllocations(t *testing.T) {
	up := echoUpstream(t)
	path := filepath.Join(t.TempDir(), "hub.yaml")
	cfg := "servers:\n- {name: up, url: \"" + up + "\"}\nauth:\n  anonymous: {enabled: true, maxLevel: full}\n"
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	h := serveConfig(t, path)
	waitConnected(t, h, "up")

	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	direct := newRawSession(t, hc, up, "echo")
	through := newRawSession(t, hc, h.MCPURL(), "echo")
	const calls, rounds = 400, 5
	best := -1.0
	var directAllocs, hubAllocs float64
	for range rounds {
		d := direct.allocsPerCall(t, calls)
		v := through.allocsPerCall(t, calls)
		if diff := v - d; best < 0 || diff < best {
			best, directAllocs, hubAllocs = diff, d, v
		}
	}
	t.Logf("allocations per tools/call: caller+upstream %.1f, caller+hub+upstream %.1f: the hub's %.1f (budget %d)",
		directAllocs, hubAllocs, best, maxHubAllocsPerCall)
	if best > maxHubAllocsPerCall {
		t.Errorf("a fast-path tools/call makes %.1f allocations in the hub, over the budget of %d", best, maxHubAllocsPerCall)
	}
}

// rawSession is a caller that sends one prepared tools/call over and over
// on a 2025-11-25 session, so that what it allocates itself is the same
// whoever answers.
type rawSession struct {
	hc   *http.Client
	url  string
	sid  string
	body []byte
	buf  bytes.Buffer
}

func newRawSession(t *testing.T, hc *http.Client, url, tool string) *rawSession {
	t.Helper()
	s := &rawSession{hc: hc, url: url}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"allocs","version":"1"}}}`
	resp := s.post(t, []byte(init))
	s.sid = resp.Header.Get("Mcp-Session-Id")
	if s.sid == "" {
		t.Fatalf("initialize at %s: no session id", url)
	}
	s.post(t, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	s.body = []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + tool + `","arguments":{"text":"hello"}}}`)
	s.post(t, s.body)
	if !strings.Contains(s.buf.String(), "echo:hello") {
		t.Fatalf("tools/call %s at %s: %s", tool, url, s.buf.String())
	}
	return s
}

// post sends body and reads the whole answer into s.buf.
func (s *rawSession) post(t *testing.T, body []byte) *http.Response {
	req, err := http.NewRequest(http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if s.sid != "" {
		req.Header.Set("Mcp-Session-Id", s.sid)
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	s.buf.Reset()
	if _, err := io.Copy(&s.buf, resp.Body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode/100 != 2 {
		t.Fatalf("POST %s: %s: %s", s.url, resp.Status, s.buf.String())
	}
	return resp
}

// allocsPerCall makes n calls and returns the process's allocations per
// call.
func (s *rawSession) allocsPerCall(t *testing.T, n int) float64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range n {
		s.post(t, s.body)
	}
	runtime.ReadMemStats(&after)
	if !bytes.Contains(s.buf.Bytes(), []byte("echo:hello")) {
		t.Fatal(fmt.Sprintf("tools/call at %s: %s", s.url, s.buf.String()))
	}
	return float64(after.Mallocs-before.Mallocs) / float64(n)
}
