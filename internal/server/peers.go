package server

import (
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"

	"github.com/purko-io/mcp-hub/internal/edge"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/peers"
)

// deliverAnswer serves a client's answer (msg, read from body) to a server
// request locally: to a request sent on a session's GET stream
// (internal/mcpsession) or on a reply stream (replystream.go); and when this
// replica was not waiting for it, passes it on to the replica that sent
// the request (its id names it) or, for an id that names none, to every
// peer (internal/peers).
//
// An answer on one of the hub's sessions that no replica waits for any
// more (its call ended, was cancelled or timed out first) is accepted and
// dropped, as the TypeScript SDK's servers do. mcp-go would answer 404,
// which on Streamable HTTP tells the client its session is gone, and a
// conforming client then starts over. Only the replica the client
// reached says so: to a peer's pass-on it stays a refusal, so the peer
// keeps looking for the replica that waits.
func (s *Server) deliverAnswer(w http.ResponseWriter, r *http.Request, msg *jsonrpc.Message, body []byte) {
	sid := r.Header.Get("Mcp-Session-Id")
	if s.waits.deliver(sid, msg) || s.sessions.Deliver(sid, msg) {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	// mcp-go numbers its server requests with integers, and logs an error
	// for an answer with any other id (the hub's own carry a peer's tag).
	var n int64
	rec := httptest.NewRecorder() // kept, so a peer's verdict can replace it
	if json.Unmarshal(msg.ID, &n) == nil {
		s.streamable.ServeHTTP(rec, r)
	} else {
		rec.WriteHeader(http.StatusNotFound)
	}
	if rec.Code == http.StatusAccepted || peers.PassedOn(r) {
		copyResponse(w, rec)
		return
	}
	if s.peers.PassOn(r, body, peers.HolderOfID(msg.ID)) {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if _, ours := edge.ParseSessionID(sid); ours {
		s.log.Debug().Str("session", sid).RawJSON("id", msg.ID).Msg("a client's answer to a server request no one waits for any more: dropped")
		w.WriteHeader(http.StatusAccepted)
		return
	}
	copyResponse(w, rec)
}

// copyResponse writes what rec recorded to w.
func copyResponse(w http.ResponseWriter, rec *httptest.ResponseRecorder) {
	maps.Copy(w.Header(), rec.Header())
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

// replicasCounted logs a new count of the replicas (peers.WatchReplicas),
// by which every rate limit is shared, and a count that failed.
func (s *Server) replicasCounted(n int, err error) {
	if err != nil {
		s.log.Warn().Err(err).Int("replicas", n).Msg("peers do not all resolve: the limits keep their share of the replicas last counted")
		return
	}
	s.log.Info().Int("replicas", n).Msg("replicas counted: each applies its share of every rate limit")
}
