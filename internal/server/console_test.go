package server

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/callfeed"
	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/console"
	"github.com/purko-io/mcp-hub/internal/pipeline"
	"github.com/purko-io/mcp-hub/internal/registry"
)

// feedCall is a call as /api/mcp/calls and the "call" events show it.
type feedCall struct {
	Seq                                            uint64
	Caller, Level, Tool, Server, Decision, Outcome string
	DurationMs                                     float64
}

// sseEvent is one server-sent event read from a stream.
type sseEvent struct{ name, data string }

// readEvents reads the events of body onto a channel until it ends.
func readEvents(body io.Reader) <-chan sseEvent {
	out := make(chan sseEvent, 64)
	go func() { // ends when the test closes the body
		defer close(out)
		sc := bufio.NewScanner(body)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				ev.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.data += strings.TrimPrefix(line, "data: ")
			case line == "" && ev.name != "":
				out <- ev
				ev = sseEvent{}
			}
		}
	}()
	return out
}

// nextEvent waits for the next event named name, skipping others.
func nextEvent(t *testing.T, events <-chan sseEvent, name string) sseEvent {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatalf("event stream ended before a %q event", name)
			}
			if ev.name == name {
				return ev
			}
		case <-timeout:
			t.Fatalf("no %q event within 10s", name)
		}
	}
}

func TestEventsOnCatalogChangeAndCall(t *testing.T) {
	a := newFakeUpstream(t, "alpha")
	h := newTestHub(t, []config.ServerSpec{a.spec()})
	h.waitConnected("alpha")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, h.url("/api/events"), nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }()
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET /api/events: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	events := readEvents(res.Body)
	nextEvent(t, events, "catalog") // the state at the start

	b := newFakeUpstream(t, "beta")
	h.set(a.spec(), b.spec())
	nextEvent(t, events, "catalog")
	h.waitConnected("alpha", "beta")

	c, _ := h.dial()
	const secret = "argument-that-must-not-show"
	if text, isErr := call(t, c, "whoami_beta", map[string]any{"token": secret}); isErr || text != "beta" {
		t.Fatalf("whoami_beta: %q %v", text, isErr)
	}
	var got feedCall
	for got.Tool != "whoami_beta" {
		ev := nextEvent(t, events, "call")
		if err := json.Unmarshal([]byte(ev.data), &got); err != nil {
			t.Fatalf("call event %q: %v", ev.data, err)
		}
	}
	if got.Server != "beta" || got.Decision != "allowed" || got.Outcome != pipeline.OK || got.Caller == "" || got.Level != "full" {
		t.Fatalf("call event %+v, want whoami_beta on beta, allowed, ok, with caller and level", got)
	}

	res2, err := http.Get(h.url("/api/mcp/calls"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res2.Body)
	_ = res2.Body.Close()
	if !strings.Contains(string(body), `"tool": "whoami_beta"`) {
		t.Fatalf("/api/mcp/calls lacks the call: %s", body)
	}
	if strings.Contains(string(body), secret) || strings.Contains(string(body), "arguments") {
		t.Fatalf("/api/mcp/calls shows a call's arguments: %s", body)
	}
}

func TestEventsAndCallsNeedACaller(t *testing.T) {
	h := newTestHubAuth(t, nil, authFor(callers.TokenCaller{Name: "ops", Token: "tok-ops", Ceiling: autonomy.Full, Admin: true},
		callers.TokenCaller{Name: "bot", Token: "tok-bot", Ceiling: autonomy.Full}))
	for _, path := range []string{"/api/events", "/api/mcp/calls"} {
		res, err := http.Get(h.url(path))
		if err != nil {
			t.Fatal(err)
		}
		_ = res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("GET %s without a token: %d, want 401", path, res.StatusCode)
		}
		req, _ := http.NewRequest(http.MethodGet, h.url(path), nil)
		req.Header.Set("Authorization", "Bearer tok-ops")
		req.Header.Set("Origin", "http://evil.example")
		if res, err = http.DefaultClient.Do(req); err != nil {
			t.Fatal(err)
		}
		_ = res.Body.Close()
		if res.StatusCode != http.StatusForbidden {
			t.Fatalf("GET %s from a foreign page: %d, want 403", path, res.StatusCode)
		}
	}
	h.srv.feed.Add(callfeed.Call{Caller: "ops", Tool: "ops_tool", Decision: "allowed", Outcome: pipeline.OK})
	h.srv.feed.Add(callfeed.Call{Caller: "bot", Tool: "bot_tool", Decision: "allowed", Outcome: pipeline.OK})
	for token, want := range map[string][]string{"tok-ops": {"ops_tool", "bot_tool"}, "tok-bot": {"bot_tool"}} {
		req, _ := http.NewRequest(http.MethodGet, h.url("/api/mcp/calls"), nil)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var out struct{ Calls []feedCall }
		err = json.NewDecoder(res.Body).Decode(&out)
		_ = res.Body.Close()
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("GET /api/mcp/calls with %s: %d %v", token, res.StatusCode, err)
		}
		var got []string
		for _, c := range out.Calls {
			got = append(got, c.Tool)
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("GET /api/mcp/calls with %s lists %v, want %v (an admin every call, another caller its own)", token, got, want)
		}
	}
}

func TestConsoleAssetsAreEmbeddedWithCSP(t *testing.T) {
	h := newTestHub(t, nil)
	for path, want := range map[string]string{"/": "text/html", "/console/console.js": "javascript", "/console/charts.js": "javascript", "/console/console.css": "text/css"} {
		res, err := http.Get(h.url(path))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		_ = res.Body.Close()
		if res.StatusCode != http.StatusOK || !strings.Contains(res.Header.Get("Content-Type"), want) || len(body) == 0 {
			t.Fatalf("GET %s: %d %q (%d bytes)", path, res.StatusCode, res.Header.Get("Content-Type"), len(body))
		}
		if res.Header.Get("Content-Security-Policy") != console.CSP || res.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Fatalf("GET %s: CSP %q, X-Content-Type-Options %q", path, res.Header.Get("Content-Security-Policy"), res.Header.Get("X-Content-Type-Options"))
		}
		if strings.Contains(string(body), "https://") || strings.Contains(string(body), "http://cdn") {
			t.Fatalf("GET %s refers to another site", path)
		}
	}
	if res, err := http.Get(h.url("/nothing-here")); err != nil || res.StatusCode != http.StatusNotFound {
		t.Fatalf("GET /nothing-here: %v %v, want 404", res, err)
	}
}

// TestEventStreamEndsOnShutdown: Serve ends the console's event streams
// (which never end by themselves) when it shuts down.
func TestEventStreamEndsOnShutdown(t *testing.T) {
	reg := registry.New(registry.Options{RouteCacheSize: 8}, zerolog.Nop())
	srv := newServer(reg, hubOpts{Name: "mcp-hub", Version: "test"}, zerolog.Nop())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln, 2*time.Second) }()
	defer stop()

	res, err := http.Get("http://" + ln.Addr().String() + "/api/events")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }()
	events := readEvents(res.Body)
	nextEvent(t, events, "catalog")
	stop()
	for ended := time.After(10 * time.Second); ; {
		select {
		case _, ok := <-events:
			if ok {
				continue
			}
		case <-ended:
			t.Fatal("the event stream did not end at shutdown")
		}
		break
	}
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after the stream ended")
	}
}
