package replicas

import (
	"bufio"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/hubtest"
	"github.com/purko-io/mcp-hub/test/conformance"
)

// TestPeerRequestsPerCall: the internal requests a call costs do not grow
// with the fleet. Fleets of 3, 6 and 9 replicas behind a round-robin
// balancer serve one agent run held to a budget (guardrails
// maxIterations), which a caller's owner counts: a call on the owner costs
// no internal request, a call on any other replica one, so (N-1)/N per
// call, where telling every peer of every call cost N-1. The budget holds
// exactly in each fleet: the call after it is refused on every replica.
// Prints the internal requests per call of each fleet size (the
// periodic refresh of the peers' ids, kind "members", is not per call).
func TestPeerRequestsPerCall(t *testing.T) {
	const calls = 45
	upstream := conformance.EverythingServer(t, false)
	perCall := map[int]float64{}
	for _, n := range []int{3, 6, 9} {
		t.Run(fmt.Sprintf("%d replicas", n), func(t *testing.T) {
			hubs, backends := startFleet(t, n, upstream, "warn", fmt.Sprintf("guardrails: {maxIterations: %d}", calls))
			lb := newBalancer(t, backends)
			headers := map[string]string{"Authorization": "Bearer agent-token-1",
				"traceparent": fmt.Sprintf("00-%032x-00f067aa0ba902b7-01", time.Now().UnixNano())}
			c := dialWith(t, lb.url, mcp.LATEST_LEGACY_PROTOCOL_VERSION, headers)
			before := peerRequests(t, hubs)
			admittedOnEvery(t, lb, calls, func(int) (*mcp.CallToolResult, error) { return callSimpleText(c) })
			after := peerRequests(t, hubs)
			for kind, v := range after {
				if kind != "members" && kind != "run" && v != before[kind] {
					t.Errorf("%v internal requests of kind %s during the calls, want none but runs", v-before[kind], kind)
				}
			}
			perCall[n] = (after["run"] - before["run"]) / calls
			if perCall[n] > 1 {
				t.Errorf("%d replicas: %.2f internal requests per call, want at most 1", n, perCall[n])
			}
			for i := range n { // every replica refuses the next one: they agree on the owner
				res, err := callSimpleText(c)
				refusedWith(t, i, res, err, fmt.Sprintf("may make %d tool calls (guardrails maxIterations) and has made %d", calls, calls))
			}
		})
	}
	t.Logf("internal requests per call of an agent run held to a budget: 3 replicas %.2f, 6 replicas %.2f, 9 replicas %.2f (telling every peer: 2, 5, 8)",
		perCall[3], perCall[6], perCall[9])
}

// peerRequests sums mcphub_peer_requests_total{kind} over the hubs.
func peerRequests(t *testing.T, hubs []*hubtest.Hub) map[string]float64 {
	t.Helper()
	sum := map[string]float64{}
	for i, h := range hubs {
		resp, err := http.Get(h.Base + "/metrics")
		if err != nil {
			t.Fatalf("metrics of replica %d: %v", i, err)
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			line, ok := strings.CutPrefix(sc.Text(), `mcphub_peer_requests_total{kind="`)
			if !ok {
				continue
			}
			kind, value, _ := strings.Cut(line, `"} `)
			v, err := strconv.ParseFloat(value, 64)
			if err != nil {
				t.Fatalf("replica %d: %q: %v", i, sc.Text(), err)
			}
			sum[kind] += v
		}
		resp.Body.Close()
	}
	return sum
}

// peerMetricSum sums the samples of h's /metrics whose line begins with
// prefix (a name and "{", or a name and " ").
func peerMetricSum(t *testing.T, h *hubtest.Hub, prefix string) float64 {
	t.Helper()
	resp, err := http.Get(h.Base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, prefix) {
			v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			if err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			sum += v
		}
	}
	return sum
}
