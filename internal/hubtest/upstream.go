package hubtest

import (
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// Upstream is an MCP server (mcp-go, Streamable HTTP) inside the test
// process on 127.0.0.1, for a hub to connect to. It keeps the
// Authorization header of the last request it got, so that a test can
// check which credential the hub sent upstream, and that it sent one.
type Upstream struct {
	// URL is its endpoint: http://127.0.0.1:PORT/mcp.
	URL string

	mu   sync.Mutex
	auth string
}

// StartUpstream serves tools as the MCP server name until t's cleanup.
func StartUpstream(t testing.TB, name string, tools ...server.ServerTool) *Upstream {
	t.Helper()
	return startUpstream(t, name, 0, tools...)
}

// StartSlowUpstream is StartUpstream with a cold start: the first request
// it gets (the hub's server/discover or initialize) is answered after
// delay, as a server still loading would.
func StartSlowUpstream(t testing.TB, name string, delay time.Duration, tools ...server.ServerTool) *Upstream {
	t.Helper()
	return startUpstream(t, name, delay, tools...)
}

func startUpstream(t testing.TB, name string, delay time.Duration, tools ...server.ServerTool) *Upstream {
	t.Helper()
	s := server.NewMCPServer(name, "1")
	s.AddTools(tools...)
	handler := server.NewStreamableHTTPServer(s)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("hubtest: %v", err)
	}
	u := &Upstream{URL: "http://" + ln.Addr().String() + "/mcp"}
	var warm atomic.Bool
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if delay > 0 && !warm.Swap(true) {
			select {
			case <-time.After(delay):
			case <-r.Context().Done():
				return
			}
		}
		u.mu.Lock()
		u.auth = r.Header.Get("Authorization")
		u.mu.Unlock()
		handler.ServeHTTP(w, r)
	})}
	serveUntilCleanup(t, hs, ln)
	return u
}

// serveUntilCleanup serves hs on ln until t's cleanup closes it.
func serveUntilCleanup(t testing.TB, hs *http.Server, ln net.Listener) {
	done := make(chan struct{})
	go func() { // owned by the test: ends when the cleanup closes the server
		defer close(done)
		_ = hs.Serve(ln)
	}()
	t.Cleanup(func() {
		_ = hs.Close()
		<-done
	})
}

// Authorization is the Authorization header of the last request, "" when
// it had none.
func (u *Upstream) Authorization() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.auth
}

// StartSilentUpstream accepts HTTP requests at its URL and never answers
// them (a server hung at start), until t's cleanup. It returns the URL.
func StartSilentUpstream(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("hubtest: %v", err)
	}
	stop := make(chan struct{})
	hs := &http.Server{Handler: http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	})}
	done := make(chan struct{})
	go func() { // owned by the test: ends when the cleanup closes the server
		defer close(done)
		_ = hs.Serve(ln)
	}()
	t.Cleanup(func() {
		close(stop)
		_ = hs.Close()
		<-done
	})
	return "http://" + ln.Addr().String() + "/mcp"
}

// RefusedURL is an MCP URL on 127.0.0.1 where nothing listens: a port
// that was free a moment ago, so connecting is refused.
func RefusedURL(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("hubtest: %v", err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return "http://" + addr + "/mcp"
}
