package httpjson_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/purko-io/mcp-hub/internal/httpjson"
)

// TestWrite: the status, a JSON type no browser sniffs as another, and
// indented output for people reading with curl.
func TestWrite(t *testing.T) {
	w := httptest.NewRecorder()
	httpjson.Write(w, http.StatusConflict, map[string]string{"error": "<b>taken</b>"})
	if w.Code != http.StatusConflict || w.Header().Get("Content-Type") != "application/json" || w.Header().Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("%d %v", w.Code, w.Header())
	}
	if got, want := w.Body.String(), "{\n  \"error\": \"\\u003cb\\u003etaken\\u003c/b\\u003e\"\n}\n"; got != want {
		t.Fatalf("body %q, want %q", got, want)
	}
}

func TestErrorText(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{"error":"needs an admin caller"}`, "needs an admin caller"},
		{`{"error":{"code":-32602,"message":"no such server"}}`, "no such server"},
		{"  upstream went away \n", "upstream went away"},
		{`{"detail":"other shape"}`, `{"detail":"other shape"}`},
	} {
		if got := httpjson.ErrorText([]byte(tc.body)); got != tc.want {
			t.Errorf("ErrorText(%s) = %q, want %q", tc.body, got, tc.want)
		}
	}
}
