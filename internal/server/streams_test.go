package server

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/purko-io/mcp-hub/internal/config"
)

// streamEvent is one event of a stream: its id and data.
type streamEvent struct{ id, data string }

// openGetStream opens session sid's GET stream, resuming after lastEventID
// if not empty, and returns its events, pings left out, and the func that
// closes it.
func openGetStream(t *testing.T, h *testHub, sid, lastEventID string) (<-chan streamEvent, func()) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, h.url("/mcp"), nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		t.Fatalf("GET stream: %s", resp.Status)
	}
	events := make(chan streamEvent, 16)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		var id string
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
				id = v
			} else if v, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				if !strings.Contains(v, `"method":"ping"`) {
					events <- streamEvent{id, v}
				}
				id = ""
			}
		}
	}()
	return events, func() { resp.Body.Close() }
}

func nextStreamEvent(t *testing.T, events <-chan streamEvent) streamEvent {
	t.Helper()
	select {
	case ev, ok := <-events:
		if !ok {
			t.Fatal("the stream ended")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event on the stream")
	}
	return streamEvent{}
}

// A session is the hub's (internal/mcpsession) from its initialize on: its
// GET stream gets the catalog's list changes, and a client whose stream
// broke resumes it with Last-Event-ID and gets what it missed.
func TestGetStreamResumes(t *testing.T) {
	a, b := newFakeUpstream(t, "alpha"), newFakeUpstream(t, "beta")
	h := newTestHub(t, []config.ServerSpec{a.spec()})
	h.waitConnected("alpha")
	sid := h.initializeSession(t)
	mustf(t, h.srv.sessions.Get(sid) != nil, "the session of an initialize is not the hub's")

	events, closeStream := openGetStream(t, h, sid, "")
	waitFor(t, "stream open", func() bool { return h.srv.streams.isOpen(sid) })
	h.set(a.spec(), b.spec())
	first := nextStreamEvent(t, events)
	mustf(t, strings.Contains(first.data, "notifications/tools/list_changed") && first.id != "", "first event: %+v", first)
	closeStream()
	waitFor(t, "stream closed", func() bool { return !h.srv.streams.isOpen(sid) })

	h.set(a.spec()) // while the client is away
	waitFor(t, "beta gone", func() bool { return len(h.reg.Catalog().Servers) == 1 })
	events, closeStream = openGetStream(t, h, sid, first.id)
	defer closeStream()
	missed := nextStreamEvent(t, events)
	mustf(t, strings.Contains(missed.data, "notifications/tools/list_changed") && missed.id != "" && missed.id != first.id,
		"after resuming: %+v", missed)
}

// A session the hub answers itself (the fast path) is in use: the idle
// sweep leaves it, and takes one nothing happened on.
func TestFastPathKeepsSessionAlive(t *testing.T) {
	a := newFakeUpstream(t, "alpha")
	h := newLimitedHub(t, hubOpts{SessionIdleTimeout: time.Second}, a.spec())
	h.waitConnected("alpha")
	used, idle := h.initializeSession(t), h.initializeSession(t)
	deadline := time.Now().Add(3 * time.Second) // two sweeps past the timeout
	for time.Now().Before(deadline) {
		mustf(t, len(toolNamesRaw(t, h, used)) > 0, "tools/list")
		time.Sleep(100 * time.Millisecond)
	}
	_, usedLive := h.srv.edge.SessionOwner(used)
	_, idleLive := h.srv.edge.SessionOwner(idle)
	mustf(t, usedLive, "a session in use was swept")
	mustf(t, !idleLive, "an idle session was not swept")
}
