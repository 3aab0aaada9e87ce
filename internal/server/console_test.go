package server

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/console"
	"github.com/purko-io/mcp-hub/internal/registry"
)

func TestFeedKeepsTheLastCallsInOrder(t *testing.T) {
	f := newFeed()
	if calls, seq, _ := f.since(0); calls != nil || seq != 0 {
		t.Fatalf("empty feed: %v, seq %d", calls, seq)
	}
	for i := range recentCalls + 50 {
		f.add(callEntry{Tool: "t" + string(rune('a'+i%26)), Decision: "allowed", Outcome: outcomeOK, Duration: time.Duration(i) * time.Millisecond})
	}
	calls, seq, _ := f.since(0)
	if len(calls) != recentCalls || seq != recentCalls+50 {
		t.Fatalf("got %d calls, seq %d; want the last %d of %d", len(calls), seq, recentCalls, recentCalls+50)
	}
	for i, c := range calls {
		if want := uint64(51 + i); c.Seq != want {
			t.Fatalf("call %d has seq %d, want %d (oldest first)", i, c.Seq, want)
		}
	}
	if last := calls[len(calls)-1]; last.DurationMs != float64(recentCalls+49) {
		t.Fatalf("newest call lasted %v ms, want %d", last.DurationMs, recentCalls+49)
	}
	if tail, _, _ := f.since(seq - 3); len(tail) != 3 || tail[0].Seq != seq-2 {
		t.Fatalf("since(seq-3) = %+v, want the 3 newest", tail)
	}
	if none, _, _ := f.since(seq); none != nil {
		t.Fatalf("since(seq) = %+v, want nothing", none)
	}
	f.add(callEntry{Tool: strings.Repeat("x", 1<<20)})
	if tail, _, _ := f.since(seq); len(tail[0].Tool) != maxFeedName {
		t.Fatalf("a 1 MiB tool name is kept as %d bytes, want %d", len(tail[0].Tool), maxFeedName)
	}
}

func TestFeedAddAllocatesNothing(t *testing.T) {
	f := newFeed()
	_, release := f.subscribe()
	defer release()
	e := callEntry{Time: time.Now(), Caller: "c", Level: "full", Tool: "echo", Server: "s", Decision: "allowed", Outcome: outcomeOK}
	if n := testing.AllocsPerRun(1000, func() { f.add(e) }); n != 0 {
		t.Fatalf("feed.add allocates %v times per call, want 0", n)
	}
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
	var got callJSON
	for got.Tool != "whoami_beta" {
		ev := nextEvent(t, events, "call")
		if err := json.Unmarshal([]byte(ev.data), &got); err != nil {
			t.Fatalf("call event %q: %v", ev.data, err)
		}
	}
	if got.Server != "beta" || got.Decision != "allowed" || got.Outcome != outcomeOK || got.Caller == "" || got.Level != "full" {
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
	h.srv.feed.add(callEntry{Caller: "ops", Tool: "ops_tool", Decision: "allowed", Outcome: outcomeOK})
	h.srv.feed.add(callEntry{Caller: "bot", Tool: "bot_tool", Decision: "allowed", Outcome: outcomeOK})
	for token, want := range map[string][]string{"tok-ops": {"ops_tool", "bot_tool"}, "tok-bot": {"bot_tool"}} {
		req, _ := http.NewRequest(http.MethodGet, h.url("/api/mcp/calls"), nil)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var out struct{ Calls []callJSON }
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

func TestEventStreamsAreCapped(t *testing.T) {
	h := newTestHub(t, nil)
	h.srv.feed.mu.Lock()
	h.srv.feed.streams = maxEventStreams
	h.srv.feed.mu.Unlock()
	res, err := http.Get(h.url("/api/events"))
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" {
		t.Fatalf("event stream over the cap: %d (Retry-After %q), want 503 with Retry-After", res.StatusCode, res.Header.Get("Retry-After"))
	}
}

// TestEventStreamSlots: one caller (by limit key) holds at most
// maxEventStreamsPerCaller, callers that are not admins together at most
// maxSharedEventStreams, and the rest is the admins'.
func TestEventStreamSlots(t *testing.T) {
	f := newFeed()
	open := func(c callers.Caller) (func(), int) {
		release, err := f.openStream(c)
		if err != nil {
			return nil, err.status
		}
		return release, http.StatusOK
	}
	var releases []func()
	defer func() {
		for _, r := range releases {
			r()
		}
	}()
	take := func(c callers.Caller, n int) {
		t.Helper()
		for i := range n {
			r, status := open(c)
			mustf(t, status == http.StatusOK, "stream %d of %s: %d", i, c.Key(), status)
			releases = append(releases, r)
		}
	}
	anon := func(ip string) callers.Caller { return callers.Anonymous(ip+":1", autonomy.Manual) }
	take(anon("10.0.0.1"), maxEventStreamsPerCaller)
	_, status := open(anon("10.0.0.1"))
	mustf(t, status == http.StatusTooManyRequests, "one address over its bound: %d, want 429", status)
	for i := 2; len(releases) < maxSharedEventStreams; i++ {
		take(anon("10.0.0."+strconv.Itoa(i)), maxEventStreamsPerCaller)
	}
	_, status = open(anon("10.0.1.1"))
	mustf(t, status == http.StatusServiceUnavailable, "a new address with the non-admins' share taken: %d, want 503", status)
	take(callers.Caller{Name: "ops", Admin: true}, maxEventStreams-maxSharedEventStreams)
	_, status = open(callers.Caller{Name: "ops2", Admin: true})
	mustf(t, status == http.StatusServiceUnavailable, "an admin with every stream taken: %d, want 503", status)
	// Closed streams give their slots back.
	releases[0]()
	releases = releases[1:]
	r, status := open(anon("10.0.0.1"))
	mustf(t, status == http.StatusOK, "the first address after one of its streams closed: %d", status)
	r()
	for _, r := range releases {
		r()
	}
	releases = nil
	mustf(t, f.streams == 0 && f.shared == 0 && len(f.perCaller) == 0, "after every stream closed: %d streams, %d shared, %v", f.streams, f.shared, f.perCaller)
}

func TestConsoleAssetsAreEmbeddedWithCSP(t *testing.T) {
	h := newTestHub(t, nil)
	for path, want := range map[string]string{"/": "text/html", "/console/console.js": "javascript", "/console/console.css": "text/css"} {
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

func TestEventStreamHeartbeatsAndEndsOnShutdown(t *testing.T) {
	reg := registry.New(registry.Options{RouteCacheSize: 8}, zerolog.Nop())
	srv := New(reg, Options{Name: "mcp-hub", Version: "test"}, zerolog.Nop())
	srv.feed.heartbeat = 20 * time.Millisecond
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
	lines := make(chan string, 64)
	go func() { // ends with the stream
		defer close(lines)
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	waitLine := func(what string, match func(string) bool) bool {
		timeout := time.After(10 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					return false
				}
				if match(l) {
					return true
				}
			case <-timeout:
				t.Fatalf("no %s within 10s", what)
			}
		}
	}
	if !waitLine("heartbeat", func(l string) bool { return l == ": ping" }) {
		t.Fatal("the stream ended before a heartbeat")
	}
	stop()
	if waitLine("end of the stream at shutdown", func(string) bool { return false }) {
		t.Fatal("unreachable")
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

// BenchmarkFeedAdd is what recording a call in the console's ring costs
// every call, with one console watching.
func BenchmarkFeedAdd(b *testing.B) {
	f := newFeed()
	_, release := f.subscribe()
	defer release()
	e := callEntry{Time: time.Now(), Caller: "c", Level: "full", Tool: "echo", Server: "s", Decision: "allowed", Outcome: outcomeOK}
	b.ReportAllocs()
	for b.Loop() {
		f.add(e)
	}
}
