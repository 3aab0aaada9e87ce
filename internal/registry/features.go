package registry

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/upstream"
)

// Resources, resource templates and prompts are published like tools: under
// the same naming policy, so one upstream keeps its own names and two that
// collide are told apart. A prompt is prefixed like a tool
// ("server__prompt"). A URI or URI template gets the server in front of its
// scheme ("server+file:///x"), which keeps it a valid URI and template. The
// catalog maps every published name back to the exact original.

// Resource is one published resource.
type Resource struct {
	URI      string // published URI
	Original string // URI at the upstream
	Prefix   string // what publishing put in front of Original ("" or "server+")
	Server   string
	Def      mcp.Resource // URI set to the published one
	Client   Upstream
}

// Template is one published resource template.
type Template struct {
	URITemplate string // published template
	Original    string // template at the upstream
	Prefix      string // what publishing put in front of Original
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
}

// Features are the catalog's resources, templates and prompts.
type Features struct {
	Resources []Resource
	Templates []Template
	Prompts   []Prompt
	Caps      Capabilities

	resourceIndex map[string]int
	templateIndex map[string]int
	promptIndex   map[string]int
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

// buildFeatures publishes the features of the connected upstreams.
func buildFeatures(clients []*upstream.Client, naming config.Naming) Features {
	type srv struct {
		c *upstream.Client
		f upstream.Features
	}
	var live []srv
	var resKeys, tplKeys, promptKeys []toolKey
	var f Features
	for _, c := range clients {
		if c.Status().State != upstream.StateConnected {
			continue
		}
		feat := c.Features()
		live = append(live, srv{c, feat})
		caps := feat.Capabilities
		f.Caps.Resources = f.Caps.Resources || caps.Resources != nil
		f.Caps.Subscribe = f.Caps.Subscribe || caps.Resources != nil && caps.Resources.Subscribe
		f.Caps.Prompts = f.Caps.Prompts || caps.Prompts != nil
		f.Caps.Logging = f.Caps.Logging || caps.Logging != nil
		f.Caps.Completions = f.Caps.Completions || caps.Completions != nil
		for _, r := range feat.Resources {
			resKeys = append(resKeys, toolKey{Server: c.Name(), Original: r.URI})
		}
		for _, t := range feat.Templates {
			if t.URITemplate != nil {
				tplKeys = append(tplKeys, toolKey{Server: c.Name(), Original: t.URITemplate.Raw()})
			}
		}
		for _, p := range feat.Prompts {
			promptKeys = append(promptKeys, toolKey{Server: c.Name(), Original: p.Name})
		}
	}
	uris, _ := publishURIs(resKeys, naming)
	tpls, _ := publishURIs(tplKeys, naming)
	prompts, _, _ := assignNames(promptKeys, naming, func(s string) string { return s }, nil)

	for _, s := range live {
		name := s.c.Name()
		for _, r := range s.f.Resources {
			pub, ok := uris[toolKey{Server: name, Original: r.URI}]
			if !ok {
				continue
			}
			def := r
			def.URI = pub
			f.Resources = append(f.Resources, Resource{URI: pub, Original: r.URI, Prefix: strings.TrimSuffix(pub, r.URI), Server: name, Def: def, Client: s.c.Extras()})
		}
		for _, t := range s.f.Templates {
			if t.URITemplate == nil {
				continue
			}
			orig := t.URITemplate.Raw()
			pub, ok := tpls[toolKey{Server: name, Original: orig}]
			if !ok {
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
			f.Templates = append(f.Templates, Template{URITemplate: pub, Original: orig, Prefix: strings.TrimSuffix(pub, orig), Server: name, Def: def, Client: s.c.Extras()})
		}
		for _, p := range s.f.Prompts {
			pub, ok := prompts[toolKey{Server: name, Original: p.Name}]
			if !ok {
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
	for i, r := range f.Resources {
		f.resourceIndex[r.URI] = i
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

// publishURIs assigns published URIs (or URI templates) under the naming
// policy: kept as they are, or with "<server>+" in front of the scheme when
// the policy prefixes. With policy never, the first server (by name) keeps
// a URI and the others' are hidden.
func publishURIs(keys []toolKey, naming config.Naming) (names map[toolKey]string, hidden map[toolKey]string) {
	sorted := append([]toolKey(nil), keys...)
	sort.Slice(sorted, func(i, j int) bool {
		if sorted[i].Server != sorted[j].Server {
			return sorted[i].Server < sorted[j].Server
		}
		return sorted[i].Original < sorted[j].Original
	})
	offered := map[string]map[string]bool{}
	for _, k := range sorted {
		if offered[k.Original] == nil {
			offered[k.Original] = map[string]bool{}
		}
		offered[k.Original][k.Server] = true
	}
	names = make(map[toolKey]string, len(sorted))
	hidden = map[toolKey]string{}
	owner := map[string]string{}
	for _, k := range sorted {
		name := k.Original
		if naming.Prefix == config.PrefixAlways || naming.Prefix == config.PrefixOnConflict && len(offered[k.Original]) > 1 {
			name = schemePrefix(k.Server) + "+" + k.Original
		}
		if prev, taken := owner[name]; taken && prev != k.Server {
			hidden[k] = prev
			continue
		}
		owner[name] = k.Server
		names[k] = name
	}
	return names, hidden
}

// schemePrefix turns a server name into characters a URI scheme may hold.
func schemePrefix(server string) string {
	var b strings.Builder
	for i := 0; i < len(server); i++ {
		c := server[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '.':
			b.WriteByte(c)
		case c >= 'A' && c <= 'Z':
			b.WriteByte(c + 'a' - 'A')
		default:
			b.WriteByte('-')
		}
	}
	s := b.String()
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		s = "s" + s
	}
	return s
}
