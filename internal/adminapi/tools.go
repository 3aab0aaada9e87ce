package adminapi

import (
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/httpjson"
	"github.com/purko-io/mcp-hub/internal/registry"
	"github.com/purko-io/mcp-hub/internal/toolscreen"
)

// listing is the body of GET /api/mcp/tools, in the shape Purko's dashboard
// and `jq '.servers[].tools[].name'` expect.
type listing struct {
	Servers    []serverListing `json:"servers"`
	TotalTools int             `json:"totalTools"`
}

type serverListing struct {
	Name      string `json:"name"`
	URL       string `json:"url"`
	Transport string `json:"transport"`
	Source    string `json:"source,omitempty"`
	Status    string `json:"status"`
	Error     string `json:"error,omitempty"`
	Protocol  string `json:"protocolVersion,omitempty"`
	ToolCount int    `json:"toolCount"`
	// Resources, templates and prompts count what the server publishes
	// through the hub (connected servers only).
	Resources int               `json:"resourceCount,omitempty"`
	Templates int               `json:"resourceTemplateCount,omitempty"`
	Prompts   int               `json:"promptCount,omitempty"`
	Tools     any               `json:"tools"`
	Hidden    map[string]string `json:"hiddenTools,omitempty"`
	// Quarantined counts the tools listed with "quarantined": true (not in
	// toolCount: they cannot be called).
	Quarantined int `json:"quarantinedCount,omitempty"`
	// ErrorDetail is what the upstream answered that error does not show
	// (the start of its body, redacted): for admin callers only.
	ErrorDetail string `json:"errorDetail,omitempty"`
	// Screened are its prompts, resources, templates and instructions
	// whose screening found hits: not published (quarantined) in
	// screening mode enforce, published in warn.
	Screened []screenedListing `json:"screenedFeatures,omitempty"`
}

// screenedListing is one definition besides tools the screening held.
type screenedListing struct {
	Kind             string           `json:"kind"`
	Name             string           `json:"name,omitempty"`
	Published        string           `json:"published,omitempty"`
	Quarantined      bool             `json:"quarantined,omitempty"`
	CurrentSHA256    string           `json:"currentSha256,omitempty"`
	Screened         []toolscreen.Hit `json:"screened"`
	QuarantineReason string           `json:"quarantineReason"`
}

type toolListing struct {
	Name string `json:"name"`
	// Title is the tool's display name, when its server gives one: the
	// console shows it and searches it.
	Title        string              `json:"title,omitempty"`
	Description  string              `json:"description,omitempty"`
	InputSchema  any                 `json:"inputSchema"`
	Annotations  *mcp.ToolAnnotation `json:"annotations,omitempty"`
	Server       string              `json:"server"`
	OriginalName string              `json:"originalName,omitempty"`
	ReadOnly     bool                `json:"readOnly"`
	Reason       string              `json:"readOnlyReason"`
	// Quarantined: the definition changed since it was pinned, or looks
	// like a prompt injection, and the tool is not listed to callers nor
	// callable until approved. Changed says the definition changed (also
	// in pinning mode warn, where it still runs).
	Quarantined   bool   `json:"quarantined,omitempty"`
	Changed       bool   `json:"definitionChanged,omitempty"`
	Diff          string `json:"diff,omitempty"`
	PinnedSHA256  string `json:"pinnedSha256,omitempty"`
	CurrentSHA256 string `json:"currentSha256,omitempty"`
	// Screened are the hits of the screening that hold the tool (listed
	// and callable in screening mode warn); QuarantineReason says in
	// words why the tool is held.
	Screened         []toolscreen.Hit `json:"screened,omitempty"`
	QuarantineReason string           `json:"quarantineReason,omitempty"`
}

// handleTools lists every server with its status and tools. With
// ?format=names, tools is a list of names (Purko's dashboard shape); with
// ?autonomy=<level>, only the tools a caller at that level sees. Only
// servers' tools that can be called count in totalTools.
func (a *API) handleTools(w http.ResponseWriter, r *http.Request) {
	admin := a.isAdmin(r)
	cat := a.reg.Catalog()
	q := r.URL.Query()
	namesOnly := q.Get("format") == "names"
	keep := func(registry.Tool) bool { return true }
	if v := q.Get("autonomy"); v != "" {
		lvl, err := autonomy.ParseLevel(v)
		if err != nil {
			http.Error(w, "autonomy: "+err.Error(), http.StatusBadRequest)
			return
		}
		keep = func(t registry.Tool) bool { return a.visible(callers.Caller{Level: lvl}, t) }
	}
	out := listing{Servers: make([]serverListing, 0, len(cat.Servers))}
	for _, t := range cat.Tools {
		if keep(t) {
			out.TotalTools++
		}
	}
	for _, sv := range cat.Servers {
		var tools, quarantined []registry.Tool
		for _, t := range sv.Tools {
			if keep(t) {
				tools = append(tools, t)
			}
		}
		for _, t := range sv.Quarantined {
			if keep(t) {
				quarantined = append(quarantined, t)
			}
		}
		sl := serverListing{
			Name: sv.Name, URL: sv.URL, Transport: string(sv.Transport), Source: sv.Source,
			Status: string(sv.Status.State), Error: sv.Status.Error, Protocol: sv.Status.Protocol,
			ToolCount: len(tools), Hidden: sv.Hidden, Quarantined: len(quarantined),
		}
		if admin {
			sl.ErrorDetail = sv.Status.Detail
		}
		for _, res := range cat.Features.Resources {
			if res.Server == sv.Name {
				sl.Resources++
			}
		}
		for _, tpl := range cat.Features.Templates {
			if tpl.Server == sv.Name {
				sl.Templates++
			}
		}
		for _, p := range cat.Features.Prompts {
			if p.Server == sv.Name {
				sl.Prompts++
			}
		}
		for _, f := range cat.Features.Screened {
			if f.Server == sv.Name {
				q := f.Quarantine
				sl.Screened = append(sl.Screened, screenedListing{Kind: f.Kind, Name: f.Original, Published: f.Published,
					Quarantined: q.Enforced, CurrentSHA256: q.CurrentSHA256, Screened: q.Screened, QuarantineReason: q.Reason()})
			}
		}
		if namesOnly {
			names := make([]string, len(tools))
			for i, t := range tools {
				names[i] = t.Name
			}
			sl.Tools = names
		} else {
			sl.Tools = toolListings(append(tools, quarantined...))
		}
		out.Servers = append(out.Servers, sl)
	}
	httpjson.Write(w, http.StatusOK, out)
}

func toolListings(tools []registry.Tool) []toolListing {
	out := make([]toolListing, len(tools))
	for i, t := range tools {
		tl := toolListing{Name: t.Name, Title: t.Def.Title, Description: t.Def.Description, InputSchema: t.Def.InputSchema, Server: t.Server,
			ReadOnly: t.Class.ReadOnly, Reason: t.Class.Reason}
		if t.Def.RawInputSchema != nil {
			tl.InputSchema = t.Def.RawInputSchema
		}
		if t.Original != t.Name {
			tl.OriginalName = t.Original
		}
		a := t.Def.Annotations
		if a != (mcp.ToolAnnotation{}) {
			tl.Annotations = &a
		}
		if q := t.Quarantine; q != nil {
			tl.Quarantined, tl.Changed, tl.Diff, tl.PinnedSHA256, tl.CurrentSHA256 = q.Enforced, q.Changed(), q.Diff, q.PinnedSHA256, q.CurrentSHA256
			tl.Screened, tl.QuarantineReason = q.Screened, q.Reason()
		}
		out[i] = tl
	}
	return out
}

// isAdmin reports whether r comes from an admin caller. The listings are
// open to everyone; what an upstream answered (a status's detail: the
// start of an error page, which may be an internal one) is shown only to
// the callers the faces would take as admins, authenticated the same way.
// A request whose credentials fail is simply not an admin's.
func (a *API) isAdmin(r *http.Request) bool {
	c, err := a.auth.Authenticate(r)
	return err == nil && c.Admin
}
