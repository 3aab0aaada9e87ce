package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/registry"
)

func TestCollisionsAndRouting(t *testing.T) {
	a, b := newFakeUpstream(t, "alpha"), newFakeUpstream(t, "beta")
	h := newTestHub(t, []config.ServerSpec{a.spec(), b.spec()})
	h.waitConnected("alpha", "beta")
	c, _ := h.dial()
	waitFor(t, "8 tools", func() bool { return len(toolNames(t, c)) == 8 })
	names := toolNames(t, c)
	for _, want := range []string{"alpha__echo", "beta__echo", "whoami_alpha", "whoami_beta", "slow_alpha"} {
		mustf(t, contains(names, want), "tools/list %v lacks %s", names, want)
	}
	mustf(t, !contains(names, "echo"), "colliding bare name echo published: %v", names)

	// The upstream receives its original name; each call reaches its owner.
	if got, isErr := call(t, c, "alpha__echo", map[string]any{"text": "hi"}); got != "alpha:hi" || isErr {
		t.Fatalf("alpha__echo = %q (error %v)", got, isErr)
	}
	if got, _ := call(t, c, "beta__echo", map[string]any{"text": "yo"}); got != "beta:yo" {
		t.Fatalf("beta__echo = %q", got)
	}
	if got, _ := call(t, c, "whoami_beta", nil); got != "beta" {
		t.Fatalf("whoami_beta = %q", got)
	}
	// An unknown tool is a clear error naming the tool.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = "no_such_tool"
	_, err := c.CallTool(ctx, req)
	mustf(t, err != nil && strings.Contains(err.Error(), "no_such_tool"), "unknown tool error = %v", err)
}

func TestAddRemoveAtRuntimeAndListChanged(t *testing.T) {
	a, b := newFakeUpstream(t, "alpha"), newFakeUpstream(t, "beta")
	h := newTestHub(t, []config.ServerSpec{a.spec()})
	h.waitConnected("alpha")
	c, changed := h.dial()
	mustf(t, contains(toolNames(t, c), "echo"), "echo should be unprefixed with one server")

	drain(changed)
	h.set(a.spec(), b.spec())
	waitNotified(t, changed, "server added")
	waitFor(t, "beta tools", func() bool { return contains(toolNames(t, c), "whoami_beta") })
	// Names are stable: alpha keeps the echo its callers use, and the
	// newcomer is prefixed.
	names := toolNames(t, c)
	mustf(t, contains(names, "echo") && contains(names, "beta__echo") && !contains(names, "alpha__echo"), "after add: %v", names)
	if got, _ := call(t, c, "echo", map[string]any{"text": "x"}); got != "alpha:x" {
		t.Fatalf("echo after beta was added routed to %q", got)
	}

	// A tool added upstream reaches downstream sessions via list_changed.
	drain(changed)
	b.addTool("fresh_tool")
	waitNotified(t, changed, "upstream list_changed")
	waitFor(t, "fresh_tool", func() bool { return contains(toolNames(t, c), "fresh_tool") })
	if got, _ := call(t, c, "fresh_tool", nil); got != "beta:fresh_tool" {
		t.Fatalf("fresh_tool = %q", got)
	}

	drain(changed)
	h.set(b.spec())
	waitNotified(t, changed, "server removed")
	waitFor(t, "alpha gone", func() bool { return !contains(toolNames(t, c), "whoami_alpha") })
	// beta keeps the name its callers know; alpha's name is released,
	// but no other tool takes it meanwhile.
	names = toolNames(t, c)
	mustf(t, contains(names, "beta__echo") && !contains(names, "echo"), "after alpha was removed: %v", names)
	got, _ := call(t, c, "beta__echo", map[string]any{"text": "x"})
	mustf(t, got == "beta:x", "beta__echo routed to %q after alpha was removed", got)
}

func drain(ch <-chan struct{}) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

func waitNotified(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	waitRecv(t, ch, "tools/list_changed after "+what)
}

func TestKilledUpstreamIsolatedAndReconnects(t *testing.T) {
	a, b := newFakeUpstream(t, "alpha"), newFakeUpstream(t, "beta")
	h := newTestHub(t, []config.ServerSpec{a.spec(), b.spec()})
	h.waitConnected("alpha", "beta")
	c, changed := h.dial()

	drain(changed)
	a.stop()
	waitFor(t, "alpha in error", func() bool { return h.status("alpha").State == registry.StateError })
	st := h.status("alpha")
	mustf(t, st.Error != "", "error state without a reason")
	waitNotified(t, changed, "server down")

	// The listing shows the reason; beta keeps serving.
	var l struct {
		Servers []struct{ Name, Status, Error string }
	}
	getJSON(t, h.url("/api/mcp/tools"), &l)
	for _, sv := range l.Servers {
		if sv.Name == "alpha" {
			mustf(t, sv.Status == "error" && sv.Error != "", "listing of dead alpha: %+v", sv)
		}
	}
	for i := 0; i < 20; i++ {
		if got, isErr := call(t, c, "beta__echo", map[string]any{"text": "ok"}); got != "beta:ok" || isErr {
			t.Fatalf("beta__echo while alpha is down = %q", got)
		}
	}
	// The dead server's tools are withdrawn from lists; a call to one fails
	// fast, saying the server is unavailable and why, not a hang and not
	// "tool not found".
	mustf(t, !contains(toolNames(t, c), "alpha__echo"), "dead alpha's tools still listed")
	start := time.Now()
	got, isErr := call(t, c, "alpha__echo", nil)
	mustf(t, isErr && strings.Contains(got, "alpha is unavailable: "), "call to dead alpha: %q", got)
	mustf(t, time.Since(start) < 2*time.Second, "call to dead alpha took %s", time.Since(start))

	a.start()
	h.waitConnected("alpha")
	waitFor(t, "alpha callable again", func() bool {
		got, _ := call(t, c, "alpha__echo", map[string]any{"text": "back"})
		return got == "alpha:back"
	})
}

func TestUpstreamDiesMidCall(t *testing.T) {
	a := newFakeUpstream(t, "alpha")
	h := newTestHub(t, []config.ServerSpec{a.spec()})
	h.waitConnected("alpha")
	c, _ := h.dial()
	done := make(chan string, 1)
	go func() {
		got, _ := call(t, c, "block_alpha", nil)
		done <- got
	}()
	time.Sleep(200 * time.Millisecond)
	a.stop()
	select {
	case got := <-done:
		mustf(t, strings.HasPrefix(got, "ERROR:"), "call on a dying upstream returned %q", got)
	case <-time.After(3 * time.Second):
		t.Fatal("call on a dying upstream hangs")
	}
}

func TestSlowUpstreamDoesNotSlowOthersAndTimesOut(t *testing.T) {
	a, b := newFakeUpstream(t, "alpha"), newFakeUpstream(t, "beta")
	slow := b.spec()
	slow.Timeout = config.Duration(300 * time.Millisecond)
	h := newTestHub(t, []config.ServerSpec{a.spec(), slow})
	h.waitConnected("alpha", "beta")
	c, _ := h.dial()

	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, isErr := call(t, c, "slow_beta", map[string]any{"ms": 5000})
			if !isErr || !strings.Contains(got, "timed out") {
				t.Errorf("slow call = %q, want a timeout error", got)
			}
		}()
	}
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	for i := 0; i < 20; i++ {
		if got, _ := call(t, c, "alpha__echo", map[string]any{"text": "fast"}); got != "alpha:fast" {
			t.Fatalf("alpha__echo = %q", got)
		}
	}
	mustf(t, time.Since(start) < time.Second, "20 fast calls took %s while beta was slow", time.Since(start))
	wg.Wait()
	select {
	case <-b.canceled:
	case <-time.After(3 * time.Second):
		t.Fatal("the upstream never saw the timed-out call cancelled")
	}
}

func TestCallerCancellationReachesUpstream(t *testing.T) {
	a := newFakeUpstream(t, "alpha")
	h := newTestHub(t, []config.ServerSpec{a.spec()})
	h.waitConnected("alpha")
	c, _ := h.dial()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		time.Sleep(200 * time.Millisecond)
		cancel()
	}()
	req := mcp.CallToolRequest{}
	req.Params.Name = "slow_alpha"
	req.Params.Arguments = map[string]any{"ms": 10000}
	_, _ = c.CallTool(ctx, req)
	select {
	case <-a.canceled:
	case <-time.After(5 * time.Second):
		t.Fatal("upstream did not observe the caller's cancellation")
	}
}

func TestBearerTokenSentAndNeverListed(t *testing.T) {
	a := newFakeUpstream(t, "alpha")
	spec := a.spec()
	spec.BearerToken = "s3cr3t-token-value"
	spec.Headers = map[string]string{"X-Team": "blue"}
	h := newTestHub(t, []config.ServerSpec{spec})
	h.waitConnected("alpha")
	mustf(t, a.lastTok.Load() == "Bearer s3cr3t-token-value", "upstream saw Authorization %q", a.lastTok.Load())
	for _, path := range []string{"/api/mcp/tools", "/api/mcp/tools?format=names", "/metrics"} {
		resp, err := http.Get(h.url(path))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		mustf(t, !bytes.Contains(body, []byte("s3cr3t")), "%s leaks the token", path)
	}
}

func TestListingShapes(t *testing.T) {
	a, b := newFakeUpstream(t, "alpha"), newFakeUpstream(t, "beta")
	h := newTestHub(t, []config.ServerSpec{a.spec(), b.spec()})
	h.waitConnected("alpha", "beta")

	var full struct {
		Servers []struct {
			Name, URL, Transport, Status string
			ToolCount                    int
			Tools                        []struct {
				Name        string
				InputSchema map[string]any
			}
		}
		TotalTools int
	}
	getJSON(t, h.url("/api/mcp/tools"), &full)
	mustf(t, full.TotalTools == 8 && len(full.Servers) == 2, "listing = %+v", full)
	s0 := full.Servers[0]
	mustf(t, s0.Name == "alpha" && s0.Status == "connected" && s0.ToolCount == 4 && s0.Transport == "streamable-http" && s0.URL == a.url(), "alpha = %+v", s0)
	mustf(t, s0.Tools[0].InputSchema["type"] == "object", "inputSchema missing: %+v", s0.Tools[0])

	var names struct {
		Servers []struct {
			Name  string
			Tools []string
		}
	}
	getJSON(t, h.url("/api/mcp/tools?format=names"), &names)
	mustf(t, contains(names.Servers[1].Tools, "beta__echo"), "names format = %+v", names)

	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200} {
		resp, err := http.Get(h.url(path))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		mustf(t, resp.StatusCode == want, "%s = %d", path, resp.StatusCode)
	}
	resp, err := http.Get(h.url("/metrics"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`mcphub_upstream_up{server="alpha",transport="streamable-http"} 1`, "mcphub_catalog_tools 8", "\nmcphub_replicas 1\n",
		`mcphub_sessions{class="anonymous"} 0`, `mcphub_sessions_refused_total{reason="anonymous_share"} 0`} {
		mustf(t, bytes.Contains(body, []byte(want)), "/metrics lacks %q", want)
	}
}

// rpc posts one JSON-RPC message the way Purko's executor does: Host
// localhost, protocol 2025-03-26, no notifications/initialized, and only the
// first data: line of an SSE reply is read.
func rpc(t *testing.T, url, session string, body string) (map[string]any, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var raw []byte
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "data:") {
				raw = []byte(strings.TrimSpace(strings.TrimPrefix(line, "data:")))
				break
			}
		}
	} else {
		raw, _ = io.ReadAll(resp.Body)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("reply to %s is not JSON (%s): %q", body, resp.Status, raw)
	}
	return out, resp.Header.Get("Mcp-Session-Id")
}

func TestPurkoExecutorClient(t *testing.T) {
	a := newFakeUpstream(t, "alpha")
	h := newTestHub(t, []config.ServerSpec{a.spec()})
	h.waitConnected("alpha")
	url := "http://localhost:" + h.addr[strings.LastIndex(h.addr, ":")+1:] + "/mcp"

	init, session := rpc(t, url, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"purko-executor","version":"1"}}}`)
	mustf(t, init["result"] != nil, "initialize = %v", init)
	list, _ := rpc(t, url, session, `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`)
	tools := list["result"].(map[string]any)["tools"].([]any)
	mustf(t, len(tools) == 4, "tools/list = %v", list)
	res, _ := rpc(t, url, session, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"purko"}}}`)
	content := res["result"].(map[string]any)["content"].([]any)
	mustf(t, content[0].(map[string]any)["text"] == "alpha:purko", "tools/call = %v", res)

	// Malformed JSON-RPC: a JSON-RPC error, and the session still works.
	bad, _ := rpc(t, url, session, `{"jsonrpc":"2.0","id":4,"method":`)
	mustf(t, bad["error"] != nil, "malformed request answered %v", bad)
	again, _ := rpc(t, url, session, `{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{}}`)
	mustf(t, again["result"] != nil, "session broken after malformed request: %v", again)
}
