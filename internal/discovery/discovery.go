// Package discovery defines how sources of upstream servers report to the
// registry. Like Prometheus' discovery, each source runs on its own and sends
// full snapshots: the registry never has to merge deltas, and a source that
// restarts simply sends its whole set again.
package discovery

import (
	"context"

	"github.com/purko-io/mcp-hub/internal/config"
)

// Snapshot is the complete set of servers one source knows right now.
type Snapshot struct {
	// Source names the sender; a later snapshot of the same source replaces
	// the earlier one.
	Source string
	// Servers are validated specs with their tokens resolved.
	Servers []config.ServerSpec
	// AgentTools are api tools of Purko Agents (Kubernetes source only).
	AgentTools []config.AgentTool
}

// Source finds upstream servers.
type Source interface {
	// Name identifies the source in snapshots, logs and the listing.
	Name() string
	// Run sends a snapshot as soon as the source knows its set, then one
	// after every change, until ctx is done. It must not close out.
	Run(ctx context.Context, out chan<- Snapshot)
}

// SameServers reports whether two snapshots' server lists are equal, so a
// source sends a snapshot only when something changed.
func SameServers(a, b []config.ServerSpec) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			return false
		}
	}
	return true
}
