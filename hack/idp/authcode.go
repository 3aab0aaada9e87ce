package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// The sign-in grants: authorization code with PKCE (S256 only), refresh
// tokens rotated on every use, and their revocation (RFC 7009), so that a
// client signing users in (the hub's servers reached as each caller's own
// account) is tested against someone else's reading of them. zitadel does
// the protocol (request validation, redirects, code and PKCE checks,
// token responses, ID tokens); this file keeps the state it asks the
// storage for, and plays the login: every authorization request is
// approved at once as the configured loginSubject.

// Paths of the sign-in, beside zitadel's endpoints.
const (
	// loginPath is the login page zitadel sends the browser to
	// (client.LoginURL).
	loginPath = "/login"
	// callbackPath is zitadel's authorization callback (LegacyServer's
	// AuthCallbackURL): the login sends the browser there, and it
	// redirects to the client with the code.
	callbackPath = "/authorize/callback"
)

const (
	// codeTTL is how long an authorization code may be redeemed after the
	// login approved its request.
	codeTTL = time.Minute
	// requestTTL is how long an authorization request waits for its login
	// and code exchange before it is dropped.
	requestTTL = 10 * time.Minute
)

// authRequest is an authorization request, as zitadel's op.AuthRequest. The
// storage keeps one per request and hands out copies, so that zitadel
// never reads one the login is changing.
type authRequest struct {
	id, clientID, redirectURI string
	state, nonce              string
	scopes, audience          []string
	responseMode              oidc.ResponseMode
	challenge                 *oidc.CodeChallenge
	created                   time.Time
	code                      string // once the callback made it

	// Set by the login.
	subject  string
	authTime time.Time
	done     bool
}

var _ op.AuthRequest = (*authRequest)(nil)

func (a *authRequest) GetID() string                         { return a.id }
func (a *authRequest) GetACR() string                        { return "" }
func (a *authRequest) GetAMR() []string                      { return nil }
func (a *authRequest) GetAudience() []string                 { return a.audience }
func (a *authRequest) GetAuthTime() time.Time                { return a.authTime }
func (a *authRequest) GetClientID() string                   { return a.clientID }
func (a *authRequest) GetCodeChallenge() *oidc.CodeChallenge { return a.challenge }
func (a *authRequest) GetNonce() string                      { return a.nonce }
func (a *authRequest) GetRedirectURI() string                { return a.redirectURI }
func (a *authRequest) GetResponseType() oidc.ResponseType    { return oidc.ResponseTypeCode }
func (a *authRequest) GetResponseMode() oidc.ResponseMode    { return a.responseMode }
func (a *authRequest) GetScopes() []string                   { return a.scopes }
func (a *authRequest) GetState() string                      { return a.state }
func (a *authRequest) GetSubject() string                    { return a.subject }
func (a *authRequest) Done() bool                            { return a.done }

// grant is what a refresh token stands for: one sign-in of one user at one
// client. Each refresh replaces the token and keeps the grant (id); a
// revocation, or a rotated token used again, ends the grant with every
// token of it.
type grant struct {
	id, clientID, subject string
	audience, scopes      []string
	authTime              time.Time
}

// refreshRequest is a grant as zitadel's op.RefreshTokenRequest: a copy,
// whose scopes a refresh may narrow.
type refreshRequest struct {
	grant
	current []string // the scopes of this refresh's tokens
}

var _ op.RefreshTokenRequest = (*refreshRequest)(nil)

func (r *refreshRequest) GetAMR() []string                 { return nil }
func (r *refreshRequest) GetAudience() []string            { return r.audience }
func (r *refreshRequest) GetAuthTime() time.Time           { return r.authTime }
func (r *refreshRequest) GetClientID() string              { return r.clientID }
func (r *refreshRequest) GetScopes() []string              { return r.current }
func (r *refreshRequest) GetSubject() string               { return r.subject }
func (r *refreshRequest) SetCurrentScopes(scopes []string) { r.current = scopes }

// signInAudience is the audience of the tokens of a sign-in by clientID
// for resources (RFC 8707, each one the client's Audiences must hold,
// invalid_target otherwise): the resources and the client, so that the
// ID token, which has the same audience in zitadel, names its client.
func (s *storage) signInAudience(clientID string, resources []string) ([]string, error) {
	c, ok := s.clients[clientID]
	if !ok {
		return nil, oidc.ErrInvalidClient()
	}
	var audience []string
	for _, r := range resources {
		if !slices.Contains(c.audiences, r) {
			return nil, oidc.ErrInvalidTarget().WithDescription("resource %q is not allowed for client %q", r, clientID)
		}
		if !slices.Contains(audience, r) {
			audience = append(audience, r)
		}
	}
	return append(audience, clientID), nil
}

// newAuthRequest keeps an authorization request zitadel validated, and
// drops those older than requestTTL.
func (s *storage) newAuthRequest(req *oidc.AuthRequest, audience []string) *authRequest {
	now := time.Now()
	a := &authRequest{id: randomID(), clientID: req.ClientID, redirectURI: req.RedirectURI, state: req.State,
		nonce: req.Nonce, scopes: slices.Clone(req.Scopes), audience: audience, responseMode: req.ResponseMode,
		created: now}
	if req.CodeChallenge != "" {
		a.challenge = &oidc.CodeChallenge{Challenge: req.CodeChallenge, Method: req.CodeChallengeMethod}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, old := range s.requests {
		if now.Sub(old.created) > requestTTL {
			s.dropRequest(id)
		}
	}
	s.requests[a.id] = a
	cp := *a
	return &cp
}

// dropRequest forgets request id and its code; s.mu is held.
func (s *storage) dropRequest(id string) {
	if a, ok := s.requests[id]; ok {
		delete(s.codes, a.code)
		delete(s.requests, id)
	}
}

// approve is the login of request id: done, as the configured subject. With
// no subject configured the request stays undone, for the login to refuse.
func (s *storage) approve(id string) (*authRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.requests[id]
	if !ok {
		return nil, fmt.Errorf("no authorization request %q (expired, or finished already)", id)
	}
	if s.loginSubject != "" {
		a.subject, a.authTime, a.done = s.loginSubject, time.Now(), true
	}
	cp := *a
	return &cp, nil
}

// --- op.AuthStorage: authorization requests and codes

// CreateAuthRequest is zitadel's way to keep a request; server.Authorize
// keeps them itself (newAuthRequest) with the RFC 8707 resources, which
// zitadel's does not pass on. This one, for completeness, gives the
// tokens the client as their audience.
func (s *storage) CreateAuthRequest(_ context.Context, req *oidc.AuthRequest, _ string) (op.AuthRequest, error) {
	return s.newAuthRequest(req, []string{req.ClientID}), nil
}

func (s *storage) AuthRequestByID(_ context.Context, id string) (op.AuthRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.requests[id]
	if !ok {
		return nil, fmt.Errorf("no authorization request %q", id)
	}
	cp := *a
	return &cp, nil
}

// AuthRequestByCode finds the request of a code, approved at most codeTTL
// ago; zitadel answers an error as invalid_grant.
func (s *storage) AuthRequestByCode(_ context.Context, code string) (op.AuthRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.requests[s.codes[code]]
	switch {
	case !ok:
		return nil, errors.New("unknown or used authorization code")
	case !a.done || time.Since(a.authTime) > codeTTL:
		s.dropRequest(a.id)
		return nil, errors.New("the authorization code has expired")
	}
	cp := *a
	return &cp, nil
}

func (s *storage) SaveAuthCode(_ context.Context, id, code string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.requests[id]
	if !ok {
		return fmt.Errorf("no authorization request %q", id)
	}
	delete(s.codes, a.code)
	a.code = code
	s.codes[code] = id
	return nil
}

// DeleteAuthRequest is called once a code is redeemed: it works once.
func (s *storage) DeleteAuthRequest(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropRequest(id)
	return nil
}

// --- op.AuthStorage: refresh tokens

// CreateAccessAndRefreshTokens starts a grant (a code redeemed with the
// offline_access scope) or rotates one (a refresh): the refresh token used
// is spent, and a new one given. Of two refreshes racing with one token,
// the second finds it spent: invalid_grant.
func (s *storage) CreateAccessAndRefreshTokens(_ context.Context, req op.TokenRequest, current string) (string, string, time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var g grant
	switch r := req.(type) {
	case *authRequest:
		g = grant{id: "grant-" + randomID(), clientID: r.clientID, subject: r.subject,
			audience: r.audience, scopes: r.scopes, authTime: r.authTime}
	case *refreshRequest:
		live, ok := s.refresh[current]
		if !ok || live.id != r.id {
			return "", "", time.Time{}, oidc.ErrInvalidGrant().WithDescription("the refresh token was used already")
		}
		delete(s.refresh, current)
		s.spent[current] = live.id
		g = *live // the grant's scopes, not this refresh's narrower ones
	default:
		return "", "", time.Time{}, oidc.ErrInvalidRequest().WithDescription("refresh tokens are issued with the authorization code grant only")
	}
	token := randomID() + randomID()
	s.refresh[token] = &g
	return randomID(), token, time.Now().Add(s.ttl(g.clientID)), nil
}

// TokenRequestByRefreshToken finds a live refresh token's grant. A spent
// one, used again, is a stolen or replayed token (OAuth 2.0 Security BCP,
// section 4.14.2): its whole grant ends. zitadel answers any error here
// as invalid_grant.
func (s *storage) TokenRequestByRefreshToken(_ context.Context, token string) (op.RefreshTokenRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, ok := s.spent[token]; ok {
		s.endGrant(id)
		return nil, errors.New("the refresh token was rotated already: its grant is revoked")
	}
	g, ok := s.refresh[token]
	if !ok {
		return nil, errors.New("unknown or revoked refresh token")
	}
	return &refreshRequest{grant: *g, current: g.scopes}, nil
}

// endGrant drops every live refresh token of grant id; s.mu is held. Spent
// tokens stay spent.
func (s *storage) endGrant(id string) bool {
	ended := false
	for tok, g := range s.refresh {
		if g.id == id {
			delete(s.refresh, tok)
			ended = true
		}
	}
	return ended
}

// --- op.AuthStorage: revocation (RFC 7009)
//
// zitadel's revocation asks GetRefreshTokenInfo first (unless the hint is
// access_token); for a refresh token it passes the grant id to RevokeToken,
// for one of our JWTs its jti and sub, and anything else as it came with
// no user.

// GetRefreshTokenInfo names a live refresh token's subject and grant.
func (s *storage) GetRefreshTokenInfo(_ context.Context, _ string, token string) (string, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.refresh[token]
	if !ok {
		return "", "", op.ErrInvalidRefreshToken
	}
	return g.subject, g.id, nil
}

// RevokeToken ends the grant of a refresh token, when clientID holds it
// (a token of another client's is invalid_grant, RFC 6749 section 5.2).
// An access token is not revoked: it is a JWT that resource servers
// verify by its signature alone, good until it expires (a few seconds in
// the tests that revoke); its grant goes on. An unknown token is a
// success (RFC 7009 section 2.2).
func (s *storage) RevokeToken(_ context.Context, tokenOrID, _, clientID string) *oidc.Error {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.refresh[tokenOrID] // a refresh token sent with the hint access_token
	if !ok {
		for _, live := range s.refresh {
			if live.id == tokenOrID {
				g, ok = live, true
				break
			}
		}
	}
	if !ok {
		return nil
	}
	if g.clientID != clientID {
		return oidc.ErrInvalidGrant().WithDescription("the token was issued to another client")
	}
	s.endGrant(g.id)
	return nil
}

// --- The server's side of the sign-in

// Authorize keeps a validated authorization request and sends the browser
// to the login. zitadel has checked the client, redirect URI, scopes and
// response type by now; this adds what the tests' clients must do (PKCE
// with S256, answers in the query) and takes the RFC 8707 resources as
// the tokens' audience. An error goes back to the redirect URI.
func (s *server) Authorize(_ context.Context, r *op.ClientRequest[oidc.AuthRequest]) (*op.Redirect, error) {
	d := r.Data
	switch {
	case d.RequestParam != "":
		return nil, oidc.ErrRequestNotSupported()
	case d.CodeChallenge == "" || d.CodeChallengeMethod != oidc.CodeChallengeMethodS256:
		return nil, oidc.ErrInvalidRequest().WithDescription("PKCE is required, with code_challenge_method S256")
	case d.ResponseMode != "" && d.ResponseMode != oidc.ResponseModeQuery:
		return nil, oidc.ErrInvalidRequest().WithDescription("only response_mode query is offered")
	}
	audience, err := s.storage.signInAudience(r.Client.GetID(), fields(r.Form["resource"]))
	if err != nil {
		return nil, err
	}
	a := s.storage.newAuthRequest(d, audience)
	return op.NewRedirect(r.Client.LoginURL(a.id)), nil
}

// CodeExchange is zitadel's, with the code verifier required of every
// client: zitadel checks it only for public clients or when one is sent,
// so a confidential client could redeem a code without it, which would
// make PKCE optional for them.
func (s *server) CodeExchange(ctx context.Context, r *op.ClientRequest[oidc.AccessTokenRequest]) (*op.Response, error) {
	if r.Data.CodeVerifier == "" {
		return nil, oidc.ErrInvalidRequest().WithDescription("code_verifier is required: every authorization request here used PKCE")
	}
	resp, err := s.LegacyServer.CodeExchange(ctx, r)
	if err != nil {
		return nil, err
	}
	s.codeExchanges.Add(1)
	return resp, nil
}

// RefreshToken is zitadel's, counted.
func (s *server) RefreshToken(ctx context.Context, r *op.ClientRequest[oidc.RefreshTokenRequest]) (*op.Response, error) {
	resp, err := s.LegacyServer.RefreshToken(ctx, r)
	if err != nil {
		return nil, err
	}
	s.refreshes.Add(1)
	return resp, nil
}

// login is the login page: it approves authorization request id at once
// as the configured subject and sends the browser to zitadel's callback;
// with no subject configured, it refuses (access_denied to the client).
func (s *server) login(w http.ResponseWriter, r *http.Request) {
	a, err := s.storage.approve(r.URL.Query().Get("id"))
	if err != nil {
		http.Error(w, "login: "+err.Error(), http.StatusBadRequest)
		return
	}
	if !a.Done() {
		op.AuthRequestError(w, r, a, oidc.ErrAccessDenied().WithDescription("no loginSubject is configured: every sign-in is refused"), s.provider)
		return
	}
	http.Redirect(w, r, s.AuthCallbackURL()(r.Context(), a.id), http.StatusFound)
}

// authorizeCallback is zitadel's AuthorizeCallback, which redirects to the
// client with the code, with the issuer added to the redirect (iss, RFC
// 9207, which zitadel does not send), so that a client talking to several
// authorization servers can tell which one answered.
func (s *server) authorizeCallback(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	a, err := s.storage.AuthRequestByID(ctx, r.URL.Query().Get("id"))
	if err != nil {
		op.AuthRequestError(w, r, nil, err, s.provider)
		return
	}
	if !a.Done() {
		op.AuthRequestError(w, r, a, oidc.ErrInteractionRequired().WithDescription("the login has not approved the request"), s.provider)
		return
	}
	target, err := op.BuildAuthResponseCallbackURL(ctx, a, s.provider)
	if err == nil {
		target, err = withQuery(target, "iss", op.IssuerFromContext(ctx))
	}
	if err != nil {
		op.AuthRequestError(w, r, a, err, s.provider)
		return
	}
	http.Redirect(w, r, target, http.StatusFound)
}

// withQuery is u with the query parameter key set to value.
func withQuery(u, key, value string) (string, error) {
	parsed, err := url.Parse(u)
	if err != nil {
		return "", oidc.ErrServerError().WithParent(err)
	}
	q := parsed.Query()
	q.Set(key, value)
	parsed.RawQuery = q.Encode()
	return parsed.String(), nil
}
