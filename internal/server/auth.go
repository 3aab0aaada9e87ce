package server

import (
	"encoding/json"
	"net/http"

	"github.com/purko-io/mcp-hub/internal/callers"
)

// requireCaller authenticates every request of an MCP face and refuses the
// ones without a valid caller before any MCP processing.
func (s *Server) requireCaller(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = s.peerClient(r)
		c, err := s.auth.Authenticate(r)
		if err != nil {
			s.log.Warn().Str("audit", "auth").Str("path", r.URL.Path).Str("remote", r.RemoteAddr).
				Int("status", err.Status).Str("reason", err.Msg).Msg("request refused")
			if ch := s.auth.Challenge(err); ch != "" {
				w.Header().Set("WWW-Authenticate", ch)
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(err.Status)
			_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": nil,
				"error": map[string]any{"code": -32001, "message": err.Msg}})
			return
		}
		next.ServeHTTP(w, r.WithContext(callers.With(r.Context(), c)))
	})
}

// peerClient is r as its client sent it. A client's answer that a peer
// passed on (peers.go) comes from the peer's address; when it does come
// from a peer, it counts as from the address of the client the peer names,
// so that an anonymous caller's answer reaches its own session on this
// replica too. Anyone else's header is ignored.
func (s *Server) peerClient(r *http.Request) *http.Request {
	client := r.Header.Get(forwardedForHeader)
	if client == "" || r.Method != http.MethodPost || r.Header.Get(forwardedHeader) == "" ||
		s.peers == nil || !s.peers.isPeer(r.Context(), r.RemoteAddr) {
		return r
	}
	r = r.WithContext(r.Context())
	r.RemoteAddr = client
	return r
}
