// Package replicas runs three hub processes behind a round-robin HTTP
// balancer with no affinity, as a plain Kubernetes Service would, and checks
// that clients of every Streamable HTTP revision are served with zero
// "session not found": a session initialized on one replica is valid on
// the others, and a client's answer to a server request reaches the replica
// that asked.
package replicas

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/hubtest"
	"github.com/purko-io/mcp-hub/test/conformance"
)

const replicas = 3

func TestReplicasBehindRoundRobin(t *testing.T) {
	upstream := conformance.EverythingServer(t, false)
	hubs, backends := startReplicas(t, upstream, "info", "")
	lb := newBalancer(t, backends)

	// Every replica converges to the same catalog from the same sources.
	var first []string
	for i, h := range hubs {
		names := toolNames(t, h)
		if i == 0 {
			first = names
			continue
		}
		if !slices.Equal(names, first) {
			t.Fatalf("replica %d lists %v, replica 0 %v", i, names, first)
		}
	}
	if len(first) == 0 {
		t.Fatal("the replicas list no tools")
	}

	t.Run("conformance suite", func(t *testing.T) {
		direct := conformance.Run(t, upstream)
		through := conformance.Run(t, lb.url)
		passed, _ := conformance.Passing(direct)
		for _, name := range passed {
			if r := through[name]; !r.Passed {
				t.Errorf("%s passes directly but fails behind the balancer:\n%s", name, r.Details)
			}
		}
		p, _ := conformance.Passing(through)
		t.Logf("passed: %d/%d directly, %d/%d behind %d replicas", len(passed), len(direct), len(p), len(through), replicas)
	})

	for _, tc := range []struct {
		name     string
		protocol string
	}{
		{"2025-11-25 session", mcp.LATEST_LEGACY_PROTOCOL_VERSION},
		{"2025-03-26 session (Purko's executor)", "2025-03-26"},
		{"2026-07-28 stateless", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := lb.spread()
			c := dial(t, lb.url, tc.protocol)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			for i := range 30 {
				req := mcp.CallToolRequest{}
				req.Params.Name = "test_simple_text"
				res, err := c.CallTool(ctx, req)
				if err != nil || res.IsError {
					t.Fatalf("call %d: %v %+v", i, err, res)
				}
				if _, err := c.ListTools(ctx, mcp.ListToolsRequest{}); err != nil {
					t.Fatalf("tools/list %d: %v", i, err)
				}
				rr := mcp.ReadResourceRequest{}
				rr.Params.URI = "test://static-text"
				if _, err := c.ReadResource(ctx, rr); err != nil {
					t.Fatalf("resources/read %d: %v", i, err)
				}
			}
			// The requests really went to every replica.
			after := lb.spread()
			for i := range after {
				if after[i] == before[i] {
					t.Fatalf("replica %d got none of the session's requests: %v -> %v", i, before, after)
				}
			}
		})
	}

	if n, first := lb.NotFound(); n != 0 {
		t.Fatalf("the balancer saw %d responses 404 (session not found): %s", n, strings.Join(first, "; "))
	}
}

// balancer is the round-robin balancer in front of the replicas, and its
// MCP endpoint.
type balancer struct {
	*hubtest.Balancer
	url string
}

func newBalancer(t *testing.T, backends []string) *balancer {
	b := hubtest.StartBalancer(t, backends)
	return &balancer{b, b.Base + "/mcp"}
}

func (b *balancer) spread() []int64 { return b.Spread() }

func dial(t *testing.T, u, protocol string) *client.Client { return dialWith(t, u, protocol, nil) }

// dialWith is dial with headers on every request.
func dialWith(t *testing.T, u, protocol string, headers map[string]string) *client.Client {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(u, transport.WithHTTPHeaders(headers),
		transport.WithHTTPBasicClient(&http.Client{Transport: bodyCheck{t, &http.Transport{DisableKeepAlives: true}}}))
	if err != nil {
		t.Fatal(err)
	}
	var opts []client.ClientOption
	if protocol != "" {
		opts = append(opts, client.WithProtocolVersion(protocol))
	}
	c := client.NewClient(tr, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// bodyCheck reads every JSON reply whole and fails the test on one that is
// not valid JSON, with its headers, so a truncated reply says where it came
// from. (Reading it first also keeps mcp-go's client, which decodes lazily
// and cancels the request right after, from racing the proxy's copy.)
type bodyCheck struct {
	t  *testing.T
	rt http.RoundTripper
}

func (b bodyCheck) RoundTrip(r *http.Request) (*http.Response, error) {
	var reqBody []byte
	if r.Body != nil {
		reqBody, _ = io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(reqBody))
	}
	resp, err := b.rt.RoundTrip(r)
	if err != nil || !strings.Contains(resp.Header.Get("Content-Type"), "json") {
		return resp, err
	}
	body, rerr := io.ReadAll(resp.Body)
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if !json.Valid(body) {
		b.t.Errorf("invalid JSON reply to %s: status %d, headers %v, read error %v, %d bytes: %q",
			reqBody, resp.StatusCode, resp.Header, rerr, len(body), body[:min(300, len(body))])
	}
	return resp, nil
}

func toolNames(t *testing.T, h *hubtest.Hub) []string {
	t.Helper()
	l, err := h.Listing("?format=names")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range l.Servers {
		tools, err := s.ToolNames()
		if err != nil {
			t.Fatalf("%s: tools are not names: %v", s.Name, err)
		}
		names = append(names, tools...)
	}
	slices.Sort(names)
	return names
}

// startReplicas starts the replicas, each with every replica as its peers
// (itself included, as a headless Service lists it), and returns them and
// their MCP URLs. With agent set, they admit the caller "agent" (token
// agent-token-1) with agent as the rest of its settings.
func startReplicas(t *testing.T, upstream, logLevel, agent string) ([]*hubtest.Hub, []string) {
	t.Helper()
	return startFleet(t, replicas, upstream, logLevel, agent)
}

// startFleet is startReplicas of n replicas; it returns once every one has
// counted the n and learned their ids (waitReplicas).
func startFleet(t *testing.T, n int, upstream, logLevel, agent string) ([]*hubtest.Hub, []string) {
	t.Helper()
	bin := hubtest.HubBinary(t)
	peers := make([]string, n)
	for i := range peers {
		peers[i] = fmt.Sprintf("127.0.0.1:%d", hubtest.FreePort(t))
	}
	cfg := replicaConfig(upstream, strings.Join(peers, ","))
	var env []string
	if agent != "" {
		cfg += fmt.Sprintf(`auth:
  tokens:
    - name: agent
      token: {env: AGENT_TOKEN}
      maxLevel: full
      %s
`, agent)
		env = []string{"AGENT_TOKEN=agent-token-1"}
	}
	hubs := make([]*hubtest.Hub, n)
	backends := make([]string, n)
	for i := range peers {
		hubs[i] = hubtest.StartHub(t, hubtest.HubOptions{Bin: bin, Listen: peers[i], LogLevel: logLevel, Wait: hubtest.Connected,
			Config: cfg, Env: env})
		backends[i] = hubs[i].MCPURL()
	}
	for i, h := range hubs {
		waitReplicas(t, h, i, n)
	}
	return hubs, backends
}

// replicaConfig is one replica's config: the upstream and its peers.
func replicaConfig(upstream, peers string) string {
	return fmt.Sprintf(`builtins: {staticAnalysis: {enabled: false}, triggerWorkflow: {enabled: false}}
replicas: {peers: %q}
servers:
  - name: everything
    url: %s
    transport: streamable-http
`, peers, upstream)
}

// TestRunBudgetAcrossReplicas: a caller's maxIterations holds for one
// agent run (its traceparent) whichever replica each call lands on: the
// balancer spreads the calls round-robin over three replicas, and the
// call after the budget is refused on every one of them, in a new session
// too (the executor reconnecting).
func TestRunBudgetAcrossReplicas(t *testing.T) {
	const budget = 7
	upstream := conformance.EverythingServer(t, false)
	_, backends := startReplicas(t, upstream, "warn", fmt.Sprintf("guardrails: {maxIterations: %d}", budget))
	lb := newBalancer(t, backends)
	headers := map[string]string{"Authorization": "Bearer agent-token-1",
		"traceparent": fmt.Sprintf("00-%032x-00f067aa0ba902b7-01", time.Now().UnixNano())}
	c := dialWith(t, lb.url, mcp.LATEST_LEGACY_PROTOCOL_VERSION, headers)
	admittedOnEvery(t, lb, budget, func(int) (*mcp.CallToolResult, error) { return callSimpleText(c) })
	for i := range replicas { // every replica refuses the next one
		for _, cl := range []*client.Client{c, dialWith(t, lb.url, mcp.LATEST_LEGACY_PROTOCOL_VERSION, headers)} {
			res, err := callSimpleText(cl)
			refusedWith(t, i, res, err, fmt.Sprintf("may make %d tool calls (guardrails maxIterations) and has made %d", budget, budget))
		}
	}
}

// TestHourBudgetAcrossReplicas: a token caller's maxIterationsPerHour
// holds for all of its runs together whichever replica each call lands
// on: every call comes in a session and a trace of its own (a new run,
// each far under maxIterations), the balancer spreads them over three
// replicas, and the call after the hour's budget is refused on every one.
func TestHourBudgetAcrossReplicas(t *testing.T) {
	const perHour = 7
	upstream := conformance.EverythingServer(t, false)
	_, backends := startReplicas(t, upstream, "warn", fmt.Sprintf("guardrails: {maxIterations: 100, maxIterationsPerHour: %d}", perHour))
	lb := newBalancer(t, backends)
	base := time.Now().UnixNano()
	inNewRun := func(i int) (*mcp.CallToolResult, error) {
		return callSimpleText(dialWith(t, lb.url, mcp.LATEST_LEGACY_PROTOCOL_VERSION, map[string]string{"Authorization": "Bearer agent-token-1",
			"traceparent": fmt.Sprintf("00-%032x-00f067aa0ba902b7-01", base+int64(i))}))
	}
	admittedOnEvery(t, lb, perHour, inNewRun)
	for i := range replicas { // every replica refuses the next ones
		res, err := inNewRun(perHour + i)
		refusedWith(t, i, res, err, fmt.Sprintf("may make %d tool calls an hour across all of its agent runs (guardrails maxIterationsPerHour) and has made %d", perHour, perHour))
	}
}

// callSimpleText calls the reference server's test_simple_text through c.
func callSimpleText(c *client.Client) (*mcp.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = "test_simple_text"
	return c.CallTool(ctx, req)
}

// admittedOnEvery makes n calls with call (given 0..n-1), each admitted,
// which the balancer must have spread to every replica.
func admittedOnEvery(t *testing.T, lb *balancer, n int, call func(i int) (*mcp.CallToolResult, error)) {
	t.Helper()
	before := lb.spread()
	for i := range n {
		if res, err := call(i); err != nil || res.IsError {
			t.Fatalf("call %d of %d: %v %+v", i+1, n, err, res)
		}
	}
	after := lb.spread()
	for i := range after {
		if after[i] == before[i] {
			t.Fatalf("replica %d got none of the budget's requests: %v -> %v", i, before, after)
		}
	}
}

// refusedWith fails unless call i over a budget was refused with a text
// that holds want.
func refusedWith(t *testing.T, i int, res *mcp.CallToolResult, err error, want string) {
	t.Helper()
	if err != nil || !res.IsError || len(res.Content) == 0 {
		t.Fatalf("call %d over the budget: %v %+v", i+1, err, res)
	}
	if text := res.Content[0].(mcp.TextContent).Text; !strings.Contains(text, want) {
		t.Fatalf("call %d over the budget: %q, want %q", i+1, text, want)
	}
}

// TestRateLimitAcrossReplicas: a caller limited to 10 calls/s gets 10
// calls/s from three replicas behind a round-robin balancer, not 30: each
// replica counts the replicas from replicas.peers (mcphub_replicas) and
// applies its share, 3.33/s with a burst of ceil(10/3) = 4. Over 10 s of
// calls as fast as the workers can make them, the calls admitted beyond
// the fleet's burst (3 x 4) are 100 +- 15%.
func TestRateLimitAcrossReplicas(t *testing.T) {
	const (
		rate     = 10.0
		window   = 10 * time.Second
		burst    = replicas * 4 // ceil(10/3) on each replica
		workers  = 3
		tolerate = 0.15
	)
	upstream := conformance.EverythingServer(t, false)
	_, backends := startReplicas(t, upstream, "warn", fmt.Sprintf("limits: {rate: %g}", rate))
	lb := newBalancer(t, backends)

	// Keep-alive connections: thousands of calls must not exhaust the
	// ephemeral ports.
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
	clients := make([]*client.Client, workers)
	for i := range clients {
		tr, err := transport.NewStreamableHTTP(lb.url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer agent-token-1"}),
			transport.WithHTTPBasicClient(hc))
		if err != nil {
			t.Fatal(err)
		}
		c := client.NewClient(tr)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
			t.Fatalf("initialize: %v", err)
		}
		cancel()
		t.Cleanup(func() { _ = c.Close() })
		clients[i] = c
	}

	var admitted, refused atomic.Int64
	var firstRefusal atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(window)
	for _, c := range clients {
		wg.Go(func() {
			req := mcp.CallToolRequest{}
			req.Params.Name = "test_simple_text"
			for time.Now().Before(deadline) {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				res, err := c.CallTool(ctx, req)
				cancel()
				switch {
				case err == nil && !res.IsError:
					admitted.Add(1)
				case err != nil && strings.Contains(err.Error(), "rate limit"):
					refused.Add(1)
					firstRefusal.CompareAndSwap(nil, err.Error())
				default:
					t.Errorf("call: %v %+v", err, res)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	got := admitted.Load()
	beyond := float64(got - burst)
	t.Logf("%d calls admitted, %d refused in %s through %d replicas: %.0f beyond the burst of %d, %.2f calls/s (limit %g/s +- %.0f%%)",
		got, refused.Load(), elapsed.Round(time.Millisecond), replicas, beyond, burst, beyond/elapsed.Seconds(), rate, tolerate*100)
	if refused.Load() == 0 {
		t.Fatal("no call refused: the workers did not push the limit")
	}
	// The buckets refill with time, whatever the load on the machine: the
	// window bounds what they gave from below, and the time the last
	// calls (started inside the window) took to be admitted from above.
	if low, high := rate*window.Seconds()*(1-tolerate), rate*elapsed.Seconds()*(1+tolerate); beyond < low || beyond > high {
		t.Fatalf("%.0f calls admitted beyond the burst in %s, want %.0f to %.0f (%g/s +- %.0f%%)", beyond, elapsed, low, high, rate, tolerate*100)
	}
	msg, _ := firstRefusal.Load().(string)
	if !strings.Contains(msg, `is over its limit of 10 calls/s across 3 replicas, 3.33/s here (auth.tokens[agent].limits.rate)`) {
		t.Fatalf("refusal %q does not name the limit, the replicas and the share", msg)
	}
}

// waitReplicas waits until hub i exports mcphub_replicas n and
// mcphub_peer_members n: it has counted the others (and itself) from
// replicas.peers and learned their ids, so it agrees with them on owners.
func waitReplicas(t *testing.T, h *hubtest.Hub, i, n int) {
	t.Helper()
	want := []string{fmt.Sprintf("\nmcphub_replicas %d\n", n), fmt.Sprintf("\nmcphub_peer_members %d\n", n)}
	var last string
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get(h.Base + "/metrics")
		if err != nil {
			last = err.Error()
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(body), want[0]) && strings.Contains(string(body), want[1]) {
			return
		}
		last = "no " + strings.TrimSpace(want[0]) + " and " + strings.TrimSpace(want[1])
	}
	t.Fatalf("replica %d: %s", i, last)
}

// TestSessionDeleteReachesEveryReplica: a client's DELETE of its session
// that the balancer sends to another replica than the one holding the
// session ends it there too, at once, not at that replica's idle sweep.
func TestSessionDeleteReachesEveryReplica(t *testing.T) {
	upstream := conformance.EverythingServer(t, false)
	hubs, _ := startReplicas(t, upstream, "warn", "")
	post := func(url, sid, body string) (string, int) {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", mcp.LATEST_LEGACY_PROTOCOL_VERSION)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.Header.Get("Mcp-Session-Id"), resp.StatusCode
	}
	sid, status := post(hubs[0].MCPURL(), "", fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	if sid == "" || status != http.StatusOK {
		t.Fatalf("initialize on replica 0: %d, session %q", status, sid)
	}
	post(hubs[0].MCPURL(), sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	sessions := func(i int) float64 {
		return peerMetricSum(t, hubs[i], "mcphub_sessions{")
	}
	if n := sessions(0); n != 1 {
		t.Fatalf("replica 0 holds %v sessions after initialize, want 1", n)
	}
	req, _ := http.NewRequest(http.MethodDelete, hubs[1].MCPURL(), nil)
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	hubtest.Eventually(t, 10*time.Second, 100*time.Millisecond, "replica 0 forgets the session deleted on replica 1", func() error {
		if n := sessions(0); n != 0 {
			return fmt.Errorf("replica 0 holds %v sessions", n)
		}
		return nil
	})
}
