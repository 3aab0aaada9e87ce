package server

import (
	"net/http"

	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
)

// requireCaller authenticates every request of an MCP face and refuses the
// ones without a valid caller before any MCP processing.
func (s *Server) requireCaller(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = s.peers.ClientOf(r)
		c, err := s.auth.Authenticate(r)
		if err != nil {
			s.log.Warn().Str("audit", "auth").Str("path", r.URL.Path).Str("remote", r.RemoteAddr).
				Int("status", err.Status).Str("reason", err.Msg).Msg("request refused")
			if ch := s.auth.Challenge(err); ch != "" {
				w.Header().Set("WWW-Authenticate", ch)
			}
			jsonrpc.Refuse(w, err.Status, codeAuthRequired, nil, err.Msg)
			return
		}
		next.ServeHTTP(w, r.WithContext(callers.With(r.Context(), c)))
	})
}
