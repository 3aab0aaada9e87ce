package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// TestStaticHandler: the static server sends the identity bytes unless the
// client accepts gzip and it has them compressed, always with
// Content-Length.
func TestStaticHandler(t *testing.T) {
	body, gz := []byte(`{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`), []byte("\x1f\x8bcompressed")
	for _, c := range []struct {
		name     string
		gz       []byte
		accept   string
		want     []byte
		encoding string
	}{
		{"identity, no gzip kept", nil, "gzip", body, ""},
		{"client accepts none", gz, "", body, ""},
		{"client accepts gzip", gz, "gzip, deflate", gz, "gzip"},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(string(listRequest)))
			if c.accept != "" {
				req.Header.Set("Accept-Encoding", c.accept)
			}
			rec := httptest.NewRecorder()
			staticHandler(body, c.gz, "application/json").ServeHTTP(rec, req)
			got, _ := io.ReadAll(rec.Body)
			h := rec.Header()
			if string(got) != string(c.want) || h.Get("Content-Encoding") != c.encoding ||
				h.Get("Content-Length") != strconv.Itoa(len(c.want)) || h.Get("Content-Type") != "application/json" {
				t.Errorf("got %q with %v", got, h)
			}
		})
	}
}

// TestWireListEncodings: the reply fetched from a server that compresses
// (here the static handler itself) keeps both forms, and one list of it
// reads the same bytes in either encoding, through the client of each; a
// server that does not compress leaves the gzip form out.
func TestWireListEncodings(t *testing.T) {
	body := []byte(`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"},{"name":"b"}]}}`)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(body)
	_ = zw.Close()
	for _, c := range []struct {
		name string
		gz   []byte
	}{{"server compresses", buf.Bytes()}, {"server does not compress", nil}} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(staticHandler(body, c.gz, "application/json"))
			defer srv.Close()
			raw := &http.Client{Transport: &http.Transport{DisableCompression: true}}
			ctx := context.Background()
			reply, err := fetchReply(ctx, raw, srv.URL, http.Header{}, 2)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(reply.body, body) || !bytes.Equal(reply.gzip, c.gz) || reply.contentType != "application/json" {
				t.Fatalf("reply %+v", reply)
			}
			if _, err := fetchReply(ctx, raw, srv.URL, http.Header{}, 3); err == nil {
				t.Error("a reply with 2 tools passed for 3")
			}
			for _, hc := range []*http.Client{raw, srv.Client()} {
				_, pages, size, d, err := wireList(hc, srv.URL, http.Header{}, len(body))(ctx)
				if err != nil || pages != 1 || size != len(body) || d <= 0 {
					t.Errorf("wireList: %d pages, %d bytes in %v, %v", pages, size, d, err)
				}
			}
			if _, _, _, _, err := wireList(raw, srv.URL, http.Header{}, len(body)+1)(ctx); err == nil {
				t.Error("a reply of the wrong size passed")
			}
		})
	}
}
