package server

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/hubchain"
	"github.com/purko-io/mcp-hub/internal/registry"
)

// withChain gives the hub's upstreams the chain its server presents.
func withChain(c *hubchain.Chain) hubOption {
	return func(o *registry.Options) { o.Upstream.Chain = c }
}

// TestChainOnEveryAnswer: every answer of the hub carries its chain, a
// refusal of a caller without credentials and the WebSocket handshake's
// 101 included, and a hub's chain holds the hubs its upstreams reach. A
// hub given itself as an upstream lists it as a loop.
func TestChainOnEveryAnswer(t *testing.T) {
	chainB := hubchain.New("ns/b")
	b := newTestHubOpts(t, nil, hubOpts{Chain: chainB}, withChain(chainB))
	chainA := hubchain.New("ns/a")
	a := newTestHubOpts(t, []config.ServerSpec{{Name: "b", URL: b.url("/mcp"), Transport: config.TransportStreamableHTTP}},
		hubOpts{Chain: chainA, Auth: authFor(callers.TokenCaller{Name: "t", Token: "tok", Ceiling: autonomy.Full})}, withChain(chainA))
	a.waitConnected("b")

	for _, tc := range []struct {
		method, path string
		header       http.Header
	}{
		{"POST", "/mcp", nil}, // 401: no credentials
		{"GET", "/sse", http.Header{"Authorization": {"Bearer tok"}}},
		{"POST", "/messages?sessionId=x", http.Header{"Authorization": {"Bearer tok"}}},
		{"GET", "/ws", http.Header{"Authorization": {"Bearer tok"}, "Connection": {"Upgrade"}, "Upgrade": {"websocket"},
			"Sec-Websocket-Version": {"13"}, "Sec-Websocket-Key": {"dGhlIHNhbXBsZSBub25jZQ=="}}},
		{"GET", "/healthz", nil},
	} {
		req, _ := http.NewRequest(tc.method, a.url(tc.path), nil)
		for k, v := range tc.header {
			req.Header[k] = v
		}
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatalf("%s %s: %v", tc.method, tc.path, err)
		}
		resp.Body.Close()
		got := hubchain.Parse(resp.Header.Values(hubchain.Header))
		if len(got) != 2 || got[0] != chainA.Own() || !slices.Contains(got, chainB.Own()) {
			t.Errorf("%s %s (%s): chain %v, want a's id, then b's", tc.method, tc.path, resp.Status, got)
		}
	}

	// b given a as an upstream: a reaches b, so it is a loop.
	b.set(config.ServerSpec{Name: "a", URL: a.url("/mcp"), Transport: config.TransportStreamableHTTP})
	waitFor(t, "b refuses a as a loop", func() bool {
		return strings.Contains(b.status("a").Error, "registration loop: "+a.url("/mcp")+" is a hub that reaches this hub (instance ns/b)")
	})
	if a.status("b").State != "connected" {
		t.Fatalf("a's b: %+v", a.status("b"))
	}
}
