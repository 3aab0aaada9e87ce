package answerlog

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Summary says what an answer was in the hub's words only: the standard
// reason phrase, a media type only when it looks like one.
func TestSummaryInTheHubsWords(t *testing.T) {
	for _, tc := range []struct {
		a    Answer
		bad  bool
		want string
	}{
		{Answer{Code: 404, CType: "text/html; charset=utf-8"}, true, "HTTP 404 Not Found (text/html)"},
		{Answer{Code: 200, CType: "text/html"}, true, "answer is not JSON: HTTP 200 OK (text/html)"},
		{Answer{Code: 200, CType: "application/json"}, false, "HTTP 200 OK (application/json)"},
		{Answer{Code: 202}, false, "HTTP 202 Accepted"},
		{Answer{Code: 500, CType: "<script>alert(1)</script>"}, true, "HTTP 500 Internal Server Error"},
		{Answer{Code: 299, CType: "text/event-stream"}, false, "HTTP 299 (text/event-stream)"},
	} {
		if got := tc.a.Summary(); got != tc.want {
			t.Errorf("Summary(%+v) = %q, want %q", tc.a, got, tc.want)
		}
		if got := tc.a.Bad(); got != tc.bad {
			t.Errorf("Bad(%+v) = %v, want %v", tc.a, got, tc.bad)
		}
	}
}

// A refusal is kept with the start of its body, read as the client reads
// it; on a connection a usable answer's body is left alone.
func TestLogKeepsRefusalsAndLeavesResultsAlone(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/refuse" {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, "token expired "+strings.Repeat("x", 2*ExcerptLen))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}))
	defer ts.Close()
	var log Log
	hc := log.Wrap(ts.Client())
	get := func(path string) string {
		resp, err := hc.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if body := get("/refuse"); !strings.HasPrefix(body, "token expired") || len(body) != len("token expired ")+2*ExcerptLen {
		t.Fatalf("the client read %d bytes of the refusal; want all of it", len(body))
	}
	r := log.Refusal()
	if r == nil || r.Code != http.StatusUnauthorized || !strings.HasPrefix(string(r.Head), "token expired") || len(r.Head) != ExcerptLen {
		t.Fatalf("Refusal = %+v; want the 401 with the first %d bytes", r, ExcerptLen)
	}
	if a := log.LastBad(); a == nil || a.Code != http.StatusUnauthorized {
		t.Fatalf("LastBad = %+v; want the refusal, the newest answer", a)
	}
	log.SetConnected(true)
	get("/result")
	if n := len(log.Snapshot()); n != 0 {
		t.Fatalf("%d answers kept on a connection; a result is left alone", n)
	}
	log.SetConnected(false)
	get("/result")
	if snap := log.Snapshot(); len(snap) != 1 || snap[0].Bad() || len(snap[0].Head) == 0 {
		t.Fatalf("without a connection, answers kept %+v; want the result with its start", snap)
	}
	if log.LastBad() != nil {
		t.Fatal("LastBad after a usable answer")
	}
}

// TestEchoed: an error that quotes a kept answer (its start, or a string
// of its JSON or of an event's data) is found; one that does not is not.
func TestEchoed(t *testing.T) {
	var log Log
	log.add(&Answer{Code: 400, CType: "application/json", Head: []byte(`{"error":{"message":"bad token for tenant acme"}}`)})
	log.add(&Answer{Code: 200, CType: "text/event-stream", Head: []byte("event: message\ndata: {\"error\":\"quota exhausted\"}\n")})
	for _, tc := range []struct {
		text string
		want bool
	}{
		{`transport error: {"error":{"message":"bad token`, true},
		{"request failed: bad token for tenant acme", true},
		{"request failed: quota exhausted", true},
		{"connection refused", false},
		{"HTTP 400 Bad Request", false},
	} {
		if got := log.Echoed(tc.text); got != tc.want {
			t.Errorf("Echoed(%q) = %v, want %v", tc.text, got, tc.want)
		}
	}
	log.Reset()
	if log.Echoed("request failed: bad token for tenant acme") {
		t.Error("Echoed after Reset")
	}
}

// TestLastIsTheRequestsAnswer: the answers of a GET stream the server
// refuses, asked for again and again beside a request, neither push the
// request's answer out nor stand for it; without a POST, the newest answer
// does.
func TestLastIsTheRequestsAnswer(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			http.Error(w, "no GET stream here", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		_, _ = io.WriteString(w, "<html>gateway down</html>")
	}))
	defer ts.Close()
	var log Log
	hc := log.Wrap(ts.Client())
	send := func(method string) {
		req, _ := http.NewRequest(method, ts.URL, strings.NewReader("{}"))
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	send(http.MethodGet)
	if a := log.LastBad(); a == nil || a.Code != http.StatusMethodNotAllowed {
		t.Fatalf("LastBad with only a GET answered = %+v; want the GET's answer", a)
	}
	send(http.MethodPost)
	for range 2 * keptAnswers {
		send(http.MethodGet)
	}
	a := log.LastBad()
	if a == nil || a.Code != http.StatusBadGateway || !strings.Contains(string(a.Head), "gateway down") {
		t.Fatalf("LastBad = %+v; want the POST's 502 after %d GET answers", a, 2*keptAnswers)
	}
	if last, _ := log.Last(); last == nil || last.Code != http.StatusBadGateway {
		t.Fatalf("Last = %+v; want the POST's answer", last)
	}
}
