package config

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// DefaultRegistryNamespace is registryAPI.namespace when none is set: a
// reverse-DNS name nobody owns in the official registry, so a client that
// merges galleries cannot take the hub's entries for published ones.
const DefaultRegistryNamespace = "local.mcp-hub"

// maxRegistryNamespace leaves room in the schema's 200 characters of
// "namespace/name" for the longest server name (63).
const maxRegistryNamespace = 120

// registryNamespacePattern is the namespace half of server.json's name
// pattern (^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$).
var registryNamespacePattern = regexp.MustCompile(`^[a-zA-Z0-9.-]+$`)

// RegistryAPISettings shape the MCP Registry API the hub serves at
// /v0.1/servers (README "MCP Registry API"): every server of its catalog as
// a server.json document whose remote is the hub itself.
type RegistryAPISettings struct {
	// Namespace is the reverse-DNS half of every published name
	// (namespace/server); default local.mcp-hub.
	Namespace string `json:"namespace,omitempty"`
	// BaseURL is the hub as clients reach it (https://hub.example.com, or
	// with a path prefix), the start of every published remote URL. Empty:
	// the base of auth.oauth.resource when set, else the scheme and Host of
	// each request (a TLS-terminating proxy in front then needs this set).
	BaseURL string `json:"baseURL,omitempty"`
}

func (r *RegistryAPISettings) applyDefaults() {
	setDefault(&r.Namespace, DefaultRegistryNamespace)
	r.BaseURL = strings.TrimRight(r.BaseURL, "/")
}

func (r RegistryAPISettings) validate() error {
	if len(r.Namespace) > maxRegistryNamespace || !registryNamespacePattern.MatchString(r.Namespace) {
		return fmt.Errorf("registryAPI.namespace: %q must be 1-%d characters of a-z A-Z 0-9 . - (the namespace of server.json's name)", r.Namespace, maxRegistryNamespace)
	}
	if r.BaseURL == "" {
		return nil
	}
	u, err := url.Parse(r.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" ||
		strings.ContainsAny(r.BaseURL, " \t\r\n{}") {
		return fmt.Errorf("registryAPI.baseURL: %q is not an absolute http(s) URL without user info, query or fragment", r.BaseURL)
	}
	return nil
}

// RegistryBaseURL is the base of the hub's published remote URLs when the
// config knows one: registryAPI.baseURL, else auth.oauth.resource without
// its last path segment (the resource is the hub's /mcp endpoint). Empty:
// take it from each request.
func (c *Config) RegistryBaseURL() string {
	if c.RegistryAPI.BaseURL != "" {
		return c.RegistryAPI.BaseURL
	}
	if c.Auth.OAuth == nil || c.Auth.OAuth.Resource == "" {
		return ""
	}
	u, err := url.Parse(c.Auth.OAuth.Resource)
	if err != nil {
		return ""
	}
	u.Path = strings.TrimSuffix(strings.TrimRight(u.Path, "/"), "/mcp")
	u.RawPath, u.RawQuery, u.Fragment = "", "", ""
	return strings.TrimRight(u.String(), "/")
}
