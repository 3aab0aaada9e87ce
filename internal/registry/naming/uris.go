package naming

import (
	"sort"
	"strings"

	"github.com/purko-io/mcp-hub/internal/config"
)

// Resources and resource templates are named under the same policy as
// tools, so one upstream keeps its own URIs and two that collide are told
// apart: a URI or URI template gets the server in front of its scheme
// ("server+file:///x"), which keeps it a valid URI and template, except an
// MCP App's ui:// URI, which keeps its scheme (PublishedURI).

// URIs assigns published URIs (or URI templates) under the naming
// policy: kept as they are, or with "<server>+" in front of the scheme when
// the policy prefixes. With policy never, the first server (by name) keeps
// a URI and the others' are hidden.
func URIs(keys []Key, naming config.Naming) (names map[Key]string, hidden map[Key]string) {
	sorted := append([]Key(nil), keys...)
	sort.Slice(sorted, func(i, j int) bool {
		if sorted[i].Server != sorted[j].Server {
			return sorted[i].Server < sorted[j].Server
		}
		return sorted[i].Original < sorted[j].Original
	})
	offered := map[string]map[string]bool{}
	for _, k := range sorted {
		if offered[k.Original] == nil {
			offered[k.Original] = map[string]bool{}
		}
		offered[k.Original][k.Server] = true
	}
	names = make(map[Key]string, len(sorted))
	hidden = map[Key]string{}
	owner := map[string]string{}
	for _, k := range sorted {
		name := k.Original
		if naming.Prefix == config.PrefixAlways || naming.Prefix == config.PrefixOnConflict && len(offered[k.Original]) > 1 {
			name = PublishedURI(URIPrefix(k.Server), k.Original)
		}
		if prev, taken := owner[name]; taken && prev != k.Server {
			hidden[k] = prev
			continue
		}
		owner[name] = k.Server
		names[k] = name
	}
	return names, hidden
}

// URIPrefix is what publishing adds to a URI of server when it prefixes.
func URIPrefix(server string) string { return schemePrefix(server) + "+" }

// appScheme is the scheme of an MCP App's UI resource. Hosts take a tool's
// _meta.ui.resourceUri only when it starts with it (ext-apps'
// getToolUiResourceUri throws on anything else).
const appScheme = "ui://"

// PublishedURI is uri with prefix ("" or "server+") added: in front of its
// scheme ("docs+file:///x"), or, for a ui:// URI, right after "ui://"
// ("ui://docs+view/app.html"), so that an app's UI stays a ui:// resource
// its host will load.
func PublishedURI(prefix, uri string) string {
	if prefix == "" {
		return uri
	}
	if rest, ok := strings.CutPrefix(uri, appScheme); ok {
		return appScheme + prefix + rest
	}
	return prefix + uri
}

// UpstreamURI undoes PublishedURI: the upstream's own URI of pub, false
// when pub does not carry prefix.
func UpstreamURI(prefix, pub string) (string, bool) {
	if prefix == "" {
		return pub, true
	}
	if rest, ok := strings.CutPrefix(pub, appScheme+prefix); ok {
		return appScheme + rest, true
	}
	if rest, ok := strings.CutPrefix(pub, prefix); ok && !strings.HasPrefix(rest, appScheme) {
		return rest, true
	}
	return "", false
}

// schemePrefix turns a server name into characters a URI scheme may hold.
func schemePrefix(server string) string {
	var b strings.Builder
	for i := 0; i < len(server); i++ {
		c := server[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '.':
			b.WriteByte(c)
		case c >= 'A' && c <= 'Z':
			b.WriteByte(c + 'a' - 'A')
		default:
			b.WriteByte('-')
		}
	}
	s := b.String()
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		s = "s" + s
	}
	return s
}
