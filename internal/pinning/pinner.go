package pinning

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// Rule is an operator's standing approval from the config: the tools of
// Server matching the glob Tool (path.Match; "" is "*") are approved as
// they are now, or, with SHA256, only that exact definition.
type Rule struct {
	Server string
	Tool   string
	SHA256 string
}

// matches says whether r approves d for key. A digest written before
// digest version 2 (the currentSha256 a hub listed then) still matches
// the definition it was of: the rule stays good over an upgrade.
func (r Rule) matches(key Key, d Definition) bool {
	if r.Server != key.Server {
		return false
	}
	glob := r.Tool
	if glob == "" {
		glob = "*"
	}
	if ok, _ := path.Match(glob, key.Tool); !ok {
		return false
	}
	return r.SHA256 == "" || r.SHA256 == d.Sum() || r.SHA256 == d.Legacy().Sum()
}

// ErrOff is returned by approvals while pinning is off.
var ErrOff = errors.New("pinning is off (pinning.mode): nothing to approve")

// Change is a tool whose definition is not the pinned one.
type Change struct {
	Key
	// PinnedSHA256 and CurrentSHA256 are the digests of the pinned and the
	// offered definition.
	PinnedSHA256, CurrentSHA256 string
	// Diff says in words what changed (see Diff).
	Diff string
	// PinnedAt is when the pinned definition was first seen.
	PinnedAt time.Time
}

// Pinner checks tool definitions against their pins: it pins what it has
// not seen, applies the config's approvals, and reports the rest.
type Pinner struct {
	mode  Mode
	store Store
	rules []Rule
	now   func() time.Time

	mu sync.Mutex
	// unsaved are pins the store refused (it was unreachable, say): they
	// are compared against in this process and saved on a later check;
	// failedAt is when the store last failed.
	unsaved  map[Key]Pin
	failedAt time.Time
}

// saveRetry is how long a failed store is left alone.
const saveRetry = 30 * time.Second

// New returns a Pinner. With mode Off, store may be nil and nothing is
// pinned.
func New(mode Mode, store Store, rules []Rule) *Pinner {
	return &Pinner{mode: mode, store: store, rules: rules, now: time.Now, unsaved: map[Key]Pin{}}
}

// Mode is what the hub does with a changed tool.
func (p *Pinner) Mode() Mode {
	if p == nil {
		return Off
	}
	return p.mode
}

// Store is where the pins are kept (nil with mode Off).
func (p *Pinner) Store() Store {
	if p == nil {
		return nil
	}
	return p.store
}

// Changed fires when another replica changed the pins.
func (p *Pinner) Changed() <-chan struct{} {
	if p == nil || p.store == nil {
		return nil
	}
	return p.store.Changed()
}

// Offer is the tools one server offers, for CheckAll.
type Offer struct {
	Server string
	Tools  []mcp.Tool
}

// Check compares the tools a server offers with their pins. Unknown tools
// are pinned; changed tools that a config rule approves are re-pinned; the
// other changed tools are returned by original name. A failing store is
// logged by the caller (err) and never hides a tool by itself: the pin is
// kept in memory and saved on a later check.
func (p *Pinner) Check(ctx context.Context, server string, tools []mcp.Tool) (map[string]Change, error) {
	changes, err := p.CheckAll(ctx, []Offer{{Server: server, Tools: tools}})
	return changes[server], err
}

// CheckAll is Check for the tools of several servers at once, with one
// write to the store for all of them: a hub that starts with a hundred
// servers writes its pins a few times, not once per server (each write
// holds every pin).
func (p *Pinner) CheckAll(ctx context.Context, offers []Offer) (map[string]map[string]Change, error) {
	if p.Mode() == Off {
		return nil, nil
	}
	var errs []error
	type offered struct {
		key Key
		def Definition
		sum string
		pin Pin
	}
	var all []offered
	var missing []int // indexes into all of tools without a pin
	var changes map[string]map[string]Change
	change := func(c Change) {
		if changes == nil {
			changes = map[string]map[string]Change{}
		}
		if changes[c.Server] == nil {
			changes[c.Server] = map[string]Change{}
		}
		changes[c.Server][c.Tool] = c
	}
	for _, o := range offers {
		for _, t := range o.Tools {
			key := Key{Server: o.Server, Tool: t.Name}
			def, err := DefinitionOf(t)
			if err != nil {
				// Fail closed: a definition that cannot be compared is
				// not trusted.
				change(Change{Key: key, Diff: "the definition cannot be read: " + err.Error()})
				continue
			}
			of := offered{key: key, def: def, sum: def.Sum()}
			pin, ok := p.store.Get(key)
			if ok {
				of.pin = pin
			} else {
				missing = append(missing, len(all))
			}
			all = append(all, of)
		}
	}
	if len(missing) > 0 {
		candidates := make([]Pin, len(missing))
		for i, j := range missing {
			candidates[i] = NewPin(all[j].key, all[j].def, p.now())
		}
		inForce, err := p.pinFirst(ctx, candidates)
		if err != nil {
			errs = append(errs, err)
		}
		for i, j := range missing {
			all[j].pin = inForce[i]
		}
	}
	p.forgetSaved()
	var approved, upgraded []Pin
	for _, o := range all {
		key, def, sum, pin := o.key, o.def, o.sum, o.pin
		if pin.Matches(def) {
			if pin.Version < DigestVersion {
				upgraded = append(upgraded, pin.Upgraded(def))
			}
			continue
		}
		if p.approvedByRule(key, def) {
			np := NewPin(key, def, p.now())
			np.Approved = "config"
			approved = append(approved, np)
			continue
		}
		cur := def
		if pin.Version < DigestVersion {
			cur = def.Legacy() // what the pin holds of it
		}
		change(Change{Key: key, PinnedSHA256: pin.SHA256, CurrentSHA256: sum,
			Diff: Diff(pin.Definition, cur), PinnedAt: pin.FirstSeen})
	}
	if len(approved) > 0 {
		// Approved as offered even if the write fails: the config says so.
		if err := p.store.Replace(ctx, approved...); err != nil {
			errs = append(errs, fmt.Errorf("save %d pins approved by config: %w", len(approved), err))
		}
	}
	if len(upgraded) > 0 {
		// Compared as upgraded meanwhile: the pin matches either way, and
		// a later check upgrades it again.
		if err := p.store.Upgrade(ctx, upgraded...); err != nil {
			errs = append(errs, fmt.Errorf("upgrade %d pins to digest version %d: %w", len(upgraded), DigestVersion, err))
		}
	}
	if len(errs) > 0 {
		servers := make([]string, len(offers))
		for i, o := range offers {
			servers[i] = o.Server
		}
		return changes, fmt.Errorf("pin tools of %s: %w", strings.Join(servers, ", "), joinErrs(errs))
	}
	return changes, nil
}

// pinFirst saves candidates the store has no pin for and returns the pins
// in force. A candidate seen before whose save failed keeps its first
// definition (it was the first seen); while the store keeps failing, saves
// are tried at most every saveRetry, so a rebuild does not wait on a dead
// store again and again.
func (p *Pinner) pinFirst(ctx context.Context, candidates []Pin) ([]Pin, error) {
	p.mu.Lock()
	for i, c := range candidates {
		if u, ok := p.unsaved[c.Key]; ok {
			candidates[i] = u
		}
	}
	wait := !p.failedAt.IsZero() && p.now().Sub(p.failedAt) < saveRetry
	p.mu.Unlock()
	if wait {
		return candidates, fmt.Errorf("%d pins not saved yet (the store failed less than %s ago)", len(candidates), saveRetry)
	}
	inForce, err := p.store.PinFirst(ctx, candidates)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.failedAt = p.now()
		for _, c := range candidates {
			p.unsaved[c.Key] = c
		}
		return candidates, fmt.Errorf("save %d pins: %w", len(candidates), err)
	}
	p.failedAt = time.Time{}
	return inForce, nil
}

// forgetSaved drops the unsaved pins the store now holds.
func (p *Pinner) forgetSaved() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k := range p.unsaved {
		if _, ok := p.store.Get(k); ok {
			delete(p.unsaved, k)
		}
	}
}

// Approved says an operator approved definition d for key: its pin
// holds d and was approved (not merely first seen), or a config rule
// approves it. Screening lets such a definition through.
func (p *Pinner) Approved(key Key, d Definition) bool {
	if p.Mode() == Off {
		return false
	}
	if p.approvedByRule(key, d) {
		return true
	}
	pin, ok := p.store.Get(key)
	return ok && pin.Matches(d) && pin.Approved != ""
}

func (p *Pinner) approvedByRule(key Key, d Definition) bool {
	for _, r := range p.rules {
		if r.matches(key, d) {
			return true
		}
	}
	return false
}

// Approve re-pins the current definitions of tools of server (an
// operator's approval, how says by what: "api", "cli"), and returns the
// new pins of those that changed. The tools named in asIs are approved
// even when their definition is the pinned one (a first definition the
// hub's screening held back): their pin is marked approved, which is what
// Approved reads.
func (p *Pinner) Approve(ctx context.Context, server string, tools []mcp.Tool, how string, asIs ...string) ([]Pin, error) {
	if p.Mode() == Off {
		return nil, ErrOff
	}
	approvals := make([]approval, len(tools))
	for i, t := range tools {
		def, err := DefinitionOf(t)
		if err != nil {
			return nil, err
		}
		approvals[i] = approval{key: Key{Server: server, Tool: t.Name}, def: def, asIs: slices.Contains(asIs, t.Name)}
	}
	return p.approve(ctx, how, approvals)
}

// ApproveDefinitions records an operator's approval (how says by what:
// "api") of definitions besides tools that the hub's screening held back
// (a prompt, a resource, a server's instructions; keys with a Kind), and
// returns the pins written. Such a pin is no pin against change: a
// definition that changes is screened afresh, and held again if it has
// hits, until approved again.
func (p *Pinner) ApproveDefinitions(ctx context.Context, how string, defs map[Key]Definition) ([]Pin, error) {
	if p.Mode() == Off {
		return nil, ErrOff
	}
	var approvals []approval
	for key, d := range defs {
		approvals = append(approvals, approval{key: key, def: d, asIs: true})
	}
	return p.approve(ctx, how, approvals)
}

// approval is one definition an operator approves; asIs approves it
// even when it is the one pinned (its pin is marked approved).
type approval struct {
	key  Key
	def  Definition
	asIs bool
}

// approve writes the pins of approvals that are not pinned and approved
// already, sorted, and returns them.
func (p *Pinner) approve(ctx context.Context, how string, approvals []approval) ([]Pin, error) {
	var pins []Pin
	for _, a := range approvals {
		if old, ok := p.store.Get(a.key); ok && old.Matches(a.def) && old.Version >= DigestVersion && (old.Approved != "" || !a.asIs) {
			continue
		}
		np := NewPin(a.key, a.def, p.now())
		np.Approved = how
		pins = append(pins, np)
	}
	if len(pins) == 0 {
		return nil, nil
	}
	sortPins(pins)
	if err := p.store.Replace(ctx, pins...); err != nil {
		return nil, fmt.Errorf("approve %d definitions of %s: %w", len(pins), pins[0].Server, err)
	}
	return pins, nil
}

// Forget drops the pins of servers removed from every source of the hub,
// saved and unsaved: a server of that name added later is pinned afresh
// (it is a new trust decision, as its registration is), and the store does
// not keep what every server ever listed.
func (p *Pinner) Forget(ctx context.Context, servers ...string) error {
	if p.Mode() == Off || len(servers) == 0 {
		return nil
	}
	p.mu.Lock()
	for k := range p.unsaved {
		if slices.Contains(servers, k.Server) {
			delete(p.unsaved, k)
		}
	}
	p.mu.Unlock()
	if err := p.store.Forget(ctx, servers...); err != nil {
		return fmt.Errorf("forget the pins of %s: %w", strings.Join(servers, ", "), err)
	}
	return nil
}

func joinErrs(errs []error) error {
	if len(errs) == 1 {
		return errs[0]
	}
	return fmt.Errorf("%w (and %d more)", errs[0], len(errs)-1)
}
