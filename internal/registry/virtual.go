package registry

import (
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/discovery"
	"github.com/purko-io/mcp-hub/internal/toolspec"
)

// Endpoint is what /servers/NAME/ publishes: a virtual server, or one
// server of the catalog.
type Endpoint struct {
	// Scope narrows the caller to the endpoint's tools.
	Scope *autonomy.Scope
	// Virtual is the definition of a virtual server; nil for a server's
	// own endpoint.
	Virtual *toolspec.VirtualServer
}

// Endpoint finds the endpoint called name: a virtual server of that name,
// else a server of the catalog (connected or not: its endpoint exists and
// lists what it has, nothing while it is down).
func (c *Catalog) Endpoint(name string) (Endpoint, bool) {
	i := sort.Search(len(c.Virtual), func(i int) bool { return c.Virtual[i].Name >= name })
	if i < len(c.Virtual) && c.Virtual[i].Name == name {
		return Endpoint{Scope: c.virtualScopes[i], Virtual: &c.Virtual[i]}, true
	}
	for _, sv := range c.Servers {
		if sv.Name == name {
			return Endpoint{Scope: autonomy.ServerScope(name)}, true
		}
	}
	return Endpoint{}, false
}

// applyVirtual keeps a snapshot's virtual servers; it reports whether they
// changed. Call with r.mu held.
func (r *Registry) applyVirtual(snap discovery.Snapshot) bool {
	if reflect.DeepEqual(r.virtualSpecs[snap.Source], snap.Virtual) {
		return false
	}
	r.virtualSpecs[snap.Source] = snap.Virtual
	return true
}

// virtualServers are the virtual servers of every source, by name; the
// first source in priority order wins a name, as it does a server's.
func (r *Registry) virtualServers() ([]toolspec.VirtualServer, []*autonomy.Scope) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[string]string{}
	var out []toolspec.VirtualServer
	for _, src := range r.order {
		for _, v := range r.virtualSpecs[src] {
			if prev, taken := seen[v.Name]; taken {
				r.log.Warn().Str("virtual_server", v.Name).Str("source", v.Source).Str("kept", prev).
					Msg("virtual server defined twice; the first definition wins")
				continue
			}
			seen[v.Name] = v.Source
			out = append(out, v)
		}
	}
	slices.SortFunc(out, func(a, b toolspec.VirtualServer) int { return strings.Compare(a.Name, b.Name) })
	scopes := make([]*autonomy.Scope, len(out))
	for i, v := range out {
		scopes[i] = autonomy.VirtualScope(v)
	}
	return out, scopes
}
