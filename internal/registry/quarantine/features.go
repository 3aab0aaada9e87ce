package quarantine

import (
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/pinning"
	"github.com/purko-io/mcp-hub/internal/toolscreen"
	"github.com/purko-io/mcp-hub/internal/upstream"
)

// Screening of what a server offers besides tools: its prompts, resources
// and resource templates, read by a model as a tool's description is, and
// the instructions it gave at initialize. A definition with hits is held
// as a tool is: in screening mode enforce it is not published (the
// catalog leaves it out: not listed, and a prompts/get or resources/read
// of its name finds nothing), in warn mode it is published; either way it
// is reported once. The hub never passes a server's instructions on (it
// answers initialize with its own), so holding them is reporting them.
// An operator's approval is recorded in a pin of its own
// (pinning.Pinner.ApproveDefinitions): these definitions are not pinned
// against change, only screened; a changed one is screened afresh.

// FeatureKey names one definition besides tools of a server: its kind
// (pinning.KindPrompt, KindResource, KindTemplate, KindInstructions) and
// its name at the server (a prompt's name, a resource's URI, a template's
// URI template; "" for the instructions).
type FeatureKey struct{ Kind, Name string }

// HeldFeature is a held definition besides tools.
type HeldFeature struct {
	Quarantine
	// Definition is the held definition, which an approval records.
	Definition pinning.Definition
}

// featureMemo is the screening of one client's features (the same lists
// while the server does not list again).
type featureMemo struct {
	prompts      *mcp.Prompt
	resources    *mcp.Resource
	templates    *mcp.ResourceTemplate
	n            [3]int
	instructions string
	held         map[FeatureKey]screenedFeature
}

// screenedFeature is one definition's hits and what an approval is
// recorded against.
type screenedFeature struct {
	hits []toolscreen.Hit
	def  pinning.Definition
}

func first[T any](s []T) *T {
	if len(s) == 0 {
		return nil
	}
	return &s[0]
}

func (m featureMemo) of(f upstream.Features) bool {
	return m.prompts == first(f.Prompts) && m.resources == first(f.Resources) && m.templates == first(f.Templates) &&
		m.n == [3]int{len(f.Prompts), len(f.Resources), len(f.Templates)} && m.instructions == f.Instructions
}

// features returns the definitions of f (c's) with hits, screened once
// per listing.
func (sc *screenChecks) features(c *upstream.Client, f upstream.Features) map[FeatureKey]screenedFeature {
	if !sc.on() {
		return nil
	}
	if m, ok := sc.featureMemos[c]; ok && m.of(f) {
		return m.held
	}
	m := featureMemo{prompts: first(f.Prompts), resources: first(f.Resources), templates: first(f.Templates),
		n: [3]int{len(f.Prompts), len(f.Resources), len(f.Templates)}, instructions: f.Instructions}
	hold := func(kind, name string, hits []toolscreen.Hit, v any, member string) {
		if len(hits) == 0 {
			return
		}
		def, err := pinning.FeatureDefinition(v, member)
		if err != nil {
			def = pinning.Definition{} // approvable as nothing: held until it can be read
		}
		if m.held == nil {
			m.held = map[FeatureKey]screenedFeature{}
		}
		m.held[FeatureKey{Kind: kind, Name: name}] = screenedFeature{hits: hits, def: def}
	}
	for _, p := range f.Prompts {
		hold(pinning.KindPrompt, p.Name, sc.screener.ScreenPrompt(p), p, "name")
	}
	for _, r := range f.Resources {
		hold(pinning.KindResource, r.URI, sc.screener.ScreenResource(r), r, "uri")
	}
	for _, t := range f.Templates {
		if t.URITemplate != nil {
			hold(pinning.KindTemplate, t.URITemplate.Raw(), sc.screener.ScreenTemplate(t), t, "uriTemplate")
		}
	}
	if f.Instructions != "" {
		hold(pinning.KindInstructions, "", sc.screener.ScreenInstructions(f.Instructions), map[string]string{"instructions": f.Instructions}, "")
	}
	sc.featureMemos[c] = m
	return m.held
}

// FeaturesOf returns the held definitions among f, cl's prompts,
// resources, templates and instructions: the ones whose screening found
// hits and that no approval stands for; nil when none is held.
func (c *Checks) FeaturesOf(cl *upstream.Client, f upstream.Features) map[FeatureKey]*HeldFeature {
	screened := c.screens.features(cl, f)
	var out map[FeatureKey]*HeldFeature
	for k, s := range screened {
		key := pinning.Key{Server: cl.Name(), Tool: k.Name, Kind: k.Kind}
		if c.pins.pinner.Approved(key, s.def) {
			continue
		}
		if out == nil {
			out = map[FeatureKey]*HeldFeature{}
		}
		out[k] = &HeldFeature{Quarantine: Quarantine{CurrentSHA256: s.def.Sum(), Screened: s.hits,
			Enforced: c.screens.mode == config.ScreeningEnforce}, Definition: s.def}
	}
	return out
}
