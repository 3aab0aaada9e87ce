// Package findtools is tool search for large catalogs: find_tools, the
// hub's own tool, and what each session found with it. A model handed a
// list of 1,000 tools pays for every one of them in tokens on every turn,
// and chooses worse among them. Above catalog.findTools.above tools in a
// caller's view, its tools/list holds only find_tools and what it found in
// this session: find_tools ranks the caller's visible tools
// (pipeline.Visible, the decision that lists and runs them) by name and
// description, and adds the matches to the session's list, telling the
// session with tools/list_changed. A call by name of any visible tool runs
// whether it was found or not: Purko's executor calls by name. The index is
// built on publish, once per catalog.
//
// It is a package of its own, not a step of the pipeline: what it keeps is
// per session and shapes tools/list (the faces' work), and the pipeline
// needs no more of it than a route it runs like any other (Route, a
// pipeline.Router), so the call is decided, limited and audited as every
// call is.
package findtools

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/pipeline"
	"github.com/purko-io/mcp-hub/internal/registry"
	"github.com/purko-io/mcp-hub/internal/toolsearch"
)

// Name is the hub's tool name; it wins over an upstream tool of the same
// name while tool search is on.
const Name = "find_tools"

const (
	findDefaultLimit = 10
	findMaxLimit     = 50
	// maxFoundPerSession bounds one session's found tools (the oldest go
	// first); maxFoundSessions the sessions remembered (least recently
	// used go first), so the whole is bounded whatever callers do.
	maxFoundPerSession = 100
	maxFoundSessions   = 10000
)

// findClass is find_tools' class: it only reads the catalog, so every
// level but manual may run it.
var findClass = autonomy.Class{ReadOnly: true, Reason: "hub tool find_tools reads only the catalog"}

// Finder serves find_tools: the index of the published catalog and the
// tools each session found.
type Finder struct {
	above  int
	def    mcp.Tool
	reg    *registry.Registry
	notify func(session string)
	index  atomic.Pointer[findIndex]

	mu    sync.Mutex
	found *lru.Cache[string, []string] // session -> found names, oldest first
}

// findIndex is the search index of one published catalog.
type findIndex struct {
	cat *registry.Catalog
	ix  *toolsearch.Index
}

// New returns the Finder of reg's catalog, nil when tool search is off
// (above 0). Call OnFound before serving.
func New(above int, reg *registry.Registry) *Finder {
	if above <= 0 {
		return nil
	}
	found, _ := lru.New[string, []string](maxFoundSessions)
	def := mcp.NewTool(Name,
		mcp.WithDescription("Search the tools you may use by what you want to do, e.g. \"create a pull request\". "+
			"Returns the best matches with their input schemas and adds them to your tools/list (you get notifications/tools/list_changed). "+
			"Any tool you may use can be called by name, found or not."),
		mcp.WithString("query", mcp.Required(), mcp.Description("What the tool should do, in a few words.")),
		mcp.WithNumber("limit", mcp.Description(fmt.Sprintf("Most tools to return, 1-%d; default %d.", findMaxLimit, findDefaultLimit))),
		mcp.WithTitleAnnotation("Find tools"),
		mcp.WithReadOnlyHintAnnotation(true),
		mcp.WithDestructiveHintAnnotation(false),
		mcp.WithIdempotentHintAnnotation(true),
		mcp.WithOpenWorldHintAnnotation(false),
	)
	return &Finder{above: above, def: def, reg: reg, notify: func(string) {}, found: found}
}

// OnFound sets how a session is told its tools/list changed (it found
// new tools): the faces' notification, which may do nothing for a session
// without a stream. Call before serving.
func (f *Finder) OnFound(notify func(session string)) {
	f.notify = notify
}

// Def is find_tools' definition, as tools/list shows it.
func (f *Finder) Def() mcp.Tool { return f.def }

// Rebuild indexes a newly published catalog: data, not request-path work.
func (f *Finder) Rebuild(cat *registry.Catalog) {
	docs := make([]toolsearch.Doc, len(cat.Tools))
	for i, t := range cat.Tools {
		docs[i] = toolsearch.Doc{Name: t.Name, Description: t.Def.Description}
	}
	f.index.Store(&findIndex{cat: cat, ix: toolsearch.New(docs)})
}

// current returns the index, building one if no catalog was published yet.
func (f *Finder) current(cat *registry.Catalog) *findIndex {
	if fi := f.index.Load(); fi != nil {
		return fi
	}
	f.Rebuild(cat)
	return f.index.Load()
}

// Applies reports whether caller's tools/list is the short one: its view
// holds more than above tools and it may run find_tools itself (a caller
// whose tool list leaves find_tools out lists everything it may run). A
// nil Finder (tool search off) never applies.
func (f *Finder) Applies(caller callers.Caller, viewSize int) bool {
	return f != nil && viewSize > f.above && pipeline.Decide(caller, "", Name, Name, findClass, "", nil) == ""
}

// ListTools is the short list of caller in session: find_tools, then the
// tools found in the session that caller may still run.
func (f *Finder) ListTools(cat *registry.Catalog, caller callers.Caller, session string) []mcp.Tool {
	out := []mcp.Tool{f.def}
	for _, name := range f.Found(session) {
		if t, ok := cat.Tool(name); ok && pipeline.Visible(caller, t) {
			out = append(out, t.Def)
		}
	}
	return out
}

// ListResult is ListTools encoded as a tools/list result.
func (f *Finder) ListResult(cat *registry.Catalog, caller callers.Caller, session string) ([]byte, error) {
	b, err := json.Marshal(struct {
		Tools []mcp.Tool `json:"tools"`
	}{f.ListTools(cat, caller, session)})
	if err != nil {
		return nil, fmt.Errorf("encode the find_tools list: %w", err)
	}
	return b, nil
}

// Found is the names of the tools found in session, oldest first.
func (f *Finder) Found(session string) []string {
	if session == "" {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	names, _ := f.found.Get(session) // a listing session stays remembered
	return slices.Clone(names)
}

// remember adds names to session's found tools and reports whether any
// was new.
func (f *Finder) remember(session string, names []string) bool {
	if session == "" || len(names) == 0 {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	have, _ := f.found.Get(session)
	have = slices.Clone(have)
	added := false
	for _, n := range names {
		if !slices.Contains(have, n) {
			have = append(have, n)
			added = true
		}
	}
	if len(have) > maxFoundPerSession {
		have = have[len(have)-maxFoundPerSession:]
	}
	f.found.Add(session, have)
	return added
}

// Forget drops what a session found when the session goes.
func (f *Finder) Forget(session string) {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.found.Remove(session)
}

// search ranks caller's visible tools for query. A tool meant for its MCP
// App alone is not offered: find_tools answers the model.
func (f *Finder) search(cat *registry.Catalog, caller callers.Caller, query string, limit int) []registry.Tool {
	fi := f.current(cat)
	hits := fi.ix.Search(query, limit, func(d int) bool {
		t := fi.cat.Tools[d]
		return t.Name != Name && pipeline.Visible(caller, t) && !registry.AppOnly(t.Def)
	})
	out := make([]registry.Tool, len(hits))
	for i, h := range hits {
		out[i] = fi.cat.Tools[h.Doc]
	}
	return out
}

// findBackend runs find_tools for one caller in one session.
type findBackend struct {
	f       *Finder
	caller  callers.Caller
	session string
}

// Route is the pipeline's Router while tool search is on: find_tools, the
// hub's own tool, else the registry's route.
func (f *Finder) Route(caller callers.Caller, session, name string) (registry.Route, error) {
	if name == Name {
		return registry.HubRoute(findBackend{f: f, caller: caller, session: session}, Name, findClass), nil
	}
	return f.reg.Lookup(name) // its errors are the answers callers read
}

// Call answers a find_tools call: the matches as text (name, description,
// arguments) for models that read only text, and their full definitions
// as structuredContent.
func (b findBackend) Call(_ context.Context, call registry.Call) (json.RawMessage, error) {
	var in struct {
		Query string   `json:"query"`
		Limit *float64 `json:"limit"`
	}
	if len(call.Arguments) > 0 {
		if err := json.Unmarshal(call.Arguments, &in); err != nil {
			return pipeline.ErrorResult("ERROR: find_tools: arguments: " + err.Error()), nil
		}
	}
	if strings.TrimSpace(in.Query) == "" {
		return pipeline.ErrorResult("ERROR: find_tools: query is required: say in a few words what the tool should do"), nil
	}
	limit := findDefaultLimit
	if in.Limit != nil {
		limit = min(max(int(*in.Limit), 1), findMaxLimit)
	}
	f := b.f
	tools := f.search(f.reg.Catalog(), b.caller, in.Query, limit)
	defs := make([]mcp.Tool, len(tools))
	names := make([]string, len(tools))
	var text strings.Builder
	if len(tools) == 0 {
		fmt.Fprintf(&text, "No tool you may use matches %q. Try other words.", in.Query)
	}
	for i, t := range tools {
		defs[i], names[i] = t.Def, t.Name
		if i > 0 {
			text.WriteString("\n")
		}
		fmt.Fprintf(&text, "%s: %s\n  arguments: %s\n", t.Name, oneLine(t.Def.Description), schemaSummary(t.Def))
	}
	res := mcp.CallToolResult{
		Content:           []mcp.Content{mcp.NewTextContent(text.String())},
		StructuredContent: map[string]any{"tools": defs},
	}
	out, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("encode the find_tools result: %w", err)
	}
	if f.remember(b.session, names) {
		// Clients that refresh their list on list_changed can now call
		// what was found; a session without a stream has nowhere to hear
		// it, and calls by name work anyway.
		f.notify(b.session)
	}
	return out, nil
}

// oneLine is the first line of a description, at most 200 characters.
func oneLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(s); len(r) > 200 {
		s = string(r[:199]) + "…"
	}
	return s
}

// schemaSummary is a tool's arguments in one line: name (type, required).
func schemaSummary(def mcp.Tool) string {
	var props map[string]any
	var required []string
	if len(def.RawInputSchema) > 0 {
		var s struct {
			Properties map[string]any `json:"properties"`
			Required   []string       `json:"required"`
		}
		if json.Unmarshal(def.RawInputSchema, &s) != nil {
			return "see the schema"
		}
		props, required = s.Properties, s.Required
	} else {
		props, required = def.InputSchema.Properties, def.InputSchema.Required
	}
	if len(props) == 0 {
		return "none"
	}
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		typ := "any"
		if p, ok := props[n].(map[string]any); ok {
			if t, ok := p["type"].(string); ok {
				typ = t
			}
		}
		if slices.Contains(required, n) {
			typ += ", required"
		}
		parts[i] = n + " (" + typ + ")"
	}
	return strings.Join(parts, ", ")
}
