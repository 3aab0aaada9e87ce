package usergrants

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"golang.org/x/oauth2"

	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/upstream/calltoken"
	"github.com/purko-io/mcp-hub/internal/upstream/useroauth"
)

// A sign-in link names one caller and one server, sealed (the caller's
// name is not readable in it), with a random id and an expiry; it carries
// no token. It is single use: the first opening records its id in the
// store, where every replica sees it. The authorization request's state
// is sealed the same way and carries the PKCE verifier, so that the
// callback may reach any replica.

// link is what a sign-in link and an authorization request's state seal.
type link struct {
	User     string    `json:"u"`
	Server   string    `json:"s"`
	ID       string    `json:"n"`
	Expires  time.Time `json:"e"`
	Verifier string    `json:"v,omitempty"` // state only
}

// Additional data of the two sealed kinds: a link is not a state.
var (
	linkAAD  = []byte("mcp-hub sign-in link")
	stateAAD = []byte("mcp-hub authorization state")
)

func (b *Broker) sealLink(l link, aad []byte) (string, error) {
	plain, err := json.Marshal(l)
	if err != nil {
		return "", err
	}
	sealed, err := b.opts.Keys.Seal(plain, aad)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(sealed), nil
}

func (b *Broker) openLink(s string, aad []byte) (link, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return link{}, errors.New("it is not a link of this hub")
	}
	plain, err := b.opts.Keys.Open(raw, aad)
	if err != nil {
		return link{}, errors.New("it is not a link of this hub (or was made with a key it no longer holds)")
	}
	var l link
	if err := json.Unmarshal(plain, &l); err != nil {
		return link{}, errors.New("it is not a link of this hub")
	}
	if !b.opts.Now().Before(l.Expires) {
		return link{}, errors.New("it has expired; call the tool again for a new one")
	}
	return l, nil
}

// signIn is the error of a call whose caller has no grant at the server:
// a URL elicitation required error (-32042) whose one elicitation is the
// caller's sign-in link. Callers that take no URL elicitation get the link
// in a BLOCKED text instead (the server face decides).
func (s *Server) signIn(user string) error {
	if s.b.publicURL() == "" {
		return fmt.Errorf("upstream %s is reached with each caller's own account, and this hub serves no sign-in pages (no HTTP address: set userGrants.publicURL to where browsers reach a hub that keeps these grants)", s.name)
	}
	id := randomID()
	l, err := s.b.sealLink(link{User: user, Server: s.name, ID: id, Expires: s.b.opts.Now().Add(s.b.opts.LinkTTL)}, linkAAD)
	if err != nil {
		return fmt.Errorf("upstream %s: making a sign-in link: %w", s.name, err)
	}
	msg := fmt.Sprintf("Sign in to %s with your own account: open the link, sign in, then call again. The link is yours alone and works once, for %s.", s.name, s.b.opts.LinkTTL)
	data, _ := json.Marshal(mcp.URLElicitationRequiredError{Elicitations: []mcp.ElicitationParams{{
		Mode: mcp.ElicitationModeURL, Message: msg, ElicitationID: id, URL: s.b.publicURL() + ConnectPath + l,
	}}})
	return &jsonrpc.Error{Code: mcp.URL_ELICITATION_REQUIRED, Message: fmt.Sprintf("upstream %s is reached with each caller's own account there, and you have not signed in yet", s.name), Data: data}
}

func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Handler serves the sign-in pages: ConnectPath (a link: record it used,
// send the browser to the authorization server), CallbackPath (keep the
// grant), ClientMetadataPath (the hub's Client ID Metadata Document).
func (b *Broker) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+ConnectPath+"{link}", b.connect)
	mux.HandleFunc("GET "+CallbackPath, b.callback)
	mux.HandleFunc("GET "+ClientMetadataPath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b.metadata().Document())
	})
	return mux
}

func (b *Broker) connect(w http.ResponseWriter, r *http.Request) {
	l, err := b.openLink(r.PathValue("link"), linkAAD)
	if err != nil {
		page(w, http.StatusBadRequest, "This sign-in link cannot be used", err.Error())
		return
	}
	s := b.server(l.Server)
	if s == nil {
		page(w, http.StatusNotFound, "This sign-in link cannot be used", fmt.Sprintf("the hub has no server %s reached with each caller's own account any more", l.Server))
		return
	}
	where, err := s.authServer(r.Context())
	if err != nil {
		page(w, http.StatusBadGateway, "The sign-in cannot start", err.Error())
		return
	}
	if err := b.use(r.Context(), l); err != nil {
		page(w, http.StatusConflict, "This sign-in link cannot be used", err.Error())
		return
	}
	st := link{User: l.User, Server: l.Server, ID: l.ID, Expires: b.opts.Now().Add(stateFor), Verifier: oauth2.GenerateVerifier()}
	state, err := b.sealLink(st, stateAAD)
	if err != nil {
		page(w, http.StatusInternalServerError, "The sign-in cannot start", err.Error())
		return
	}
	target := useroauth.AuthorizeWith(where.ep, where.client, b.publicURL()+CallbackPath, state, st.Verifier, s.spec.UserOAuth.Scopes, where.resource)
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	http.Redirect(w, r, target, http.StatusFound)
}

// use records l's id as used, once: a second opening is refused.
func (b *Broker) use(ctx context.Context, l link) error {
	key := "l-" + l.ID
	used := errors.New("it was opened already (a link works once); call the tool again for a new one")
	return b.opts.Store.Update(ctx, func(recs map[string][]byte) error {
		if _, ok := recs[key]; ok {
			return used
		}
		now := b.opts.Now()
		for k, v := range recs { // links past their expiry need no record
			if strings.HasPrefix(k, "l-") {
				var exp time.Time
				if plain, err := b.opts.Keys.Open(v, []byte(k)); err != nil || exp.UnmarshalText(plain) != nil || now.After(exp) {
					delete(recs, k)
				}
			}
		}
		exp, _ := l.Expires.MarshalText()
		sealed, err := b.opts.Keys.Seal(exp, []byte(key))
		recs[key] = sealed
		return err
	})
}

func (b *Broker) callback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	st, err := b.openLink(q.Get("state"), stateAAD)
	if err != nil {
		page(w, http.StatusBadRequest, "This sign-in cannot be finished", "the state is not one this hub made: "+err.Error())
		return
	}
	s := b.server(st.Server)
	if s == nil {
		page(w, http.StatusNotFound, "This sign-in cannot be finished", fmt.Sprintf("the hub has no server %s reached with each caller's own account any more", st.Server))
		return
	}
	if e := q.Get("error"); e != "" {
		page(w, http.StatusBadRequest, "The sign-in did not succeed", fmt.Sprintf("the authorization server answered %s: %s", clip(e), clip(q.Get("error_description"))))
		return
	}
	where, err := s.authServer(r.Context())
	if err != nil {
		page(w, http.StatusBadGateway, "This sign-in cannot be finished", err.Error())
		return
	}
	if err := useroauth.CheckIssuer(where.ep, q.Get("iss")); err != nil {
		page(w, http.StatusBadRequest, "This sign-in cannot be finished", err.Error())
		return
	}
	tok, err := useroauth.Exchange(r.Context(), b.opts.HTTPClient, where.ep, where.client, b.publicURL()+CallbackPath, q.Get("code"), st.Verifier, where.resource)
	if err != nil {
		page(w, http.StatusBadGateway, "This sign-in cannot be finished", err.Error())
		return
	}
	now := b.opts.Now()
	g := Grant{User: st.User, Server: st.Server, Issuer: where.issuer, Scopes: tok.Scopes,
		AccessToken: tok.AccessToken, RefreshToken: tok.RefreshToken, Expiry: tok.Expiry, Created: now, Refreshed: now}
	if g.Subject = useroauth.Subject(tok.IDToken); g.Subject == "" {
		g.Subject = useroauth.Subject(tok.AccessToken)
	}
	key := grantKey(st.Server, st.User)
	if err := b.opts.Store.Update(r.Context(), func(recs map[string][]byte) error { return b.seal(recs, key, g) }); err != nil {
		page(w, http.StatusInternalServerError, "This sign-in cannot be finished", fmt.Sprintf("keeping the grant in %s failed: %v", b.opts.Store.Where(), err))
		return
	}
	b.cache.remember(key, g)
	b.opts.Log.Info().Str("upstream", st.Server).Str("user", st.User).Str("upstream_subject", g.Subject).Msg("user grant: signed in")
	as := ""
	if g.Subject != "" {
		as = " as " + g.Subject
	}
	page(w, http.StatusOK, "Connected", fmt.Sprintf("You are signed in to %s%s. Go back to your chat: the call goes on, or call again.", st.Server, as))
}

// clip bounds what an authorization server's redirect says.
func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

var pageTemplate = template.Must(template.New("page").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>{{.Title}} · mcp-hub</title>
<style>body{font:16px system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem;color:#222}h1{font-size:1.4rem}</style>
</head><body><h1>{{.Title}}</h1><p>{{.Text}}</p></body></html>
`))

// page writes a small HTML page for the browser of a sign-in.
func page(w http.ResponseWriter, status int, title, text string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	w.WriteHeader(status)
	_ = pageTemplate.Execute(w, struct{ Title, Text string }{title, text})
}

// ForCaller is a failed call's answer for its caller: a URL elicitation
// required error (-32042, the hub's sign-in link or an upstream's own) as
// it is for a caller that takes URL elicitation (takesURL), else as a
// BLOCKED result with the links in words, for its user to open before
// calling again; any other error as it is.
func ForCaller(takesURL bool, err error) (json.RawMessage, error) {
	data := calltoken.Elicitations(err)
	var rpc *jsonrpc.Error
	if takesURL || len(data) == 0 || !errors.As(err, &rpc) {
		return nil, err
	}
	var b strings.Builder
	b.WriteString("BLOCKED: " + rpc.Message + ".")
	for _, e := range data {
		fmt.Fprintf(&b, " %s Open: %s", e.Message, e.URL)
	}
	return json.Marshal(mcp.NewToolResultError(b.String()))
}
