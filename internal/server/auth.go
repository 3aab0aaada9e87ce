package server

import (
	"net/http"

	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/restrun"
)

// requireCaller authenticates every request of an MCP face and refuses the
// ones without a valid caller before any MCP processing, with a JSON-RPC
// error (-32004).
func (s *Server) requireCaller(next http.Handler) http.Handler {
	return s.authenticate(next, func(w http.ResponseWriter, status int, msg string) {
		jsonrpc.Refuse(w, status, codeAuthRequired, nil, msg)
	})
}

// requireRESTCaller is requireCaller for the hub's REST API, whose one
// error body is {"error": ..., "code": ...} (docs/errors.md).
func (s *Server) requireRESTCaller(next http.Handler) http.Handler {
	return s.authenticate(next, func(w http.ResponseWriter, status int, msg string) {
		restrun.WriteError(w, status, &jsonrpc.Error{Code: codeAuthRequired, Message: msg})
	})
}

// authenticate serves next with the request's caller, or refuses it.
func (s *Server) authenticate(next http.Handler, refuse func(w http.ResponseWriter, status int, msg string)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = s.peers.ClientOf(r)
		c, err := s.auth.Authenticate(r)
		if err != nil {
			s.log.Warn().Str("audit", "auth").Str("path", r.URL.Path).Str("remote", r.RemoteAddr).
				Int("status", err.Status).Str("reason", err.Msg).Msg("request refused")
			if ch := s.auth.Challenge(err); ch != "" {
				w.Header().Set("WWW-Authenticate", ch)
			}
			refuse(w, err.Status, err.Msg)
			return
		}
		next.ServeHTTP(w, r.WithContext(callers.With(r.Context(), c)))
	})
}
