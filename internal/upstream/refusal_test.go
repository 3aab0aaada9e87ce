package upstream

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/config"
)

// An upstream that refuses the hub's credentials: the status says so with
// the HTTP status and what the server wrote, redacted, on both transports
// mcp-go runs (it drops the body of a 401 on its own).
func TestRefusalShowsStatusAndBody(t *testing.T) {
	for _, tc := range []struct {
		name      string
		transport config.Transport
		path      string
		status    int
		want      string
	}{
		{"streamable 401", config.TransportStreamableHTTP, "/mcp", http.StatusUnauthorized, `initialize: the upstream refused the hub's request: 401 Unauthorized: {"error":"invalid_token","detail":"bad token Bearer [redacted]`},
		{"streamable 403", config.TransportStreamableHTTP, "/mcp", http.StatusForbidden, `the upstream refused the hub's request: 403 Forbidden: {"error":"insufficient_scope"`},
		{"sse 401", config.TransportSSE, "/sse", http.StatusUnauthorized, `start transport: the upstream refused the hub's request: 401 Unauthorized: {"error":"invalid_token"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				code := "invalid_token"
				if tc.status == http.StatusForbidden {
					code = "insufficient_scope"
				}
				_, _ = io.WriteString(w, `{"error":"`+code+`","detail":"`+echoHeaders(r)+`"}`)
			}))
			spec := secretSpec("guarded", ts.URL+tc.path)
			spec.Transport = tc.transport
			c := New(spec, Options{ConnectTimeout: time.Second, BackoffMin: time.Hour, BackoffMax: time.Hour}, zerolog.Nop(), func() {})
			c.Start(context.Background())
			t.Cleanup(c.Stop)
			st := waitState(t, c, StateError)
			assertNoSecret(t, "status error", st.Error)
			if !strings.Contains(st.Error, tc.want) {
				t.Fatalf("status error %q\nwant it to hold %q", st.Error, tc.want)
			}
		})
	}
}

func TestTidy(t *testing.T) {
	base := errors.New("connection refused")
	for _, tc := range []struct{ in, want string }{
		{"initialize: failed to send request: failed to send request: connection refused", "initialize: failed to send request: connection refused"},
		{"a: b: a: b", "a: b: a: b"},
		{"x: y", "x: y"},
	} {
		err := tidy(&tidiedError{msg: tc.in, err: base})
		if err.Error() != tc.want || !errors.Is(err, base) {
			t.Errorf("tidy(%q) = %q (Is base: %v), want %q", tc.in, err, errors.Is(err, base), tc.want)
		}
	}
}
