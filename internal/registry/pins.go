package registry

import (
	"context"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/pinning"
	"github.com/purko-io/mcp-hub/internal/registry/quarantine"
)

// Pins in the catalog. Which tools are held is decided by each rebuild
// (package quarantine). In enforce mode a held tool is left out of the
// published tools and kept in ServerView.Quarantined, where Lookup finds it
// only to refuse it (QuarantinedError); in warn mode it is published with
// its Quarantine set. Approval (ApprovePins) is the Registry's, as it owns
// the clients and the catalog the approval reads and rebuilds.

// QuarantinedError refuses a call of a quarantined tool before it reaches
// the upstream, saying what changed and how an operator approves it.
type QuarantinedError struct {
	Name, Server, Original string
	Quarantine             quarantine.Quarantine
}

func (e *QuarantinedError) Error() string {
	return fmt.Sprintf("tool '%s' is quarantined: %s. "+
		"An operator approves it with `mcp-hub pins approve --server %s --tool %s` or POST /api/mcp/pins/approve",
		e.Name, e.Quarantine.Reason(), e.Server, e.Original)
}

// ErrNotFound is wrapped by ApprovePins for a server or tool the catalog
// does not hold.
var ErrNotFound = errors.New("not found")

// Pinning returns the pinner (nil when pinning is off).
func (r *Registry) Pinning() *pinning.Pinner { return r.opts.Pins }

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
// not its definition changed. A prompt, resource or template the
// screening held, or the server's instructions, named by tool (or all of
// them when tool is "") are approved too (screenedFeatures). The catalog is rebuilt with the new pins
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
	features := r.screenedFeatures(server, tool)
	if p.Mode() == pinning.Off {
		if len(screened) > 0 || len(features) > 0 {
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
		if len(picked) == 0 && len(features) == 0 {
			return nil, fmt.Errorf("server %q offers no tool %q: %w", server, tool, ErrNotFound)
		}
		tools = picked
	}
	pins, err := p.Approve(ctx, server, tools, how, screened...)
	if err != nil {
		return nil, err
	}
	if len(features) > 0 {
		more, err := p.ApproveDefinitions(ctx, how, features)
		if err != nil {
			return pins, err
		}
		pins = append(pins, more...)
	}
	r.pinsChanged()
	if err := r.awaitRebuild(ctx); err != nil {
		return pins, err
	}
	return pins, nil
}

// screenedFeatures are the definitions besides tools of server that the
// screening found hits in and that name picks: its prompt, resource or
// template of that name (original or published), "instructions" for its
// instructions, or, when name is "", all of them.
func (r *Registry) screenedFeatures(server, name string) map[pinning.Key]pinning.Definition {
	var out map[pinning.Key]pinning.Definition
	for _, s := range r.Catalog().Features.Screened {
		picked := name == "" || name == s.Original && s.Original != "" || name == s.Published && s.Published != "" ||
			name == pinning.KindInstructions && s.Kind == pinning.KindInstructions
		if s.Server != server || !picked {
			continue
		}
		if out == nil {
			out = map[pinning.Key]pinning.Definition{}
		}
		out[pinning.Key{Server: server, Tool: s.Original, Kind: s.Kind}] = s.def
	}
	return out
}

// pinsChanged makes the next rebuild check every tool again.
func (r *Registry) pinsChanged() {
	r.holds.Recheck()
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
