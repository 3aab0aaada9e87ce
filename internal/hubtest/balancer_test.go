package hubtest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestBalancerKeepsStreamsAnsweredEarly: a backend that answers a POST
// with a stream's head as soon as it has read the body (as an MCP server
// does) gets every stream through the balancer whole. Without FullDuplex
// the balancer's own server drains and closes the request body on that
// head while the proxy's transport still reads it, and some streams are
// cut.
func TestBalancerKeepsStreamsAnsweredEarly(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_ = http.NewResponseController(w).Flush()
		time.Sleep(time.Millisecond)
		_, _ = io.WriteString(w, "data: end\n\n")
	}))
	defer backend.Close()
	b := StartBalancer(t, []string{backend.URL})
	client := &http.Client{Timeout: 10 * time.Second}
	const calls = 2000
	var cut int
	var first string
	for range calls {
		resp, err := client.Post(b.Base+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}`))
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || string(body) != "data: end\n\n" {
			if cut++; first == "" {
				first = strings.TrimSpace(string(body)) + " " + errString(err)
			}
		}
	}
	if cut > 0 {
		t.Fatalf("%d of %d streams cut by the balancer (first: %s)", cut, calls, first)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
