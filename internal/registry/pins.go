package registry

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/pinning"
	"github.com/purko-io/mcp-hub/internal/toolscreen"
	"github.com/purko-io/mcp-hub/internal/upstream"
)

// Tool pinning in the catalog. Each time the catalog is rebuilt, every
// server's tools are checked against their pins (pinning.Pinner.Check).
// In enforce mode a changed tool is left out of the published tools and
// kept in ServerView.Quarantined, where Lookup finds it only to refuse it;
// in warn mode it is published with its Quarantine set. The decision is
// made here, once, when the catalog is published: a call only reads it.

// pinCheckTimeout bounds the store writes of one server's check (a
// ConfigMap update) during a rebuild.
const pinCheckTimeout = 10 * time.Second

// Quarantine says a tool's definition is not the one pinned, or looks
// like a prompt injection (screen.go), or both.
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

// QuarantinedError refuses a call of a quarantined tool before it reaches
// the upstream, saying what changed and how an operator approves it.
type QuarantinedError struct {
	Name, Server, Original string
	Quarantine             Quarantine
}

func (e *QuarantinedError) Error() string {
	return fmt.Sprintf("tool '%s' is quarantined: %s. "+
		"An operator approves it with `mcp-hub pins approve --server %s --tool %s` or POST /api/mcp/pins/approve",
		e.Name, e.Quarantine.Reason(), e.Server, e.Original)
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

// QuarantineEvent reports a tool whose definition changed or was screened
// with hits, once per such definition.
type QuarantineEvent struct {
	Server, Tool, Published string
	// Origin is the Kubernetes object the server came from, if any.
	Origin     *config.Origin
	Quarantine Quarantine
}

// ErrNotFound is wrapped by ApprovePins for a server or tool the catalog
// does not hold.
var ErrNotFound = errors.New("not found")

// Pinning returns the pinner (nil when pinning is off).
func (r *Registry) Pinning() *pinning.Pinner { return r.opts.Pins }

// pinChecks is the catalog's side of pinning: the memo of each client's
// last check, the quarantines already reported and when the store last
// failed to forget removed servers. It is a type of its own because this
// state lives across rebuilds and only pinning reads it: a rebuild drives
// it in fixed steps (forget, checkAll, check for each server, keep,
// report), while approval (ApprovePins) stays with the Registry that owns
// the clients and the catalog. Only the rebuild goroutine uses it, but for
// gen, which pinsChanged bumps from any goroutine.
type pinChecks struct {
	pinner *pinning.Pinner // nil when pinning is off
	log    zerolog.Logger
	// gen is bumped when pins changed: every memo of an older gen is
	// stale.
	gen      atomic.Uint64
	memos    map[*upstream.Client]pinMemo
	reported map[pinning.Key]string
	// seenFor is the servers (joined) whose pins forget last found in
	// order; forgetFailedAt when the store last failed it.
	seenFor        string
	forgetFailedAt time.Time
}

func newPinChecks(pinner *pinning.Pinner, log zerolog.Logger) *pinChecks {
	return &pinChecks{pinner: pinner, log: log, memos: map[*upstream.Client]pinMemo{}}
}

// pinMemo is the last check of one client: its tool list (the same slice
// while the server does not list again) and the result.
type pinMemo struct {
	first   *mcp.Tool
	n       int
	gen     uint64
	changes map[string]pinning.Change
	// failed: the save failed; check drops the memo after using it,
	// so the next rebuild checks (and saves) again.
	failed bool
}

// checkAll checks the tools of every client whose list changed since
// its last check, in one store write (pinning.CheckAll), and leaves the
// results in memos for check.
func (pc *pinChecks) checkAll(ctx context.Context, clients []*upstream.Client, lists [][]mcp.Tool) {
	p := pc.pinner
	if p.Mode() == pinning.Off {
		return
	}
	gen := pc.gen.Load()
	var offers []pinning.Offer
	var checked []int
	for i, c := range clients {
		tools := lists[i]
		if len(tools) == 0 {
			continue
		}
		if m, ok := pc.memos[c]; ok && m.first == &tools[0] && m.n == len(tools) && m.gen == gen {
			continue
		}
		offers = append(offers, pinning.Offer{Server: c.Name(), Tools: tools})
		checked = append(checked, i)
	}
	if len(offers) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, pinCheckTimeout)
	defer cancel()
	changes, err := p.CheckAll(ctx, offers)
	if err != nil {
		// Not memoized: the next rebuild tries the save again.
		pc.log.Error().Err(err).Int("servers", len(offers)).Msg("pinning: could not save pins; compared in memory until saved")
	}
	for _, i := range checked {
		c, tools := clients[i], lists[i]
		m := pinMemo{first: &tools[0], n: len(tools), gen: gen, changes: changes[c.Name()], failed: err != nil}
		pc.memos[c] = m
	}
}

// forget deletes the pins of servers that no source holds, once every
// source has reported, as claims.release does their names: a server of that
// name added later is a new one and is pinned afresh, and the store does
// not keep the tools of every server ever registered. servers are the
// servers of the sources, sorted; ready says every source has reported.
func (pc *pinChecks) forget(ctx context.Context, servers []string, ready bool) {
	p := pc.pinner
	if p.Mode() == pinning.Off || !ready {
		return
	}
	seenFor := strings.Join(servers, "\x00")
	if seenFor == pc.seenFor || time.Since(pc.forgetFailedAt) < claimRetry {
		return // no server left since the last look, or the store is failing
	}
	var gone []string
	for _, pin := range p.Store().List() { // sorted by server
		if _, present := slices.BinarySearch(servers, pin.Server); !present && !slices.Contains(gone, pin.Server) {
			gone = append(gone, pin.Server)
		}
	}
	if len(gone) > 0 {
		wctx, cancel := context.WithTimeout(ctx, pinCheckTimeout)
		defer cancel()
		if err := p.Forget(wctx, gone...); err != nil {
			pc.forgetFailedAt = time.Now()
			pc.log.Error().Err(err).Strs("servers", gone).Msg("pinning: could not delete the pins of removed servers")
			return
		}
		pc.log.Info().Strs("servers", gone).Msg("pinning: pins of removed servers deleted")
	}
	pc.seenFor = seenFor
}

// check returns the changed tools of c by original name (nil when
// pinning is off or nothing changed), as checkAll left them.
func (pc *pinChecks) check(c *upstream.Client, tools []mcp.Tool) map[string]pinning.Change {
	if pc.pinner.Mode() == pinning.Off || len(tools) == 0 {
		return nil
	}
	m := pc.memos[c]
	if m.failed {
		delete(pc.memos, c)
	}
	return m.changes
}

// report tells tell of the changes in cat not reported before, and
// forgets the ones that are gone (approved or reverted).
func (pc *pinChecks) report(cat *Catalog, tell func(QuarantineEvent)) {
	seen := map[pinning.Key]string{}
	report := func(sv *ServerView, t *Tool) {
		if t.Quarantine == nil {
			return
		}
		k := pinning.Key{Server: sv.Name, Tool: t.Original}
		sum := t.Quarantine.CurrentSHA256
		seen[k] = sum
		if pc.reported[k] == sum {
			return
		}
		ev := QuarantineEvent{Server: sv.Name, Tool: t.Original, Published: t.Name, Origin: sv.Origin, Quarantine: *t.Quarantine}
		tell(ev)
	}
	for i := range cat.Servers {
		sv := &cat.Servers[i]
		for j := range sv.Tools {
			report(sv, &sv.Tools[j])
		}
		for j := range sv.Quarantined {
			report(sv, &sv.Quarantined[j])
		}
	}
	pc.reported = seen
}

// keep forgets the memos of clients not in clients (removed or replaced).
func (pc *pinChecks) keep(clients []*upstream.Client) {
	for c := range pc.memos {
		if !slices.Contains(clients, c) {
			delete(pc.memos, c)
		}
	}
}

// ErrScreenedWithoutPins is ApprovePins' refusal of a tool held by
// screening while pinning is off: approvals are recorded in pins. It is
// pinning.ErrOff too (errors.Is).
var ErrScreenedWithoutPins error = screenedWithoutPins{}

type screenedWithoutPins struct{}

func (screenedWithoutPins) Error() string {
	return "pinning is off (pinning.mode), and a tool quarantined by screening is approved in its pin: " +
		"turn pinning on (pinning.mode enforce or warn) to approve it, or set screening.mode to warn"
}

func (screenedWithoutPins) Is(target error) bool { return target == pinning.ErrOff }

// ApprovePins re-pins the current definitions of server's tools: the one
// called tool (original or published name), or all of them when tool is
// "". A tool held by screening has its pin marked approved, whether or
// not its definition changed. The catalog is rebuilt with the new pins
// before it returns, so the approved tools are listed and callable at once
// on this replica (others follow their store). how names the approver in
// the pins ("api").
func (r *Registry) ApprovePins(ctx context.Context, server, tool, how string) ([]pinning.Pin, error) {
	p := r.opts.Pins
	r.mu.Lock()
	c, ok := r.clients[server]
	r.mu.Unlock()
	if !ok {
		if p.Mode() == pinning.Off {
			return nil, pinning.ErrOff
		}
		return nil, fmt.Errorf("server %q: %w", server, ErrNotFound)
	}
	tools := c.Tools()
	published := map[string]string{}
	var screened []string // original names held by screening
	for _, sv := range r.Catalog().Servers {
		if sv.Name != server {
			continue
		}
		for _, list := range [][]Tool{sv.Tools, sv.Quarantined} {
			for _, t := range list {
				published[t.Name] = t.Original
				if t.Quarantine != nil && len(t.Quarantine.Screened) > 0 && (tool == "" || tool == t.Name || tool == t.Original) {
					screened = append(screened, t.Original)
				}
			}
		}
	}
	if p.Mode() == pinning.Off {
		if len(screened) > 0 {
			return nil, ErrScreenedWithoutPins
		}
		return nil, pinning.ErrOff
	}
	if tool != "" {
		var picked []mcp.Tool
		for _, t := range tools {
			if t.Name == tool || published[tool] == t.Name {
				picked = append(picked, t)
			}
		}
		if len(picked) == 0 {
			return nil, fmt.Errorf("server %q offers no tool %q: %w", server, tool, ErrNotFound)
		}
		tools = picked
	}
	pins, err := p.Approve(ctx, server, tools, how, screened...)
	if err != nil {
		return nil, err
	}
	r.pinsChanged()
	if err := r.awaitRebuild(ctx); err != nil {
		return pins, err
	}
	return pins, nil
}

// pinsChanged makes the next rebuild check every tool again.
func (r *Registry) pinsChanged() {
	r.pins.gen.Add(1)
	r.markDirty()
}

// awaitRebuild waits until a rebuild that started after the call has
// finished.
func (r *Registry) awaitRebuild(ctx context.Context) error {
	for range 2 { // the first may have started before the change
		r.mu.Lock()
		ch := r.rebuilt
		r.mu.Unlock()
		r.markDirty()
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("wait for the catalog: %w", ctx.Err())
		}
	}
	return nil
}
