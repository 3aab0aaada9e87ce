package registry

import "github.com/purko-io/mcp-hub/internal/discovery"

// Outages are the sources cut off from what they watch right now (the
// Kubernetes API server unreachable), whose last snapshots the catalog
// still serves. /readyz and the console say so; readiness stays true, as
// failing it on every replica at once would take the whole fleet out.
func (r *Registry) Outages() []discovery.Outage {
	list := r.reporters.Load()
	if list == nil {
		return nil
	}
	var out []discovery.Outage
	for _, rep := range *list {
		if o, ok := rep.Outage(); ok {
			out = append(out, o)
		}
	}
	return out
}

// watchOutages remembers the sources of Run that can report an outage.
func (r *Registry) watchOutages(sources []discovery.Source) {
	var list []discovery.OutageReporter
	for _, s := range sources {
		if rep, ok := s.(discovery.OutageReporter); ok {
			list = append(list, rep)
		}
	}
	r.reporters.Store(&list)
}
