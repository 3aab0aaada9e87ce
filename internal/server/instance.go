package server

import (
	"net/http"

	"github.com/purko-io/mcp-hub/internal/hubchain"
)

// presentChain puts the hub's chain (package hubchain: its instance id and
// those of the hubs its upstreams reach) on every answer, refusals and the
// WebSocket handshake included, so that a hub that has this one as an
// upstream, at any remove, sees that it would be its own upstream. The
// value is built when an upstream's chain changes; here it is one atomic
// load and a map assignment.
func (s *Server) presentChain(next http.Handler) http.Handler {
	if s.chain == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()[hubchain.Header] = s.chain.HeaderValues()
		next.ServeHTTP(w, r)
	})
}
