package hubtest

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Bait is a listener on 127.0.0.1 standing for an attacker's own: a test
// registers it where the hub must never connect, and checks that it did
// not. It counts every connection accepted (a refused dial never gets
// one) and keeps the Authorization headers of the requests it got, to say
// what leaked when one came.
type Bait struct {
	// URL is its endpoint: http://127.0.0.1:PORT/mcp.
	URL string

	mu    sync.Mutex
	conns int
	auth  []string
}

// StartBait listens until t's cleanup; every request gets 418.
func StartBait(t testing.TB) *Bait {
	t.Helper()
	b := &Bait{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		b.auth = append(b.auth, r.Header.Get("Authorization"))
		b.mu.Unlock()
		http.Error(w, "bait", http.StatusTeapot)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			b.mu.Lock()
			b.conns++
			b.mu.Unlock()
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	b.URL = srv.URL + "/mcp"
	return b
}

// Seen returns the connections accepted so far and the Authorization
// headers received.
func (b *Bait) Seen() (conns int, authorization []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.conns, append([]string(nil), b.auth...)
}
