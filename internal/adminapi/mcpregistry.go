package adminapi

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/httpjson"
	"github.com/purko-io/mcp-hub/internal/registry"
)

// The MCP Registry API (the official registry's read half, v0.1): GET
// /v0.1/servers, /v0.1/servers/{serverName}/versions and
// /v0.1/servers/{serverName}/versions/{version} publish the hub's catalog
// as server.json documents whose remotes are the hub itself, so a client
// with a registry setting (VS Code's chat.mcp.gallery.serviceUrl) browses
// and installs the hub's servers one by one. The shapes are those of the
// registry's openapi.yaml and of server.json schema 2025-12-11, pinned in
// testdata/mcpregistry (README there). Like the other listings it is open
// to every caller: it says what the catalog holds, not what a caller may
// call, and holds no address of an upstream nor any credential.

const (
	// serverSchemaURL is the server.json schema the documents follow.
	serverSchemaURL = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"
	// officialMetaKey names the registry-managed block of a response.
	officialMetaKey = "io.modelcontextprotocol.registry/official"
	// unknownVersion is published for a server that announced no usable
	// serverInfo.version: a valid semver pre-release that sorts below any
	// real release and says what it is.
	unknownVersion = "0.0.0-unknown"
	// latestVersion is the registry's word for a server's newest version.
	latestVersion = "latest"
	// The registry's page sizes (its ListServersInput).
	defaultRegistryLimit, maxRegistryLimit = 30, 100
	// maxRegistryText is server.json's maxLength of title and description.
	maxRegistryText = 100
)

// RegistryOptions shape the published documents (config registryAPI).
type RegistryOptions struct {
	// Namespace is the reverse-DNS half of every name (namespace/server);
	// empty, config.DefaultRegistryNamespace.
	Namespace string
	// BaseURL is the hub as clients reach it, the start of every remote
	// URL; empty, the scheme and Host of each request.
	BaseURL string
	// HubVersion is the hub's own version, published as the version of
	// its own tools (the groups "hub" and "api").
	HubVersion string
}

// registryEntry is one server the registry API publishes. It holds only
// what may be shown to anyone: never an upstream's address or headers.
type registryEntry struct {
	// Name is the hub's name of the server, the NAME of its endpoints
	// <base>/servers/NAME/mcp and /sse.
	Name        string
	Title       string
	Description string
	Version     string
}

// registryEntries is what the registry API publishes: every server of the
// catalog, upstreams and the hub's own groups (builtins "hub", api tools
// "api", at hubVersion) alike, and every virtual server (at hubVersion),
// each of which has its /servers/NAME/ endpoints. A virtual server takes
// the place of a server of its name, as at its endpoints.
func registryEntries(cat *registry.Catalog, hubVersion string) []registryEntry {
	out := make([]registryEntry, 0, len(cat.Servers)+len(cat.Virtual))
	virtual := make(map[string]bool, len(cat.Virtual))
	for _, v := range cat.Virtual {
		virtual[v.Name] = true
		e := registryEntry{
			Name:        v.Name,
			Title:       registryText("virtual server " + v.Name),
			Description: registryText(v.Description),
			Version:     registryVersion(strings.TrimPrefix(hubVersion, "v")),
		}
		if e.Description == "" {
			e.Description = registryText("A virtual server of mcp-hub: a chosen set of its servers and tools")
		}
		out = append(out, e)
	}
	for _, sv := range cat.Servers {
		if virtual[sv.Name] {
			continue
		}
		info := sv.Status.Info
		if title, description, own := ownGroup(sv.Name); own {
			info.Version, info.Title, info.Description = strings.TrimPrefix(hubVersion, "v"), title, description
		}
		e := registryEntry{
			Name:        sv.Name,
			Title:       registryText(info.Title),
			Description: registryText(info.Description),
			Version:     registryVersion(info.Version),
		}
		if e.Description == "" {
			e.Description = registryText("MCP server " + sv.Name + " through mcp-hub")
		}
		out = append(out, e)
	}
	return out
}

// ownGroup says whether name is one of the hub's own groups of tools, and
// its title and description.
func ownGroup(name string) (title, description string, own bool) {
	switch name {
	case registry.ServerBuiltin:
		return "mcp-hub builtins", "mcp-hub's own tools", true
	case registry.ServerAPI:
		return "mcp-hub API tools", "HTTP API tools of mcp-hub", true
	}
	return "", "", false
}

// registryText is s as server.json takes a title or description: one line
// of at most 100 characters (cut with an ellipsis), "" for nothing.
func registryText(s string) string {
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
	if utf8.RuneCountInString(s) <= maxRegistryText {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:maxRegistryText-1])) + "…"
}

// versionPattern is what the hub publishes of an announced version: one
// token of the characters of semver and its build metadata.
var versionPattern = regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}$`)

// registryVersion is the announced version when the registry would take
// it (not a range such as 1.x, not the word latest), else unknownVersion.
func registryVersion(v string) string {
	if !versionPattern.MatchString(v) || strings.EqualFold(v, latestVersion) {
		return unknownVersion
	}
	core, _, _ := strings.Cut(strings.SplitN(v, "+", 2)[0], "-")
	if slices.ContainsFunc(strings.Split(core, "."), func(p string) bool { return p == "x" || p == "X" }) {
		return unknownVersion
	}
	return v
}

// mcpRegistry serves the registry API's routes.
type mcpRegistry struct {
	namespace string
	baseURL   string
	header    *remoteHeader // nil: the remotes need none
	stamps    stamps
	// entries and now are registryEntries of the catalog and the clock;
	// tests set their own.
	entries func() []registryEntry
	now     func() time.Time
}

func newMCPRegistry(reg *registry.Registry, auth *callers.Auth, o RegistryOptions) *mcpRegistry {
	m := &mcpRegistry{namespace: o.Namespace, baseURL: strings.TrimRight(o.BaseURL, "/"), now: time.Now,
		stamps:  stamps{seen: map[string]stamp{}},
		entries: func() []registryEntry { return registryEntries(reg.Catalog(), o.HubVersion) }}
	if m.namespace == "" {
		m.namespace = config.DefaultRegistryNamespace
	}
	if auth != nil && auth.OAuth() == nil {
		// With OAuth the client learns where to get a token from the
		// hub's 401 (MCP authorization); a header would ask the user for
		// one instead.
		if accepted, required := auth.Bearer(); accepted || required {
			m.header = &remoteHeader{
				Name:        "Authorization",
				Description: "A bearer token of a caller of this mcp-hub",
				IsRequired:  required,
				IsSecret:    true,
				Value:       "Bearer {token}",
				Variables: map[string]remoteInput{"token": {
					Description: "The token (auth.tokens of the hub's config, or a Kubernetes ServiceAccount token)",
					IsRequired:  true,
					IsSecret:    true,
				}},
			}
		}
	}
	return m
}

func (m *mcpRegistry) mount(mux *http.ServeMux) {
	mux.HandleFunc("GET /v0.1/servers", m.handleList)
	mux.HandleFunc("GET /v0.1/servers/{serverName}/versions", m.handleVersions)
	mux.HandleFunc("GET /v0.1/servers/{serverName}/versions/{version}", m.handleVersion)
}

// serverJSON is a server.json document: the part of it the hub fills.
type serverJSON struct {
	Schema      string   `json:"$schema"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Title       string   `json:"title,omitempty"`
	Version     string   `json:"version"`
	Remotes     []remote `json:"remotes"`
}

type remote struct {
	Type    string          `json:"type"`
	URL     string          `json:"url"`
	Headers []*remoteHeader `json:"headers,omitempty"`
}

// remoteInput is server.json's Input: what a client asks its user for.
type remoteInput struct {
	Description string `json:"description,omitempty"`
	IsRequired  bool   `json:"isRequired"`
	IsSecret    bool   `json:"isSecret"`
}

// remoteHeader is server.json's KeyValueInput for a header: never a
// value of the hub's, only the template the client fills.
type remoteHeader struct {
	Name        string                 `json:"name"`
	Description string                 `json:"description,omitempty"`
	IsRequired  bool                   `json:"isRequired"`
	IsSecret    bool                   `json:"isSecret"`
	Value       string                 `json:"value,omitempty"`
	Variables   map[string]remoteInput `json:"variables,omitempty"`
}

// serverResponse is the registry's ServerResponse.
type serverResponse struct {
	Server serverJSON   `json:"server"`
	Meta   responseMeta `json:"_meta"`
}

type responseMeta struct {
	Official officialMeta `json:"io.modelcontextprotocol.registry/official"`
}

// officialMeta is the registry-managed block; the pinned OpenAPI closes
// it (additionalProperties: false), so it has these fields only.
type officialMeta struct {
	Status      string    `json:"status"`
	PublishedAt time.Time `json:"publishedAt"`
	UpdatedAt   time.Time `json:"updatedAt"`
	IsLatest    bool      `json:"isLatest"`
}

// serverList is the registry's ServerList.
type serverList struct {
	Servers  []serverResponse `json:"servers"`
	Metadata listMetadata     `json:"metadata"`
}

type listMetadata struct {
	NextCursor string `json:"nextCursor,omitempty"`
	Count      int    `json:"count"`
}

// stamp is when the hub first published an entry and when it last saw it
// change.
type stamp struct {
	entry              registryEntry
	published, updated time.Time
}

// stamps remember, per published name, when its entry changed; an entry
// is compared at each request, so updatedAt is no earlier than the change
// and no later than the first request that saw it, which is what a client
// syncing with updated_since needs. Each replica keeps its own.
type stamps struct {
	mu   sync.Mutex
	seen map[string]stamp
}

// observe records entries (sorted by name) at now and returns their
// stamps in the same order; names no longer published are forgotten.
func (s *stamps) observe(names []string, entries []registryEntry, now time.Time) []stamp {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]stamp, len(entries))
	next := make(map[string]stamp, len(entries))
	for i, e := range entries {
		st, ok := s.seen[names[i]]
		switch {
		case !ok:
			st = stamp{entry: e, published: now, updated: now}
		case st.entry != e:
			st.entry, st.updated = e, now
		}
		next[names[i]], out[i] = st, st
	}
	s.seen = next
	return out
}

// published is one entry as published now: its full name and stamps.
type published struct {
	name  string
	entry registryEntry
	stamp stamp
}

// published are the registry's entries of the catalog now, sorted by name.
func (m *mcpRegistry) published() []published {
	entries := m.entries()
	slices.SortFunc(entries, func(a, b registryEntry) int { return strings.Compare(a.Name, b.Name) })
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = m.namespace + "/" + e.Name
	}
	stamps := m.stamps.observe(names, entries, m.now().UTC())
	out := make([]published, len(entries))
	for i, e := range entries {
		out[i] = published{name: names[i], entry: e, stamp: stamps[i]}
	}
	return out
}

// document is p's server.json in the registry's ServerResponse, with the
// remote URLs of base.
func (m *mcpRegistry) document(p published, base string) serverResponse {
	var headers []*remoteHeader
	if m.header != nil {
		headers = []*remoteHeader{m.header}
	}
	endpoint := base + "/servers/" + p.entry.Name
	return serverResponse{
		Server: serverJSON{
			Schema: serverSchemaURL, Name: p.name, Title: p.entry.Title, Description: p.entry.Description, Version: p.entry.Version,
			Remotes: []remote{
				{Type: "streamable-http", URL: endpoint + "/mcp", Headers: headers},
				{Type: "sse", URL: endpoint + "/sse", Headers: headers},
			},
		},
		Meta: responseMeta{Official: officialMeta{Status: "active", PublishedAt: p.stamp.published, UpdatedAt: p.stamp.updated, IsLatest: true}},
	}
}

// base is the hub's URL as r's client reaches it: the configured one, else
// r's scheme and Host (the edge has checked the Host; forwarded headers
// are not trusted anywhere in the hub, so not here either).
func (m *mcpRegistry) base(r *http.Request) string {
	if m.baseURL != "" {
		return m.baseURL
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// registryError answers as the registry's OpenAPI declares: {"error": ...}.
func registryError(w http.ResponseWriter, status int, format string, args ...any) {
	httpjson.Write(w, status, map[string]string{"error": fmt.Sprintf(format, args...)})
}

// handleList is GET /v0.1/servers: the catalog, by name, a page at a
// time. The cursor is the registry's own, "name:version" of the last item
// of the page before.
func (m *mcpRegistry) handleList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := defaultRegistryLimit
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxRegistryLimit {
			registryError(w, http.StatusBadRequest, "limit: %q is not a number from 1 to %d", v, maxRegistryLimit)
			return
		}
		limit = n
	}
	var since time.Time
	if v := q.Get("updated_since"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			registryError(w, http.StatusBadRequest, "updated_since: %q is not an RFC 3339 time (2025-08-07T13:15:04.280Z)", v)
			return
		}
		since = t
	}
	after, _, _ := strings.Cut(q.Get("cursor"), ":")
	search := strings.ToLower(q.Get("search"))
	version := q.Get("version")
	out := serverList{Servers: []serverResponse{}}
	base := m.base(r)
	for _, p := range m.published() {
		switch {
		case after != "" && p.name <= after,
			search != "" && !strings.Contains(strings.ToLower(p.name), search),
			version != "" && version != latestVersion && version != p.entry.Version,
			!since.IsZero() && !p.stamp.updated.After(since):
			continue
		}
		if len(out.Servers) == limit {
			last := out.Servers[limit-1].Server
			out.Metadata.NextCursor = last.Name + ":" + last.Version
			break
		}
		out.Servers = append(out.Servers, m.document(p, base))
	}
	out.Metadata.Count = len(out.Servers)
	httpjson.Write(w, http.StatusOK, out)
}

// find is the document named by r's serverName, or answers 404.
func (m *mcpRegistry) find(w http.ResponseWriter, r *http.Request) (serverResponse, bool) {
	name := r.PathValue("serverName")
	for _, p := range m.published() {
		if p.name == name {
			return m.document(p, m.base(r)), true
		}
	}
	registryError(w, http.StatusNotFound, "server %q not found", name)
	return serverResponse{}, false
}

// handleVersions is GET /v0.1/servers/{serverName}/versions: the hub
// publishes one version of each server, the one it serves now.
func (m *mcpRegistry) handleVersions(w http.ResponseWriter, r *http.Request) {
	if doc, ok := m.find(w, r); ok {
		httpjson.Write(w, http.StatusOK, serverList{Servers: []serverResponse{doc}, Metadata: listMetadata{Count: 1}})
	}
}

// handleVersion is GET /v0.1/servers/{serverName}/versions/{version},
// version "latest" or the one published.
func (m *mcpRegistry) handleVersion(w http.ResponseWriter, r *http.Request) {
	doc, ok := m.find(w, r)
	if !ok {
		return
	}
	if v := r.PathValue("version"); v != latestVersion && v != doc.Server.Version {
		registryError(w, http.StatusNotFound, "server %q has no version %q: the hub serves %s", doc.Server.Name, v, doc.Server.Version)
		return
	}
	httpjson.Write(w, http.StatusOK, doc)
}
