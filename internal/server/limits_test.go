package server

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
)

// rpcError reads the JSON-RPC error of a refusal.
func rpcError(t *testing.T, body string) (id json.RawMessage, code int, msg string) {
	t.Helper()
	var r struct {
		ID    json.RawMessage `json:"id"`
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil || r.Error.Message == "" {
		t.Fatalf("not a JSON-RPC error: %q", body)
	}
	return r.ID, r.Error.Code, r.Error.Message
}

func tokens(names ...string) *callers.Auth {
	var ts []callers.TokenCaller
	for _, n := range names {
		ts = append(ts, callers.TokenCaller{Name: n, Token: "tok-" + n, Ceiling: autonomy.Full})
	}
	return callers.NewAuth(ts, nil, nil)
}

// TestSessionCaps: every face that registers a session counts against its
// caller's cap and the hub's; a refusal is a 429 or 503 with a JSON-RPC
// error naming the limit; a session that ends gives its slot back.
func TestSessionCaps(t *testing.T) {
	h := newLimitedHub(t, hubOpts{Auth: tokens("a", "b", "c", "d"), MaxSessions: 5, MaxSessionsPerCaller: 2})
	lim := h.srv.edge
	as := func(c string) []string { return []string{"Authorization", "Bearer tok-" + c} }
	initialize := func(c string) (*http.Response, string) {
		return h.send(t, http.MethodPost, "/mcp", strings.NewReader(initBody), as(c)...)
	}
	dialWS := func(c string) (*websocket.Conn, *http.Response, error) {
		return websocket.DefaultDialer.Dial("ws://"+h.addr+"/ws", http.Header{"Authorization": {"Bearer tok-" + c}})
	}

	// a: two Streamable HTTP sessions, then nothing more on any face.
	var aSessions []string
	for range 2 {
		resp, body := initialize("a")
		mustf(t, resp.StatusCode == http.StatusOK && resp.Header.Get("Mcp-Session-Id") != "", "initialize under the cap: %s %s", resp.Status, body)
		aSessions = append(aSessions, resp.Header.Get("Mcp-Session-Id"))
	}
	resp, body := initialize("a")
	id, code, msg := rpcError(t, body)
	mustf(t, resp.StatusCode == http.StatusTooManyRequests && string(id) == "1" && code == jsonrpc.CodeServerBusy &&
		strings.Contains(msg, `"a"`) && strings.Contains(msg, "http.maxSessionsPerCaller"),
		"third initialize of a: %s %s", resp.Status, body)
	mustf(t, resp.Header.Get("Retry-After") != "", "429 without Retry-After")
	resp, body = h.send(t, http.MethodGet, "/sse", nil, as("a")...)
	mustf(t, resp.StatusCode == http.StatusTooManyRequests, "GET /sse of a at its cap: %s %s", resp.Status, body)
	_, resp, err := dialWS("a")
	mustf(t, err != nil && resp != nil && resp.StatusCode == http.StatusTooManyRequests, "/ws of a at its cap: %v", err)
	// Requests on a's sessions go on.
	resp, body = h.send(t, http.MethodPost, "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`),
		append(as("a"), "Mcp-Session-Id", aSessions[0])...)
	mustf(t, resp.StatusCode == http.StatusOK && strings.Contains(body, `"tools"`), "tools/list on a's session: %s %s", resp.Status, body)

	// b: an SSE stream and a WebSocket connection.
	_, _, sse := h.openSSE(t, as("b")...)
	defer sse.Close()
	ws, _, err := dialWS("b")
	if err != nil {
		t.Fatalf("/ws of b: %v", err)
	}
	waitFor(t, "b's two sessions", func() bool { _, n := lim.SessionCount("b"); return n == 2 })
	resp, _ = initialize("b")
	mustf(t, resp.StatusCode == http.StatusTooManyRequests, "initialize of b at its cap: %s", resp.Status)

	// c takes the last slot; d finds the hub full.
	resp, _ = initialize("c")
	mustf(t, resp.StatusCode == http.StatusOK, "initialize of c: %s", resp.Status)
	resp, body = initialize("d")
	_, _, msg = rpcError(t, body)
	mustf(t, resp.StatusCode == http.StatusServiceUnavailable && strings.Contains(msg, "5 live MCP sessions") && strings.Contains(msg, "http.maxSessions"),
		"initialize of d with the hub full: %s %s", resp.Status, body)
	total, _ := lim.SessionCount("")
	mustf(t, total == 5, "live sessions %d, want 5", total)

	// A closed WebSocket and a DELETE give their slots back.
	ws.Close()
	waitFor(t, "b's WebSocket session gone", func() bool { _, n := lim.SessionCount("b"); return n == 1 })
	resp, _ = initialize("d")
	mustf(t, resp.StatusCode == http.StatusOK, "initialize of d after a WebSocket closed: %s", resp.Status)
	resp, _ = h.send(t, http.MethodDelete, "/mcp", nil, append(as("a"), "Mcp-Session-Id", aSessions[0])...)
	mustf(t, resp.StatusCode == http.StatusOK, "DELETE: %s", resp.Status)
	resp, body = initialize("a")
	mustf(t, resp.StatusCode == http.StatusOK, "initialize of a after DELETE: %s %s", resp.Status, body)
	total, _ = lim.SessionCount("")
	mustf(t, total == 5, "live sessions %d, want 5", total)
}

// TestIdleSessionsSwept: sessions nobody uses are swept after
// SessionIdleTimeout, which frees their slots; a session with an open GET
// stream is not swept (the stream is pinged).
func TestIdleSessionsSwept(t *testing.T) {
	h := newLimitedHub(t, hubOpts{SessionIdleTimeout: time.Second, MaxSessionsPerCaller: 3})
	lim := h.srv.edge
	kept := h.initializeSession(t)
	req, _ := http.NewRequest(http.MethodGet, h.url("/mcp"), nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", kept)
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: %v %v", resp, err)
	}
	defer resp.Body.Close()
	pings := make(chan struct{}, 16)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if strings.Contains(sc.Text(), `"method":"ping"`) {
				select {
				case pings <- struct{}{}:
				default:
				}
			}
		}
	}()
	h.initializeSession(t)
	h.initializeSession(t)
	r, body := h.send(t, http.MethodPost, "/mcp", strings.NewReader(initBody))
	mustf(t, r.StatusCode == http.StatusTooManyRequests, "fourth session: %s %s", r.Status, body)

	waitFor(t, "abandoned sessions swept", func() bool { _, n := lim.SessionCount("anonymous@127.0.0.1"); return n == 1 })
	time.Sleep(2 * time.Second) // two more sweeps
	_, live := lim.SessionOwner(kept)
	mustf(t, live, "the session with an open stream was swept")
	select {
	case <-pings:
	default:
		t.Fatal("no ping on the open stream")
	}
	r, body = h.send(t, http.MethodPost, "/mcp", strings.NewReader(initBody))
	mustf(t, r.StatusCode == http.StatusOK, "initialize after the sweep: %s %s", r.Status, body)
}

// TestStreamsOutliveReadTimeout: ReadTimeout bounds reading a request, not
// the life of an SSE stream, a GET /mcp stream or a WebSocket session.
func TestStreamsOutliveReadTimeout(t *testing.T) {
	const rt = time.Second
	h := newLimitedHub(t, hubOpts{ReadTimeout: rt, ReadHeaderTimeout: rt, SessionIdleTimeout: 3 * time.Second})
	t.Run("sse", func(t *testing.T) {
		t.Parallel()
		endpoint, stream, closer := h.openSSE(t)
		defer closer.Close()
		time.Sleep(2 * rt)
		resp, body := h.send(t, http.MethodPost, endpoint, strings.NewReader(`{"jsonrpc":"2.0","id":42,"method":"ping"}`))
		mustf(t, resp.StatusCode == http.StatusAccepted, "POST /messages: %s %s", resp.Status, body)
		for {
			line, err := stream.ReadString('\n')
			if err != nil {
				t.Fatalf("SSE stream ended after %s: %v", 2*rt, err)
			}
			if strings.Contains(line, `"id":42`) {
				return
			}
		}
	})
	t.Run("websocket", func(t *testing.T) {
		t.Parallel()
		ws, _, err := websocket.DefaultDialer.Dial("ws://"+h.addr+"/ws", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ws.Close()
		time.Sleep(2 * rt)
		mustf(t, ws.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","id":42,"method":"ping"}`)) == nil, "write")
		_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, msg, err := ws.ReadMessage()
		mustf(t, err == nil && strings.Contains(string(msg), `"id":42`), "ping after %s: %s %v", 2*rt, msg, err)
	})
	t.Run("get stream", func(t *testing.T) {
		t.Parallel()
		sid := h.initializeSession(t)
		req, _ := http.NewRequest(http.MethodGet, h.url("/mcp"), nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		start := time.Now()
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if strings.Contains(sc.Text(), `"method":"ping"`) && time.Since(start) > 2*rt {
				return // heartbeats still arrive past ReadTimeout
			}
		}
		t.Fatalf("GET stream ended after %s: %v", time.Since(start), sc.Err())
	})
}

// vmRSS is this process's resident set in KiB.
func vmRSS() int {
	b, _ := os.ReadFile("/proc/self/status")
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return n
		}
	}
	return 0
}

// TestFloodsStayBounded: slowloris connections, slow bodies and abandoned
// initialize calls from one caller neither grow the sessions past the caps
// nor keep another caller from being served quickly. The counts are small
// to keep the test short; 10,000 slow connections and 40,000 initialize
// calls were measured by hand against the built binary.
func TestFloodsStayBounded(t *testing.T) {
	const (
		slowConns   = 1000
		initializes = 3000
		perCaller   = 50
		maxSessions = 100
		headerWait  = 15 * time.Second // generous: the flood itself must fit in it on a loaded CI machine under -race
		bodyWait    = 17 * time.Second
	)
	up := newFakeUpstream(t, "alpha")
	anonymous := autonomy.Full
	auth := callers.NewAuth([]callers.TokenCaller{{Name: "ops", Token: "tok-ops", Ceiling: autonomy.Full}}, &anonymous, nil)
	// One anonymous address floods: its own cap is what this measures, not
	// the anonymous callers' share (internal/edge tests that).
	h := newLimitedHub(t, hubOpts{Auth: auth, MaxSessions: maxSessions, MaxSessionsPerCaller: perCaller, AnonymousShare: new(100),
		ReadHeaderTimeout: headerWait, ReadTimeout: bodyWait}, up.spec())
	h.waitConnected("alpha")
	rssBefore := vmRSS()

	// Slowloris: a header that never ends.
	start := time.Now()
	conns := make([]net.Conn, 0, slowConns)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range slowConns {
		c, err := net.Dial("tcp", h.addr)
		if err != nil {
			t.Fatalf("slow connection %d: %v", len(conns), err)
		}
		conns = append(conns, c)
		_, _ = io.WriteString(c, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
	}
	// A slow body: headers done, body never.
	slowBody, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slowBody.Close()
	_, _ = io.WriteString(slowBody, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\"")
	slowBodyStart := time.Now()

	// Abandoned initialize calls: never used again, never deleted.
	var admitted, refused atomic.Int64
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	defer client.CloseIdleConnections()
	var wg sync.WaitGroup
	next := make(chan struct{})
	for range 16 {
		wg.Go(func() {
			for range next {
				req, _ := http.NewRequest(http.MethodPost, h.url("/mcp"), strings.NewReader(initBody))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				resp, err := client.Do(req)
				if err != nil {
					t.Errorf("initialize: %v", err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				switch resp.StatusCode {
				case http.StatusOK:
					admitted.Add(1)
				case http.StatusTooManyRequests:
					refused.Add(1)
				default:
					t.Errorf("initialize: %s", resp.Status)
				}
			}
		})
	}
	for range initializes {
		next <- struct{}{}
	}
	close(next)
	wg.Wait()
	mustf(t, admitted.Load() == perCaller && refused.Load() == initializes-perCaller,
		"abandoned initializes: %d admitted, %d refused; want %d admitted", admitted.Load(), refused.Load(), perCaller)
	total, anon := h.srv.edge.SessionCount("anonymous@127.0.0.1")
	mustf(t, total <= maxSessions && anon == perCaller, "live sessions %d (anonymous %d), caps %d and %d", total, anon, maxSessions, perCaller)

	// Another caller is served, quickly, while the slow connections hang.
	served := time.Now()
	mustf(t, served.Sub(start) < headerWait, "the flood outlasted the header timeout (%s): slow connections are gone already", served.Sub(start))
	ops := &executor{t: t, url: h.url("/mcp"), token: "tok-ops"}
	names := ops.tools()
	took := time.Since(served)
	mustf(t, contains(names, "echo"), "tools/list of ops: %v", names)
	mustf(t, took < 2*time.Second, "ops waited %s for initialize + tools/list", took)

	// The server dropped every slow connection once its time was up.
	for i, c := range conns {
		_ = c.SetReadDeadline(start.Add(headerWait + 10*time.Second))
		if _, err := c.Read(make([]byte, 512)); err == nil || isTimeout(err) {
			t.Fatalf("slow connection %d still open after %s: %v", i, time.Since(start), err)
		}
	}
	closedBy := time.Since(start)
	_ = slowBody.SetReadDeadline(slowBodyStart.Add(bodyWait + 10*time.Second))
	rest, err := io.ReadAll(slowBody)
	mustf(t, !isTimeout(err) && strings.HasPrefix(string(rest), "HTTP/1.1 408"), "slow body after %s: %v %.80q", time.Since(slowBodyStart), err, rest)
	bodyClosedBy := time.Since(slowBodyStart)
	mustf(t, bodyClosedBy < bodyWait+5*time.Second, "slow body held %s", bodyClosedBy)
	t.Logf("%d slow connections closed within %s; slow body ended after %s (%.60q); RSS %d -> %d KiB",
		slowConns, closedBy.Round(time.Millisecond), bodyClosedBy.Round(time.Millisecond), rest, rssBefore, vmRSS())
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
