// Package discovery defines how sources of upstream servers report to the
// registry. Like Prometheus' discovery, each source runs on its own and sends
// full snapshots: the registry never has to merge deltas, and a source that
// restarts simply sends its whole set again.
package discovery

import (
	"context"
	"time"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/toolspec"
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
	// Virtual are the virtual servers the source defines (the config
	// file's virtualServers, annotated Agents), validated.
	Virtual []toolspec.VirtualServer
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

// Outage is a source cut off from what it watches (the Kubernetes API
// server unreachable). Its last snapshot stays in the catalog meanwhile:
// the servers it named are still running, and dropping them because the
// control plane blinked would take every replica's tools away at once.
// So the hub keeps serving and says so (on /readyz and in the console).
type Outage struct {
	// Source is the source's name.
	Source string
	// What names what cannot be reached, in words ("kubernetes API").
	What string
	// Since is when the outage began.
	Since time.Time
}

// String is the outage as /readyz and the console show it.
func (o Outage) String() string {
	return o.What + " unreachable since " + o.Since.UTC().Format(time.RFC3339)
}

// OutageReporter is a Source that can tell it is cut off while it keeps
// its last snapshot.
type OutageReporter interface {
	// Outage reports the current outage; false while all is well.
	Outage() (Outage, bool)
}
