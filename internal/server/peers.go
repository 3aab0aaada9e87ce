package server

import (
	"bytes"
	"net/http"

	"github.com/purko-io/mcp-hub/internal/jsonrpc"
)

// deliverAnswer serves a client's answer (msg, read from body) to a server
// request locally: to a request sent on a session's GET stream
// (internal/mcpsession) or on a reply stream (mcp-go's); and when this
// replica was not waiting for it, passes it on to the peers
// (internal/peers).
func (s *Server) deliverAnswer(w http.ResponseWriter, r *http.Request, msg *jsonrpc.Message, body []byte) {
	if s.sessions.Deliver(r.Header.Get("Mcp-Session-Id"), msg) {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	rec := &recorder{header: http.Header{}}
	s.streamable.ServeHTTP(rec, r)
	if rec.status != http.StatusAccepted && s.peers.PassOn(r, body) {
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
