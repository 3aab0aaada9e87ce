package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/ratelimit"
)

// limitReply is a tools/call answer as a rate-limited caller reads it.
type limitReply struct {
	Result *struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    struct {
			RetryAfterMs int64  `json:"retryAfterMs"`
			Limit        string `json:"limit"`
			Kind         string `json:"kind"`
		} `json:"data"`
	} `json:"error"`
}

func (r limitReply) ok() bool { return r.Result != nil && !r.Result.IsError && r.Error == nil }

func (r limitReply) refused() bool { return r.Error != nil && r.Error.Code == jsonrpc.CodeServerBusy }

func (r limitReply) String() string { b, _ := json.Marshal(r); return string(b) }

// callClient posts plain tools/calls to /mcp the way Purko's executor does:
// the hub's fast path.
type callClient struct {
	t      *testing.T
	url    string
	token  string
	client *http.Client
}

func (h *testHub) caller(t *testing.T, token string) *callClient {
	return &callClient{t: t, url: h.url("/mcp"), token: token, client: &http.Client{
		Timeout:   20 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: 64},
	}}
}

// from makes the caller's connections come from the loopback address ip.
func (c *callClient) from(ip string) *callClient {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	c.client.Transport = &http.Transport{DialContext: d.DialContext}
	return c
}

func (c *callClient) call(tool string, args map[string]any) limitReply {
	c.t.Helper()
	r, err := c.try(tool, args)
	if err != nil {
		c.t.Fatal(err)
	}
	return r
}

// try is call for goroutines other than the test's.
func (c *callClient) try(tool string, args map[string]any) (limitReply, error) {
	params, _ := json.Marshal(map[string]any{"name": tool, "arguments": args})
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":` + string(params) + `}`
	req, _ := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return limitReply{}, fmt.Errorf("tools/call %s: %w", tool, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return limitReply{}, fmt.Errorf("tools/call %s: read: %w", tool, err)
	}
	var r limitReply
	if err := json.Unmarshal(raw, &r); err != nil || (r.Result == nil && r.Error == nil) {
		return r, fmt.Errorf("tools/call %s: %s %q is no JSON-RPC answer", tool, resp.Status, raw)
	}
	return r, nil
}

// limitedTokens are token callers, each with the limits given (nil: the
// hub's perCaller).
func limitedTokens(limits map[string]*ratelimit.Limits) *callers.Auth {
	var ts []callers.TokenCaller
	for name, l := range limits {
		ts = append(ts, callers.TokenCaller{Name: name, Token: "tok-" + name, Ceiling: autonomy.Full, Limits: l})
	}
	return callers.NewAuth(ts, nil, nil)
}

func metricsText(t *testing.T, h *testHub) string {
	t.Helper()
	_, body := h.send(t, http.MethodGet, "/metrics", nil)
	return body
}

// TestRateLimitSharedByPeers: with replicas.peers naming three replicas
// (this one included), the hub counts 3 (mcphub_replicas) and applies a
// third of a caller's limit, and the refusal names the configured value,
// the replicas and the share.
func TestRateLimitSharedByPeers(t *testing.T) {
	a := newFakeUpstream(t, "alpha")
	ci := ratelimit.Limits{Rate: 3, Burst: 3, Where: "auth.tokens[ci].limits"}
	h := newLimitedHub(t, hubOpts{
		Auth:  limitedTokens(map[string]*ratelimit.Limits{"ci": &ci}),
		Peers: []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"},
	}, a.spec())
	h.waitConnected("alpha")
	waitFor(t, "three replicas counted", func() bool { return strings.Contains(metricsText(t, h), "\nmcphub_replicas 3\n") })

	c := h.caller(t, "tok-ci")
	r := c.call("echo", map[string]any{"text": "x"})
	mustf(t, r.ok(), "first call: %v", r)
	r = c.call("echo", map[string]any{"text": "x"})
	mustf(t, r.refused(), "second call, over this replica's burst of ceil(3/3): %v, want a refusal", r)
	mustf(t, strings.Contains(r.Error.Message, `caller "ci" is over its limit of 3 calls/s across 3 replicas, 1/s here (auth.tokens[ci].limits.rate): retry after`),
		"message %q", r.Error.Message)
}

// TestCallerRateLimit: a caller over its rate gets a JSON-RPC -32000 with
// retryAfterMs, naming its limit and setting; unknown tool names count too;
// another caller goes on; the refusal is counted.
func TestCallerRateLimit(t *testing.T) {
	a := newFakeUpstream(t, "alpha")
	ci := ratelimit.Limits{Rate: 1, Burst: 2, Where: "auth.tokens[ci].limits"}
	h := newLimitedHub(t, hubOpts{
		Auth:      limitedTokens(map[string]*ratelimit.Limits{"ci": &ci, "other": nil}),
		PerCaller: ratelimit.Limits{Rate: 1000, Burst: 1000, Where: "limits.perCaller"},
	}, a.spec())
	h.waitConnected("alpha")

	c := h.caller(t, "tok-ci")
	for i := range 2 {
		r := c.call("echo", map[string]any{"text": "x"})
		mustf(t, r.ok(), "call %d under the burst: %v", i, r)
	}
	r := c.call("echo", map[string]any{"text": "x"})
	mustf(t, r.refused(), "third call at 1/s after a burst of 2: %v, want a -32000 refusal", r)
	e := r.Error
	mustf(t, strings.Contains(e.Message, `rate limit: caller "ci" is over its limit of 1 calls/s (auth.tokens[ci].limits.rate): retry after`),
		"message %q", e.Message)
	mustf(t, e.Data.Limit == "caller" && e.Data.Kind == "rate" && e.Data.RetryAfterMs > 0 && e.Data.RetryAfterMs <= 1000,
		"data %+v, want caller, rate and 0 < retryAfterMs <= 1000", e.Data)
	// A name no server offers is limited like any other: the limit comes
	// before the lookup.
	r = c.call("no_such_tool", nil)
	mustf(t, r.refused() && r.Error.Data.Kind == "rate", "unknown tool over the rate: %v", r)
	mustf(t, a.calls.Load() == 2, "upstream saw %d calls, want the 2 admitted", a.calls.Load())

	r = h.caller(t, "tok-other").call("echo", map[string]any{"text": "y"})
	mustf(t, r.ok(), "another caller while ci is limited: %v", r)

	m := metricsText(t, h)
	mustf(t, strings.Contains(m, `mcphub_rate_limited_total{kind="rate",limit="caller",server=""} 2`), "refusals not counted:\n%s", grepLines(m, "rate_limited"))
	mustf(t, strings.Contains(m, `mcphub_tool_calls_total{outcome="rate_limited",server="",tool=""} 2`), "calls not counted as rate_limited:\n%s", grepLines(m, "rate_limited"))
}

// TestCallerRateLimitOverWebSocket: the refusal reaches a WebSocket caller
// as the same JSON-RPC error, code and data included (mcp-go alone would
// make it -32603 without data; reply.go puts it back).
func TestCallerRateLimitOverWebSocket(t *testing.T) {
	a := newFakeUpstream(t, "alpha")
	h := newLimitedHub(t, hubOpts{
		Auth:      limitedTokens(map[string]*ratelimit.Limits{"ws": nil}),
		PerCaller: ratelimit.Limits{Rate: 0.5, Burst: 1, Where: "limits.perCaller"},
	}, a.spec())
	h.waitConnected("alpha")
	conn, resp, err := websocket.DefaultDialer.Dial("ws://"+h.addr+"/ws", http.Header{"Authorization": {"Bearer tok-ws"}})
	if err != nil {
		t.Fatalf("dial /ws: %v (%v)", err, resp)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	roundTrip := func(id int, msg string) limitReply {
		t.Helper()
		if err := conn.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		for {
			_, data, err := conn.ReadMessage()
			if err != nil {
				t.Fatalf("read /ws: %v", err)
			}
			var env struct {
				ID *int `json:"id"`
			}
			if json.Unmarshal(data, &env) == nil && env.ID != nil && *env.ID == id {
				var r limitReply
				if err := json.Unmarshal(data, &r); err != nil {
					t.Fatal(err)
				}
				return r
			}
		}
	}
	roundTrip(1, initBody)
	callMsg := func(id int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"w"}}}`, id)
	}
	r := roundTrip(2, callMsg(2))
	mustf(t, r.ok(), "first call over /ws: %v", r)
	r = roundTrip(3, callMsg(3))
	mustf(t, r.refused(), "second call over /ws at 0.5/s: %v, want -32000", r)
	mustf(t, strings.Contains(r.Error.Message, `caller "ws" is over its limit of 0.5 calls/s (limits.perCaller.rate)`), "message %q", r.Error.Message)
	mustf(t, r.Error.Data.Limit == "caller" && r.Error.Data.Kind == "rate" && r.Error.Data.RetryAfterMs > 1000 && r.Error.Data.RetryAfterMs <= 2000,
		"data %+v, want caller, rate, retryAfterMs in (1000, 2000]", r.Error.Data)
	mustf(t, a.calls.Load() == 1, "upstream saw %d calls, want 1", a.calls.Load())
}

// waitBlocked waits until n calls of u's block tool run: n calls in
// flight through the hub.
func (h *testHub) waitBlocked(u *fakeUpstream, n int64) {
	h.t.Helper()
	waitFor(h.t, fmt.Sprintf("%d calls in flight", n), func() bool { return u.blocked.Load() == n })
}

// TestCallerInFlightBound: a caller's calls beyond maxInFlight are refused
// at once while its slow calls run, and admitted again when they return.
func TestCallerInFlightBound(t *testing.T) {
	a := newFakeUpstream(t, "alpha")
	h := newLimitedHub(t, hubOpts{
		Auth:      limitedTokens(map[string]*ratelimit.Limits{"ci": nil, "other": nil}),
		PerCaller: ratelimit.Limits{MaxInFlight: 2, Where: "limits.perCaller"},
	}, a.spec())
	h.waitConnected("alpha")
	c := h.caller(t, "tok-ci")
	var wg sync.WaitGroup
	results := make(chan limitReply, 2)
	for range 2 {
		wg.Go(func() {
			r, err := c.try("block_alpha", nil)
			if err != nil {
				t.Error(err)
			}
			results <- r
		})
	}
	h.waitBlocked(a, 2)
	start := time.Now()
	r := c.call("echo", map[string]any{"text": "x"})
	mustf(t, r.refused() && r.Error.Data.Kind == "inFlight" && r.Error.Data.RetryAfterMs == 1000, "third call with 2 in flight: %v", r)
	mustf(t, time.Since(start) < 2*time.Second, "the refusal waited %s: it must come at once", time.Since(start))
	mustf(t, strings.Contains(r.Error.Message, `caller "ci" has 2 calls in flight, its limit (limits.perCaller.maxInFlight): retry after 1s`), "message %q", r.Error.Message)
	r = h.caller(t, "tok-other").call("echo", map[string]any{"text": "y"})
	mustf(t, r.ok(), "another caller while ci is at its bound: %v", r)

	close(a.release)
	wg.Wait()
	close(results)
	for r := range results {
		mustf(t, r.ok(), "blocked call: %v", r)
	}
	r = c.call("echo", map[string]any{"text": "x"})
	mustf(t, r.ok(), "call after the slow ones returned: %v", r)
}

// TestUpstreamInFlightBound: a server's own maxInFlight bounds every
// caller's calls to it together; other servers are not affected; a denied
// call takes no slot.
func TestUpstreamInFlightBound(t *testing.T) {
	a, b := newFakeUpstream(t, "alpha"), newFakeUpstream(t, "beta")
	spec := a.spec()
	spec.Limits = &config.Limits{MaxInFlight: 1}
	h := newLimitedHub(t, hubOpts{Auth: callers.NewAuth([]callers.TokenCaller{
		{Name: "one", Token: "tok-one", Ceiling: autonomy.Full},
		{Name: "two", Token: "tok-two", Ceiling: autonomy.Full},
		{Name: "manual", Token: "tok-manual", Ceiling: autonomy.Manual},
	}, nil, nil)}, spec, b.spec())
	h.waitConnected("alpha", "beta")
	// waitConnected waited for the catalog to be published, which applies
	// alpha's limits first (publish).

	one := h.caller(t, "tok-one")
	done := make(chan limitReply, 1)
	go func() {
		r, err := one.try("block_alpha", nil)
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	h.waitBlocked(a, 1)
	two := h.caller(t, "tok-two")
	r := two.call("alpha__echo", map[string]any{"text": "x"})
	mustf(t, r.refused() && r.Error.Data.Limit == "upstream" && r.Error.Data.Kind == "inFlight", "second call to alpha: %v", r)
	mustf(t, strings.Contains(r.Error.Message, `upstream "alpha" has 1 calls in flight, its limit (servers[alpha].limits.maxInFlight): retry after 1s`), "message %q", r.Error.Message)
	r = two.call("whoami_beta", nil)
	mustf(t, r.ok(), "beta while alpha is at its bound: %v", r)
	// A call the autonomy level denies is answered as a denial, not
	// counted against alpha: it never reaches it.
	r = h.caller(t, "tok-manual").call("alpha__echo", map[string]any{"text": "x"})
	mustf(t, r.Result != nil && r.Result.IsError && strings.HasPrefix(r.Result.Content[0].Text, "BLOCKED:"), "denied call: %v", r)

	close(a.release)
	mustf(t, (<-done).ok(), "the blocked call failed")
	r = two.call("alpha__echo", map[string]any{"text": "x"})
	mustf(t, r.ok(), "alpha after the slot came back: %v", r)
	m := metricsText(t, h)
	mustf(t, strings.Contains(m, `mcphub_rate_limited_total{kind="inFlight",limit="upstream",server="alpha"} 1`), "refusal not counted:\n%s", grepLines(m, "rate_limited"))
}

// TestAnonymousCallersLimitedByAddress (issue 41): anonymous callers count
// by network: 127.0.0.2 shares the bucket of 127.0.0.1 (one /24), and
// 127.0.1.1 has its own.
func TestAnonymousCallersLimitedByAddress(t *testing.T) {
	needSecondLoopback(t)
	a := newFakeUpstream(t, "alpha")
	h := newLimitedHub(t, hubOpts{
		Auth:      callers.AnonymousOnly(autonomy.Full),
		PerCaller: ratelimit.Limits{Rate: 0.1, Burst: 1, Where: "limits.perCaller"},
	}, a.spec())
	h.waitConnected("alpha")
	first := h.caller(t, "").from("127.0.0.1")
	mustf(t, first.call("echo", nil).ok(), "first anonymous call")
	r := first.call("echo", nil)
	mustf(t, r.refused() && strings.Contains(r.Error.Message, `caller "anonymous@127.0.0.0/24"`), "second call from 127.0.0.1: %v", r)
	r = h.caller(t, "").from("127.0.0.2").call("echo", nil)
	mustf(t, r.refused(), "127.0.0.2, in the /24 of 127.0.0.1, has a bucket of its own: %v", r)
	other := h.caller(t, "").from("127.0.1.1")
	r = other.call("echo", nil)
	mustf(t, r.ok(), "first call from 127.0.1.1 while 127.0.0.0/24 is limited: %v", r)
	mustf(t, other.call("echo", nil).refused(), "127.0.1.1 has no limit of its own")
}

// TestNoLimitsConfiguredCostNothing: without limits calls are never
// refused however many run (that the call path then holds no limiter is
// internal/pipeline's TestNoLimitsNoLimiters).
func TestNoLimitsConfiguredCostNothing(t *testing.T) {
	a := newFakeUpstream(t, "alpha")
	h := newLimitedHub(t, hubOpts{Auth: tokens("a")}, a.spec())
	h.waitConnected("alpha")
	c := h.caller(t, "tok-a")
	for range 50 {
		mustf(t, c.call("echo", nil).ok(), "call without limits refused")
	}
}

// TestPoliteCallerKeepsItsP99: a greedy caller hammering with many workers
// is refused, while a polite caller (one worker, far under its limits)
// against the same upstream gets every call through, at a p99 close to
// the one it has alone. Per-caller maxInFlight (4) below the upstream's (6)
// is what keeps slots for the polite one: without it the greedy workers
// would hold all six and the polite caller would be refused.
//
// The polite caller's calls alone and under load alternate in short
// rounds, so both see the same machine (its two cores are shared).
func TestPoliteCallerKeepsItsP99(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	a := newFakeUpstream(t, "alpha")
	h := newLimitedHub(t, hubOpts{
		Auth:        limitedTokens(map[string]*ratelimit.Limits{"greedy": nil, "polite": nil}),
		PerCaller:   ratelimit.Limits{Rate: 100, Burst: 20, MaxInFlight: 4, Where: "limits.perCaller"},
		PerUpstream: ratelimit.Limits{MaxInFlight: 6, Where: "limits.perUpstream"},
	}, a.spec())
	h.waitConnected("alpha")
	slow := map[string]any{"ms": 10}
	polite := h.caller(t, "tok-polite")
	for range 10 { // warm the connection
		polite.call("slow_alpha", slow)
	}

	greedy := h.caller(t, "tok-greedy")
	ctx, stop := context.WithCancel(context.Background())
	var loaded atomic.Bool
	var admitted, refused atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for ctx.Err() == nil {
				if !loaded.Load() {
					time.Sleep(2 * time.Millisecond)
					continue
				}
				r, err := greedy.try("slow_alpha", slow)
				switch {
				case err != nil:
					t.Error(err)
					return
				case r.refused():
					refused.Add(1)
					// Ignores retryAfterMs, as greedy callers do; the pause
					// only keeps the test's own CPU use (client, hub and
					// upstream share two cores) from being the load measured.
					time.Sleep(20 * time.Millisecond)
				case r.ok():
					admitted.Add(1)
				}
			}
		})
	}
	defer func() { stop(); wg.Wait() }()

	var alone, underLoad []time.Duration
	for round := range 16 { // 200 calls alone, 200 under load
		loaded.Store(round%2 == 1)
		for i := range 25 {
			start := time.Now()
			r := polite.call("slow_alpha", slow)
			d := time.Since(start)
			mustf(t, r.ok(), "polite call %d of round %d: %v", i, round, r)
			if round%2 == 1 {
				underLoad = append(underLoad, d)
			} else {
				alone = append(alone, d)
			}
			time.Sleep(5 * time.Millisecond) // under 70 calls/s, below its rate
		}
	}
	stop()
	wg.Wait()
	p50Alone, p99Alone := percentiles(alone)
	p50Load, p99Load := percentiles(underLoad)
	t.Logf("polite alone p50 %s p99 %s; under load p50 %s p99 %s; greedy admitted %d, refused %d",
		p50Alone, p99Alone, p50Load, p99Load, admitted.Load(), refused.Load())
	mustf(t, refused.Load() > 0 && admitted.Load() > 0, "greedy admitted %d, refused %d: want both", admitted.Load(), refused.Load())
	slack := 20 * time.Millisecond
	if raceDetector {
		slack = 60 * time.Millisecond
	}
	mustf(t, p99Load <= 3*p99Alone+slack, "polite p99 %s under load, %s alone: more than 3x + %s", p99Load, p99Alone, slack)
}

// percentiles returns the p50 and p99 of d (sorted in place).
func percentiles(d []time.Duration) (p50, p99 time.Duration) {
	slices.Sort(d)
	return d[len(d)/2], d[len(d)*99/100]
}

// TestCallerRateLimitOverSSE: where mcp-go writes the answer (/sse) the
// refusal is the same -32000 error as on /mcp, with the hub's message and
// retry hint, not mcp-go's -32603.
func TestCallerRateLimitOverSSE(t *testing.T) {
	a := newFakeUpstream(t, "alpha")
	h := newLimitedHub(t, hubOpts{PerCaller: ratelimit.Limits{Rate: 0.5, Burst: 1, Where: "limits.perCaller"}}, a.spec())
	h.waitConnected("alpha")
	c := h.dialSSE(false).c
	ctx := ctx10(t)
	req := mcp.CallToolRequest{}
	req.Params.Name = "echo"
	if _, err := c.CallTool(ctx, req); err != nil {
		t.Fatalf("first call over /sse: %v", err)
	}
	_, err := c.CallTool(ctx, req)
	mustf(t, err != nil && strings.Contains(err.Error(), `rate limit: caller "anonymous@127.0.0.0/24" is over its limit of 0.5 calls/s (limits.perCaller.rate): retry after`) &&
		!errors.Is(err, mcp.ErrInternalError) && !strings.Contains(err.Error(), "mcp-hub answer"),
		"second call over /sse: %v, want the refusal", err)
	mustf(t, a.calls.Load() == 1, "upstream saw %d calls, want 1", a.calls.Load())
}
