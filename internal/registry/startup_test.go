package registry

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/hubtest"
	"github.com/purko-io/mcp-hub/internal/upstream"
)

func startupTool(name string) mcpserver.ServerTool {
	return mcpserver.ServerTool{Tool: mcp.NewTool(name), Handler: func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	}}
}

func httpSpec(name, url string) config.ServerSpec {
	return config.ServerSpec{Name: name, URL: url, Transport: config.TransportStreamableHTTP, Source: "test"}
}

// runStartup runs a registry over one source holding specs until the test
// ends; the catalogs it announces go to the returned channel.
func runStartup(t *testing.T, connectTimeout time.Duration, specs ...config.ServerSpec) (*Registry, <-chan *Catalog) {
	t.Helper()
	r := New(Options{NotifyDebounce: time.Hour, Upstream: upstream.Options{ConnectTimeout: connectTimeout,
		BackoffMin: time.Minute, BackoffMax: time.Minute}}, zerolog.Nop())
	got := make(chan *Catalog, 64)
	r.OnChange(func(c *Catalog) {
		select {
		case got <- c:
		default:
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { // owned by the test: ends at its cleanup
		defer close(done)
		r.Run(ctx, oneShot{"test", specs})
	}()
	t.Cleanup(func() { cancel(); <-done })
	return r, got
}

// Tried waits for an upstream that is slow to answer its handshake, not
// for one that refuses connections; the catalog announced when it latches
// already holds the slow server's tool (a notify debounce of an hour
// must not hold it back).
func TestWaitTriedWaitsForEveryUpstream(t *testing.T) {
	const delay = time.Second
	up := hubtest.StartUpstream(t, "up", startupTool("fast"))
	slow := hubtest.StartSlowUpstream(t, "slow", delay, startupTool("late"))
	began := time.Now()
	r, got := runStartup(t, 10*time.Second,
		httpSpec("up", up.URL), httpSpec("down", hubtest.RefusedURL(t)), httpSpec("slow", slow.URL))

	if r.Tried() {
		t.Fatal("tried at once, before any upstream answered")
	}
	short, cancel := context.WithTimeout(context.Background(), delay/4)
	err := r.WaitTried(short)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitTried before the slow upstream answered = %v, want the context's deadline", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.WaitTried(ctx); err != nil {
		t.Fatal(err)
	}
	took := time.Since(began)
	if took < delay {
		t.Fatalf("tried after %s, before the slow upstream answered (%s)", took, delay)
	}
	t.Logf("every upstream tried after %s (slow upstream: %s)", took, delay)
	states := map[string]State{}
	for _, sv := range r.Catalog().Servers {
		states[sv.Name] = sv.Status.State
	}
	if states["up"] != StateConnected || states["slow"] != StateConnected || states["down"] != StateError {
		t.Fatalf("states when tried: %v", states)
	}
	var last *Catalog
	for len(got) > 0 {
		last = <-got
	}
	if last == nil {
		t.Fatal("no catalog announced")
	}
	for _, name := range []string{"fast", "late"} {
		if _, ok := last.Tool(name); !ok {
			t.Errorf("the catalog announced by the time start-up ended lacks %s: %d tools", name, len(last.Tools))
		}
	}
	if !r.Tried() {
		t.Fatal("Tried false after WaitTried returned")
	}
}

// An upstream that never answers holds start-up no longer than
// upstream.connectTimeout.
func TestWaitTriedIsBoundedByConnectTimeout(t *testing.T) {
	const bound = 500 * time.Millisecond
	up := hubtest.StartUpstream(t, "up", startupTool("fast"))
	began := time.Now()
	r, _ := runStartup(t, bound, httpSpec("up", up.URL), httpSpec("hung", hubtest.StartSilentUpstream(t)))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.WaitTried(ctx); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took > bound+2*time.Second {
		t.Fatalf("a hung upstream held start-up for %s (connectTimeout %s)", took, bound)
	} else {
		t.Logf("tried after %s with a hung upstream (connectTimeout %s)", took, bound)
	}
	if _, ok := r.Catalog().Tool("fast"); !ok {
		t.Fatal("the connected upstream's tool is not in the catalog when start-up ended")
	}
}

// With no source and no upstream there is nothing to wait for.
func TestTriedWithoutSources(t *testing.T) {
	r := New(Options{NotifyDebounce: time.Hour, Upstream: upstream.Options{ConnectTimeout: time.Minute}}, zerolog.Nop())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	defer func() { cancel(); <-done }()
	wctx, wcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer wcancel()
	if err := r.WaitTried(wctx); err != nil {
		t.Fatal(err)
	}
}

// A source whose first snapshot is empty changes nothing in the catalog;
// start-up still ends.
func TestTriedWithAnEmptySource(t *testing.T) {
	r, _ := runStartup(t, time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.WaitTried(ctx); err != nil {
		t.Fatal(err)
	}
}
