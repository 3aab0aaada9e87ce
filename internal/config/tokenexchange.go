package config

import (
	"fmt"
)

// TokenExchange makes the hub reach a server as each caller, not as
// itself: before a caller's tools/call, the hub trades the caller's own
// token for one minted for this server at an authorization server (OAuth
// 2.0 Token Exchange, RFC 8693), and sends only that. The server sees who
// calls and applies its own permissions; the caller's token, issued for
// the hub, never reaches it (the MCP authorization spec forbids passing
// it through). A failed exchange fails the call: there is no fallback to
// a credential of the hub's.
//
// The embedded client is the hub's at the authorization server: it
// authenticates the exchanges, and gets the hub's own token (client
// credentials grant) for what the hub asks of the server on nobody's
// behalf: the handshake, tool lists, health checks.
type TokenExchange struct {
	OAuthClient `json:",inline"`
	// Issuer is the authorization server whose metadata (RFC 8414, OpenID
	// Connect Discovery) names the token endpoint, when TokenURL is not
	// set. When set, only OAuth callers whose token it issued are
	// exchanged: a caller's token goes to no other issuer's endpoint.
	Issuer string `json:"issuer,omitempty"`
	// SubjectToken says which callers' tokens are exchanged: oauth (the
	// default; the caller's OAuth access token), serviceAccount (the
	// projected ServiceAccount token a pod called with, as a JWT; the
	// authorization server must trust the cluster's issuer) or any
	// (whichever of the two the caller has). Other callers (hub tokens,
	// anonymous) cannot call the server's tools.
	SubjectToken SubjectTokenKind `json:"subjectToken,omitempty"`
}

// SubjectTokenKind names the callers whose token a TokenExchange trades.
type SubjectTokenKind string

// The kinds of subject tokens.
const (
	SubjectOAuth          SubjectTokenKind = "oauth"
	SubjectServiceAccount SubjectTokenKind = "serviceAccount"
	SubjectAny            SubjectTokenKind = "any"
)

// The values of servers[].auth.
const (
	AuthNone          = "none"
	AuthBearer        = "bearer"
	AuthOAuth         = "oauth"
	AuthTokenExchange = "tokenExchange"
)

// AuthMode is how the hub authenticates to the server: servers[].auth, or
// what the spec's credentials say when it is not set. Listings show it.
func (s *ServerSpec) AuthMode() string {
	switch {
	case s.Auth != "":
		return s.Auth
	case s.UserOAuth != nil:
		return AuthUserOAuth
	case s.TokenExchange != nil:
		return AuthTokenExchange
	case s.OAuth != nil:
		return AuthOAuth
	case s.Token != nil || s.BearerToken != "":
		return AuthBearer
	}
	return AuthNone
}

// validateAuth checks servers[].auth against the credentials the spec
// names, then the token exchange. Errors start with the field.
func (s *ServerSpec) validateAuth() error {
	switch s.Auth {
	case "":
	case AuthNone:
		if s.Token != nil || s.OAuth != nil || s.TokenExchange != nil || s.UserOAuth != nil {
			return fmt.Errorf("auth: is none, but the server names a credential (token, oauth, tokenExchange or userOAuth)")
		}
	case AuthBearer, AuthOAuth:
		if s.UserOAuth != nil {
			return fmt.Errorf("auth: is %s, but userOAuth is set: set auth: userOAuth (a token or oauth beside it is the hub's own credential)", s.Auth)
		}
	}
	switch s.Auth {
	case "", AuthNone:
	case AuthBearer:
		if s.Token == nil && s.BearerToken == "" {
			return fmt.Errorf("auth: is bearer, but token is not set")
		}
	case AuthOAuth:
		if s.OAuth == nil {
			return fmt.Errorf("auth: is oauth, but the oauth block is not set")
		}
	case AuthTokenExchange:
		if s.TokenExchange == nil {
			return fmt.Errorf("auth: is tokenExchange, but the tokenExchange block is not set")
		}
	case AuthUserOAuth:
		if s.UserOAuth == nil {
			return fmt.Errorf("auth: is userOAuth, but the userOAuth block is not set (an empty block, userOAuth: {}, discovers everything)")
		}
	default:
		return fmt.Errorf("auth: %q is not one of none, bearer, oauth, tokenExchange, userOAuth", s.Auth)
	}
	return s.validateTokenExchange()
}

// validateTokenExchange checks s.TokenExchange.
func (s *ServerSpec) validateTokenExchange() error {
	x := s.TokenExchange
	if x == nil {
		return nil
	}
	if s.Token != nil || s.BearerToken != "" || s.OAuth != nil {
		return fmt.Errorf("tokenExchange: set one of token, oauth and tokenExchange (the exchange gets every bearer token the server sees)")
	}
	if s.Transport != TransportStreamableHTTP {
		// Each call carries its caller's token in its own HTTP request;
		// SSE and WebSocket send every call on one stream the hub opened.
		return fmt.Errorf("tokenExchange: works only with transport streamable-http (each call is an HTTP request of its own that carries its caller's token), not %s", s.Transport)
	}
	switch {
	case x.TokenURL == "" && x.Issuer == "":
		return fmt.Errorf("tokenExchange.tokenURL: is required (or tokenExchange.issuer, to discover it)")
	case x.TokenURL != "":
		// The endpoint receives callers' tokens: only over TLS, or on
		// loopback.
		if err := checkOAuthURL("tokenExchange.tokenURL", x.TokenURL); err != nil {
			return err
		}
	}
	if x.Issuer != "" {
		if err := checkOAuthURL("tokenExchange.issuer", x.Issuer); err != nil {
			return err
		}
	}
	if x.Audience == "" && x.Resource == "" {
		return fmt.Errorf("tokenExchange.audience: is required (or tokenExchange.resource): the exchanged token must be minted for this server")
	}
	switch x.SubjectToken {
	case "", SubjectOAuth, SubjectServiceAccount, SubjectAny:
	default:
		return fmt.Errorf("tokenExchange.subjectToken: %q is not one of oauth, serviceAccount, any", x.SubjectToken)
	}
	return x.validate("tokenExchange")
}

// Subjects is the kind of callers whose tokens are exchanged (SubjectOAuth
// when not set).
func (x *TokenExchange) Subjects() SubjectTokenKind {
	if x.SubjectToken == "" {
		return SubjectOAuth
	}
	return x.SubjectToken
}
