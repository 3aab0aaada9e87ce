package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// asMetadata is the part of an authorization server's metadata (RFC 8414,
// OpenID Connect Discovery) the hub reads.
type asMetadata struct {
	Issuer        string `json:"issuer"`
	JWKSURI       string `json:"jwks_uri"`
	TokenEndpoint string `json:"token_endpoint"`
}

// MetadataURLs are where an issuer's metadata may be, in the order the MCP
// authorization spec tries them: RFC 8414 with the issuer's path after the
// well-known part, then OpenID Connect's two forms. The hub reads them as a
// resource server (here) and as a client of users' authorization servers
// (upstream/useroauth).
func MetadataURLs(issuer string) ([]string, error) {
	u, err := url.Parse(issuer)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, fmt.Errorf("issuer %q is not an http(s) URL", issuer)
	}
	p := strings.TrimSuffix(u.Path, "/")
	at := func(path string) string {
		c := *u
		c.Path, c.RawQuery, c.Fragment = path, "", ""
		return c.String()
	}
	if p == "" {
		return []string{at("/.well-known/oauth-authorization-server"), at("/.well-known/openid-configuration")}, nil
	}
	return []string{
		at("/.well-known/oauth-authorization-server" + p),
		at("/.well-known/openid-configuration" + p),
		at(p + "/.well-known/openid-configuration"),
	}, nil
}

// discoverMetadata fetches the issuer's metadata from the first place that
// has it. The document must name the issuer exactly (RFC 8414 section
// 3.3), or a server could pass off another issuer's keys as its own.
func discoverMetadata(ctx context.Context, client *http.Client, issuer string) (asMetadata, error) {
	urls, err := MetadataURLs(issuer)
	if err != nil {
		return asMetadata{}, err
	}
	var errs []error
	for _, u := range urls {
		md, err := fetchMetadata(ctx, client, u)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if md.Issuer != issuer {
			return asMetadata{}, fmt.Errorf("issuer %s: metadata at %s names issuer %q; the two must be equal", issuer, u, md.Issuer)
		}
		return md, nil
	}
	return asMetadata{}, fmt.Errorf("issuer %s: discovery: %w", issuer, errors.Join(errs...))
}

// TokenEndpoint finds the token endpoint of issuer in its metadata: where
// the hub exchanges callers' tokens for a server whose token exchange names
// the issuer rather than the endpoint.
func TokenEndpoint(ctx context.Context, client *http.Client, issuer string) (string, error) {
	md, err := discoverMetadata(ctx, client, issuer)
	if err != nil {
		return "", err
	}
	if md.TokenEndpoint == "" {
		return "", fmt.Errorf("issuer %s: its metadata names no token_endpoint (set tokenExchange.tokenURL)", issuer)
	}
	return md.TokenEndpoint, nil
}

func fetchMetadata(ctx context.Context, client *http.Client, u string) (asMetadata, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return asMetadata{}, fmt.Errorf("GET %s: %w", u, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return asMetadata{}, fmt.Errorf("GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return asMetadata{}, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	var md asMetadata
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&md); err != nil {
		return asMetadata{}, fmt.Errorf("GET %s: read metadata: %w", u, err)
	}
	return md, nil
}
