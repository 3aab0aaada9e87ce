package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
)

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
		if f := initializeFlags(msg); f.Relayed != want {
			t.Errorf("initializeFlags(%s) = %+v, want relayed %v", body, f, want)
		}
	}
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
