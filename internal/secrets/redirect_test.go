package secrets

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

func TestSameOrigin(t *testing.T) {
	cases := []struct {
		a, b string
		want bool
	}{
		{"http://h:80/a", "http://h/b?q", true},
		{"https://H.example/a", "https://h.example:443/", true},
		{"http://h:8080/", "http://h:8080/x", true},
		{"http://h:8080/", "http://h:8081/", false},
		{"http://h/", "https://h/", false},
		{"http://h/", "http://sub.h/", false},
		{"http://127.0.0.1:1/", "http://localhost:1/", false},
	}
	for _, tc := range cases {
		a, _ := url.Parse(tc.a)
		b, _ := url.Parse(tc.b)
		if got := SameOrigin(a, b); got != tc.want {
			t.Errorf("SameOrigin(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// headerLog records the headers of every request a server gets.
type headerLog struct {
	mu   sync.Mutex
	seen []http.Header
}

func (l *headerLog) add(h http.Header) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = append(l.seen, h.Clone())
}

func (l *headerLog) all() []http.Header {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]http.Header(nil), l.seen...)
}

// TestRedirectPolicies sends a request with credentials to a server that
// redirects first within its origin and then to a second server on
// another port of 127.0.0.1: the second server never sees a credential.
func TestRedirectPolicies(t *testing.T) {
	const tok = "Bearer s3cr3t-token"
	var other headerLog
	second := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		other.add(r.Header)
		_, _ = w.Write([]byte("second"))
	}))
	defer second.Close()
	var own headerLog
	first := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		own.add(r.Header)
		switch r.URL.Path {
		case "/start":
			http.Redirect(w, r, "/moved", http.StatusTemporaryRedirect)
		case "/moved":
			http.Redirect(w, r, second.URL+"/elsewhere", http.StatusTemporaryRedirect)
		}
	}))
	defer first.Close()

	send := func(policy func(*http.Request, []*http.Request) error) (*http.Response, error) {
		req, _ := http.NewRequest(http.MethodGet, first.URL+"/start?api_key=in-query-1234", nil)
		req.Header.Set("Authorization", tok)
		req.Header.Set("X-API-Key", "key-5678")
		req.Header.Set("Mcp-Session-Id", "session-9")
		req.Header.Set("Accept", "application/json")
		resp, err := WithPolicy(nil, policy).Do(req)
		if resp != nil {
			resp.Body.Close()
		}
		return resp, err
	}

	t.Run("strip", func(t *testing.T) {
		resp, err := send(StripCredentials)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("strip policy: %v %v", resp, err)
		}
		checkOwnKept(t, &own)
		seen := other.all()
		if len(seen) != 1 {
			t.Fatalf("second server got %d requests, want 1", len(seen))
		}
		for k, v := range seen[0] {
			joined := strings.Join(v, ",")
			for _, bad := range []string{"s3cr3t", "key-5678", "session-9", "in-query"} {
				if strings.Contains(joined, bad) {
					t.Errorf("second server saw %s: %s", k, joined)
				}
			}
		}
		if seen[0].Get("Accept") != "application/json" {
			t.Errorf("harmless header dropped: %v", seen[0])
		}
	})

	t.Run("refuse", func(t *testing.T) {
		own.seen, other.seen = nil, nil
		_, err := send(RefuseCrossOrigin)
		if !errors.Is(err, ErrCrossOrigin) || !strings.Contains(err.Error(), second.URL) {
			t.Fatalf("refuse policy: error %v, want ErrCrossOrigin naming %s", err, second.URL)
		}
		checkOwnKept(t, &own)
		if n := len(other.all()); n != 0 {
			t.Fatalf("second server got %d requests", n)
		}
	})
}

// checkOwnKept checks that the redirect within the first origin kept the
// credentials.
func checkOwnKept(t *testing.T, own *headerLog) {
	t.Helper()
	seen := own.all()
	if len(seen) != 2 {
		t.Fatalf("first server got %d requests, want 2", len(seen))
	}
	if seen[1].Get("Authorization") == "" || seen[1].Get("X-API-Key") == "" {
		t.Errorf("same-origin redirect dropped credentials: %v", seen[1])
	}
}
