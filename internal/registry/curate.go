package registry

import (
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/registry/naming"
)

// Curation in the catalog. A server's spec may choose which of its tools
// are published and how (config.ToolCuration): the rebuild applies it to
// the server's list before naming, so every face, the REST listing,
// find_tools and Lookup see the same published set, and a tool left out is
// unknown by any name. Pinning and screening still read the server's own
// list (the definitions it offered, not the operator's text), so a change
// at the server is quarantined whatever the override says.

// curatedTool is one upstream tool the curation publishes.
type curatedTool struct {
	// up is the server's own definition (its name is the one calls use).
	up *mcp.Tool
	// key names the tool for the naming policy and the name claims: the
	// server and the name before the policy (the override's, else the
	// server's), so a renamed tool's published and claimed name follows
	// the rename.
	key naming.Key
	// override is the operator's override of the tool, if any.
	override config.ToolOverride
}

// curate returns the tools of tools the spec's curation publishes, and
// the server's own tools it cannot publish because a rename took their
// name (server's name -> the renamed tool's): the rename, the operator's
// word, wins.
func curate(spec config.ServerSpec, tools []mcp.Tool) (out []curatedTool, shadowed map[string]string) {
	cur := spec.Tools
	if cur == nil {
		out = make([]curatedTool, len(tools))
		for i := range tools {
			out[i] = curatedTool{up: &tools[i], key: naming.Key{Server: spec.Name, Original: tools[i].Name}}
		}
		return out, nil
	}
	renamed := map[string]string{} // published-before-policy name -> server's name
	for i := range tools {
		t := &tools[i]
		if !cur.Publishes(t.Name) {
			continue
		}
		ct := curatedTool{up: t, key: naming.Key{Server: spec.Name, Original: t.Name}}
		if o, ok := cur.Override(t.Name); ok {
			ct.override = o
			if o.Name != "" {
				ct.key.Original = o.Name
				renamed[o.Name] = t.Name
			}
		}
		out = append(out, ct)
	}
	kept := out[:0]
	for _, ct := range out {
		if by, taken := renamed[ct.key.Original]; taken && by != ct.up.Name {
			if shadowed == nil {
				shadowed = map[string]string{}
			}
			shadowed[ct.up.Name] = by
			continue
		}
		kept = append(kept, ct)
	}
	return kept, shadowed
}

// published is ct's definition as the catalog publishes it: name set by
// the naming policy, the override's description and annotations over the
// server's. def is the server's definition with its UI pointers renamed
// (withAppURI).
func (ct curatedTool) published(def mcp.Tool, name string) mcp.Tool {
	def.Name = name
	o := ct.override
	if o.Description != "" {
		def.Description = o.Description
	}
	if a := o.Annotations; a != nil {
		ann := &def.Annotations
		if a.Title != "" {
			ann.Title = a.Title
		}
		for _, f := range []struct{ to, from **bool }{
			{&ann.ReadOnlyHint, &a.ReadOnlyHint}, {&ann.DestructiveHint, &a.DestructiveHint},
			{&ann.IdempotentHint, &a.IdempotentHint}, {&ann.OpenWorldHint, &a.OpenWorldHint},
		} {
			if *f.from != nil {
				*f.to = *f.from
			}
		}
	}
	return def
}

// hintedTools are the tools of spec whose readOnlyHint the operator set in
// an override (server's name -> the hint), for the classifier; nil when
// none.
func hintedTools(spec config.ServerSpec) map[string]bool {
	var out map[string]bool
	if spec.Tools == nil {
		return nil
	}
	for name, o := range spec.Tools.Overrides {
		if o.Annotations == nil || o.Annotations.ReadOnlyHint == nil {
			continue
		}
		if out == nil {
			out = map[string]bool{}
		}
		out[name] = *o.Annotations.ReadOnlyHint
	}
	return out
}
