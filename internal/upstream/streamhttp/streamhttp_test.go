package streamhttp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/upstream/httpbound"
)

// A Post answers alike whatever form the upstream's answer takes: the
// result's bytes, the JSON-RPC error with its data, a transport.Error for
// anything unusable, *httpbound.TooLargeError past the limit; a server
// request on the answer's stream is refused at once.
func TestPostAnswers(t *testing.T) {
	const result = `{"content":[{"type":"text","text":"ok"}]}`
	for _, tc := range []struct {
		name       string
		ctype      string
		status     int
		body       string // %ID% is the request's id
		want       string // the result, "" for an error
		wantRPC    bool   // a *jsonrpc.Error with data
		wantLarge  bool
		wantRefuse bool
	}{
		{name: "JSON", ctype: "application/json", body: `{"jsonrpc":"2.0","id":"%ID%","result":` + result + `}`, want: result},
		{name: "event stream, a notification first", ctype: "text/event-stream",
			body: "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n" +
				"data: {\"jsonrpc\":\"2.0\",\"id\":\"%ID%\",\"result\":" + result + "}\n\n", want: result},
		{name: "event stream, a server request refused", ctype: "text/event-stream", wantRefuse: true,
			body: "data: {\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"sampling/createMessage\",\"params\":{}}\n\n" +
				"data: {\"jsonrpc\":\"2.0\",\"id\":\"%ID%\",\"result\":" + result + "}\n\n", want: result},
		{name: "JSON-RPC error keeps its data", ctype: "application/json", wantRPC: true,
			body: `{"jsonrpc":"2.0","id":"%ID%","error":{"code":-32602,"message":"bad","data":{"field":"x"}}}`},
		{name: "answer to another id", ctype: "application/json", body: `{"jsonrpc":"2.0","id":"other","result":{}}`},
		{name: "stream ends without the response", ctype: "text/event-stream", body: "data: {\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n\n"},
		{name: "HTTP error", ctype: "text/plain", status: http.StatusBadGateway, body: "upstream down"},
		{name: "over the limit", ctype: "application/json", body: `{"jsonrpc":"2.0","id":"%ID%","result":{"pad":"` + strings.Repeat("x", 2000) + `"}}`, wantLarge: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var refused atomic.Int32
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				msg, err := jsonrpc.Parse(b)
				if err != nil {
					t.Errorf("unreadable request %s: %v", b, err)
					return
				}
				if msg.Kind() == jsonrpc.KindResponse { // the refusal of a server request
					refused.Add(1)
					w.WriteHeader(http.StatusAccepted)
					return
				}
				w.Header().Set("Content-Type", tc.ctype)
				if tc.status != 0 {
					w.WriteHeader(tc.status)
				}
				_, _ = io.WriteString(w, strings.ReplaceAll(tc.body, "%ID%", strings.Trim(string(msg.ID), `"`)))
			}))
			defer ts.Close()
			p := &Post{Client: httpbound.Limit(ts.Client(), "s", 1000), URL: mustURL(t, ts.URL), Header: http.Header{}, IDs: new(atomic.Uint64),
				MaxResponseBytes: 1000, Excerpt: func(r io.Reader, n int) string { b, _ := io.ReadAll(io.LimitReader(r, int64(n))); return string(b) }}
			res, err := p.Request(context.Background(), "tools/call", []byte(`{"name":"t"}`), nil)
			var rpcErr *jsonrpc.Error
			var tooLarge *httpbound.TooLargeError
			var trErr *transport.Error
			switch {
			case tc.want != "":
				if err != nil || string(res) != tc.want {
					t.Fatalf("Request = %s, %v; want %s", res, err, tc.want)
				}
			case tc.wantRPC:
				if !errors.As(err, &rpcErr) || rpcErr.Code != -32602 || string(rpcErr.Data) != `{"field":"x"}` {
					t.Fatalf("Request error %#v; want the JSON-RPC error with its data", err)
				}
			case tc.wantLarge:
				if !errors.As(err, &tooLarge) {
					t.Fatalf("Request error %v; want a TooLargeError", err)
				}
			default:
				if !errors.As(err, &trErr) {
					t.Fatalf("Request = %s, %v; want a transport error", res, err)
				}
			}
			if got := refused.Load() == 1; got != tc.wantRefuse {
				t.Fatalf("server request refused: %v; want %v", got, tc.wantRefuse)
			}
		})
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestPostFollowsRedirects: an upstream that redirects its POSTs (a
// framework adding a trailing slash, say) is followed as http.Client.Do
// follows it, from the first request on.
func TestPostFollowsRedirects(t *testing.T) {
	var hits atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Redirect(w, r, "/mcp/", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/mcp/", func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		b, _ := io.ReadAll(r.Body)
		msg, err := jsonrpc.Parse(b)
		if err != nil {
			t.Errorf("unreadable request %s: %v", b, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(msg.ID)+`,"result":{"ok":true}}`)
	})
	ts := httptest.NewServer(mux)
	defer ts.Close()
	p := &Post{Client: ts.Client(), URL: mustURL(t, ts.URL+"/mcp"), Header: http.Header{}, IDs: new(atomic.Uint64),
		MaxResponseBytes: 1000, Excerpt: func(io.Reader, int) string { return "" }}
	for i, wantHits := range []int32{3, 5} { // 307 + (307, 200) through Do; then Do: 307, 200
		res, err := p.Request(context.Background(), "tools/call", []byte(`{"name":"t"}`), nil)
		if err != nil || string(res) != `{"ok":true}` {
			t.Fatalf("request %d = %s, %v; want the redirected server's result", i+1, res, err)
		}
		if got := hits.Load(); got != wantHits {
			t.Fatalf("after request %d the server saw %d requests, want %d", i+1, got, wantHits)
		}
	}
}

// TestPostTransportErrorWording: a POST that reaches nobody fails as
// http.Client.Do words it (the method and the URL, its password hidden).
func TestPostTransportErrorWording(t *testing.T) {
	ts := httptest.NewServer(http.NotFoundHandler())
	addr := ts.URL
	ts.Close() // nobody listens there now
	u := mustURL(t, addr+"/mcp")
	u.User = url.UserPassword("me", "s3cret")
	p := &Post{Client: &http.Client{}, URL: u, Header: http.Header{}, IDs: new(atomic.Uint64), MaxResponseBytes: 1000}
	_, err := p.Request(context.Background(), "tools/call", []byte(`{"name":"t"}`), nil)
	var trErr *transport.Error
	if !errors.As(err, &trErr) || !strings.Contains(err.Error(), `Post "http://me:`) || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("Request error %v; want a transport error naming the POST, without the password", err)
	}
}
