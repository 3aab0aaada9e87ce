package edge

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/server"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
)

// session is a ClientSession with an id only.
type session struct {
	server.ClientSession
	id string
}

func (s session) SessionID() string { return s.id }

// TestSessionSlots: a reservation is a slot until a session takes it or
// it is released; a session registered without one is counted all the
// same; caps refuse with 429 (the caller's) and 503 (the hub's), with
// Retry-After and the request's JSON-RPC id.
func TestSessionSlots(t *testing.T) {
	e := New(Options{MaxSessions: 3, MaxSessionsPerCaller: 2})
	ctxOf := func(c callers.Caller) context.Context { return callers.With(context.Background(), c) }
	a := callers.Caller{Name: "a", Ceiling: autonomy.Full}
	b := callers.Caller{Name: "b", Ceiling: autonomy.Full}
	reserve := func(c callers.Caller) (*httptest.ResponseRecorder, *http.Request, func(), bool) {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil).WithContext(ctxOf(c))
		r, release, ok := e.ReserveSession(w, r, json.RawMessage(`7`))
		return w, r, release, ok
	}
	want := func(what string, total, mine int, caller string) {
		t.Helper()
		if gt, gm := e.SessionCount(caller); gt != total || gm != mine {
			t.Fatalf("%s: %d sessions, %d of %s; want %d and %d", what, gt, gm, caller, total, mine)
		}
	}

	_, r1, release1, ok := reserve(a)
	if !ok {
		t.Fatal("first reservation refused")
	}
	e.sessions.registered(r1.Context(), session{id: "s1"})
	release1() // the session took the slot: nothing to give back
	want("a session registered", 1, 1, "a")
	if owner, ok := e.SessionOwner("s1"); !ok || owner != "a" {
		t.Fatalf("owner of s1: %q %v", owner, ok)
	}
	_, _, release2, _ := reserve(a)
	w, _, _, ok := reserve(a)
	if _, _, msg := refusal(t, w); ok || w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" || !strings.Contains(msg, "http.maxSessionsPerCaller") {
		t.Fatalf("a over its cap: %d %v %s", w.Code, w.Header(), w.Body)
	}
	release2() // no session: the slot comes back
	want("a reservation released", 1, 1, "a")

	e.sessions.registered(ctxOf(b), session{id: "s2"}) // no reservation (stdio, say)
	e.sessions.registered(ctxOf(b), session{id: "s2"}) // counted once
	_, _, _, ok = reserve(b)
	want("b registered and reserved", 3, 2, "b")
	w, _, _, ok2 := reserve(a)
	if id, code, msg := refusal(t, w); !ok || ok2 || w.Code != http.StatusServiceUnavailable || id != "7" || code != jsonrpc.CodeServerBusy || !strings.Contains(msg, "http.maxSessions") {
		t.Fatalf("hub full: %d %s", w.Code, w.Body)
	}
	e.sessions.unregistered(context.Background(), session{id: "s1"})
	e.sessions.unregistered(context.Background(), session{id: "s1"})
	want("s1 gone", 2, 0, "a")
	if _, ok := e.SessionOwner("s1"); ok {
		t.Fatal("s1 still owned")
	}
}

func refusal(t *testing.T, w *httptest.ResponseRecorder) (id string, code int, msg string) {
	t.Helper()
	var r struct {
		ID    json.RawMessage `json:"id"`
		Error jsonrpc.Error   `json:"error"`
	}
	if w.Code == http.StatusOK {
		return "", 0, ""
	}
	if err := json.Unmarshal(w.Body.Bytes(), &r); err != nil {
		t.Fatalf("refusal %q: %v", w.Body, err)
	}
	return string(r.ID), r.Error.Code, r.Error.Message
}
