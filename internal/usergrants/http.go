package usergrants

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/purko-io/mcp-hub/internal/httpjson"
	"github.com/purko-io/mcp-hub/internal/upstream/calltoken"
)

// The REST face of grants, for the caller the hub's auth names (who):
//
//	GET    /api/mcp/connections            the caller's grants; ?all=true: everyone's (admins)
//	POST   /api/mcp/connections/{server}   a sign-in link for the caller (the first sign-in at a server the
//	                                       hub cannot list yet, or a new account there)
//	DELETE /api/mcp/connections/{server}   revoke the caller's grant there; ?user=NAME: another's (admins)
//
// A listing never holds a token; a revocation says whether the
// authorization server revoked the grant too.

// Who names the caller of a request: its key (what its grants are kept
// under) and whether it is an admin.
type Who func(*http.Request) (user string, admin bool)

// listing is the body of GET /api/mcp/connections.
type listing struct {
	Connections []Connection `json:"connections"`
	// User is who the caller's grants are kept under.
	User string `json:"user"`
}

// HandleList serves GET /api/mcp/connections.
func (b *Broker) HandleList(who Who) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		user, admin := who(r)
		of := user
		if r.URL.Query().Get("all") == "true" {
			if !admin {
				httpjson.Write(w, http.StatusForbidden, map[string]string{"error": "listing everyone's connections (all=true) is for admins"})
				return
			}
			of = ""
		}
		list, err := b.Connections(r.Context(), of)
		if err != nil {
			httpjson.Write(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
			return
		}
		httpjson.Write(w, http.StatusOK, listing{Connections: list, User: user})
	}
}

// linkBody is the body of POST /api/mcp/connections/{server}.
type linkBody struct {
	URL       string  `json:"url"`
	ExpiresIn float64 `json:"expiresInSeconds"`
}

// HandleConnect serves POST /api/mcp/connections/{server}: the caller's
// sign-in link there, as a call without a grant would get it.
func (b *Broker) HandleConnect(who Who) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		user, _ := who(r)
		server := r.PathValue("server")
		s := b.server(server)
		if s == nil {
			httpjson.Write(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("the hub has no server %s reached with each caller's own account (userOAuth)", server)})
			return
		}
		if err := mayHold(user); err != nil {
			httpjson.Write(w, http.StatusForbidden, map[string]string{"error": err.Error()})
			return
		}
		links := calltoken.Elicitations(s.signIn(user))
		if len(links) != 1 {
			httpjson.Write(w, http.StatusInternalServerError, map[string]string{"error": "making a sign-in link failed"})
			return
		}
		httpjson.Write(w, http.StatusOK, linkBody{URL: links[0].URL, ExpiresIn: b.opts.LinkTTL.Seconds()})
	}
}

// HandleRevoke serves DELETE /api/mcp/connections/{server}.
func (b *Broker) HandleRevoke(who Who) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		user, admin := who(r)
		server := r.PathValue("server")
		if other := r.URL.Query().Get("user"); other != "" && other != user {
			if !admin {
				httpjson.Write(w, http.StatusForbidden, map[string]string{"error": "revoking another caller's connection (user=) is for admins"})
				return
			}
			user = other
		}
		done, err := b.Revoke(r.Context(), user, server)
		switch {
		case errors.Is(err, ErrNoConnection):
			httpjson.Write(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("%s has no connection to %s", user, server)})
		case err != nil:
			httpjson.Write(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
		default:
			httpjson.Write(w, http.StatusOK, done)
		}
	}
}

// Mount serves the sign-in pages and the connections API on mux. The
// pages are a browser's, which has no hub token: the sealed link or state
// is what they check. The API goes behind guard (the faces' guards and
// caller), and who names its caller.
func (b *Broker) Mount(mux *http.ServeMux, guard func(http.Handler) http.Handler, who Who) {
	pages := b.Handler()
	mux.Handle("GET "+ConnectPath+"{link}", pages)
	mux.Handle("GET "+CallbackPath, pages)
	mux.Handle("GET "+ClientMetadataPath, pages)
	mux.Handle("GET /api/mcp/connections", guard(b.HandleList(who)))
	mux.Handle("POST /api/mcp/connections/{server}", guard(b.HandleConnect(who)))
	mux.Handle("DELETE /api/mcp/connections/{server}", guard(b.HandleRevoke(who)))
}
