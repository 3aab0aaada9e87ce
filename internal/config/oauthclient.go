package config

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/purko-io/mcp-hub/internal/secrets"
)

// OAuthClient makes the hub an OAuth 2.0 client of an upstream's
// authorization server (client credentials grant, RFC 6749 section 4.4).
// Remote MCP servers behind an authorization server accept only tokens
// it issued; the hub gets its own, refreshes it before it expires and
// sends it as Authorization: Bearer. The caller's token is never sent: it
// was issued for the hub, not for the upstream.
type OAuthClient struct {
	// TokenURL is the authorization server's token endpoint. http is
	// accepted (a token service on loopback or inside the cluster), but
	// the client secret then travels in clear: the operator's choice.
	TokenURL string `json:"tokenURL"`
	// ClientID is the hub's client id at the authorization server.
	ClientID string `json:"clientID"`
	// ClientSecret names where the client secret is read from (env or
	// file), as servers[].token does; never the secret itself. Sources
	// that read Secrets (kube) fill ClientSecretValue instead.
	ClientSecret *TokenRef `json:"clientSecret,omitempty"`
	// Scopes are requested with every token.
	Scopes []string `json:"scopes,omitempty"`
	// Audience is sent as the audience parameter, which Auth0, Hydra and
	// others use to pick the API the token is for.
	Audience string `json:"audience,omitempty"`
	// Resource is the RFC 8707 resource parameter, which MCP's
	// authorization spec asks clients to send; empty means the server's
	// URL.
	Resource string `json:"resource,omitempty"`
	// AuthStyle says how the client authenticates at the token endpoint:
	// basic (HTTP Basic, client_secret_basic; the default) or post (in the
	// form body, client_secret_post).
	AuthStyle OAuthAuthStyle `json:"authStyle,omitempty"`

	// ClientSecretValue is the resolved client secret. It is a Secret so
	// it cannot be printed or marshalled by accident.
	ClientSecretValue Secret `json:"-"`
}

// OAuthAuthStyle is how the hub presents its client credentials.
type OAuthAuthStyle string

// The client authentication methods of the token endpoint.
const (
	OAuthAuthBasic OAuthAuthStyle = "basic"
	OAuthAuthPost  OAuthAuthStyle = "post"
)

// validateOAuth checks s.OAuth. The error starts with "oauth" so Normalize's
// callers can prefix where the spec came from.
func (s *ServerSpec) validateOAuth() error {
	o := s.OAuth
	if o == nil {
		return nil
	}
	if s.Token != nil || s.BearerToken != "" {
		return fmt.Errorf("oauth: set either token or oauth, not both (oauth gets the bearer token from the authorization server)")
	}
	switch s.Transport {
	case TransportStreamableHTTP, TransportSSE, TransportWebSocket:
	default:
		return fmt.Errorf("oauth: works only with transports streamable-http, sse and websocket, not %s", s.Transport)
	}
	if o.TokenURL == "" {
		return fmt.Errorf("oauth.tokenURL: is required")
	}
	if err := checkHTTPURL(o.TokenURL); err != nil {
		return fmt.Errorf("oauth.tokenURL: %w", err)
	}
	return o.validate("oauth")
}

// validate checks the settings of o but its token URL, which the two
// grants check each in their own way. Errors start with field.
func (o *OAuthClient) validate(field string) error {
	if u, _ := url.Parse(o.TokenURL); u != nil && u.User != nil {
		return fmt.Errorf("%s.tokenURL: must not carry credentials; use clientID and clientSecret", field)
	}
	if strings.TrimSpace(o.ClientID) == "" {
		return fmt.Errorf("%s.clientID: is required", field)
	}
	return checkClientParams(field, o.ClientSecret, o.Scopes, o.Resource, o.AuthStyle)
}

// checkClientParams checks what every OAuth client setting has: where its
// secret is read, its scopes, its RFC 8707 resource and how it
// authenticates. Errors start with field.
func checkClientParams(field string, secret *TokenRef, scopes []string, resource string, style OAuthAuthStyle) error {
	if secret != nil && (secret.Env == "") == (secret.File == "") {
		return fmt.Errorf("%s.clientSecret: set exactly one of env or file", field)
	}
	for i, sc := range scopes {
		if sc == "" || strings.ContainsAny(sc, " \t\r\n\"\\") {
			return fmt.Errorf("%s.scopes[%d]: %q is not a scope (no spaces, quotes or backslashes)", field, i, sc)
		}
	}
	if resource != "" {
		u, err := url.Parse(resource)
		if err != nil || !u.IsAbs() || u.Fragment != "" {
			return fmt.Errorf("%s.resource: %q is not an absolute URI without a fragment (RFC 8707)", field, secrets.URLForMessage(resource))
		}
	}
	switch style {
	case "", OAuthAuthBasic, OAuthAuthPost:
	default:
		return fmt.Errorf("%s.authStyle: %q is not one of basic, post", field, style)
	}
	return nil
}

// ResolveOAuthSecret reads the client secret named by OAuth.ClientSecret
// into OAuth.ClientSecretValue. A source that has no Secrets (the config
// file) must name one: a client credentials grant without a secret
// authenticates nobody.
func (s *ServerSpec) ResolveOAuthSecret() error {
	o := s.ClientCredentials()
	if o == nil {
		return nil
	}
	if o.ClientSecret == nil {
		return fmt.Errorf("is required (env or file)")
	}
	v, err := o.ClientSecret.read()
	o.ClientSecretValue = v
	return err
}

// ResourceOrURL is the RFC 8707 resource the token is asked for: Resource,
// or the server's URL when unset.
func (o *OAuthClient) ResourceOrURL(serverURL string) string {
	if o.Resource != "" {
		return o.Resource
	}
	return serverURL
}

// oauthSecret is the resolved client secret, "" without oauth; Equal
// compares it, since JSON leaves it out.
func (s ServerSpec) oauthSecret() Secret {
	o := s.ClientCredentials()
	if o == nil {
		return ""
	}
	return o.ClientSecretValue
}

// ClientCredentials are the settings with which the hub gets its own
// access token for the server by the client credentials grant: spec.OAuth,
// or for a server with token exchange the exchange's client, with which
// the hub makes its own requests (handshake, lists, health checks); nil
// for neither.
func (s *ServerSpec) ClientCredentials() *OAuthClient {
	switch {
	case s.OAuth != nil:
		return s.OAuth
	case s.TokenExchange != nil:
		return &s.TokenExchange.OAuthClient
	}
	return nil
}
