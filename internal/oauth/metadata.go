package oauth

import (
	"net/url"
	"strings"
)

// WellKnown is where protected resource metadata lives (RFC 9728); the
// resource's path follows it for a resource that has one.
const WellKnown = "/.well-known/oauth-protected-resource"

// ProtectedResource is the hub's protected resource metadata: what an MCP
// client reads after a 401 to learn where to get a token for the hub.
type ProtectedResource struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers"`
	ScopesSupported        []string `json:"scopes_supported"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	ResourceName           string   `json:"resource_name"`
}

// Metadata returns the hub's protected resource metadata.
func (v *Verifier) Metadata() ProtectedResource {
	md := ProtectedResource{Resource: v.opts.Resource, ScopesSupported: Scopes(),
		BearerMethodsSupported: []string{"header"}, ResourceName: "mcp-hub"}
	for _, is := range v.opts.Issuers {
		md.AuthorizationServers = append(md.AuthorizationServers, is.Issuer)
	}
	return md
}

// MetadataPaths are the paths the metadata is served at: the well-known
// path with the resource's path after it (where RFC 9728 puts it, and
// where clients look first), and the bare one, which clients try next.
func MetadataPaths(resource string) []string {
	paths := []string{WellKnown}
	if u, err := url.Parse(resource); err == nil {
		if p := strings.TrimSuffix(u.Path, "/"); p != "" {
			paths = append([]string{WellKnown + p}, paths...)
		}
	}
	return paths
}

// MetadataURL is the metadata's address as the 401 challenge names it. It
// is built from the configured resource, never from the request's Host
// header, which a caller chooses.
func (v *Verifier) MetadataURL() string {
	u, err := url.Parse(v.opts.Resource)
	if err != nil {
		return ""
	}
	u.Path, u.RawQuery, u.Fragment = MetadataPaths(v.opts.Resource)[0], "", ""
	return u.String()
}

// Challenge is the WWW-Authenticate value of a refused request: where the
// metadata is, and for a refused token why (RFC 6750 section 3). err is
// nil when the request carried no token.
func (v *Verifier) Challenge(err *Error) string {
	var b strings.Builder
	b.WriteString(`Bearer resource_metadata="`)
	b.WriteString(quotable(v.MetadataURL()))
	b.WriteString(`"`)
	if err != nil {
		b.WriteString(`, error="` + quotable(err.Code) + `", error_description="` + quotable(err.Reason) + `"`)
		if err.Code == "insufficient_scope" {
			b.WriteString(`, scope="` + strings.Join(Scopes(), " ") + `"`)
		}
	}
	return b.String()
}

// quotable keeps s to the characters RFC 6750 allows in a quoted
// error_description: printable ASCII without '"' and '\'.
func quotable(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '"' || r == '\\':
			return '\''
		case r < 0x20 || r > 0x7e:
			return '?'
		}
		return r
	}, s)
}
