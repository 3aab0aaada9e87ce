package hydra

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/purko-io/mcp-hub/internal/hubtest"
)

// AuthorizationRedirect plays the browser through an authorization request
// as FollowAuthorization does, and returns the whole redirect to
// redirectURI (which it does not request): code, state and iss (RFC 9207),
// or error and error_description, for a client that checks more of the
// authorization response than its code. It fails t only when the flow
// ends anywhere else.
func (s *Server) AuthorizationRedirect(t testing.TB, authURL, redirectURI string) *url.URL {
	t.Helper()
	final, err := hubtest.FollowRedirects(authURL, redirectURI)
	if err != nil {
		t.Fatalf("hydra: authorization %s: %v", authURL, err)
	}
	return final
}

// AllowAudience adds audience to what the client clientID may request, as
// an administrator would after a dynamic registration (RFC 7591 has no
// audience field). Hydra checks a grant's audience against the client's
// when the grant's tokens are refreshed, also the audience Start's consent
// step granted from RFC 8707 resource parameters (Options.ResourceAudience):
// without this, the refresh of such a grant fails.
func (s *Server) AllowAudience(t testing.TB, clientID string, audience ...string) {
	t.Helper()
	var patch []map[string]any
	for _, a := range audience {
		patch = append(patch, map[string]any{"op": "add", "path": "/audience/-", "value": a})
	}
	if err := s.do(http.MethodPatch, s.admin+"/admin/clients/"+url.PathEscape(clientID), patch, nil); err != nil {
		t.Fatalf("hydra: allow client %q the audience %q: %v", clientID, audience, err)
	}
}
