// Package quarantine decides, each time the catalog is rebuilt, which
// upstream definitions are held: the tools that changed since they were
// pinned (pinning), and the tools, prompts, resources, templates and
// server instructions that look like a prompt injection (toolscreen,
// features.go), unless an operator approved that very definition. It is a
// package of its own because this is one job with its own state, kept
// across rebuilds and read by nothing else: the memo of each client's last
// pin check and screening, the store's failures, the holds already
// reported. A rebuild drives it in fixed steps (Forget, CheckAll, Of and
// FeaturesOf for each server, Keep, Report) and records what they return
// in the catalog; the decision is made here, once, when the catalog is
// published: a call only reads it. Approval stays with the catalog that
// owns the clients.
package quarantine

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/pinning"
	"github.com/purko-io/mcp-hub/internal/toolscreen"
	"github.com/purko-io/mcp-hub/internal/upstream"
)

// Quarantine says a tool's definition is not the one pinned, or looks
// like a prompt injection, or both.
type Quarantine struct {
	// Diff says in words what changed ("" when only screening holds the
	// tool).
	Diff string
	// PinnedSHA256 and CurrentSHA256 are the digests of the pinned and the
	// offered definition (PinnedSHA256 "" when only screening holds it).
	PinnedSHA256, CurrentSHA256 string
	// Screened are the screening's hits of the offered definition.
	Screened []toolscreen.Hit
	// PinnedAt is when the pinned definition was first seen.
	PinnedAt time.Time
	// Enforced is true in enforce mode: the tool is not listed and its
	// calls are refused. In warn mode it is listed and runs.
	Enforced bool
}

// Changed says the definition is not the pinned one.
func (q *Quarantine) Changed() bool { return q.PinnedSHA256 != "" || q.Diff != "" }

// Reason says why the tool is held, in words: what changed since it was
// pinned, what the screening found, or both.
func (q *Quarantine) Reason() string {
	var parts []string
	if q.Changed() {
		parts = append(parts, "its definition changed since it was pinned: "+q.Diff)
	}
	if len(q.Screened) > 0 {
		parts = append(parts, "its definition looks like a prompt injection ("+toolscreen.Summary(q.Screened)+")")
	}
	return strings.Join(parts, "; and ")
}

// Event reports a tool whose definition changed or was screened with hits,
// or a prompt, resource, template or instructions screened with hits, once
// per such definition.
type Event struct {
	Server, Tool, Published string
	// Kind is "" for a tool, else what the definition is
	// (pinning.KindPrompt, ...); Tool is then its name at the server
	// (FeatureKey.Name).
	Kind string
	// Origin is the Kubernetes object the server came from, if any.
	Origin     *config.Origin
	Quarantine Quarantine
}

// Checks are the pin checks and the screenings of the rebuilds. Only the
// rebuild goroutine uses them, but for Recheck.
type Checks struct {
	pins    *pinChecks
	screens *screenChecks
	// reported are the holds already reported: the digest of the held
	// definition of each tool.
	reported map[pinning.Key]string
}

// New returns the checks of pinner's pins (nil: pinning off) and of
// screening (config.ScreeningEnforce, Warn, Off; "" is off).
func New(pinner *pinning.Pinner, screening string, log zerolog.Logger) *Checks {
	return &Checks{pins: newPinChecks(pinner, log), screens: newScreenChecks(screening)}
}

// Forget deletes the pins of servers that no source holds; servers are
// the servers of the sources, sorted; ready says every source has
// reported (before that a missing server may be in a source yet to speak).
func (c *Checks) Forget(ctx context.Context, servers []string, ready bool) {
	c.pins.forget(ctx, servers, ready)
}

// CheckAll checks the tools of every client (lists[i] are clients[i]'s
// own tools) whose list changed since its last check against their pins,
// in one store write, for Of.
func (c *Checks) CheckAll(ctx context.Context, clients []*upstream.Client, lists [][]mcp.Tool) {
	c.pins.checkAll(ctx, clients, lists)
}

// Of returns the held tools of cl among tools (its own list, after
// CheckAll) by their server's name: a changed definition, a screened one
// no approval stands for, or both; nil when none is held.
func (c *Checks) Of(cl *upstream.Client, tools []mcp.Tool) map[string]*Quarantine {
	changes := c.pins.check(cl, tools)
	held := c.screens.check(cl, tools)
	var out map[string]*Quarantine
	add := func(tool string) {
		if _, done := out[tool]; done {
			return
		}
		var ch *pinning.Change
		if x, changed := changes[tool]; changed {
			ch = &x
		}
		var sc *screened
		if s, hit := held[tool]; hit {
			sc = &s
		}
		if q := c.screens.quarantine(c.pins.pinner, cl.Name(), tool, ch, sc); q != nil {
			if out == nil {
				out = map[string]*Quarantine{}
			}
			out[tool] = q
		}
	}
	for tool := range changes {
		add(tool)
	}
	for tool := range held {
		add(tool)
	}
	return out
}

// Keep forgets the memos of clients not in clients (removed or replaced).
func (c *Checks) Keep(clients []*upstream.Client) {
	c.pins.keep(clients)
	c.screens.keep(clients)
}

// keepOnly deletes the memos of m of clients not in clients.
func keepOnly[V any](m map[*upstream.Client]V, clients []*upstream.Client) {
	maps.DeleteFunc(m, func(c *upstream.Client, _ V) bool { return !slices.Contains(clients, c) })
}

// Recheck makes the next CheckAll check every tool again: pins changed
// (approved here, or by another replica). Safe from any goroutine.
func (c *Checks) Recheck() { c.pins.gen.Add(1) }

// Report tells tell of the events of held not reported before, and
// forgets the ones that are gone (approved or reverted). held are the
// holds of the catalog just built.
func (c *Checks) Report(held []Event, tell func(Event)) {
	seen := make(map[pinning.Key]string, len(held))
	for _, ev := range held {
		k := pinning.Key{Server: ev.Server, Tool: ev.Tool, Kind: ev.Kind}
		sum := ev.Quarantine.CurrentSHA256
		seen[k] = sum
		if c.reported[k] == sum {
			continue
		}
		tell(ev)
	}
	c.reported = seen
}
