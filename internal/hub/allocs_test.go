//go:build !race

package hub

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// maxHubAllocsPerCall is the allocation budget of one fast-path tools/call
// in the hub (issue 22): net/http's server and client included, the
// caller's and the upstream's allocations excluded.
const maxHubAllocsPerCall = 120

// maxOtherAllocs bounds a resources/read's or a prompts/get's allocations
// in the hub (TestOtherMethodsAllocations).
const maxOtherAllocs = 300

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
	h := hubInFront(t, up)

	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	call := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`
	direct := newRawSession(t, hc, up, call, "echo:hello")
	through := newRawSession(t, hc, h.MCPURL(), call, "echo:hello")
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

// TestOtherMethodsAllocations reports what a resources/read and a
// prompts/get allocate in the hub, measured as the tools/call's are: they
// take the same dispatcher and pipeline, so they stay within the same
// order (maxOtherAllocs: their answers are decoded into mcp-go's types by
// the upstream client and encoded again, a call's pass through as bytes;
// 210 and 245 when this was written).
func TestOtherMethodsAllocations(t *testing.T) {
	up := featuresUpstream(t)
	h := hubInFront(t, up)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	for _, tc := range []struct{ method, body, want string }{
		{"resources/read", `{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"docs://readme"}}`, "readme text"},
		{"prompts/get", `{"jsonrpc":"2.0","id":7,"method":"prompts/get","params":{"name":"greet","arguments":{"who":"Ada"}}}`, "Hello Ada"},
	} {
		direct := newRawSession(t, hc, up, tc.body, tc.want)
		through := newRawSession(t, hc, h.MCPURL(), tc.body, tc.want)
		best := -1.0
		for range 5 {
			if diff := through.allocsPerCall(t, 200) - direct.allocsPerCall(t, 200); best < 0 || diff < best {
				best = diff
			}
		}
		t.Logf("allocations per %s in the hub: %.1f (a tools/call's budget: %d)", tc.method, best, maxHubAllocsPerCall)
		if best > maxOtherAllocs {
			t.Errorf("a %s makes %.1f allocations in the hub, over %d", tc.method, best, maxOtherAllocs)
		}
	}
}

// featuresUpstream serves one resource and one prompt.
func featuresUpstream(t *testing.T) string {
	t.Helper()
	s := server.NewMCPServer("up", "1", server.WithToolCapabilities(false), server.WithResourceCapabilities(false, false), server.WithPromptCapabilities(false))
	s.AddResource(mcp.NewResource("docs://readme", "readme", mcp.WithMIMEType("text/plain")),
		func(_ context.Context, r mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: r.Params.URI, MIMEType: "text/plain", Text: "readme text"}}, nil
		})
	s.AddPrompt(mcp.NewPrompt("greet", mcp.WithArgument("who")), func(_ context.Context, r mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return mcp.NewGetPromptResult("greeting", []mcp.PromptMessage{mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("Hello "+r.Params.Arguments["who"]))}), nil
	})
	ts := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

// hubInFront serves a hub whose one upstream, up, is connected.
func hubInFront(t *testing.T, up string) *servedHub {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hub.yaml")
	cfg := "servers:\n- {name: up, url: \"" + up + "\"}\nauth:\n  anonymous: {enabled: true, maxLevel: full}\n"
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	h := serveConfig(t, path)
	waitConnected(t, h, "up")
	return h
}

// rawSession is a caller that sends one prepared request over and over
// on a 2025-11-25 session, so that what it allocates itself is the same
// whoever answers.
type rawSession struct {
	hc   *http.Client
	url  string
	sid  string
	body []byte
	want []byte // what every answer holds
	buf  bytes.Buffer
}

func newRawSession(t *testing.T, hc *http.Client, url, body, want string) *rawSession {
	t.Helper()
	s := &rawSession{hc: hc, url: url, want: []byte(want)}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"allocs","version":"1"}}}`
	resp := s.post(t, []byte(init))
	s.sid = resp.Header.Get("Mcp-Session-Id")
	if s.sid == "" {
		t.Fatalf("initialize at %s: no session id", url)
	}
	s.post(t, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	s.body = []byte(body)
	s.post(t, s.body)
	if !bytes.Contains(s.buf.Bytes(), s.want) {
		t.Fatalf("%s at %s: %s", body, url, s.buf.String())
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
	if !bytes.Contains(s.buf.Bytes(), s.want) {
		t.Fatal(fmt.Sprintf("%s at %s: %s", s.body, s.url, s.buf.String()))
	}
	return float64(after.Mallocs-before.Mallocs) / float64(n)
}
