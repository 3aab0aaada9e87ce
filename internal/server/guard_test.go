package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/purko-io/mcp-hub/internal/config"
)

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`

// send makes one request to the hub and returns the response with its
// body read. header holds name, value pairs; "Host" sets the Host header.
func (h *testHub) send(t *testing.T, method, path string, body io.Reader, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, h.url(path), body)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	// A refusal that is not there must fail the test, not hang it on a
	// stream.
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: %s, reading the body: %v", method, path, resp.Status, err)
	}
	return resp, string(b)
}

// openSSE opens GET /sse and returns the message endpoint it announces and
// the stream, which the test closes.
func (h *testHub) openSSE(t *testing.T, header ...string) (string, *bufio.Reader, io.Closer) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, h.url("/sse"), nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	// Streams here last seconds; one that never ends fails the test.
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("GET /sse: %s %s", resp.Status, b)
	}
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			resp.Body.Close()
			t.Fatalf("no endpoint event on /sse: %v", err)
		}
		if ep, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok {
			return ep, br, resp.Body
		}
	}
}

// TestSSEAllowsNoForeignOrigin: mcp-go's SSE server answers every GET /sse
// with "Access-Control-Allow-Origin: *", which lets any page read the
// stream. The hub sends the header only to an allow-listed origin.
func TestSSEAllowsNoForeignOrigin(t *testing.T) {
	h := newLimitedHub(t, hubOpts{AllowedOrigins: []string{"http://localhost:6274"}})
	for _, tc := range []struct {
		name, origin, wantACAO string
	}{
		{name: "no origin", wantACAO: ""},
		{name: "same origin", origin: "http://" + h.addr, wantACAO: ""},
		{name: "allow-listed", origin: "http://localhost:6274", wantACAO: "http://localhost:6274"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, h.url("/sse"), nil)
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			mustf(t, resp.StatusCode == http.StatusOK, "GET /sse: %s", resp.Status)
			got, present := resp.Header["Access-Control-Allow-Origin"]
			if tc.wantACAO == "" {
				mustf(t, !present, "Access-Control-Allow-Origin %q sent to origin %q", got, tc.origin)
			} else {
				mustf(t, len(got) == 1 && got[0] == tc.wantACAO, "Access-Control-Allow-Origin = %q, want %q", got, tc.wantACAO)
			}
		})
	}
	resp, body := h.send(t, http.MethodGet, "/sse", nil, "Origin", "https://evil.example")
	mustf(t, resp.StatusCode == http.StatusForbidden && strings.Contains(body, "https://evil.example"),
		"GET /sse from a foreign page: %s %s", resp.Status, body)
	mustf(t, resp.Header.Get("Access-Control-Allow-Origin") == "", "refusal carries Access-Control-Allow-Origin")
}

// TestMCPFacesRefuseForeignPages: POST /mcp and POST /messages take only
// JSON, and only from non-browser clients, the hub's own origin and the
// allow-list; a page on another loopback port is another site.
func TestMCPFacesRefuseForeignPages(t *testing.T) {
	h := newLimitedHub(t, hubOpts{AllowedOrigins: []string{"http://localhost:6274"}})
	port := h.addr[strings.LastIndexByte(h.addr, ':')+1:]
	endpoint, _, stream := h.openSSE(t)
	defer stream.Close()

	type tc struct {
		name   string
		header []string
		status int    // 0: admitted (200 or 202)
		says   string // in the refusal
		acao   string // Access-Control-Allow-Origin of an admitted request
	}
	cases := []tc{
		{name: "no origin"},
		{name: "same origin", header: []string{"Origin", "http://" + h.addr}},
		{name: "same origin by name", header: []string{"Origin", "http://localhost:" + port, "Host", "localhost:" + port}},
		{name: "json with charset", header: []string{"Content-Type", "application/json; charset=utf-8"}},
		{name: "allow-listed", header: []string{"Origin", "http://localhost:6274"}, acao: "http://localhost:6274"},
		{name: "foreign site", header: []string{"Origin", "https://evil.example"}, status: 403, says: `"https://evil.example"`},
		{name: "other loopback port", header: []string{"Origin", "http://localhost:3000"}, status: 403, says: "localhost:3000"},
		{name: "hub's port, other name", header: []string{"Origin", "http://localhost:" + port}, status: 403, says: "http.allowedOrigins"},
		{name: "opaque origin", header: []string{"Origin", "null"}, status: 403, says: `"null"`},
		{name: "text/plain", header: []string{"Content-Type", "text/plain"}, status: 415, says: "application/json"},
		{name: "form", header: []string{"Content-Type", "application/x-www-form-urlencoded"}, status: 415, says: "application/json"},
		{name: "no content type", header: []string{"Content-Type", ""}, status: 415, says: "application/json"},
	}
	for _, face := range []struct{ path, body string }{
		{"/mcp", initBody},
		{endpoint, `{"jsonrpc":"2.0","id":7,"method":"ping"}`},
	} {
		for _, c := range cases {
			t.Run(strings.SplitN(face.path, "?", 2)[0]+"/"+c.name, func(t *testing.T) {
				resp, body := h.send(t, http.MethodPost, face.path, strings.NewReader(face.body), c.header...)
				if c.status == 0 {
					mustf(t, resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusAccepted, "refused: %s %s", resp.Status, body)
					mustf(t, resp.Header.Get("Access-Control-Allow-Origin") == c.acao, "Access-Control-Allow-Origin = %q, want %q",
						resp.Header.Get("Access-Control-Allow-Origin"), c.acao)
					return
				}
				var rpc struct {
					Error struct{ Message string } `json:"error"`
				}
				mustf(t, json.Unmarshal([]byte(body), &rpc) == nil && rpc.Error.Message != "", "refusal is not a JSON-RPC error: %s", body)
				mustf(t, resp.StatusCode == c.status && strings.Contains(rpc.Error.Message, c.says), "got %s %s, want %d saying %s", resp.Status, body, c.status, c.says)
			})
		}
	}

	// A browser asks before a cross-site JSON POST: only the allow-list is
	// told yes.
	for _, origin := range []string{"http://localhost:6274", "https://evil.example"} {
		req, _ := http.NewRequest(http.MethodOptions, h.url("/mcp"), nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "content-type, mcp-session-id")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		allowed := origin == "http://localhost:6274"
		mustf(t, (resp.StatusCode == http.StatusNoContent) == allowed, "preflight from %s: %s", origin, resp.Status)
		mustf(t, (resp.Header.Get("Access-Control-Allow-Origin") == origin) == allowed, "preflight from %s: Access-Control-Allow-Origin %q",
			origin, resp.Header.Get("Access-Control-Allow-Origin"))
		if allowed {
			mustf(t, strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "mcp-session-id"), "preflight allows headers %q", resp.Header.Get("Access-Control-Allow-Headers"))
		}
	}
}

// TestHostCheckOnEveryRoute: DNS rebinding protection covers the JSON
// listing, metrics and WebSocket, not only what mcp-go checks.
func TestHostCheckOnEveryRoute(t *testing.T) {
	h := newLimitedHub(t, hubOpts{})
	port := h.addr[strings.LastIndexByte(h.addr, ':')+1:]
	for _, tc := range []struct {
		method, path string
		body         string
	}{
		{http.MethodGet, "/api/mcp/tools", ""},
		{http.MethodGet, "/metrics", ""},
		{http.MethodGet, "/ws", ""},
		{http.MethodPost, "/mcp", initBody},
	} {
		t.Run(tc.path, func(t *testing.T) {
			var body io.Reader
			if tc.body != "" {
				body = strings.NewReader(tc.body)
			}
			resp, text := h.send(t, tc.method, tc.path, body, "Host", "rebound.example:"+port)
			mustf(t, resp.StatusCode == http.StatusForbidden && strings.Contains(text, "rebound.example") && strings.Contains(text, "DNS rebinding"),
				"%s %s with a rebound Host: %s %s", tc.method, tc.path, resp.Status, text)
			if tc.path == "/ws" {
				return // a plain GET is no WebSocket handshake
			}
			if tc.body != "" {
				body = strings.NewReader(tc.body)
			}
			resp, text = h.send(t, tc.method, tc.path, body, "Host", "localhost:"+port)
			mustf(t, resp.StatusCode == http.StatusOK, "%s %s with Host localhost: %s %s", tc.method, tc.path, resp.Status, text)
		})
	}
}

// TestWebSocketOriginLikeMCP: /ws admits exactly the origins /mcp does.
func TestWebSocketOriginLikeMCP(t *testing.T) {
	h := newLimitedHub(t, hubOpts{AllowedOrigins: []string{"http://localhost:6274"}})
	url := "ws://" + h.addr + "/ws"
	for _, tc := range []struct {
		origin string
		ok     bool
	}{
		{"", true},
		{"http://" + h.addr, true},
		{"http://localhost:6274", true},
		{"http://localhost:3000", false},
		{"https://evil.example", false},
	} {
		t.Run(cmpOr(tc.origin, "none"), func(t *testing.T) {
			header := http.Header{}
			if tc.origin != "" {
				header.Set("Origin", tc.origin)
			}
			ws, resp, err := websocket.DefaultDialer.Dial(url, header)
			if !tc.ok {
				mustf(t, err != nil && resp != nil && resp.StatusCode == http.StatusForbidden, "origin %q: err %v, want 403", tc.origin, err)
				return
			}
			if err != nil {
				t.Fatalf("origin %q refused: %v", tc.origin, err)
			}
			defer ws.Close()
			mustf(t, ws.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)) == nil, "write")
			_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, msg, err := ws.ReadMessage()
			mustf(t, err == nil && bytes.Contains(msg, []byte(`"id":1`)), "ping over /ws: %s %v", msg, err)
		})
	}
}

// chunked hides a body's length, so the client sends it chunked.
type chunked struct{ io.Reader }

// TestBodyLimitOnEveryFace: bodies over the limit (4 MiB by default) are
// refused with 413 saying the limit, declared or not; a WebSocket message
// over it ends the connection with 1009.
func TestBodyLimitOnEveryFace(t *testing.T) {
	h := newLimitedHub(t, hubOpts{})
	endpoint, _, stream := h.openSSE(t)
	defer stream.Close()
	big := func(n int) string {
		return `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", n) + `"}}`
	}
	const limit = 4 << 20
	for _, tc := range []struct {
		name, path string
		body       io.Reader
		want       int
	}{
		{"mcp declared", "/mcp", strings.NewReader(big(limit + 1)), http.StatusRequestEntityTooLarge},
		{"mcp chunked", "/mcp", chunked{strings.NewReader(big(limit + 1))}, http.StatusRequestEntityTooLarge},
		{"messages declared", endpoint, strings.NewReader(big(limit + 1)), http.StatusRequestEntityTooLarge},
		{"messages chunked", endpoint, chunked{strings.NewReader(big(limit + 1))}, http.StatusRequestEntityTooLarge},
		{"api declared", "/api/mcp/tools", strings.NewReader(big(limit + 1)), http.StatusRequestEntityTooLarge},
		{"messages under the limit", endpoint, strings.NewReader(big(limit - 100)), http.StatusAccepted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			method := http.MethodPost
			if strings.HasPrefix(tc.path, "/api") {
				method = http.MethodGet
			}
			resp, body := h.send(t, method, tc.path, tc.body)
			mustf(t, resp.StatusCode == tc.want, "%s: %s %.200s", tc.name, resp.Status, body)
			if tc.want == http.StatusRequestEntityTooLarge {
				mustf(t, strings.Contains(body, fmt.Sprint(limit)), "413 does not say the limit: %s", body)
			}
		})
	}

	ws, _, err := websocket.DefaultDialer.Dial("ws://"+h.addr+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	_ = ws.WriteMessage(websocket.TextMessage, []byte(big(limit+1)))
	_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, _, err = ws.ReadMessage()
	mustf(t, websocket.IsCloseError(err, websocket.CloseMessageTooBig), "oversized WebSocket message: %v, want close 1009", err)
}

// newLimitedHub starts a hub like newTestHub, with opts.
func newLimitedHub(t *testing.T, opts hubOpts, specs ...config.ServerSpec) *testHub {
	t.Helper()
	if opts.Name == "" {
		opts.Name, opts.Version = "mcp-hub", "test"
	}
	return newTestHubOpts(t, specs, opts)
}
