package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// storage is the op.Storage of the provider: the configured clients, one
// RSA signing key made at start, the trusted issuers' verifiers, the policy
// of every grant, and what the sign-in grants keep (authcode.go): the
// authorization requests in flight and the live refresh tokens. Access
// tokens are JWTs, verified by signature alone, so nothing is kept per
// access token. The fields above mu never change after newStorage; the
// maps below it are guarded by mu.
//
// zitadel returns a storage error that is not an *oidc.Error to the client
// as server_error (500) with the error's text as description, so every
// refusal here is an *oidc.Error.
type storage struct {
	clients map[string]*client
	key     *rsa.PrivateKey
	keyID   string
	// verifier is the provider's access token verifier (signature with
	// our key, issuer from the request, expiry), set once the provider
	// exists: the provider needs the storage first.
	verifier func(context.Context) *op.AccessTokenVerifier
	// trusted are the verifiers of the other issuers whose JWTs are
	// subject tokens too (trusted.go), by issuer.
	trusted map[string]*op.AccessTokenVerifier
	// loginSubject is who every sign-in is approved as; "" refuses them
	// all (access_denied).
	loginSubject string

	mu       sync.Mutex
	requests map[string]*authRequest // authorization requests, by id
	codes    map[string]string       // authorization code -> request id
	refresh  map[string]*grant       // live refresh tokens -> their grant
	spent    map[string]string       // rotated refresh tokens -> grant id
}

var (
	_ op.Storage                            = (*storage)(nil)
	_ op.ClientCredentialsStorage           = (*storage)(nil)
	_ op.TokenExchangeStorage               = (*storage)(nil)
	_ op.TokenExchangeTokensVerifierStorage = (*storage)(nil)
)

func newStorage(cfg *Config, ttl time.Duration) (*storage, error) {
	trusted, err := newTrustedVerifiers(cfg.TrustedIssuers)
	if err != nil {
		return nil, err
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("make the signing key: %w", err)
	}
	s := &storage{clients: map[string]*client{}, key: key, keyID: randomID(), trusted: trusted,
		loginSubject: cfg.LoginSubject, requests: map[string]*authRequest{}, codes: map[string]string{},
		refresh: map[string]*grant{}, spent: map[string]string{}}
	for i, c := range cfg.Clients {
		cl, err := newClient(c, ttl)
		if err != nil {
			return nil, fmt.Errorf("config: client %d: %w", i, err)
		}
		if _, dup := s.clients[c.ID]; dup {
			return nil, fmt.Errorf("config: client %q twice", c.ID)
		}
		s.clients[c.ID] = cl
	}
	return s, nil
}

// newClient checks one configured client. A client without a secret is
// public: it may only sign users in (authorization code, PKCE being its
// proof, and refresh tokens), as a client credentials or exchange grant
// with no authentication would mint tokens for anyone.
func newClient(c ClientConfig, ttl time.Duration) (*client, error) {
	if c.ID == "" {
		return nil, errors.New("an id is required")
	}
	if c.AccessTokenTTL != "" {
		d, err := time.ParseDuration(c.AccessTokenTTL)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("client %q: accessTokenTTL %q is not a positive duration", c.ID, c.AccessTokenTTL)
		}
		ttl = d
	}
	cl := &client{id: c.ID, secret: c.Secret, audiences: slices.Clone(c.Audiences), scopes: slices.Clone(c.Scopes),
		redirectURIs: slices.Clone(c.RedirectURIs), ttl: ttl}
	for _, g := range c.Grants {
		switch gt := oidc.GrantType(g); gt {
		case oidc.GrantTypeClientCredentials, oidc.GrantTypeTokenExchange:
			if c.Secret == "" {
				return nil, fmt.Errorf("client %q: grant %q needs a secret", c.ID, g)
			}
			cl.grants = append(cl.grants, gt)
		case oidc.GrantTypeCode:
			if len(c.RedirectURIs) == 0 {
				return nil, fmt.Errorf("client %q: grant %q needs redirectURIs", c.ID, g)
			}
			cl.grants = append(cl.grants, gt)
		case oidc.GrantTypeRefreshToken:
			cl.grants = append(cl.grants, gt)
		default:
			return nil, fmt.Errorf("client %q: grant %q is not supported", c.ID, g)
		}
	}
	return cl, nil
}

// ttl is the access token lifetime of clientID's tokens.
func (s *storage) ttl(clientID string) time.Duration {
	if c, ok := s.clients[clientID]; ok {
		return c.ttl
	}
	return defaultTTL
}

// verifySubjectToken verifies a JWT that is to be exchanged: one of a
// trusted issuer with that issuer's keys (and a subject, which the issued
// token takes), any other as an access token of this issuer, which refuses
// a foreign iss.
func (s *storage) verifySubjectToken(ctx context.Context, token string) (*oidc.AccessTokenClaims, error) {
	if v, ok := s.trusted[unverifiedIssuer(token)]; ok {
		claims, err := op.VerifyAccessToken[*oidc.AccessTokenClaims](ctx, token, v)
		if err == nil {
			err = oidc.CheckSubject(claims)
		}
		return claims, err
	}
	return op.VerifyAccessToken[*oidc.AccessTokenClaims](ctx, token, s.verifier(ctx))
}

// authenticate checks a client's secret in constant time. Errors name the
// client, never the secret.
func (s *storage) authenticate(clientID, secret string) (*client, error) {
	c, ok := s.clients[clientID]
	if !ok {
		return nil, fmt.Errorf("unknown client %q", clientID)
	}
	if c.secret == "" {
		// An empty secret would match an empty one sent.
		return nil, fmt.Errorf("client %q is public: it has no secret to authenticate with", clientID)
	}
	if subtle.ConstantTimeCompare([]byte(c.secret), []byte(secret)) != 1 {
		return nil, fmt.Errorf("wrong secret for client %q", clientID)
	}
	return c, nil
}

// checkScopes refuses scopes the client may not request (invalid_scope).
func checkScopes(c *client, scopes []string) error {
	for _, sc := range scopes {
		if !slices.Contains(c.scopes, sc) {
			return oidc.ErrInvalidScope().WithDescription("scope %q is not allowed for client %q", sc, c.id)
		}
	}
	return nil
}

// clientCredentialsRequest is the token request of a client credentials
// grant: the client is the subject; any audience may be named, the
// client's own id being the default (zitadel's, for an empty audience).
func (s *storage) clientCredentialsRequest(clientID string, scopes, audience []string) (*tokenRequest, error) {
	c, ok := s.clients[clientID]
	if !ok {
		return nil, oidc.ErrInvalidClient()
	}
	if err := checkScopes(c, scopes); err != nil {
		return nil, err
	}
	return &tokenRequest{subject: clientID, audience: audience, scopes: scopes}, nil
}

// tokenRequest is an op.TokenRequest of the client credentials grant: the
// client is the subject.
type tokenRequest struct {
	subject          string
	audience, scopes []string
}

func (r *tokenRequest) GetClientID() string   { return r.subject }
func (r *tokenRequest) GetSubject() string    { return r.subject }
func (r *tokenRequest) GetAudience() []string { return r.audience }
func (r *tokenRequest) GetScopes() []string   { return r.scopes }

// scopeClaims are the private claims of an access token: its scope, which
// zitadel's JWT leaves out of the claims it fills itself.
func scopeClaims(scopes []string) map[string]any {
	claims := map[string]any{}
	if len(scopes) > 0 {
		claims["scope"] = strings.Join(scopes, " ")
	}
	return claims
}

// --- op.ClientCredentialsStorage

// ClientCredentials authenticates a client of the client credentials
// grant; zitadel then checks that the client has the grant. Unlike
// AuthorizeClientIDSecret's, its error reaches the client as it is
// (LegacyServer.VerifyClient does not wrap it): a plain error would be a
// server_error (500) carrying the error's text.
func (s *storage) ClientCredentials(_ context.Context, clientID, secret string) (op.Client, error) {
	c, err := s.authenticate(clientID, secret)
	if err != nil {
		return nil, oidc.ErrInvalidClient().WithDescription("invalid client_id / client_secret").WithParent(err)
	}
	return c, nil
}

// ClientCredentialsTokenRequest is what zitadel's own client credentials
// handler would use; server.ClientCredentialsExchange replaces it, to keep
// the audience parameter.
func (s *storage) ClientCredentialsTokenRequest(_ context.Context, clientID string, scopes []string) (op.TokenRequest, error) {
	return s.clientCredentialsRequest(clientID, scopes, nil)
}

// --- op.TokenExchangeStorage
//
// By the time zitadel calls these, it has authenticated the client,
// checked that the client has the token exchange grant (unauthorized_client
// otherwise), and verified the subject token (signature, issuer, expiry) and
// put its sub and claims in the request. What it leaves to the storage: the
// requested token type's default, which targets and scopes the client may
// ask for, and the claims of the issued token beyond iss, sub, aud, exp,
// iat, nbf, jti and client_id.

// ValidateTokenExchangeRequest applies the client's policy: only access
// tokens are issued; every target (audience, to which the server added the
// resources) must be one of the client's (invalid_target) and every scope
// one of its scopes (invalid_scope).
func (s *storage) ValidateTokenExchangeRequest(_ context.Context, req op.TokenExchangeRequest) error {
	c, ok := s.clients[req.GetClientID()]
	if !ok {
		return oidc.ErrInvalidClient()
	}
	switch req.GetRequestedTokenType() {
	case "":
		req.SetRequestedTokenType(oidc.AccessTokenType)
	case oidc.AccessTokenType:
	default:
		return oidc.ErrInvalidRequest().WithDescription("requested_token_type %s is not issued: only access tokens are", req.GetRequestedTokenType())
	}
	targets := req.GetAudience()
	if len(targets) == 0 {
		return oidc.ErrInvalidRequest().WithDescription("audience or resource is required")
	}
	for _, t := range targets {
		if !slices.Contains(c.audiences, t) {
			return oidc.ErrInvalidTarget().WithDescription("target %q is not allowed for client %q", t, c.id)
		}
	}
	return checkScopes(c, req.GetScopes())
}

// CreateTokenExchangeRequest would store the request for an audit; the
// only record kept is the count in the server.
func (s *storage) CreateTokenExchangeRequest(context.Context, op.TokenExchangeRequest) error {
	return nil
}

// GetPrivateClaimsFromTokenExchangeRequest adds the scope and the actor:
// act.sub is the client that exchanged the token (RFC 8693 section 4.1).
func (s *storage) GetPrivateClaimsFromTokenExchangeRequest(_ context.Context, req op.TokenExchangeRequest) (map[string]any, error) {
	claims := scopeClaims(req.GetScopes())
	claims["act"] = map[string]any{"sub": req.GetClientID()}
	return claims, nil
}

// SetUserinfoFromTokenExchangeRequest is for ID tokens, which are never
// issued (ValidateTokenExchangeRequest refuses them).
func (s *storage) SetUserinfoFromTokenExchangeRequest(context.Context, *oidc.UserInfo, op.TokenExchangeRequest) error {
	return oidc.ErrInvalidRequest().WithDescription("id tokens are not issued")
}

// --- op.TokenExchangeTokensVerifierStorage

// VerifyExchangeSubjectToken verifies the subject tokens zitadel does not
// know how to verify itself: those of type
// urn:ietf:params:oauth:token-type:jwt (which ours are), and tokens of a
// trusted issuer of either type (zitadel tries only our keys on an access
// token, then asks here). (Its error is dropped: zitadel answers
// invalid_request; server.TokenExchange has verified the token by then.)
func (s *storage) VerifyExchangeSubjectToken(ctx context.Context, token string, tokenType oidc.TokenType) (string, string, map[string]any, error) {
	if tokenType != oidc.JWTTokenType && tokenType != oidc.AccessTokenType {
		return "", "", nil, fmt.Errorf("subject token type %s is not verified here", tokenType)
	}
	claims, err := s.verifySubjectToken(ctx, token)
	if err != nil {
		return "", "", nil, err
	}
	return claims.JWTID, claims.Subject, claims.Claims, nil
}

// VerifyExchangeActorToken refuses every actor token: the exchanging client
// is the actor.
func (s *storage) VerifyExchangeActorToken(context.Context, string, oidc.TokenType) (string, string, map[string]any, error) {
	return "", "", nil, errors.New("actor tokens are not supported")
}

// --- op.AuthStorage: tokens and keys

// CreateAccessToken names the token and sets its expiry, by the lifetime
// of the requesting client's tokens; zitadel signs it. Every request of
// ours and zitadel's names its client.
func (s *storage) CreateAccessToken(_ context.Context, req op.TokenRequest) (string, time.Time, error) {
	return randomID(), time.Now().Add(s.ttl(clientOf(req))), nil
}

// clientOf is the client a token request is for.
func clientOf(req op.TokenRequest) string {
	if r, ok := req.(interface{ GetClientID() string }); ok {
		return r.GetClientID()
	}
	return ""
}

func (s *storage) SigningKey(context.Context) (op.SigningKey, error) {
	return signingKey{id: s.keyID, key: s.key}, nil
}

func (s *storage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}

func (s *storage) KeySet(context.Context) ([]op.Key, error) {
	return []op.Key{publicKey{id: s.keyID, key: &s.key.PublicKey}}, nil
}

// --- op.OPStorage

func (s *storage) GetClientByClientID(_ context.Context, clientID string) (op.Client, error) {
	c, ok := s.clients[clientID]
	if !ok {
		return nil, fmt.Errorf("unknown client %q", clientID)
	}
	return c, nil
}

func (s *storage) AuthorizeClientIDSecret(_ context.Context, clientID, secret string) error {
	_, err := s.authenticate(clientID, secret)
	return err
}

// GetPrivateClaimsFromScopes gives client credentials and sign-in tokens
// their scope.
func (s *storage) GetPrivateClaimsFromScopes(_ context.Context, _, _ string, scopes []string) (map[string]any, error) {
	return scopeClaims(scopes), nil
}

func (s *storage) Health(context.Context) error { return nil }

// --- The rest of op.Storage: what this server does not offer (no user
// info, no introspection, no sessions to end, no JWT profile). zitadel
// routes none of their endpoints here.

// unsupported is the answer of each: a new error every time, as
// *oidc.Error's With* methods change the error they are called on.
func unsupported() *oidc.Error {
	return oidc.ErrUnsupportedGrantType().WithDescription("only the authorization code, refresh token, client credentials and token exchange grants are offered")
}

func (s *storage) TerminateSession(context.Context, string, string) error { return unsupported() }
func (s *storage) SetUserinfoFromScopes(context.Context, *oidc.UserInfo, string, string, []string) error {
	return nil
}
func (s *storage) SetUserinfoFromToken(context.Context, *oidc.UserInfo, string, string, string) error {
	return unsupported()
}
func (s *storage) SetIntrospectionFromToken(context.Context, *oidc.IntrospectionResponse, string, string, string) error {
	return unsupported()
}
func (s *storage) GetKeyByIDAndClientID(context.Context, string, string) (*jose.JSONWebKey, error) {
	return nil, unsupported()
}
func (s *storage) ValidateJWTProfileScopes(context.Context, string, []string) ([]string, error) {
	return nil, unsupported()
}

// client is a configured client as zitadel sees it: with JWT access
// tokens; confidential, authenticating with its secret
// (client_secret_basic or client_secret_post; zitadel accepts either for
// a basic client), or public (no secret: token_endpoint_auth_method
// none), which PKCE alone binds to its codes. Its application type is web
// either way: zitadel then takes http redirect URIs for the code flow,
// which every test's loopback redirect is.
type client struct {
	id, secret        string
	grants            []oidc.GrantType
	audiences, scopes []string
	redirectURIs      []string
	ttl               time.Duration
}

var _ op.Client = (*client)(nil)

func (c *client) GetID() string                       { return c.id }
func (c *client) RedirectURIs() []string              { return c.redirectURIs }
func (c *client) PostLogoutRedirectURIs() []string    { return nil }
func (c *client) ApplicationType() op.ApplicationType { return op.ApplicationTypeWeb }
func (c *client) GrantTypes() []oidc.GrantType        { return c.grants }
func (c *client) AccessTokenType() op.AccessTokenType { return op.AccessTokenTypeJWT }
func (c *client) IDTokenLifetime() time.Duration      { return c.ttl }
func (c *client) DevMode() bool                       { return false }
func (c *client) IsScopeAllowed(scope string) bool    { return slices.Contains(c.scopes, scope) }
func (c *client) IDTokenUserinfoClaimsAssertion() bool {
	return false
}
func (c *client) ClockSkew() time.Duration { return 0 }

func (c *client) AuthMethod() oidc.AuthMethod {
	if c.secret == "" {
		return oidc.AuthMethodNone
	}
	return oidc.AuthMethodBasic
}

// ResponseTypes is code alone, for a client of the code grant: no
// implicit flow.
func (c *client) ResponseTypes() []oidc.ResponseType {
	if slices.Contains(c.grants, oidc.GrantTypeCode) {
		return []oidc.ResponseType{oidc.ResponseTypeCode}
	}
	return nil
}

// LoginURL is where zitadel sends the browser of an authorization request:
// this server's own login (server.login), which approves it at once. A
// path, which the browser resolves against the authorization endpoint.
func (c *client) LoginURL(id string) string { return loginPath + "?id=" + url.QueryEscape(id) }

func (c *client) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(scopes []string) []string { return scopes }
}
func (c *client) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(scopes []string) []string { return scopes }
}

// signingKey is the private half of the key, for zitadel's signer.
type signingKey struct {
	id  string
	key *rsa.PrivateKey
}

func (k signingKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k signingKey) Key() any                                    { return k.key }
func (k signingKey) ID() string                                  { return k.id }

// publicKey is the public half, for the JWKS and the verifier.
type publicKey struct {
	id  string
	key *rsa.PublicKey
}

func (k publicKey) ID() string                         { return k.id }
func (k publicKey) Algorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k publicKey) Use() string                        { return "sig" }
func (k publicKey) Key() any                           { return k.key }

// randomID is a random 128-bit hex id (key ids, token ids).
func randomID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}
