package useroauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/purko-io/mcp-hub/internal/oauth"
	"github.com/purko-io/mcp-hub/internal/secrets"
)

// protocolVersion is the MCP revision whose authorization this package
// follows, sent on metadata requests as MCP clients do.
const protocolVersion = "2025-11-25"

// Endpoints is what the hub knows of one authorization server, from its
// metadata: where each step of a grant happens and which optional parts
// of the protocol it says it speaks.
type Endpoints struct {
	Issuer, Authorization, Token, Revocation, Registration string
	// IssParameter: the AS says it sends iss in authorization responses (RFC 9207,
	// authorization_response_iss_parameter_supported), so a response
	// without one is forged or mixed up (CheckIssuer).
	IssParameter bool
	// ClientIDMetadata: the AS accepts a URL as client_id (client_id_metadata_document_supported),
	// so the hub needs no registration there: its Client ID Metadata
	// Document's URL is its client_id.
	ClientIDMetadata bool
	// CodeChallengeMethods are the PKCE methods the AS lists; empty when
	// its metadata does not say (see Discover).
	CodeChallengeMethods []string
}

// ResourceMetadata fetches an MCP server's protected resource metadata (RFC
// 9728) for serverURL, to learn which authorization servers issue its
// tokens and which resource identifier to ask them for (RFC 8707). It
// tries, in the MCP specification's order: the URL a 401's
// WWW-Authenticate resource_metadata parameter names (hinted; "" when
// none, see Probe), then the well-known URL with serverURL's path
// inserted (/.well-known/oauth-protected-resource/<path>), then the one at
// the root; it goes on to the next place when one cannot be read, not
// when one says something wrong.
//
// The document's resource must cover serverURL: same origin, and
// serverURL's path equal to the resource's or under it (RFC 9728 section
// 3.3 and the MCP SDKs' reading of it for metadata found at the root),
// after dropping a trailing slash. Otherwise a server could have the hub
// ask for tokens meant for another; the error says both. The resource is
// returned as the document writes it: it is what the server expects as
// the tokens' audience.
func ResourceMetadata(ctx context.Context, hc *http.Client, serverURL, hinted string) (resource string, authServers []string, err error) {
	server, err := httpURL(serverURL)
	if err != nil {
		return "", nil, fmt.Errorf("protected resource metadata: server URL: %w", err)
	}
	var places []string
	if hinted != "" {
		places = append(places, hinted)
	}
	places = append(places, resourceMetadataURLs(server)...)
	var errs []error
	for _, place := range places {
		var md struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
		}
		if err := getJSON(ctx, hc, "protected resource metadata", place, &md); err != nil {
			errs = append(errs, err)
			continue
		}
		where := secrets.URLForMessage(place)
		if err := covers(md.Resource, server); err != nil {
			return "", nil, fmt.Errorf("protected resource metadata at %s names resource %q, not one for %s: %w",
				where, md.Resource, secrets.URLForMessage(serverURL), err)
		}
		if len(md.AuthorizationServers) == 0 {
			return "", nil, fmt.Errorf("protected resource metadata at %s names no authorization_servers", where)
		}
		return md.Resource, md.AuthorizationServers, nil
	}
	return "", nil, fmt.Errorf("protected resource metadata of %s: %w", secrets.URLForMessage(serverURL), errors.Join(errs...))
}

// resourceMetadataURLs are RFC 9728's well-known places for server: with
// its path (and query) after the well-known part, then at the root.
func resourceMetadataURLs(server *url.URL) []string {
	at := func(path, query string) string {
		u := url.URL{Scheme: server.Scheme, Host: server.Host, Path: path, RawQuery: query}
		return u.String()
	}
	const wellKnown = "/.well-known/oauth-protected-resource"
	var out []string
	if p := strings.TrimSuffix(server.Path, "/"); p != "" || server.RawQuery != "" {
		out = append(out, at(wellKnown+p, server.RawQuery))
	}
	return append(out, at(wellKnown, ""))
}

// covers checks that the resource identifier a server's metadata names is
// serverURL's: same origin, and a path of which serverURL's is the same
// or below (whole segments), trailing slashes aside.
func covers(resource string, server *url.URL) error {
	r, err := httpURL(resource)
	if err != nil {
		return err
	}
	if !secrets.SameOrigin(r, server) {
		return errors.New("another origin")
	}
	rp := strings.TrimSuffix(r.Path, "/") + "/"
	sp := strings.TrimSuffix(server.Path, "/") + "/"
	if !strings.HasPrefix(sp, rp) {
		return fmt.Errorf("path %q is neither the server's nor above it", r.Path)
	}
	return nil
}

// Probe sends an unauthenticated POST of an MCP initialize request to
// serverURL, as an MCP client's first request, and when it is answered
// 401 returns the resource_metadata URL of its WWW-Authenticate header
// ("" when none): so a hub given nothing but a server's URL discovers its
// authorization as an MCP client does. Any other answer is an *Error: a
// server that answers 2xx asks for no authorization (the session it may
// have opened is ended), one that answers 404 or 405 is no Streamable
// HTTP server.
func Probe(ctx context.Context, hc *http.Client, serverURL string) (hinted string, err error) {
	c := newCall("authorization probe", serverURL)
	if _, err := httpURL(serverURL); err != nil {
		return "", c.fail(0, "", "", err)
	}
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + protocolVersion +
		`","capabilities":{},"clientInfo":{"name":"mcp-hub","version":"0"}}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, serverURL, strings.NewReader(initialize))
	if err != nil {
		return "", c.fail(0, "", "", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", c.transport(err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		// The body says nothing the header does not; an event stream
		// would never end.
		return resourceMetadataParam(resp.Header.Values("WWW-Authenticate")), nil
	case resp.StatusCode/100 == 2:
		if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
			endSession(ctx, hc, serverURL, id)
		}
		return "", c.fail(resp.StatusCode, "", "the server answered without asking for authorization", nil)
	}
	body, err := readBounded(resp.Body)
	if err != nil {
		return "", c.fail(resp.StatusCode, "", "", err)
	}
	return "", c.fail(resp.StatusCode, "", c.describeBody(resp.Header.Get("Content-Type"), body), nil)
}

// endSession ends the session a probe opened at a server that needs no
// authorization (Streamable HTTP: DELETE with the session id), so that it
// does not wait for its idle timeout. Whether it worked changes nothing.
func endSession(ctx context.Context, hc *http.Client, serverURL, id string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, serverURL, nil)
	if err != nil {
		return
	}
	req.Header.Set("Mcp-Session-Id", id)
	req.Header.Set("MCP-Protocol-Version", protocolVersion)
	if resp, err := hc.Do(req); err == nil {
		resp.Body.Close()
	}
}

// Discover reads an issuer's metadata where the MCP specification looks
// for it: RFC 8414 (the well-known part before the issuer's path), then
// OpenID Connect discovery (the well-known part before the path, then
// after it); for an issuer without a path, the two root documents. A
// place that cannot be read is passed over; a document read is final.
//
// The document's issuer must equal issuer exactly (RFC 8414 section 3.3),
// or one server could stand in for another. When it lists
// code_challenge_methods_supported, S256 must be among them: MCP clients
// must use PKCE S256, and a server that lists other methods only would
// refuse it. When the list is absent the server is accepted and
// Endpoints.CodeChallengeMethods is empty: OpenID providers often omit it
// (OpenID Connect Discovery does not define it) while doing PKCE, and
// the authorization request sends S256 all the same. MCP 2025-11-25 asks
// clients to refuse such servers; a caller that must follow it to the
// letter refuses an empty CodeChallengeMethods.
//
// Endpoint URLs must be absolute http(s) URLs: the authorization endpoint
// is where a user's browser is sent.
func Discover(ctx context.Context, hc *http.Client, issuer string) (Endpoints, error) {
	places, err := metadataURLs(issuer)
	if err != nil {
		return Endpoints{}, err
	}
	var errs []error
	for _, place := range places {
		var md struct {
			Issuer               string   `json:"issuer"`
			Authorization        string   `json:"authorization_endpoint"`
			Token                string   `json:"token_endpoint"`
			Revocation           string   `json:"revocation_endpoint"`
			Registration         string   `json:"registration_endpoint"`
			IssParameter         bool     `json:"authorization_response_iss_parameter_supported"`
			ClientIDMetadata     bool     `json:"client_id_metadata_document_supported"`
			CodeChallengeMethods []string `json:"code_challenge_methods_supported"`
		}
		if err := getJSON(ctx, hc, "authorization server metadata", place, &md); err != nil {
			errs = append(errs, err)
			continue
		}
		where := secrets.URLForMessage(place)
		if md.Issuer != issuer {
			return Endpoints{}, fmt.Errorf("authorization server %s: metadata at %s names issuer %q; the two must be equal", issuer, where, md.Issuer)
		}
		if len(md.CodeChallengeMethods) > 0 && !slices.Contains(md.CodeChallengeMethods, "S256") {
			return Endpoints{}, fmt.Errorf("authorization server %s: code_challenge_methods_supported %q lacks S256, which MCP clients must use (PKCE)", issuer, md.CodeChallengeMethods)
		}
		for _, e := range []struct {
			name, value string
			required    bool
		}{
			{"authorization_endpoint", md.Authorization, true},
			{"token_endpoint", md.Token, true},
			{"revocation_endpoint", md.Revocation, false},
			{"registration_endpoint", md.Registration, false},
		} {
			if e.value == "" && !e.required {
				continue
			}
			if _, err := httpURL(e.value); err != nil {
				return Endpoints{}, fmt.Errorf("authorization server %s: metadata at %s: %s: %w", issuer, where, e.name, err)
			}
		}
		return Endpoints{
			Issuer:               issuer,
			Authorization:        md.Authorization,
			Token:                md.Token,
			Revocation:           md.Revocation,
			Registration:         md.Registration,
			IssParameter:         md.IssParameter,
			ClientIDMetadata:     md.ClientIDMetadata,
			CodeChallengeMethods: md.CodeChallengeMethods,
		}, nil
	}
	return Endpoints{}, fmt.Errorf("authorization server %s: no metadata: %w", issuer, errors.Join(errs...))
}

// metadataURLs are where an issuer's metadata may be, in the order of the
// MCP specification (oauth.MetadataURLs), for an issuer without query or
// fragment.
func metadataURLs(issuer string) ([]string, error) {
	u, err := httpURL(issuer)
	if err != nil {
		return nil, fmt.Errorf("authorization server: issuer: %w", err)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("authorization server %s: an issuer has no query or fragment (RFC 8414 section 2)", secrets.URLForMessage(issuer))
	}
	return oauth.MetadataURLs(issuer)
}

// getJSON GETs a metadata document into out: a 200 with a JSON object.
func getJSON(ctx context.Context, hc *http.Client, op, place string, out any) error {
	c := newCall(op, place)
	if _, err := httpURL(place); err != nil {
		return c.fail(0, "", "", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, place, nil)
	if err != nil {
		return c.fail(0, "", "", err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("MCP-Protocol-Version", protocolVersion)
	resp, body, err := c.do(hc, req)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return c.refusal(resp, body)
	}
	if err := decodeJSON(body, out); err != nil {
		return c.notJSON(resp, body, err)
	}
	return nil
}

// httpURL parses an absolute http or https URL with a host.
func httpURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, errors.New("not a URL")
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%q is not an absolute http(s) URL", secrets.URLForMessage(raw))
	}
	if u.User != nil {
		return nil, fmt.Errorf("%q carries user info", secrets.URLForMessage(raw))
	}
	return u, nil
}

// resourceMetadataParam is the resource_metadata parameter of the first
// Bearer challenge of WWW-Authenticate header values that has one.
func resourceMetadataParam(values []string) string {
	for _, v := range values {
		for _, ch := range parseChallenges(v) {
			if strings.EqualFold(ch.scheme, "Bearer") && ch.params["resource_metadata"] != "" {
				return ch.params["resource_metadata"]
			}
		}
	}
	return ""
}

// challenge is one authentication challenge of a WWW-Authenticate header
// (RFC 9110 section 11.6.1); params keys are lower case.
type challenge struct {
	scheme string
	params map[string]string
}

// parseChallenges reads the challenges of one WWW-Authenticate value:
// `Bearer error="invalid_token", resource_metadata="https://…", Basic
// realm="x"`. A token followed by "=" and a value is a parameter of the
// challenge before it; a token68 (`Negotiate abc==`) is skipped; any other
// token starts a challenge. What it cannot read it passes over: the header
// comes from the server, and a garbled part must not hide the rest.
func parseChallenges(s string) []challenge {
	var out []challenge
	i := 0
	skip := func(set string) {
		for i < len(s) && strings.IndexByte(set, s[i]) >= 0 {
			i++
		}
	}
	for {
		skip(" \t,")
		if i >= len(s) {
			return out
		}
		start := i
		for i < len(s) && isTokenChar(s[i]) {
			i++
		}
		tok := s[start:i]
		if tok == "" {
			i++ // a character no token has
			continue
		}
		skip(" \t")
		if i >= len(s) || s[i] != '=' {
			out = append(out, challenge{scheme: tok, params: map[string]string{}})
			continue
		}
		skip("=")
		skip(" \t")
		if i >= len(s) || s[i] == ',' || len(out) == 0 {
			continue // a token68, or a parameter before any scheme
		}
		var value string
		if s[i] == '"' {
			var b strings.Builder
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				b.WriteByte(s[i])
			}
			i++ // the closing quote
			value = b.String()
		} else {
			start := i
			for i < len(s) && s[i] != ',' && s[i] != ' ' && s[i] != '\t' {
				i++
			}
			value = s[start:i]
		}
		ch := &out[len(out)-1]
		if key := strings.ToLower(tok); ch.params[key] == "" {
			ch.params[key] = value
		}
	}
}

// isTokenChar reports whether c may be in an HTTP token (RFC 9110 tchar).
func isTokenChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}
