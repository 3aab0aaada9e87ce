package server

import (
	"bytes"
	"net/http"

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
	rec := &recorder{header: http.Header{}}
	s.streamable.ServeHTTP(rec, r)
	if rec.status == http.StatusAccepted || peers.PassedOn(r) {
		rec.copyTo(w)
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
	rec.copyTo(w)
}

// recorder keeps a response so it can be replaced by a peer's verdict.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}
func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}

func (r *recorder) copyTo(w http.ResponseWriter) {
	for k, v := range r.header {
		w.Header()[k] = v
	}
	if r.status == 0 {
		r.status = http.StatusOK
	}
	w.WriteHeader(r.status)
	_, _ = w.Write(r.body.Bytes())
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
