package config

import (
	"fmt"
	"time"
)

// AuthUserOAuth is servers[].auth for a server reached as each caller's
// own account there (UserOAuth).
const AuthUserOAuth = "userOAuth"

// UserOAuth makes the hub reach a server as each caller's own account at
// its authorization server (GitHub's, Linear's...): each caller signs in
// once through a link the hub gives in the chat (authorization code with
// PKCE), and its calls carry its own token only (internal/usergrants).
// With nothing set, the authorization server is found from the server's
// protected resource metadata (RFC 9728) and the hub registers there (its
// Client ID Metadata Document, else RFC 7591).
type UserOAuth struct {
	// Issuer is the authorization server whose metadata names its
	// endpoints (RFC 8414, OIDC discovery).
	Issuer string `json:"issuer,omitempty"`
	// AuthorizationURL and TokenURL, both or neither: a server without
	// metadata (GitHub's OAuth apps).
	AuthorizationURL string `json:"authorizationURL,omitempty"`
	TokenURL         string `json:"tokenURL,omitempty"`
	// RevocationURL is the RFC 7009 endpoint when the metadata names none.
	RevocationURL string `json:"revocationURL,omitempty"`
	// ClientID is the hub's client there; empty: the hub registers.
	ClientID string `json:"clientID,omitempty"`
	// ClientSecret names where a confidential client's secret is read
	// from (env or file); kube fills ClientSecretValue instead.
	ClientSecret *TokenRef `json:"clientSecret,omitempty"`
	// Scopes are asked for in every sign-in.
	Scopes []string `json:"scopes,omitempty"`
	// Resource is the RFC 8707 resource; empty: the server's URL.
	Resource string `json:"resource,omitempty"`
	// AuthStyle is basic (default) or post, as oauth.authStyle.
	AuthStyle OAuthAuthStyle `json:"authStyle,omitempty"`

	// ClientSecretValue is the resolved client secret.
	ClientSecretValue Secret `json:"-"`
}

// validateUserOAuth checks s.UserOAuth. A service credential (token or
// oauth) may stand beside it: the hub's own requests use it.
func (s *ServerSpec) validateUserOAuth() error {
	u := s.UserOAuth
	if u == nil {
		return nil
	}
	if s.TokenExchange != nil {
		return fmt.Errorf("userOAuth: set either tokenExchange or userOAuth, not both (each decides the token of a caller's call)")
	}
	if s.Transport != TransportStreamableHTTP {
		return fmt.Errorf("userOAuth: works only with transport streamable-http (each call is an HTTP request of its own that carries its caller's token), not %s", s.Transport)
	}
	if (u.AuthorizationURL == "") != (u.TokenURL == "") {
		return fmt.Errorf("userOAuth.authorizationURL: set both authorizationURL and tokenURL, or neither (issuer or the server's metadata names them)")
	}
	for _, f := range []struct{ field, v string }{
		{"userOAuth.issuer", u.Issuer}, {"userOAuth.authorizationURL", u.AuthorizationURL},
		{"userOAuth.tokenURL", u.TokenURL}, {"userOAuth.revocationURL", u.RevocationURL},
	} {
		if f.v == "" {
			continue
		}
		if err := checkOAuthURL(f.field, f.v); err != nil {
			return err
		}
	}
	if u.ClientSecret != nil && u.ClientID == "" {
		return fmt.Errorf("userOAuth.clientSecret: needs userOAuth.clientID (a registered client has no secret of the operator's)")
	}
	return checkClientParams("userOAuth", u.ClientSecret, u.Scopes, u.Resource, u.AuthStyle)
}

// ResolveUserOAuthSecret reads UserOAuth.ClientSecret, if any.
func (s *ServerSpec) ResolveUserOAuthSecret() error {
	u := s.UserOAuth
	if u == nil || u.ClientSecret == nil {
		return nil
	}
	v, err := u.ClientSecret.read()
	u.ClientSecretValue = v
	return err
}

// userOAuthSecret is the resolved client secret, for Equal.
func (s ServerSpec) userOAuthSecret() Secret {
	if s.UserOAuth == nil {
		return ""
	}
	return s.UserOAuth.ClientSecretValue
}

// UserGrantSettings say where grants of servers with userOAuth are kept
// and where browsers reach the sign-in pages.
type UserGrantSettings struct {
	// Key names where the sealing keys are read from (env or file): one
	// per line, 32 bytes as base64 or hex; the first seals, all open, and
	// a start seals old records again with the first. Unset on a laptop:
	// grants.key, made in the state directory (0600).
	Key *TokenRef `json:"key,omitempty"`
	// Secret keeps the grants in a cluster (default mcp-hub-grants, in
	// the hub's namespace), for every replica.
	Secret string `json:"secret,omitempty"`
	// PublicURL is the hub as browsers reach it: the base of sign-in links
	// and the redirect URI. Default: registryAPI.baseURL, else the base of
	// auth.oauth.resource, else the address the hub listens on.
	PublicURL string `json:"publicURL,omitempty"`
	// LinkTTL is how long a sign-in link may be opened (default 10m).
	LinkTTL Duration `json:"linkTTL,omitempty"`

	// KeyValue is the resolved key text.
	KeyValue Secret `json:"-"`
}

// DefaultGrantsSecret is the Secret grants are kept in by default.
const DefaultGrantsSecret = "mcp-hub-grants"

// DefaultLinkTTL is how long a sign-in link lasts by default.
const DefaultLinkTTL = 10 * time.Minute

func (g *UserGrantSettings) applyDefaults() {
	setDefault(&g.Secret, DefaultGrantsSecret)
	setDefault(&g.LinkTTL, Duration(DefaultLinkTTL))
}

func (g UserGrantSettings) validate() error {
	if g.Key != nil && (g.Key.Env == "") == (g.Key.File == "") {
		return fmt.Errorf("userGrants.key: set exactly one of env or file")
	}
	if !secretNamePattern.MatchString(g.Secret) {
		return fmt.Errorf("userGrants.secret: %q is not a Secret name", g.Secret)
	}
	if g.PublicURL != "" {
		if err := checkOAuthURL("userGrants.publicURL", g.PublicURL); err != nil {
			return err
		}
	}
	if g.LinkTTL < Duration(time.Minute) || g.LinkTTL > Duration(24*time.Hour) {
		return fmt.Errorf("userGrants.linkTTL: %s is not within 1m and 24h", time.Duration(g.LinkTTL))
	}
	return nil
}
