package registry

import (
	"encoding/json"
	"maps"
	"slices"
	"sort"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/pinning"
	"github.com/purko-io/mcp-hub/internal/registry/naming"
	"github.com/purko-io/mcp-hub/internal/registry/quarantine"
	"github.com/purko-io/mcp-hub/internal/upstream"
	"github.com/purko-io/mcp-hub/internal/upstream/carried"
)

// Resources, resource templates and prompts are published like tools: under
// the same naming policy (package naming), so one upstream keeps its own
// names and two that collide are told apart. A prompt is prefixed like a
// tool ("server__prompt"); a URI or URI template gets the server in front
// of its scheme ("server+file:///x"; naming.PublishedURI). The catalog maps
// every published name back to the exact original.

// Resource is one published resource.
type Resource struct {
	URI      string // published URI
	Original string // URI at the upstream
	Prefix   string // what publishing added to Original ("" or "server+", see naming.PublishedURI)
	Server   string
	Def      mcp.Resource // URI set to the published one
	Client   Upstream
}

// Template is one published resource template.
type Template struct {
	URITemplate string // published template
	Original    string // template at the upstream
	Prefix      string // what publishing added to Original (see naming.PublishedURI)
	Server      string
	Def         mcp.ResourceTemplate
	Client      Upstream
}

// Prompt is one published prompt.
type Prompt struct {
	Name     string // published name
	Original string
	Server   string
	Def      mcp.Prompt // Name set to the published one
	Client   Upstream
}

// Capabilities is the union of what the connected upstreams offer besides
// tools; the hub advertises it.
type Capabilities struct {
	Resources, Subscribe, Prompts, Logging, Completions bool
	// Extensions are the carried extensions (config upstream.extensions)
	// the upstreams declare, in server order: a caller is told of one
	// that a server it may reach declares.
	Extensions []Extension
	// TaskServers are the servers that serve the Tasks extension over
	// 2026-07-28: any call of theirs may become a task (package tasks).
	TaskServers []string
}

// declareApps counts a server with an MCP App (a tool whose _meta.ui
// names its UI) as declaring MCP Apps when the hub carries it: servers
// written with the Apps SDK use the extension without declaring it in
// their own capabilities, and a host must be told of it to show their UI.
func (c *Capabilities) declareApps(appServers map[string]bool, carried *carried.Set) {
	if !carried.Carries(config.ExtensionUI) {
		return
	}
	for _, srv := range slices.Sorted(maps.Keys(appServers)) {
		if !slices.ContainsFunc(c.Extensions, func(e Extension) bool { return e.Server == srv && e.ID == config.ExtensionUI }) {
			c.Extensions = append(c.Extensions, Extension{Server: srv, ID: config.ExtensionUI, Settings: json.RawMessage(`{}`)})
		}
	}
}

// Extension is an extension a connected server declares, with its
// settings.
type Extension struct {
	Server, ID string
	Settings   json.RawMessage
}

// ScreenedFeature is a prompt, resource, resource template or a server's
// instructions that the screening found hits in (package quarantine):
// in screening mode enforce not published, in warn mode published (and
// listed here too), until an operator approves it.
type ScreenedFeature struct {
	// Kind is pinning.KindPrompt, KindResource, KindTemplate or
	// KindInstructions.
	Kind   string
	Server string
	// Original is its name at the server (a prompt's name, a resource's
	// URI, a template's URI template; "" for instructions), Published
	// the name it is (or would be) published under ("" for
	// instructions, which are never passed on).
	Original, Published string
	Quarantine          quarantine.Quarantine
	// def is the screened definition, which an approval records.
	def pinning.Definition
}

// Features are the catalog's resources, templates and prompts.
type Features struct {
	Resources []Resource
	Templates []Template
	Prompts   []Prompt
	Caps      Capabilities
	// Screened are the definitions besides tools whose screening found
	// hits, by server, kind and name.
	Screened []ScreenedFeature

	resourceIndex map[string]int
	templateIndex map[string]int
	promptIndex   map[string]int
	// originIndex maps a server's own resource URI to its published one.
	originIndex map[naming.Key]string
}

// Resource returns the published resource with that URI.
func (f *Features) Resource(uri string) (Resource, bool) {
	i, ok := f.resourceIndex[uri]
	if !ok {
		return Resource{}, false
	}
	return f.Resources[i], true
}

// Template returns the published template with that URI template.
func (f *Features) Template(uriTemplate string) (Template, bool) {
	i, ok := f.templateIndex[uriTemplate]
	if !ok {
		return Template{}, false
	}
	return f.Templates[i], true
}

// Prompt returns the published prompt called name.
func (f *Features) Prompt(name string) (Prompt, bool) {
	i, ok := f.promptIndex[name]
	if !ok {
		return Prompt{}, false
	}
	return f.Prompts[i], true
}

// publishedURI is the URI under which the hub serves server's own URI
// original: its listed resource, else what one of its templates matches;
// false when the hub serves it under no name.
func (f *Features) publishedURI(server, original string) (string, bool) {
	if pub, ok := f.originIndex[naming.Key{Server: server, Original: original}]; ok {
		return pub, true
	}
	for _, t := range f.Templates {
		if t.Server != server || t.Def.URITemplate == nil {
			continue
		}
		if pub := naming.PublishedURI(t.Prefix, original); t.Def.URITemplate.Regexp().MatchString(pub) {
			return pub, true
		}
	}
	return "", false
}

// MCP Apps (@modelcontextprotocol/ext-apps): a tool names its UI, a ui://
// resource of the same server, in _meta.ui.resourceUri (and, from older
// servers, in _meta["ui/resourceUri"]). The host reads that URI from the
// hub, so when publishing renamed the resource the pointer must be renamed
// the same way; the rest of _meta (_meta.ui.visibility above all) is the
// server's and stays as it is.
const (
	metaUI            = "ui"
	metaUIResourceURI = "resourceUri"
	metaUILegacyURI   = "ui/resourceUri"
)

// hasUI reports whether t belongs to an MCP App: it names a UI or says
// who may see it.
func hasUI(t mcp.Tool) bool {
	if t.Meta == nil {
		return false
	}
	_, ui := t.Meta.AdditionalFields[metaUI].(map[string]any)
	_, legacy := t.Meta.AdditionalFields[metaUILegacyURI].(string)
	return ui || legacy
}

// AppOnly reports whether t is meant for its app alone: its
// _meta.ui.visibility lists who may see it, and the model is not among
// them. The hub lists such a tool (its host keeps it from the model and
// lets the app call it) but never offers it to the model itself.
func AppOnly(t mcp.Tool) bool {
	if t.Meta == nil {
		return false
	}
	ui, _ := t.Meta.AdditionalFields[metaUI].(map[string]any)
	vis, ok := ui["visibility"].([]any)
	return ok && !slices.Contains(vis, any("model"))
}

// withAppURI returns t with its UI pointers renamed as publishing renamed
// the resources they name. t's own _meta is the upstream's and shared, so
// a changed one is a copy.
func withAppURI(t mcp.Tool, server string, f *Features) mcp.Tool {
	if t.Meta == nil || len(t.Meta.AdditionalFields) == 0 {
		return t
	}
	fields := t.Meta.AdditionalFields
	var out map[string]any
	renamed := func(v any) (string, bool) {
		uri, ok := v.(string)
		if !ok {
			return "", false
		}
		pub, ok := f.publishedURI(server, uri)
		return pub, ok && pub != uri
	}
	set := func(key string, v any) {
		if out == nil {
			out = maps.Clone(fields)
		}
		out[key] = v
	}
	if ui, ok := fields[metaUI].(map[string]any); ok {
		if pub, ok := renamed(ui[metaUIResourceURI]); ok {
			ui = maps.Clone(ui)
			ui[metaUIResourceURI] = pub
			set(metaUI, ui)
		}
	}
	if pub, ok := renamed(fields[metaUILegacyURI]); ok {
		set(metaUILegacyURI, pub)
	}
	if out == nil {
		return t
	}
	meta := *t.Meta
	meta.AdditionalFields = out
	t.Meta = &meta
	return t
}

// buildFeatures publishes the features of the connected upstreams; the
// ones holds holds (screened, enforce) are left out, and listed in
// Screened with the ones reported (warn).
func buildFeatures(clients []*upstream.Client, policy config.Naming, holds *quarantine.Checks, carried *carried.Set) Features {
	type srv struct {
		c    *upstream.Client
		f    upstream.Features
		held map[quarantine.FeatureKey]*quarantine.HeldFeature
	}
	var live []srv
	var resKeys, tplKeys, promptKeys []naming.Key
	var f Features
	for _, c := range clients {
		if c.Status().State != upstream.StateConnected {
			continue
		}
		feat := c.Features()
		live = append(live, srv{c, feat, holds.FeaturesOf(c, feat)})
		caps := feat.Capabilities
		f.Caps.Resources = f.Caps.Resources || caps.Resources != nil
		f.Caps.Subscribe = f.Caps.Subscribe || caps.Resources != nil && caps.Resources.Subscribe
		f.Caps.Prompts = f.Caps.Prompts || caps.Prompts != nil
		f.Caps.Logging = f.Caps.Logging || caps.Logging != nil
		f.Caps.Completions = f.Caps.Completions || caps.Completions != nil
		if _, ok := caps.Extensions[config.ExtensionTasks]; ok && mcp.IsModernProtocol(c.Status().Protocol) {
			f.Caps.TaskServers = append(f.Caps.TaskServers, c.Name())
		}
		for _, id := range slices.Sorted(maps.Keys(caps.Extensions)) {
			if carried.Carries(id) {
				settings, err := json.Marshal(caps.Extensions[id])
				if err != nil || len(settings) == 0 || settings[0] != '{' {
					settings = json.RawMessage(`{}`) // not an object: the server's mistake, not the caller's
				}
				f.Caps.Extensions = append(f.Caps.Extensions, Extension{Server: c.Name(), ID: id, Settings: settings})
			}
		}
		for _, r := range feat.Resources {
			resKeys = append(resKeys, naming.Key{Server: c.Name(), Original: r.URI})
		}
		for _, t := range feat.Templates {
			if t.URITemplate != nil {
				tplKeys = append(tplKeys, naming.Key{Server: c.Name(), Original: t.URITemplate.Raw()})
			}
		}
		for _, p := range feat.Prompts {
			promptKeys = append(promptKeys, naming.Key{Server: c.Name(), Original: p.Name})
		}
	}
	uris, _ := naming.URIs(resKeys, policy)
	tpls, _ := naming.URIs(tplKeys, policy)
	prompts := naming.Prompts(promptKeys, policy)

	for _, s := range live {
		name := s.c.Name()
		// withheld says whether the definition is held back, and lists
		// it in Screened when the screening found hits in it.
		withheld := func(kind, original, pub string) bool {
			h := s.held[quarantine.FeatureKey{Kind: kind, Name: original}]
			if h == nil {
				return false
			}
			f.Screened = append(f.Screened, ScreenedFeature{Kind: kind, Server: name, Original: original, Published: pub,
				Quarantine: h.Quarantine, def: h.Definition})
			return h.Enforced
		}
		withheld(pinning.KindInstructions, "", "")
		for _, r := range s.f.Resources {
			pub, ok := uris[naming.Key{Server: name, Original: r.URI}]
			if !ok || withheld(pinning.KindResource, r.URI, pub) {
				continue
			}
			def := r
			def.URI = pub
			f.Resources = append(f.Resources, Resource{URI: pub, Original: r.URI, Prefix: prefixOf(name, pub, r.URI), Server: name, Def: def, Client: s.c.Extras()})
		}
		for _, t := range s.f.Templates {
			if t.URITemplate == nil {
				continue
			}
			orig := t.URITemplate.Raw()
			pub, ok := tpls[naming.Key{Server: name, Original: orig}]
			if !ok || withheld(pinning.KindTemplate, orig, pub) {
				continue
			}
			def := t
			if pub != orig {
				raw, _ := json.Marshal(pub)
				tmpl := &mcp.URITemplate{}
				if err := tmpl.UnmarshalJSON(raw); err != nil {
					continue
				}
				def.URITemplate = tmpl
			}
			f.Templates = append(f.Templates, Template{URITemplate: pub, Original: orig, Prefix: prefixOf(name, pub, orig), Server: name, Def: def, Client: s.c.Extras()})
		}
		for _, p := range s.f.Prompts {
			pub, ok := prompts[naming.Key{Server: name, Original: p.Name}]
			if !ok || withheld(pinning.KindPrompt, p.Name, pub) {
				continue
			}
			def := p
			def.Name = pub
			f.Prompts = append(f.Prompts, Prompt{Name: pub, Original: p.Name, Server: name, Def: def, Client: s.c.Extras()})
		}
	}
	sort.Slice(f.Resources, func(i, j int) bool { return f.Resources[i].URI < f.Resources[j].URI })
	sort.Slice(f.Templates, func(i, j int) bool { return f.Templates[i].URITemplate < f.Templates[j].URITemplate })
	sort.Slice(f.Prompts, func(i, j int) bool { return f.Prompts[i].Name < f.Prompts[j].Name })
	f.resourceIndex = make(map[string]int, len(f.Resources))
	f.originIndex = make(map[naming.Key]string, len(f.Resources))
	for i, r := range f.Resources {
		f.resourceIndex[r.URI] = i
		f.originIndex[naming.Key{Server: r.Server, Original: r.Original}] = r.URI
	}
	f.templateIndex = make(map[string]int, len(f.Templates))
	for i, t := range f.Templates {
		f.templateIndex[t.URITemplate] = i
	}
	f.promptIndex = make(map[string]int, len(f.Prompts))
	for i, p := range f.Prompts {
		f.promptIndex[p.Name] = i
	}
	return f
}

// prefixOf is what publishing added to server's original URI to make pub.
func prefixOf(server, pub, original string) string {
	if pub == original {
		return ""
	}
	return naming.URIPrefix(server)
}
