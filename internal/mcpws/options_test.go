package mcpws

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/server"
)

// TestClientOptions: the dial goes through WithDialContext, a header that
// middleware set reaches the handshake's answer, WithAnswerCheck sees it
// on a successful and a refused handshake, and its error fails the dial.
func TestClientOptions(t *testing.T) {
	ws := NewHandler(server.NewMCPServer("s", "1"))
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Who", "me")
		if r.URL.Path == "/refuse" {
			http.Error(w, "no", http.StatusForbidden)
			return
		}
		ws.ServeHTTP(w, r)
	}))
	defer ts.Close()
	base := "ws" + strings.TrimPrefix(ts.URL, "http")

	var dials atomic.Int32
	dial := WithDialContext(func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	})
	var seen atomic.Value
	look := WithAnswerCheck(func(h http.Header) error { seen.Store(h.Get("X-Who")); return nil })
	tr := NewClientTransport(base+"/ws", nil, dial, look)
	if err := tr.Start(context.Background()); err != nil {
		t.Fatalf("start: %v", err)
	}
	tr.Close()
	if dials.Load() != 1 || seen.Load() != "me" {
		t.Fatalf("dials %d, header seen %v: want 1 and the middleware's header on the 101", dials.Load(), seen.Load())
	}

	errNo := errors.New("not this one")
	for _, path := range []string{"/ws", "/refuse"} {
		tr := NewClientTransport(base+path, nil, WithAnswerCheck(func(h http.Header) error {
			if h.Get("X-Who") == "me" {
				return errNo
			}
			return nil
		}))
		err := tr.Start(context.Background())
		tr.Close()
		if !errors.Is(err, errNo) {
			t.Fatalf("%s: start = %v, want the check's error", path, err)
		}
	}
}
