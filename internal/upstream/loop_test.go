package upstream

import (
	"context"
	"errors"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/hubchain"
	"github.com/purko-io/mcp-hub/internal/mcpws"
	"github.com/purko-io/mcp-hub/internal/netpolicy"
	"github.com/purko-io/mcp-hub/internal/upstream/loopcheck"
)

// chainServers serves testServer on every HTTP transport, each answer with
// the chain header *chain holds ("" for none), as another hub would; hits
// counts the requests.
func chainServers(t *testing.T, chain *atomic.Pointer[string], hits *atomic.Int32) map[config.Transport]string {
	t.Helper()
	withChain := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			if v := *chain.Load(); v != "" {
				w.Header().Set(hubchain.Header, v)
			}
			h.ServeHTTP(w, r)
		})
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcpserver.NewStreamableHTTPServer(testServer("up", nil)))
	sse := mcpserver.NewSSEServer(testServer("up", nil))
	mux.Handle("/sse", sse)
	mux.Handle("/message", sse)
	mux.Handle("/ws", mcpws.NewHandler(testServer("up", nil)))
	base := serve(t, withChain(mux)).URL
	return map[config.Transport]string{
		config.TransportStreamableHTTP: base + "/mcp",
		config.TransportSSE:            base + "/sse",
		config.TransportWebSocket:      "ws" + strings.TrimPrefix(base, "http") + "/ws",
	}
}

// TestLoopRefusedOnEveryTransport: an upstream that answers with a chain
// holding this hub's id is refused with a loopcheck.LoopError, and publishes nothing;
// one whose chain does not hold it connects, and its chain becomes part of
// the hub's. A connected upstream whose answers start to hold the hub's id
// (a hub behind it registered this one since) is dropped at the next
// health check, tools and all.
func TestLoopRefusedOnEveryTransport(t *testing.T) {
	me := hubchain.New("ns/me")
	other, third := hubchain.IDOf("ns/other"), hubchain.IDOf("ns/third")
	var chain atomic.Pointer[string]
	var hits atomic.Int32
	urls := chainServers(t, &chain, &hits)
	set := func(ids ...hubchain.ID) {
		parts := make([]string, len(ids))
		for i, id := range ids {
			parts[i] = string(id)
		}
		v := strings.Join(parts, ",")
		chain.Store(&v)
	}
	for _, tr := range []config.Transport{config.TransportStreamableHTTP, config.TransportSSE, config.TransportWebSocket} {
		t.Run(string(tr), func(t *testing.T) {
			spec := config.ServerSpec{Name: "up", URL: urls[tr], Transport: tr}
			opts := Options{ConnectTimeout: 5 * time.Second, BackoffMin: 10 * time.Millisecond, BackoffMax: 20 * time.Millisecond,
				PingInterval: 20 * time.Millisecond, Chain: me}

			// This very hub, or a replica of it.
			set(me.Own())
			c := New(spec, opts, zerolog.Nop(), func() {})
			c.Start(context.Background())
			st := waitState(t, c, StateError)
			want := "registration loop: " + urls[tr] + " answers as this hub (instance ns/me)"
			if !strings.HasPrefix(st.Error, want) || len(c.Tools()) != 0 {
				t.Fatalf("status %q with %d tools\nwant it to start %q, no tools", st.Error, len(c.Tools()), want)
			}
			c.Stop()

			// A hub that reaches this one.
			set(other, me.Own())
			c = New(spec, opts, zerolog.Nop(), func() {})
			c.Start(context.Background())
			st = waitState(t, c, StateError)
			if want := "is a hub that reaches this hub (instance ns/me) through its upstreams"; !strings.Contains(st.Error, want) {
				t.Fatalf("status %q, want it to hold %q", st.Error, want)
			}
			c.Stop()

			// A hub that does not reach this one: connected, and its
			// chain is in this hub's header until the client stops.
			set(other, third)
			c = startClient(t, spec, opts)
			if got := hubchain.Parse(me.HeaderValues()); !slices.Contains(got, other) || !slices.Contains(got, third) {
				t.Fatalf("hub header %v lacks the upstream's chain", got)
			}
			if len(c.Tools()) == 0 {
				t.Fatal("connected with no tools")
			}
			if tr == config.TransportWebSocket {
				// Over WebSocket only the handshake is an HTTP answer.
				c.Stop()
			} else {
				set(other, me.Own())
				st = waitState(t, c, StateError)
				deadline := time.Now().Add(5 * time.Second)
				for !strings.HasPrefix(c.Status().Error, "registration loop") || len(c.Tools()) != 0 {
					if time.Now().After(deadline) {
						t.Fatalf("after the loop closed: status %q, %d tools", c.Status().Error, len(c.Tools()))
					}
					time.Sleep(5 * time.Millisecond)
				}
				c.Stop()
			}
			if got := me.HeaderValues(); !slices.Equal(got, []string{string(me.Own())}) {
				t.Fatalf("hub header after the client stopped: %v", got)
			}
		})
	}
}

// TestDialPolicyOnEveryTransport: with loopback not allowed, a loopback
// upstream is refused before it is connected to, on the HTTP transports
// (the shared client's dialer) and on WebSocket (its own dialer), and the
// status says why.
func TestDialPolicyOnEveryTransport(t *testing.T) {
	var hits atomic.Int32
	var chain atomic.Pointer[string]
	empty := ""
	chain.Store(&empty)
	urls := chainServers(t, &chain, &hits)
	policy := &netpolicy.Policy{Private: true, Setting: "upstream.dial"}
	hc := &http.Client{Transport: &http.Transport{
		Proxy:       policy.Proxy(nil),
		DialContext: policy.Dialer(&net.Dialer{Timeout: time.Second}).DialContext,
	}}
	for _, tr := range []config.Transport{config.TransportStreamableHTTP, config.TransportSSE, config.TransportWebSocket} {
		t.Run(string(tr), func(t *testing.T) {
			for _, host := range []string{"127.0.0.1", "localhost"} {
				url := strings.Replace(urls[tr], "127.0.0.1", host, 1)
				c := New(config.ServerSpec{Name: "up", URL: url, Transport: tr},
					Options{ConnectTimeout: time.Second, BackoffMin: time.Hour, BackoffMax: time.Hour, HTTPClient: hc, Dial: policy},
					zerolog.Nop(), func() {})
				c.Start(context.Background())
				st := waitState(t, c, StateError)
				c.Stop()
				if !strings.HasPrefix(st.Error, "dial policy: ") || !strings.HasSuffix(st.Error, "is a loopback address: upstream.dial.loopback is false") {
					t.Fatalf("%s: status %q, want the dial policy's refusal", url, st.Error)
				}
			}
		})
	}
	if hits.Load() != 0 {
		t.Fatalf("the server was reached %d times", hits.Load())
	}
}

func TestLoopErrorIsTheStatus(t *testing.T) {
	c := New(config.ServerSpec{Name: "x", URL: "http://u:p@h/mcp"}, Options{Chain: hubchain.New("")}, zerolog.Nop(), func() {})
	loop := &loopcheck.LoopError{URL: "http://h/mcp", Instance: "i", Direct: true}
	wrapped := errors.Join(errors.New("initialize: transport error"), loop)
	if got := ownRefusal(wrapped); got != loop {
		t.Fatalf("ownRefusal = %v, want the loop error itself", got)
	}
	if !strings.Contains(c.loops.URL(), "h/mcp") || strings.Contains(c.loops.URL(), "u:p") {
		t.Fatalf("loop url %q keeps credentials", c.loops.URL())
	}
}
