package upstream

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/config"
)

// hunter2 stands for whatever an internal page or service at a registered
// URL may say: it must stay out of the status everyone reads, and be in
// the detail admins read.
const hunter2 = "password=hunter2"

// Every way an answer's text could reach the status: mcp-go's errors that
// quote a body, a JSON-RPC error's message, a JSON answer that is no
// response, Go's quote of a malformed answer.
func TestStatusShowsNoUpstreamText(t *testing.T) {
	page := `<html><body><form>admin ` + hunter2 + `</form></body></html>`
	answer := func(code int, ctype, body string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ctype)
			w.WriteHeader(code)
			_, _ = io.WriteString(w, body)
		})
	}
	rpcError := func(code int) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":0,"error":{"code":`+strconv.Itoa(code)+`,"message":"no: `+hunter2+`"}}`)
		})
	}
	for _, tc := range []struct {
		name      string
		transport config.Transport
		h         http.Handler
		want      string // the whole status error
	}{
		{"html 200", config.TransportStreamableHTTP, answer(200, "text/html; charset=utf-8", page),
			"initialize: answer is not JSON: HTTP 200 OK (text/html)"},
		{"html 404", config.TransportStreamableHTTP, answer(404, "text/html", page),
			"initialize: HTTP 404 Not Found (text/html)"},
		{"html 500", config.TransportStreamableHTTP, answer(500, "text/html", page),
			"initialize: HTTP 500 Internal Server Error (text/html)"},
		{"sse json 502", config.TransportSSE, answer(502, "application/json", `{"error":"`+hunter2+`"}`),
			"start transport: HTTP 502 Bad Gateway (application/json)"},
		{"json no response", config.TransportStreamableHTTP, answer(200, "application/json", `{"secret":"`+hunter2+`"}`),
			""},
		{"rpc error, known code", config.TransportStreamableHTTP, rpcError(-32602),
			"initialize: the upstream answered with JSON-RPC error: invalid params"},
		{"rpc error, own code", config.TransportStreamableHTTP, rpcError(-32000),
			"initialize: the upstream answered with a JSON-RPC error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := serve(t, tc.h)
			path := "/mcp"
			if tc.transport == config.TransportSSE {
				path = "/sse"
			}
			spec := secretSpec("internal", ts.URL+path)
			spec.Transport = tc.transport
			st := failOnce(t, spec)
			t.Logf("error %q detail %q", st.Error, st.Detail)
			if strings.Contains(st.Error, "hunter2") || tc.want != "" && st.Error != tc.want {
				t.Errorf("status error %q, want %q", st.Error, tc.want)
			}
			if !strings.Contains(st.Detail, hunter2) {
				t.Errorf("status detail %q does not show admins what the upstream said", st.Detail)
			}
		})
	}
}

// A JSON-RPC error of the upstream's own code over WebSocket, where no
// HTTP answer is kept to recognise its text by.
func TestStatusShowsNoRPCMessageOverWebSocket(t *testing.T) {
	ts := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer conn.Close()
		for {
			var req struct {
				ID json.RawMessage `json:"id"`
			}
			if err := conn.ReadJSON(&req); err != nil {
				return
			}
			if req.ID != nil {
				_ = conn.WriteMessage(websocket.TextMessage, []byte(`{"jsonrpc":"2.0","id":`+string(req.ID)+`,"error":{"code":-32000,"message":"`+hunter2+`"}}`))
			}
		}
	}))
	spec := secretSpec("ws", "ws"+strings.TrimPrefix(ts.URL, "http")+"/ws")
	spec.Transport = config.TransportWebSocket
	st := failOnce(t, spec)
	t.Logf("error %q detail %q", st.Error, st.Detail)
	if st.Error != "initialize: the upstream answered with a JSON-RPC error" || !strings.Contains(st.Detail, hunter2) {
		t.Errorf("status error %q, detail %q", st.Error, st.Detail)
	}
}

// Something that is not an HTTP server at all: Go's client quotes its
// banner, and the status must not.
func TestStatusShowsNoBanner(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			// After the request, as a server would: before it, Go's
			// client drops the answer as unsolicited.
			_, _ = bufio.NewReader(conn).ReadString('\n')
			_, _ = io.WriteString(conn, "SSH-2.0-"+hunter2+"\r\n")
			conn.Close()
		}
	}()
	st := failOnce(t, secretSpec("banner", "http://"+ln.Addr().String()+"/mcp"))
	t.Logf("error %q detail %q", st.Error, st.Detail)
	if strings.Contains(st.Error, "hunter2") || !strings.Contains(st.Error, "malformed HTTP") || !strings.Contains(st.Detail, hunter2) {
		t.Errorf("status error %q", st.Error)
	}
}

// failOnce connects a client to spec once and returns its error status.
func failOnce(t *testing.T, spec config.ServerSpec) Status {
	t.Helper()
	var logs lockedBuffer
	c := New(spec, Options{ConnectTimeout: 2 * time.Second, BackoffMin: time.Hour, BackoffMax: time.Hour},
		zerolog.New(&logs), func() {})
	c.Start(context.Background())
	t.Cleanup(c.Stop)
	st := waitState(t, c, StateError)
	assertNoSecret(t, "status error", st.Error)
	assertNoSecret(t, "status detail", st.Detail)
	assertNoSecret(t, "log", logs.String())
	if u := c.Unavailable(); u == nil || strings.Contains(u.Error(), "hunter2") {
		t.Errorf("a call's error %v shows the upstream's text", u)
	}
	return st
}
