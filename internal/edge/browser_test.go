package edge

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestSameOrigin(t *testing.T) {
	for _, tc := range []struct {
		origin, host string
		want         bool
	}{
		{"http://127.0.0.1:8080", "127.0.0.1:8080", true},
		{"https://hub.example", "hub.example", true},
		{"https://hub.example", "hub.example:443", true},
		{"http://hub.example:80", "hub.example", true},
		{"HTTP://Hub.Example:8080", "hub.example:8080", true},
		{"http://[::1]:8080", "[::1]:8080", true},
		{"http://localhost:8080", "127.0.0.1:8080", false},
		{"http://localhost:3000", "localhost:8080", false},
		{"https://hub.example", "hub.example:80", false},
		{"http://hub.example.evil:8080", "hub.example:8080", false},
		{"null", "hub.example", false},
		{"file://", "hub.example", false},
		{"chrome-extension://abc", "abc", false},
	} {
		if got := sameOrigin(tc.origin, tc.host); got != tc.want {
			t.Errorf("sameOrigin(%q, %q) = %v, want %v", tc.origin, tc.host, got, tc.want)
		}
	}
}

// TestBrowserGuards: the Host check on a loopback listener, the Origin
// check with the CORS headers of an allowed origin, and the Content-Type
// of a POST, each answered with a JSON-RPC error that says what to change.
func TestBrowserGuards(t *testing.T) {
	e := New(Options{AllowedOrigins: []string{"https://inspector.example/"}})
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
	loopback := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
	for _, tc := range []struct {
		name         string
		method, host string
		header       map[string]string
		local        net.Addr
		status       int
		msg, cors    string
	}{
		{"loopback host", "POST", "localhost:8080", map[string]string{"Content-Type": "application/json"}, loopback, http.StatusTeapot, "", ""},
		{"rebound name", "POST", "evil.example:8080", map[string]string{"Content-Type": "application/json"}, loopback, http.StatusForbidden, "DNS rebinding", ""},
		{"any name off loopback", "POST", "hub.example", map[string]string{"Content-Type": "application/json"}, &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 80}, http.StatusTeapot, "", ""},
		{"same origin", "POST", "127.0.0.1:8080", map[string]string{"Origin": "http://127.0.0.1:8080", "Content-Type": "application/json"}, loopback, http.StatusTeapot, "", ""},
		{"foreign page", "GET", "127.0.0.1:8080", map[string]string{"Origin": "http://localhost:3000"}, loopback, http.StatusForbidden, "http.allowedOrigins", ""},
		{"allowed origin", "POST", "127.0.0.1:8080", map[string]string{"Origin": "https://inspector.example", "Content-Type": "application/json; charset=utf-8"}, loopback, http.StatusTeapot, "", "https://inspector.example"},
		{"preflight", "OPTIONS", "127.0.0.1:8080", map[string]string{"Origin": "https://inspector.example", "Access-Control-Request-Method": "POST"}, loopback, http.StatusNoContent, "", "https://inspector.example"},
		{"text/plain", "POST", "127.0.0.1:8080", map[string]string{"Content-Type": "text/plain"}, loopback, http.StatusUnsupportedMediaType, "application/json", ""},
	} {
		r := httptest.NewRequest(tc.method, "/mcp", strings.NewReader("{}"))
		r.Host = tc.host
		for k, v := range tc.header {
			r.Header.Set(k, v)
		}
		r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, tc.local))
		w := httptest.NewRecorder()
		e.CheckHost(e.MCPFace(ok, false)).ServeHTTP(w, r)
		if w.Code != tc.status || !strings.Contains(w.Body.String(), tc.msg) || w.Header().Get("Access-Control-Allow-Origin") != tc.cors {
			t.Errorf("%s: %d %v %s, want %d with %q, CORS %q", tc.name, w.Code, w.Header(), w.Body, tc.status, tc.msg, tc.cors)
		}
		if tc.msg != "" && w.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%s: refusal is %q, not a JSON-RPC error", tc.name, w.Header().Get("Content-Type"))
		}
	}
}
