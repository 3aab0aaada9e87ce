package main

import (
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
