package server

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/edge"
	"github.com/purko-io/mcp-hub/internal/peers"
)

// A client's answer to a server request that no one waits for any more
// (its call ended first) is accepted and dropped: a 404 would tell a
// Streamable HTTP client its session is gone, and it would start over.
// Another caller's session is still not found.
func TestLateAnswerIsAccepted(t *testing.T) {
	a := newFakeUpstream(t, "alpha")
	log := &lockedBuffer{}
	h := newTestHubLog(t, []config.ServerSpec{a.spec()}, hubOpts{}, log)
	h.waitConnected("alpha")
	sid := h.initializeSession(t)
	for _, tc := range []struct {
		name   string
		sid    string
		id     string
		status int
	}{
		{"own session, numeric id", sid, `7`, http.StatusAccepted},       // mcp-go: 404
		{"own session, string id", sid, `"late-1"`, http.StatusAccepted}, // mcp-go: 400
		{"another caller's session", otherBinding(sid), `7`, http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			answer := `{"jsonrpc":"2.0","id":` + tc.id + `,"result":{"action":"accept","content":{}}}`
			before := log.len()
			resp, body := h.send(t, http.MethodPost, "/mcp", strings.NewReader(answer),
				"Mcp-Session-Id", tc.sid, "Mcp-Protocol-Version", "2025-11-25")
			mustf(t, resp.StatusCode == tc.status, "answer: %s %s, want %d", resp.Status, body, tc.status)
			// An answer with a string id is not mcp-go's (its ids are
			// integers): it is not handed to mcp-go, which logged an error
			// for each, on every answer that reached a replica other than
			// the one that asked.
			if strings.HasPrefix(tc.id, `"`) {
				after := log.since(before)
				mustf(t, !strings.Contains(after, `"level":"error"`), "the hub logged an error for the answer:\n%s", after)
			}
		})
	}
	// The session is still the client's.
	mustf(t, len(toolNamesRaw(t, h, sid)) > 0, "tools/list after the late answer")
}

// otherBinding is id with another caller's binding.
func otherBinding(id string) string {
	b := []byte(id)
	i := strings.IndexByte(id[len("mh2-r-"):], '-') + len("mh2-r-") - 1
	if b[i] == '0' {
		b[i] = '1'
	} else {
		b[i] = '0'
	}
	return string(b)
}

// clientSession is the least of a session mcp-go's context can carry.
type clientSession struct{ id string }

func (s clientSession) SessionID() string                                   { return s.id }
func (s clientSession) NotificationChannel() chan<- mcp.JSONRPCNotification { return nil }
func (s clientSession) Initialize()                                         {}
func (s clientSession) Initialized() bool                                   { return true }

// A server request for a session whose GET stream no replica holds yet
// (the client opens it beside its first requests) waits for the stream,
// as a hub without peers does, and fails when none opens in time.
func TestServerRequestWaitsForTheStream(t *testing.T) {
	for _, tc := range []struct {
		name     string
		refusals int32 // peers' "not here" answers before the stream opens
		wantErr  bool
	}{
		{"stream opens after 3 searches", 3, false},
		{"stream never opens", 1 << 30, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var asked atomic.Int32
			peer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if asked.Add(1) <= tc.refusals {
					http.Error(w, "not here", http.StatusNotFound)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"roots":[{"uri":"file:///w","name":"w"}]}`))
			}))
			defer peer.Close()
			st := newStreams()
			st.peers = peers.New([]string{strings.TrimPrefix(peer.URL, "http://")}, 1<<20)
			st.holderWait = 300 * time.Millisecond
			id := edge.SessionIDs{}.ResolveSessionIdManager(httptest.NewRequest(http.MethodPost, "/mcp", nil)).Generate()
			ctx := mcpserver.NewMCPServer("t", "1").WithContext(context.Background(), clientSession{id})

			var out mcp.ListRootsResult
			handled, err := st.viaStream(ctx, mcp.MethodListRoots, mcp.ListRootsRequest{}, &out)
			mustf(t, handled, "not handled through the peers")
			if tc.wantErr {
				mustf(t, errors.Is(err, peers.ErrNoHolder), "error: %v", err)
				return
			}
			mustf(t, err == nil && len(out.Roots) == 1, "roots: %v %+v", err, out)
			mustf(t, asked.Load() == tc.refusals+1, "asked %d times, want %d", asked.Load(), tc.refusals+1)
		})
	}
}
