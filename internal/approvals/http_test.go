package approvals

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/peers"
)

// replica serves g's REST face as the hub mounts it, with callers named by
// their bearer token (a test's stand-in for the hub's auth).
func replica(g *Gate) http.Handler {
	who := map[string]callers.Caller{"bot": bot, "ops": admin, "alice": alice}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/mcp/approvals", g.HandleList)
	mux.HandleFunc("POST /api/mcp/approvals/{id}", g.HandleDecide)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := who[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
		if !ok {
			http.Error(w, "who?", http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r.WithContext(callers.With(r.Context(), c)))
	})
}

func do(t *testing.T, method, url, token, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestDecisionsAcrossReplicas: two replicas with nothing shared. A call
// held on one is listed by the other, approved through the other (the
// decision passed on with the approver's own credentials and checked by
// the replica holding the call), and every refusal keeps its status
// across the hop: the caller's own approval, a caller that is not an
// approver, other arguments, a replay, an unknown id.
func TestDecisionsAcrossReplicas(t *testing.T) {
	var a, b *Gate
	srvA := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { replica(a).ServeHTTP(w, r) }))
	defer srvA.Close()
	srvB := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { replica(b).ServeHTTP(w, r) }))
	defer srvB.Close()
	addrs := []string{strings.TrimPrefix(srvA.URL, "http://"), strings.TrimPrefix(srvB.URL, "http://")}
	var changes atomic.Int32
	a = New(Options{Peers: peers.New(addrs, 1<<20), OnChange: func() { changes.Add(1) }})
	b = New(Options{Peers: peers.New(addrs, 1<<20)})

	p, done := holdAsync(t, a, Request{Caller: bot, Tool: "merge_pull_request", Server: "github", Arguments: json.RawMessage(`{"pr":7}`)})
	// OnChange follows the call's listing (the console fetches the list
	// it announces), so it may come just after holdAsync saw the listing.
	for end := time.Now().Add(5 * time.Second); changes.Load() == 0 && time.Now().Before(end); {
		time.Sleep(time.Millisecond)
	}
	if changes.Load() == 0 {
		t.Error("OnChange was not called when the call started waiting")
	}

	status, body := do(t, http.MethodGet, srvB.URL+"/api/mcp/approvals", "ops", "")
	var l listing
	if err := json.Unmarshal([]byte(body), &l); status != http.StatusOK || err != nil || len(l.Approvals) != 1 || l.Approvals[0].ID != p.ID || !l.Approver || l.Approvals[0].Own {
		t.Fatalf("replica B's list: %d %s", status, body)
	}
	var args bytes.Buffer
	if json.Compact(&args, l.Approvals[0].Arguments) != nil || args.String() != `{"pr":7}` {
		t.Errorf("arguments listed as %s", l.Approvals[0].Arguments)
	}
	status, body = do(t, http.MethodGet, srvB.URL+"/api/mcp/approvals", "alice", "")
	if json.Unmarshal([]byte(body), &l); status != http.StatusOK || len(l.Approvals) != 0 || l.Approver {
		t.Fatalf("alice (no approver, no call of hers) sees %d %s", status, body)
	}
	status, body = do(t, http.MethodGet, srvB.URL+"/api/mcp/approvals", "bot", "")
	if json.Unmarshal([]byte(body), &l); status != http.StatusOK || len(l.Approvals) != 1 || l.Approver || !l.Approvals[0].Own {
		t.Fatalf("bot does not see its own held call: %d %s", status, body)
	}

	url := srvB.URL + "/api/mcp/approvals/" + p.ID
	for _, tc := range []struct {
		name, token, body string
		status            int
		says              string
	}{
		{"its own caller, no approver", "bot", `{"decision":"approve"}`, http.StatusForbidden, "bot may not decide held calls"},
		{"not an approver", "alice", `{"decision":"approve"}`, http.StatusForbidden, "not an approver"},
		{"other arguments", "ops", `{"decision":"approve","argumentsSha256":"` + strings.Repeat("a", 64) + `"}`, http.StatusConflict, "not the ones shown"},
		{"no verdict", "ops", `{"decision":"maybe"}`, http.StatusBadRequest, `is not approve or deny`},
		{"unknown member", "ops", `{"decision":"approve","forAll":true}`, http.StatusBadRequest, "unknown field"},
		{"unknown id", "ops", `{"decision":"approve"}`, http.StatusNotFound, "no call waits"},
		{"approve", "ops", `{"decision":"approve","argumentsSha256":"` + p.ArgumentsSHA256 + `"}`, http.StatusOK, `"verdict": "approved"`},
		{"replayed", "ops", `{"decision":"approve"}`, http.StatusConflict, "already decided"},
	} {
		u := url
		if tc.name == "unknown id" {
			u = srvB.URL + "/api/mcp/approvals/NOSUCHCALL"
		}
		status, body := do(t, http.MethodPost, u, tc.token, tc.body)
		if status != tc.status || !strings.Contains(body, tc.says) {
			t.Errorf("%s: %d %s, want %d with %q", tc.name, status, body, tc.status, tc.says)
		}
	}
	if d := decision(t, done); d.Verdict != Approved || d.By != "ops" {
		t.Fatalf("decision %+v", d)
	}
}

// TestDenyReachesTheCaller: a denial's reason is what the held call ends
// with; a reason too long is refused before anything is decided.
func TestDenyReachesTheCaller(t *testing.T) {
	g := New(Options{})
	srv := httptest.NewServer(replica(g))
	defer srv.Close()
	p, done := holdAsync(t, g, Request{Caller: bot, Tool: "delete_file", Server: "fs"})
	url := srv.URL + "/api/mcp/approvals/" + p.ID
	if status, body := do(t, http.MethodPost, url, "ops", `{"decision":"deny","reason":"`+strings.Repeat("x", maxReason+1)+`"}`); status != http.StatusBadRequest {
		t.Fatalf("a long reason: %d %s", status, body)
	}
	if status, body := do(t, http.MethodPost, url+"x", "ops", `{"decision":"deny","reason":"`+strings.Repeat("é", maxReason)+`"}`); status != http.StatusNotFound {
		t.Fatalf("a reason of %d characters (more bytes) refused: %d %s", maxReason, status, body)
	}
	if status, body := do(t, http.MethodPost, url, "ops", `{"decision":"deny","reason":"  use a branch  "}`); status != http.StatusOK {
		t.Fatalf("deny: %d %s", status, body)
	}
	if d := decision(t, done); d.Verdict != Denied || d.Reason != "use a branch" {
		t.Fatalf("decision %+v", d)
	}
}

// TestWebhook: a new held call is POSTed with its links and the
// configured credential; a failed delivery's error names the host only,
// never the URL's path (often the hook's secret).
func TestWebhook(t *testing.T) {
	got := make(chan *http.Request, 1)
	bodies := make(chan []byte, 1)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- r
		bodies <- b
	}))
	defer hook.Close()
	g := New(Options{Webhook: &Webhook{URL: hook.URL + "/hooks/T0/SECRETPATH", Authorization: "Bearer hook-token", ConsoleURL: "https://hub.example.com/", Client: hook.Client()}})
	p, done := holdAsync(t, g, Request{Caller: bot, Tool: "delete_file", Server: "fs", Arguments: json.RawMessage(`{"path":"/etc"}`)})
	r, body := <-got, <-bodies
	var ev WebhookEvent
	if err := json.Unmarshal(body, &ev); err != nil || ev.Type != "approval.requested" || ev.Approval.ID != p.ID || ev.Approval.Tool != "delete_file" {
		t.Fatalf("webhook body %s", body)
	}
	if ev.Links.Console != "https://hub.example.com/console/#approval="+p.ID || ev.Links.Decide != "https://hub.example.com/api/mcp/approvals/"+p.ID {
		t.Errorf("links %+v", ev.Links)
	}
	if r.Header.Get("Authorization") != "Bearer hook-token" || r.Header.Get("Content-Type") != "application/json" {
		t.Errorf("headers %v", r.Header)
	}
	if _, err := g.Decide(admin, p.ID, false, "no", ""); err != nil {
		t.Fatal(err)
	}
	decision(t, done)
	g.Close()

	down := &Webhook{URL: "http://127.0.0.1:1/hooks/T0/SECRETPATH", Client: http.DefaultClient}
	err := down.deliver(context.Background(), WebhookEvent{})
	if err == nil || strings.Contains(err.Error(), "SECRETPATH") || !strings.Contains(err.Error(), "http://127.0.0.1:1") {
		t.Fatalf("delivery error %v", err)
	}
}
