package console

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, path string) (*http.Response, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	res := rec.Result()
	body, _ := io.ReadAll(res.Body)
	return res, string(body)
}

// The page loads nothing from elsewhere, and everything it names is embedded.
func TestPageRefersOnlyToEmbeddedAssets(t *testing.T) {
	res, page := get(t, "/")
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Security-Policy") != CSP {
		t.Fatalf("GET /: %d, CSP %q", res.StatusCode, res.Header.Get("Content-Security-Policy"))
	}
	refs := regexp.MustCompile(`(?:src|href)="([^"]*)"`).FindAllStringSubmatch(page, -1)
	if len(refs) < 2 {
		t.Fatalf("the page names %d assets, want its script and style at least", len(refs))
	}
	for _, m := range refs {
		ref := m[1]
		switch {
		case strings.HasPrefix(ref, "/console/"):
			if res, _ := get(t, ref); res.StatusCode != http.StatusOK || res.Header.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("%s: %d, X-Content-Type-Options %q", ref, res.StatusCode, res.Header.Get("X-Content-Type-Options"))
			}
		case strings.HasPrefix(ref, "/api/"), ref == "/metrics", strings.HasPrefix(ref, "data:"):
		default:
			t.Errorf("the page refers to %q, outside the hub", ref)
		}
	}
}

// The script builds the page from text nodes only: what the hub lists
// (tool descriptions, errors, diffs: an upstream's text) is never HTML.
func TestScriptNeverParsesHTML(t *testing.T) {
	_, js := get(t, "/console/console.js")
	for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"} {
		if strings.Contains(js, bad) {
			t.Errorf("console.js uses %s", bad)
		}
	}
	if !strings.Contains(js, "sessionStorage") || strings.Contains(js, "localStorage") || strings.Contains(js, "document.cookie") {
		t.Error("console.js must keep the token in sessionStorage only")
	}
}
