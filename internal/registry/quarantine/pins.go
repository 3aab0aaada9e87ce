package quarantine

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/pinning"
	"github.com/purko-io/mcp-hub/internal/upstream"
)

// Tool pinning in the catalog. Each time the catalog is rebuilt, every
// server's tools are checked against their pins (pinning.Pinner.Check). In
// enforce mode a changed tool is held (Quarantine.Enforced); in warn mode it
// is published with its Quarantine set.

// pinCheckTimeout bounds the store writes of one server's check (a
// ConfigMap update) during a rebuild.
const pinCheckTimeout = 10 * time.Second

// forgetRetry is how long a pin store that failed to forget removed
// servers is left alone: a rebuild does not wait on a dead store again
// and again.
const forgetRetry = 30 * time.Second

// pinChecks is the catalog's side of pinning: the memo of each client's
// last check and when the store last failed to forget removed servers.
// Only the rebuild goroutine uses it, but for gen, which Recheck bumps
// from any goroutine.
type pinChecks struct {
	pinner *pinning.Pinner // nil when pinning is off
	log    zerolog.Logger
	// gen is bumped when pins changed: every memo of an older gen is
	// stale.
	gen   atomic.Uint64
	memos map[*upstream.Client]pinMemo
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
// source has reported, as naming.Claims releases their names: a server of that
// name added later is a new one and is pinned afresh, and the store does
// not keep the tools of every server ever registered. servers are the
// servers of the sources, sorted; ready says every source has reported.
func (pc *pinChecks) forget(ctx context.Context, servers []string, ready bool) {
	p := pc.pinner
	if p.Mode() == pinning.Off || !ready {
		return
	}
	seenFor := strings.Join(servers, "\x00")
	if seenFor == pc.seenFor || time.Since(pc.forgetFailedAt) < forgetRetry {
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

// keep forgets the memos of clients not in clients (removed or replaced).
func (pc *pinChecks) keep(clients []*upstream.Client) { keepOnly(pc.memos, clients) }
