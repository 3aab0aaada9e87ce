package quarantine

import (
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/pinning"
	"github.com/purko-io/mcp-hub/internal/toolscreen"
	"github.com/purko-io/mcp-hub/internal/upstream"
)

// Screening in the catalog. Every upstream tool list the rebuild has not
// seen is screened (toolscreen.Screener): a tool whose definition looks like
// a prompt injection is quarantined as a changed one is (pins.go), unless
// an operator approved that very definition (its pin, or a pinning.approve
// rule). The screening of a list is memoized per client: the same list
// (a rebuild for another server's sake) costs nothing; a new list, with a
// first or a changed definition in it, is screened again.

// screenChecks is the rebuild's memo of each client's screened list.
// Only the rebuild goroutine uses it.
type screenChecks struct {
	mode         string // config.Screening*; "" is off
	memos        map[*upstream.Client]screenMemo
	featureMemos map[*upstream.Client]featureMemo // features.go
	screener     *toolscreen.Screener
}

func newScreenChecks(mode string) *screenChecks {
	return &screenChecks{mode: mode, memos: map[*upstream.Client]screenMemo{}, featureMemos: map[*upstream.Client]featureMemo{},
		screener: toolscreen.New()}
}

// screenMemo is the screening of one client's tool list (the same slice
// while the server does not list again): its tools with hits.
type screenMemo struct {
	first *mcp.Tool
	n     int
	held  map[string]screened
}

// screened is one tool's hits and the definition they are of (what an
// approval is recorded against; ok false when it cannot be read).
type screened struct {
	hits []toolscreen.Hit
	def  pinning.Definition
	ok   bool
}

func (sc *screenChecks) on() bool {
	return sc.mode == config.ScreeningEnforce || sc.mode == config.ScreeningWarn
}

// check returns c's tools with hits by original name (nil when screening
// is off or nothing was found).
func (sc *screenChecks) check(c *upstream.Client, tools []mcp.Tool) map[string]screened {
	if !sc.on() || len(tools) == 0 {
		return nil
	}
	if m, ok := sc.memos[c]; ok && m.first == &tools[0] && m.n == len(tools) {
		return m.held
	}
	m := screenMemo{first: &tools[0], n: len(tools)}
	for _, t := range tools {
		hits := sc.screener.Screen(t)
		if len(hits) == 0 {
			continue
		}
		def, err := pinning.DefinitionOf(t)
		if m.held == nil {
			m.held = map[string]screened{}
		}
		m.held[t.Name] = screened{hits: hits, def: def, ok: err == nil}
	}
	sc.memos[c] = m
	return m.held
}

// keep forgets the memos of clients not in clients.
func (sc *screenChecks) keep(clients []*upstream.Client) {
	keepOnly(sc.memos, clients)
	keepOnly(sc.featureMemos, clients)
}

// quarantine returns what the rebuild records of a tool: its pin change
// (ch, when changed), its screening hits (when s has some and no
// approval of this definition stands), or nil.
func (sc *screenChecks) quarantine(p *pinning.Pinner, server, tool string, ch *pinning.Change, s *screened) *Quarantine {
	var q *Quarantine
	if ch != nil {
		q = &Quarantine{Diff: ch.Diff, PinnedSHA256: ch.PinnedSHA256, CurrentSHA256: ch.CurrentSHA256,
			PinnedAt: ch.PinnedAt, Enforced: p.Mode() == pinning.Enforce}
	}
	if s == nil || s.ok && p.Approved(pinning.Key{Server: server, Tool: tool}, s.def) {
		return q
	}
	if q == nil {
		q = &Quarantine{}
		if s.ok {
			q.CurrentSHA256 = s.def.Sum()
		}
	}
	q.Screened = s.hits
	q.Enforced = q.Enforced || sc.mode == config.ScreeningEnforce
	return q
}
