package server

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/config"
)

// Regression tests of issue 20 (items 5-7): what one caller holds, sees
// and uses is its own, anonymous callers each by address.

// callerClient makes requests to a hub as one caller: a token, or none from a
// loopback address of its own.
type callerClient struct {
	t     *testing.T
	h     *testHub
	http  *http.Client
	token string
}

// as is the caller with token (none: anonymous) whose connections come
// from the loopback address ip.
func as(t *testing.T, h *testHub, ip, token string) *callerClient {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &callerClient{t: t, h: h, token: token, http: &http.Client{Timeout: 10 * time.Second,
		Transport: &http.Transport{DialContext: d.DialContext}}}
}

// do sends one request; header holds name, value pairs. A stream's body is
// not read (it would not end): only its status counts.
func (c *callerClient) do(method, path, body string, header ...string) (*http.Response, string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.h.url(path), rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	if method == http.MethodGet && resp.Header.Get("Content-Type") == "text/event-stream" {
		return resp, ""
	}
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// initialize opens a session and returns its id.
func (c *callerClient) initialize() string {
	c.t.Helper()
	resp, body := c.do(http.MethodPost, "/mcp", initBody)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		c.t.Fatalf("initialize: %s %s", resp.Status, body)
	}
	return sid
}

// stream opens GET path (an event stream) and returns its response, whose
// body the test closes.
func (c *callerClient) stream(path string) *http.Response {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, c.h.url(path), nil)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := (&http.Client{Transport: c.http.Transport}).Do(req)
	if err != nil {
		c.t.Fatalf("GET %s: %v", path, err)
	}
	c.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func needSecondLoopback(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no second loopback address: %v", err)
	}
	ln.Close()
}

// TestAnonymousSessionBudgetPerAddress (item 5, issue 41): one anonymous
// network at its session cap leaves another network its own; the cap is per
// network (an IPv4 /24), not per address nor per "anonymous", and a session
// stays its own address's.
func TestAnonymousSessionBudgetPerAddress(t *testing.T) {
	needSecondLoopback(t)
	h := newLimitedHub(t, hubOpts{Auth: callers.AnonymousOnly(autonomy.Restricted), MaxSessions: 100, MaxSessionsPerCaller: 3})
	flood, neighbour, other := as(t, h, "127.0.0.1", ""), as(t, h, "127.0.0.2", ""), as(t, h, "127.0.1.1", "")
	for range 3 {
		flood.initialize()
	}
	refused, refusal := flood.do(http.MethodPost, "/mcp", initBody)
	mustf(t, refused.StatusCode == http.StatusTooManyRequests, "127.0.0.1 over its cap: %s %s", refused.Status, refusal)
	resp, body := neighbour.do(http.MethodPost, "/mcp", initBody)
	mustf(t, resp.StatusCode == http.StatusTooManyRequests, "127.0.0.2, in the same /24, shares its cap: %s %s", resp.Status, body)
	resp, body = other.do(http.MethodPost, "/mcp", initBody)
	mustf(t, resp.StatusCode == http.StatusOK && resp.Header.Get("Mcp-Session-Id") != "",
		"initialize from 127.0.1.1 while 127.0.0.0/24 is at its cap: %s %s", resp.Status, body)
	_, _, msg := rpcError(t, refusal)
	mustf(t, strings.Contains(msg, `caller "anonymous@127.0.0.0/24"`), "the refusal names the caller by its network: %s", msg)
}

// TestAbandonedInitializeFreedWithinIdleTimeout (item 5): a session nothing
// happens on after initialize gives its slot back within
// http.sessionIdleTimeout, as the README says.
func TestAbandonedInitializeFreedWithinIdleTimeout(t *testing.T) {
	const idle = 3 * time.Second // mcp-go sweeps at most once a second
	h := newLimitedHub(t, hubOpts{MaxSessionsPerCaller: 1, SessionIdleTimeout: idle})
	c := as(t, h, "127.0.0.1", "")
	c.initialize()
	start := time.Now()
	for {
		resp, _ := c.do(http.MethodPost, "/mcp", initBody)
		if resp.StatusCode == http.StatusOK {
			break
		}
		mustf(t, resp.StatusCode == http.StatusTooManyRequests, "initialize: %s", resp.Status)
		if time.Since(start) > idle+idle/6 {
			t.Fatalf("the abandoned session still holds its slot %s after initialize (http.sessionIdleTimeout %s)", time.Since(start), idle)
		}
		time.Sleep(50 * time.Millisecond)
	}
	took := time.Since(start)
	mustf(t, took > idle/2, "the session was swept after %s, before two thirds of %s", took, idle)
	t.Logf("slot back after %s (http.sessionIdleTimeout %s)", took.Round(10*time.Millisecond), idle)
}

// TestSessionBelongsToItsCaller (item 6): a session id presented by anyone
// but the caller that created it is not found (404), on every method of
// /mcp (the hub's own fast path for tools/call and tools/list included) and
// on the legacy SSE face's /messages; its owner's session goes on.
func TestSessionBelongsToItsCaller(t *testing.T) {
	needSecondLoopback(t)
	a := newFakeUpstream(t, "alpha")
	anonymous := autonomy.Full
	auth := callers.NewAuth([]callers.TokenCaller{
		{Name: "ops", Token: "tok-ops", Ceiling: autonomy.Full, Admin: true},
		{Name: "bot", Token: "tok-bot", Ceiling: autonomy.Restricted},
	}, &anonymous, nil)
	h := newLimitedHub(t, hubOpts{Auth: auth}, a.spec())
	h.waitConnected("alpha")
	ops, bot := as(t, h, "127.0.0.1", "tok-ops"), as(t, h, "127.0.0.1", "tok-bot")
	anonA, anonA2, anonB := as(t, h, "127.0.0.1", ""), as(t, h, "127.0.0.1", ""), as(t, h, "127.0.0.2", "")

	const (
		fastCall = `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"whoami_alpha","arguments":{}}}`
		fastList = `{"jsonrpc":"2.0","id":5,"method":"tools/list"}`
		mcpCall  = `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"whoami_alpha","arguments":{},"_meta":{"progressToken":"p"}}}`
		ping     = `{"jsonrpc":"2.0","id":5,"method":"ping"}`
	)
	notFound := func(who string, c *callerClient, method, path, body string, header ...string) {
		t.Helper()
		resp, got := c.do(method, path, body, header...)
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %s %s %.60s: %s %.200s, want 404", who, method, path, body, resp.Status, got)
			return
		}
		id, _, msg := rpcError(t, got)
		if msg != "session not found" || (body != "" && string(id) != "5") {
			t.Errorf("%s: %s %s: 404 %s, want the JSON-RPC error \"session not found\" with the request's id", who, method, path, got)
		}
	}
	everyMethod := func(who string, c *callerClient, sid string) {
		t.Helper()
		for _, body := range []string{fastCall, fastList, mcpCall, ping} {
			notFound(who, c, http.MethodPost, "/mcp", body, "Mcp-Session-Id", sid)
		}
		notFound(who, c, http.MethodGet, "/mcp", "", "Mcp-Session-Id", sid, "Accept", "text/event-stream")
		notFound(who, c, http.MethodDelete, "/mcp", "", "Mcp-Session-Id", sid)
	}
	works := func(who string, c *callerClient, sid string) {
		t.Helper()
		for _, body := range []string{fastCall, fastList, ping} {
			resp, got := c.do(http.MethodPost, "/mcp", body, "Mcp-Session-Id", sid)
			mustf(t, resp.StatusCode == http.StatusOK && strings.Contains(got, `"result"`), "%s on its own session: %.60s: %s %.200s", who, body, resp.Status, got)
		}
	}

	admin := ops.initialize()
	everyMethod("a restricted token with an admin's session", bot, admin)
	everyMethod("an anonymous caller with an admin's session", anonA, admin)
	works("the admin", ops, admin)

	mine := anonA.initialize()
	everyMethod("another anonymous address", anonB, mine)
	everyMethod("a token caller with an anonymous session", ops, mine)
	works("the same address on another connection", anonA2, mine)

	// An id without a binding is unknown (clients initialize again).
	notFound("an unbound id", anonA, http.MethodPost, "/mcp", fastCall, "Mcp-Session-Id", "mh1-p-"+strings.Repeat("a", 32))
	notFound("mcp-go's own id", anonA, http.MethodPost, "/mcp", fastList, "Mcp-Session-Id", "mcp-session-6f1d4c9e-1f0e-4c44-9a55-b3a5e0a7f001")
	// An initialize that carries another's id (a client that got 404
	// sends its stale one) opens a session of its own.
	resp, body := bot.do(http.MethodPost, "/mcp", initBody, "Mcp-Session-Id", admin)
	own := resp.Header.Get("Mcp-Session-Id")
	mustf(t, resp.StatusCode == http.StatusOK && own != "" && own != admin, "initialize with another's id: %s %s (id %q)", resp.Status, body, own)
	works("the restricted token", bot, own)

	// The legacy SSE face: /messages?sessionId= of another caller's stream.
	endpoint, _, closer := h.openSSE(t, "Authorization", "Bearer tok-ops")
	defer closer.Close()
	notFound("a restricted token on an admin's SSE session", bot, http.MethodPost, endpoint, ping)
	notFound("an anonymous caller on an admin's SSE session", anonA, http.MethodPost, endpoint, ping)
	notFound("an unknown SSE session", ops, http.MethodPost, "/messages?sessionId=nobody", ping)
	resp, body = ops.do(http.MethodPost, endpoint, ping)
	mustf(t, resp.StatusCode == http.StatusAccepted, "the admin on its SSE session: %s %s", resp.Status, body)
}

// TestFeedsAreScopedByAddress (item 7): an anonymous caller sees its own
// calls only, on /api/mcp/calls and /api/events, not those of another
// anonymous address.
func TestFeedsAreScopedByAddress(t *testing.T) {
	needSecondLoopback(t)
	a := newFakeUpstream(t, "alpha")
	anonymous := autonomy.Full
	auth := callers.NewAuth([]callers.TokenCaller{{Name: "ops", Token: "tok-ops", Ceiling: autonomy.Full, Admin: true}}, &anonymous, nil)
	h := newLimitedHub(t, hubOpts{Auth: auth}, []config.ServerSpec{a.spec()}...)
	h.waitConnected("alpha")
	anonA, anonB, ops := as(t, h, "127.0.0.1", ""), as(t, h, "127.0.0.2", ""), as(t, h, "127.0.0.1", "tok-ops")

	streamA, streamB := anonA.stream("/api/events"), anonB.stream("/api/events")
	mustf(t, streamA.StatusCode == http.StatusOK && streamB.StatusCode == http.StatusOK, "event streams: %s, %s", streamA.Status, streamB.Status)
	eventsA, eventsB := readEvents(streamA.Body), readEvents(streamB.Body)
	nextEvent(t, eventsA, "catalog")
	nextEvent(t, eventsB, "catalog")

	callTool := func(c *callerClient, tool string) {
		t.Helper()
		resp, body := c.do(http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+tool+`","arguments":{}}}`)
		mustf(t, resp.StatusCode == http.StatusOK && strings.Contains(body, `"result"`), "%s: %s %s", tool, resp.Status, body)
	}
	tools := func(ev sseEvent) string {
		var c feedCall
		if err := json.Unmarshal([]byte(ev.data), &c); err != nil {
			t.Fatalf("call event %q: %v", ev.data, err)
		}
		return c.Tool
	}
	callTool(anonA, "echo")
	callTool(anonB, "whoami_alpha")
	mustf(t, tools(nextEvent(t, eventsA, "call")) == "echo", "A's stream: its own call first")
	got := tools(nextEvent(t, eventsB, "call"))
	mustf(t, got == "whoami_alpha", "B's stream shows %s, a call of another anonymous address", got)

	listed := func(c *callerClient) []string {
		t.Helper()
		resp, body := c.do(http.MethodGet, "/api/mcp/calls", "")
		var out struct{ Calls []feedCall }
		if err := json.Unmarshal([]byte(body), &out); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /api/mcp/calls: %s %s", resp.Status, body)
		}
		var names []string
		for _, c := range out.Calls {
			names = append(names, c.Tool)
		}
		return names
	}
	for _, tc := range []struct {
		name string
		c    *callerClient
		want string
	}{
		{"127.0.0.1", anonA, "echo"},
		{"127.0.0.2", anonB, "whoami_alpha"},
		{"the admin", ops, "echo,whoami_alpha"},
	} {
		if got := strings.Join(listed(tc.c), ","); got != tc.want {
			t.Errorf("/api/mcp/calls of %s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestEventStreamsKeepRoomForAdmins (item 7): a restricted caller that
// opens as many event streams as it can locks neither an admin nor another
// caller out of the console.
func TestEventStreamsKeepRoomForAdmins(t *testing.T) {
	needSecondLoopback(t)
	anonymous := autonomy.Restricted
	auth := callers.NewAuth([]callers.TokenCaller{
		{Name: "ops", Token: "tok-ops", Ceiling: autonomy.Full, Admin: true},
		{Name: "bot", Token: "tok-bot", Ceiling: autonomy.Restricted},
	}, &anonymous, nil)
	h := newLimitedHub(t, hubOpts{Auth: auth})
	bot := as(t, h, "127.0.0.1", "tok-bot")
	opened := 0
	for ; opened <= 64; opened++ { // 64: the cap of all event streams (callfeed)
		if resp := bot.stream("/api/events"); resp.StatusCode != http.StatusOK {
			mustf(t, resp.Header.Get("Retry-After") != "" && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable),
				"the restricted caller's refusal: %s without Retry-After", resp.Status)
			break
		}
	}
	t.Logf("the restricted caller opened %d event streams", opened)
	for name, c := range map[string]*callerClient{"the admin": as(t, h, "127.0.0.1", "tok-ops"), "an anonymous caller": as(t, h, "127.0.0.2", "")} {
		resp := c.stream("/api/events")
		mustf(t, resp.StatusCode == http.StatusOK, "%s after the restricted caller opened %d event streams: %s", name, opened, resp.Status)
	}
}
