package registry

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/discovery"
	"github.com/purko-io/mcp-hub/internal/pinning"
	"github.com/purko-io/mcp-hub/internal/upstream"
)

// echoUpstream is an MCP server on loopback offering echo; while down it
// answers 503 to everything, as a server that is being restarted would.
type echoUpstream struct {
	name string
	url  string
	up   atomic.Bool
}

func newEchoUpstream(t *testing.T, name string, up bool) *echoUpstream {
	t.Helper()
	u := &echoUpstream{name: name}
	u.up.Store(up)
	s := mcpserver.NewMCPServer(name, "1.0.0", mcpserver.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("echo", mcp.WithString("text")), func(_ context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(name + ":" + r.GetString("text", "")), nil
	})
	h := mcpserver.NewStreamableHTTPServer(s)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !u.up.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	u.url = ts.URL + "/mcp"
	return u
}

func (u *echoUpstream) spec() config.ServerSpec {
	return config.ServerSpec{Name: u.name, URL: u.url, Transport: config.TransportStreamableHTTP, Source: "test"}
}

// liveSource sends the snapshot it is given, whenever it is given one.
type liveSource chan []config.ServerSpec

func (s liveSource) Name() string { return "test" }
func (s liveSource) Run(ctx context.Context, out chan<- discovery.Snapshot) {
	for {
		select {
		case specs := <-s:
			select {
			case out <- discovery.Snapshot{Source: "test", Servers: specs}:
			case <-ctx.Done():
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// runHub runs a registry with the claims in path until the test ends or
// stop is called; the source takes the server snapshots.
func runHub(t *testing.T, path string) (r *Registry, src liveSource, stop func()) {
	t.Helper()
	store, err := pinning.OpenClaimsFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return runRegistry(t, Options{
		Names: store,
		Upstream: upstream.Options{Timeout: 5 * time.Second, ConnectTimeout: 2 * time.Second, PingInterval: 100 * time.Millisecond,
			BackoffMin: 50 * time.Millisecond, BackoffMax: 100 * time.Millisecond, BreakerOpenFor: 100 * time.Millisecond},
	})
}

// runRegistry runs a registry of opts (prefix on-conflict with "__" and
// a 1ms notify debounce unless set, the test's upstream timings when
// opts has none) until the test ends or stop is called; the source takes
// the server snapshots.
func runRegistry(t *testing.T, opts Options) (r *Registry, src liveSource, stop func()) {
	t.Helper()
	if opts.Naming == (config.Naming{}) {
		opts.Naming = config.Naming{Prefix: config.PrefixOnConflict, Separator: "__"}
	}
	if opts.NotifyDebounce == 0 {
		opts.NotifyDebounce = time.Millisecond
	}
	if opts.Upstream.Timeout == 0 {
		opts.Upstream = upstream.Options{Timeout: 5 * time.Second, ConnectTimeout: 2 * time.Second, BackoffMin: 50 * time.Millisecond, BackoffMax: 100 * time.Millisecond}
	}
	r = New(opts, zerolog.New(zerolog.NewTestWriter(t)))
	src = make(liveSource, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx, src) }()
	stop = sync.OnceFunc(func() { cancel(); <-done })
	t.Cleanup(stop)
	return r, src, stop
}

// waitNames waits until the published tools are exactly want (published
// name -> server), and every one of them is callable.
func waitNames(t *testing.T, r *Registry, want map[string]string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := map[string]string{}
		for _, tl := range r.Catalog().Tools {
			got[tl.Name] = tl.Server
		}
		if fmt.Sprint(got) == fmt.Sprint(want) {
			for name, server := range want {
				rt, err := r.Lookup(name)
				if err != nil || rt.Server() != server {
					t.Fatalf("Lookup(%s) = %s, %v; want %s", name, rt.Server(), err, server)
				}
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("published %v, want %v", got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestNamesStableAcrossRestart is the story on real upstreams: the
// hub starts while b is down, b returns, the hub restarts on the same
// names file, and a removed server gives its name up.
func TestNamesStableAcrossRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "names.json")
	a, b := newEchoUpstream(t, "a", true), newEchoUpstream(t, "b", false)

	r, src, stop := runHub(t, path)
	src <- []config.ServerSpec{a.spec(), b.spec()}
	waitNames(t, r, map[string]string{"echo": "a"})

	b.up.Store(true)
	waitNames(t, r, map[string]string{"echo": "a", "b__echo": "b"})
	stop()

	// A restart while a is down: its claim keeps echo from b.
	a.up.Store(false)
	r, src, stop = runHub(t, path)
	src <- []config.ServerSpec{a.spec(), b.spec()}
	waitNames(t, r, map[string]string{"b__echo": "b"})
	a.up.Store(true)
	waitNames(t, r, map[string]string{"echo": "a", "b__echo": "b"})

	// a removed from the sources: its name is released for good.
	src <- []config.ServerSpec{b.spec()}
	waitNames(t, r, map[string]string{"b__echo": "b"})
	stop()
	store, err := pinning.OpenClaimsFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []pinning.Claim{{Name: "b__echo", Key: pinning.Key{Server: "b", Tool: "echo"}}}
	if got := store.Claims(); !slices.Equal(got, want) {
		t.Fatalf("claims saved after a's removal %v, want %v", got, want)
	}
}
