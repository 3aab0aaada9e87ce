package config

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/purko-io/mcp-hub/internal/fieldpaths"
	"github.com/purko-io/mcp-hub/internal/toolspec"
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
// variable name, is listed twice, or holds a secret of the hub itself
// (hubSecrets), which no admin who can register a URL may get; in any case,
// as Windows resolves names.
func (c *Config) validateRegistrations() error {
	own := c.hubSecrets()
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
		holder, hub := own[strings.ToUpper(name)]
		if strings.HasPrefix(strings.ToUpper(name), "OTEL_EXPORTER_OTLP_") {
			holder, hub = "the OpenTelemetry exporter's settings (its headers and endpoint carry the collector's credentials)", true
		}
		if hub {
			return fmt.Errorf("%s: env %s holds %s, a secret of the hub itself; a registration may never name it, since it would be sent to any URL an admin registers", where, name, holder)
		}
	}
	return nil
}

// upstreamCredentials are the credential fields (fieldpaths patterns) the
// hub sends to one upstream or api, which a registered server may share;
// any other, a field added later too, holds a secret of the hub itself.
var upstreamCredentials = []string{"servers[].token", "apiTools[].credentials", "openapi[].base.credentials"}

// hubSecrets maps each variable (upper case) a secret of the hub itself is
// read from to the field naming it: every TokenRef and CredentialRef of c
// found by reflection (auth.tokens, replicas.secret, userGrants.key, OAuth
// client secrets...) but upstreamCredentials, and two no field names.
func (c *Config) hubSecrets() map[string]string {
	own := map[string]string{"MCP_SERVERS": "the MCP_SERVERS source's servers with their tokens", "MCP_HUB_TOKEN": "the mcp-hub CLI's caller token"}
	add := func(env, path, pattern string) {
		if _, known := own[strings.ToUpper(env)]; env != "" && !known && !slices.Contains(upstreamCredentials, pattern) {
			own[strings.ToUpper(env)] = path
		}
	}
	for _, f := range fieldpaths.All[TokenRef](c) {
		add(f.Value.Env, f.Path, f.Pattern)
	}
	for _, f := range fieldpaths.All[toolspec.CredentialRef](c) {
		add(f.Value.Env, f.Path, f.Pattern)
	}
	return own
}
