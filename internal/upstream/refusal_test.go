package upstream

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/config"
)

// An upstream that refuses the hub's credentials: the status says so with
// the HTTP status, and its detail (for admins) holds what the server
// wrote, redacted, on both transports mcp-go runs (it drops the body of a
// 401 on its own).
func TestRefusalShowsStatusAndBody(t *testing.T) {
	for _, tc := range []struct {
		name       string
		transport  config.Transport
		path       string
		status     int
		want       string
		wantDetail string
	}{
		{"streamable 401", config.TransportStreamableHTTP, "/mcp", http.StatusUnauthorized,
			`initialize: the upstream refused the hub's request: HTTP 401 Unauthorized (application/json)`, `{"error":"invalid_token","detail":"bad token Bearer [redacted]`},
		{"streamable 403", config.TransportStreamableHTTP, "/mcp", http.StatusForbidden,
			`initialize: the upstream refused the hub's request: HTTP 403 Forbidden (application/json)`, `{"error":"insufficient_scope"`},
		{"sse 401", config.TransportSSE, "/sse", http.StatusUnauthorized,
			`start transport: the upstream refused the hub's request: HTTP 401 Unauthorized (application/json)`, `{"error":"invalid_token"`},
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
			assertNoSecret(t, "status detail", st.Detail)
			if st.Error != tc.want || strings.Contains(st.Error, "_scope") || strings.Contains(st.Error, "_token") {
				t.Fatalf("status error %q\nwant %q, without the body", st.Error, tc.want)
			}
			if !strings.Contains(st.Detail, tc.wantDetail) {
				t.Fatalf("status detail %q\nwant it to hold %q", st.Detail, tc.wantDetail)
			}
		})
	}
}
