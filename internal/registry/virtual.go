package registry

import (
	"reflect"
	"slices"
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
// lists what it has, nothing while it is down). A lookup: the endpoints
// are built with the catalog (endpoints).
func (c *Catalog) Endpoint(name string) (Endpoint, bool) {
	ep, ok := c.endpoints[name]
	return ep, ok
}

// endpoints are the endpoints of a catalog's servers and virtual servers,
// by name; a virtual server takes the place of a server of its name.
func endpoints(servers []ServerView, virtual []toolspec.VirtualServer) map[string]Endpoint {
	out := make(map[string]Endpoint, len(servers)+len(virtual))
	for _, sv := range servers {
		out[sv.Name] = Endpoint{Scope: autonomy.ServerScope(sv.Name)}
	}
	for i := range virtual {
		out[virtual[i].Name] = Endpoint{Scope: autonomy.VirtualScope(virtual[i]), Virtual: &virtual[i]}
	}
	return out
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
func (r *Registry) virtualServers() []toolspec.VirtualServer {
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
	return out
}
