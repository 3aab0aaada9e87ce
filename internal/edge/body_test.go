package edge

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestBodyLimit: a declared length over the limit is refused before
// reading, a chunked body stops at the limit and ReadBody answers 413; a
// body within the limit is read and left readable.
func TestBodyLimit(t *testing.T) {
	e := New(Options{MaxBodyBytes: 8})
	for _, tc := range []struct {
		name   string
		body   string
		length int64 // -1: chunked
		status int
		msg    string
	}{
		{"within", "12345678", 8, http.StatusOK, ""},
		{"declared too large", "123456789", 9, http.StatusRequestEntityTooLarge, "request body of 9 bytes is larger than the hub's limit of 8 bytes"},
		{"chunked too large", "123456789", -1, http.StatusRequestEntityTooLarge, "request body is larger than the hub's limit of 8 bytes"},
	} {
		var read string
		h := e.LimitBody(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, ok := e.ReadBody(w, r); ok {
				b, _ := io.ReadAll(r.Body)
				read = string(b)
			}
		}))
		r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(tc.body))
		r.ContentLength = tc.length
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tc.status || !strings.Contains(w.Body.String(), tc.msg) {
			t.Errorf("%s: %d %s, want %d with %q", tc.name, w.Code, w.Body, tc.status, tc.msg)
		}
		if tc.status == http.StatusOK && read != tc.body {
			t.Errorf("%s: body read again as %q", tc.name, read)
		}
	}
}
