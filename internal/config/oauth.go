package config

import (
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/purko-io/mcp-hub/internal/toolspec"
)

// OAuthSettings make the hub an OAuth 2.1 resource server (MCP
// authorization): remote MCP clients find the authorization servers in its
// protected resource metadata and call it with their JWT access tokens.
type OAuthSettings struct {
	// Resource is the hub's MCP endpoint as clients reach it
	// (https://hub.example.com/mcp): the audience tokens must be issued
	// for, and where the metadata is published.
	Resource string `json:"resource"`
	// Issuers are the authorization servers whose tokens are accepted.
	Issuers []OAuthIssuer `json:"issuers"`
	// ClockSkew is allowed on a token's exp and nbf (default 30s).
	ClockSkew *Duration `json:"clockSkew,omitempty"`
	// JWKSRefresh is how often the issuers' key sets are fetched again, so
	// a withdrawn key stops working within it (default 5m). A token signed
	// with a new key fetches the set at once.
	JWKSRefresh Duration `json:"jwksRefresh,omitempty"`
}

// OAuthIssuer is one trusted authorization server.
type OAuthIssuer struct {
	// Issuer is the issuer URL exactly as its tokens' iss claim writes it.
	Issuer string `json:"issuer"`
	// Audiences, when set, replace the resource as the audiences a token
	// must name one of (for servers that cannot put a URL in aud).
	Audiences []string `json:"audiences,omitempty"`
	// JWKSURL, when set, skips discovery of the issuer's key set.
	JWKSURL string `json:"jwksURL,omitempty"`
	// NameClaim names the caller in audit lines (default sub; email is
	// friendlier where the issuer sets it).
	NameClaim string `json:"nameClaim,omitempty"`
	// Grants give levels by claims, beside the mcp:* scopes.
	Grants []OAuthGrant `json:"grants,omitempty"`
	// Guardrails hold every caller of this issuer (see
	// auth.tokens[].guardrails); a grant's own add to them.
	Guardrails *toolspec.Guardrails `json:"guardrails,omitempty"`
}

// OAuthGrant gives MaxLevel to tokens whose Claim holds Value.
type OAuthGrant struct {
	// Claim is a claim name or a dotted path (realm_access.roles).
	Claim string `json:"claim"`
	// Value must equal the claim, or be an item of it when it is a list.
	Value string `json:"value"`
	// MaxLevel is the ceiling this grant gives.
	MaxLevel string `json:"maxLevel"`
	// Tools, when not empty, are the only tools this grant reaches.
	Tools []string `json:"tools,omitempty"`
	// Admin lets the caller use the REST API's writes.
	Admin bool `json:"admin,omitempty"`
	// Approver lets the caller approve or deny calls held for a person
	// (approvals), besides approvals.approvers.
	Approver bool `json:"approver,omitempty"`
	// Guardrails hold the tokens this grant matches (by scope: claim
	// scope; by subject: claim sub); the guardrails of every matching
	// grant and of the issuer add up, the strictest wins.
	Guardrails *toolspec.Guardrails `json:"guardrails,omitempty"`
}

// DefaultClockSkew is the default auth.oauth.clockSkew.
const DefaultClockSkew = 30 * time.Second

// Skew returns the clock skew allowed on tokens.
func (o *OAuthSettings) Skew() time.Duration {
	if o.ClockSkew == nil {
		return DefaultClockSkew
	}
	return o.ClockSkew.D()
}

func (o *OAuthSettings) validate() error {
	if err := checkOAuthURL("auth.oauth.resource", o.Resource); err != nil {
		return err
	}
	if u, _ := url.Parse(o.Resource); u.RawQuery != "" {
		return fmt.Errorf("auth.oauth.resource: %q must not have a query", o.Resource)
	}
	if len(o.Issuers) == 0 {
		return fmt.Errorf("auth.oauth.issuers: name at least one authorization server")
	}
	if s := o.Skew(); s < 0 || s > 5*time.Minute {
		return fmt.Errorf("auth.oauth.clockSkew: %s is not within 0 and 5m", s)
	}
	if r := o.JWKSRefresh.D(); r != 0 && r < time.Second {
		return fmt.Errorf("auth.oauth.jwksRefresh: %s is shorter than 1s", r)
	}
	seen := map[string]bool{}
	for i, is := range o.Issuers {
		where := fmt.Sprintf("auth.oauth.issuers[%d]", i)
		if err := checkOAuthURL(where+".issuer", is.Issuer); err != nil {
			return err
		}
		if seen[is.Issuer] {
			return fmt.Errorf("%s.issuer: %q is listed twice", where, is.Issuer)
		}
		seen[is.Issuer] = true
		if is.JWKSURL != "" {
			if err := checkOAuthURL(where+".jwksURL", is.JWKSURL); err != nil {
				return err
			}
		}
		for j, a := range is.Audiences {
			if strings.TrimSpace(a) == "" {
				return fmt.Errorf("%s.audiences[%d]: is empty", where, j)
			}
		}
		for j, g := range is.Grants {
			gw := fmt.Sprintf("%s.grants[%d]", where, j)
			if g.Claim == "" || g.Value == "" {
				return fmt.Errorf("%s: set claim and value", gw)
			}
			if _, err := toolspec.CanonicalLevel(g.MaxLevel); err != nil {
				return fmt.Errorf("%s.maxLevel: %w", gw, err)
			}
			if err := g.Guardrails.Validate(); err != nil {
				return fmt.Errorf("%s.guardrails.%w", gw, err)
			}
		}
		if err := is.Guardrails.Validate(); err != nil {
			return fmt.Errorf("%s.guardrails.%w", where, err)
		}
	}
	return nil
}

// checkOAuthURL accepts https URLs, and http ones only on loopback: a
// token or a key set fetched in the clear could be swapped on the way.
func checkOAuthURL(field, s string) error {
	if s == "" {
		return fmt.Errorf("%s: is required", field)
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("%s: %q is not an absolute URL without user info or fragment", field, s)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if ip := net.ParseIP(u.Hostname()); u.Hostname() == "localhost" || (ip != nil && ip.IsLoopback()) {
			return nil
		}
	}
	return fmt.Errorf("%s: %q must be https (http only on loopback)", field, s)
}
