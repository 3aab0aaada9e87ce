package server

import (
	"context"
	"encoding/json"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/purko-io/mcp-hub/internal/config"
)

func TestSessionIDs(t *testing.T) {
	relayed := sessionIDs{}.ResolveSessionIdManager((&http.Request{}).WithContext(withInitFlags(context.Background(), sessionFlags{relayed: true})))
	plain := sessionIDs{}.ResolveSessionIdManager((&http.Request{}).WithContext(context.Background()))
	r1, r2, p := relayed.Generate(), relayed.Generate(), plain.Generate()
	if r1 == r2 || !strings.HasPrefix(r1, "mh1-r-") || !strings.HasPrefix(p, "mh1-p-") {
		t.Fatalf("ids %q %q %q", r1, r2, p)
	}
	for _, tc := range []struct {
		id      string
		valid   bool
		relayed bool
	}{
		{r1, true, true},
		{p, true, false},
		// mcp-go's own ids (hubs before this one) stay valid: rolling updates.
		{"mcp-session-6f1d4c9e-1f0e-4c44-9a55-b3a5e0a7f001", true, false},
		{"mh1-x-" + strings.Repeat("a", 32), false, false},
		{"mh1-r-" + strings.Repeat("z", 32), false, false},
		{"mh1-r-abc", false, false},
		{"", false, false},
		{"garbage", false, false},
	} {
		// Any replica validates any well-formed id, whoever minted it.
		_, err := sessionIDs{}.ResolveSessionIdManager(nil).Validate(tc.id)
		if (err == nil) != tc.valid {
			t.Errorf("Validate(%q) = %v, want valid %v", tc.id, err, tc.valid)
		}
		f, _ := parseSessionID(tc.id)
		if f.relayed != tc.relayed {
			t.Errorf("parseSessionID(%q).relayed = %v, want %v", tc.id, f.relayed, tc.relayed)
		}
	}
}

func TestInitializeFlags(t *testing.T) {
	for body, want := range map[string]bool{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{"sampling":{}}}}`:    true,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{"elicitation":{}}}}`: true,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{"roots":{}}}}`:       true,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}`:                 false,
	} {
		msg, err := jsonrpc.Parse([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		if f := initializeFlags(msg); f.relayed != want {
			t.Errorf("initializeFlags(%s) = %+v, want relayed %v", body, f, want)
		}
	}
}

// Only a configured peer may ask this replica to send a server request to
// one of its clients; anyone else is refused before the body is read.
func TestPeerRequestOnlyFromPeers(t *testing.T) {
	for _, tc := range []struct {
		peers  []string
		remote string
		want   int
	}{
		{nil, "127.0.0.1:5000", http.StatusForbidden},
		{[]string{"10.1.2.3:8080"}, "127.0.0.1:5000", http.StatusForbidden},
		{[]string{"127.0.0.1:8080"}, "127.0.0.1:5000", http.StatusNotFound}, // a peer; no stream for the session here
	} {
		s := &Server{peers: newPeers(tc.peers), streams: newStreams()}
		req := httptestRequest(`{"session":"mh1-r-`+strings.Repeat("a", 32)+`","method":"roots/list"}`, tc.remote)
		rec := &recorder{header: http.Header{}}
		s.servePeerRequest(rec, req)
		if rec.status != tc.want {
			t.Errorf("peers %v, remote %s: status %d, want %d (%s)", tc.peers, tc.remote, rec.status, tc.want, rec.body.String())
		}
	}
}

func httptestRequest(body, remote string) *http.Request {
	r, _ := http.NewRequest(http.MethodPost, "http://hub"+peerRequestPath, strings.NewReader(body))
	r.RemoteAddr = remote
	return r
}

// A session whose GET stream closed is let go after the grace period (its
// mcp-go registration is dropped), unless a stream comes back in time; its
// id stays valid for the next request.
func TestClosedStreamReleasesSession(t *testing.T) {
	a := newFakeUpstream(t, "alpha")
	h := newTestHub(t, []config.ServerSpec{a.spec()})
	h.waitConnected("alpha")
	h.srv.streams.mu.Lock()
	h.srv.streams.grace = 50 * time.Millisecond
	h.srv.streams.mu.Unlock()
	registered := func(id string) bool {
		h.srv.streams.mu.Lock()
		defer h.srv.streams.mu.Unlock()
		_, ok := h.srv.streams.sessions[id]
		return ok
	}
	sid := h.initializeSession(t)
	openStream := func() func() {
		ctx, stop := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, h.url("/mcp"), nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "stream held", func() bool { _, ok := h.srv.streams.session(sid); return ok })
		return func() { stop(); resp.Body.Close() }
	}
	closeIt := openStream()
	closeIt()
	reopen := openStream() // back within the grace period: kept
	time.Sleep(150 * time.Millisecond)
	mustf(t, registered(sid), "the session was let go while its stream was open")
	reopen()
	waitFor(t, "session let go after its stream closed", func() bool { return !registered(sid) })
	// The id is still good.
	mustf(t, len(toolNamesRaw(t, h, sid)) > 0, "no tools for the session after it was let go")
}

func toolNamesRaw(t *testing.T, h *testHub, sid string) []any {
	req, _ := http.NewRequest(http.MethodPost, h.url("/mcp"), strings.NewReader(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Result struct {
			Tools []any `json:"tools"`
		} `json:"result"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return out.Result.Tools
}
