package config

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// UpstreamCredentialLabel is the label (value "true") that sets a
// Kubernetes Secret aside for upstreams: the only Secrets a server found in
// the cluster (an MCPServer, an entry of the mcp-servers ConfigMap, an
// Agent's api tool) or registered through the API may take its credential
// from. Whoever may write those objects need not be allowed to read every
// Secret the hub can read; the label is the Secret owner's consent.
const UpstreamCredentialLabel = "mcp-hub.purko.io/upstream-credential"

// RegistrationSettings say what a server registered through the REST API
// (POST /api/mcp/server, `mcp-hub servers add`) may use. An admin caller
// chooses the URL a registered server is dialled at, so whatever credential
// it may name is one it can send to a listener of its own.
type RegistrationSettings struct {
	// CredentialRefs are the environment variables of the hub a
	// registration's secretRef may name on a hub without a cluster; any
	// other name is refused. Empty (the default): none, so registered
	// servers cannot use bearer auth. In Kubernetes a secretRef names a
	// Secret carrying UpstreamCredentialLabel instead, and this list is not
	// used.
	CredentialRefs []string `json:"credentialRefs,omitempty"`
}

// Allows reports whether a registration may name the environment variable.
func (r RegistrationSettings) Allows(name string) bool {
	return name != "" && slices.Contains(r.CredentialRefs, name)
}

// envNamePattern is a portable environment variable name.
var envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// validateRegistrations refuses a credentialRefs entry that is not a
// variable name, is listed twice, or holds one of the hub's own secrets:
// a caller token (whoever reads it calls the hub as that caller), an OAuth
// client secret (it mints tokens) or the dashboard token of
// trigger-workflow. Listing one by mistake must not hand it to every
// admin who can register a URL. Names are compared ignoring case, as
// Windows resolves them.
func (c *Config) validateRegistrations() error {
	own := c.hubOwnEnvSecrets()
	seen := map[string]int{}
	for i, name := range c.Registrations.CredentialRefs {
		where := fmt.Sprintf("registrations.credentialRefs[%d]", i)
		if !envNamePattern.MatchString(name) {
			return fmt.Errorf("%s: %q is not an environment variable name (A-Z a-z 0-9 _, not starting with a digit)", where, name)
		}
		if j, dup := seen[name]; dup {
			return fmt.Errorf("%s: %s is already listed at [%d]", where, name, j)
		}
		seen[name] = i
		for _, o := range own {
			if strings.EqualFold(o.env, name) {
				return fmt.Errorf("%s: %s holds %s (%s); a registration may never name it, since it would send it to any URL an admin registers", where, name, o.what, o.field)
			}
		}
	}
	return nil
}

// envSecret is an environment variable the config reads one of the hub's
// own secrets from.
type envSecret struct{ env, what, field string }

// hubOwnEnvSecrets lists the environment variables that hold the hub's own
// secrets, with the field that names each.
func (c *Config) hubOwnEnvSecrets() []envSecret {
	var out []envSecret
	for i, t := range c.Auth.Tokens {
		if t.Token.Env != "" {
			out = append(out, envSecret{t.Token.Env, "the hub's own caller token", fmt.Sprintf("auth.tokens[%d]%s.token", i, nameHint(t.Name))})
		}
	}
	for i, s := range c.Servers {
		if s.OAuth != nil && s.OAuth.ClientSecret != nil && s.OAuth.ClientSecret.Env != "" {
			out = append(out, envSecret{s.OAuth.ClientSecret.Env, "an OAuth client secret", fmt.Sprintf("servers[%d]%s.oauth.clientSecret", i, nameHint(s.Name))})
		}
		if x := s.TokenExchange; x != nil && x.ClientSecret != nil && x.ClientSecret.Env != "" {
			out = append(out, envSecret{x.ClientSecret.Env, "an OAuth client secret", fmt.Sprintf("servers[%d]%s.tokenExchange.clientSecret", i, nameHint(s.Name))})
		}
	}
	if t := c.Builtins.TriggerWorkflow.Token; t != nil && t.Env != "" {
		out = append(out, envSecret{t.Env, "the hub's dashboard token", "builtins.triggerWorkflow.token"})
	}
	return out
}
