// Package registry is the catalog: it merges the snapshots of all discovery
// sources, reconciles the set of upstream connections, publishes the tools
// under collision-free names, and routes a call to the client that owns the
// tool. The catalog is data: a call only looks things up.
package registry

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/purko-io/mcp-hub/internal/apitools"
	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/discovery"
	"github.com/purko-io/mcp-hub/internal/identity"
	"github.com/purko-io/mcp-hub/internal/pinning"
	"github.com/purko-io/mcp-hub/internal/registry/naming"
	"github.com/purko-io/mcp-hub/internal/registry/quarantine"
	"github.com/purko-io/mcp-hub/internal/toolspec"
	"github.com/purko-io/mcp-hub/internal/upstream"
)

// Options configure a Registry.
type Options struct {
	Naming         config.Naming
	RouteCacheSize int
	NotifyDebounce time.Duration
	Upstream       upstream.Options
	// Local are the hub's own tools: builtins and api tools.
	Local []LocalTool
	// LogLevel is the logging level upstreams get on connect ("" none).
	LogLevel mcp.LoggingLevel
	// MaxResultChars caps the text of every tool result (0: no cap),
	// unless a server's spec sets its own.
	MaxResultChars int
	// Pins checks upstream tool definitions against their pins; nil is
	// pinning off.
	Pins *pinning.Pinner
	// Screening is screening.mode (config.ScreeningEnforce, Warn, Off):
	// upstream tool definitions that look like a prompt injection are
	// quarantined (enforce) or reported (warn); "" is off.
	Screening string
	// Names keeps the claims that hold published names stable (prefix
	// on-conflict), whatever the pinning mode; nil keeps them in memory,
	// stable while the process runs.
	Names pinning.ClaimStore
}

// LocalTool is a tool the hub runs itself. Routing tries builtins first,
// then upstream tools, then api tools; a local tool keeps its name, and an
// upstream tool of the same name is prefixed (or hidden) instead.
type LocalTool struct {
	Def  mcp.Tool
	Kind autonomy.Kind // Builtin or API
	// Method is an api tool's HTTP method (it decides read-only).
	Method string
	// Run executes a call: the model's arguments and the trusted bindings
	// (caller, agent, workflow, step). Failures are error results.
	Run func(ctx context.Context, args map[string]any, bindings map[string]string) *mcp.CallToolResult
	// Agent, when set (namespace/name), limits the tool to callers that
	// are that Purko Agent: it was declared in the Agent's spec.tools.
	Agent string
}

// Names of the pseudo-servers that list the hub's own tools.
const (
	ServerBuiltin = "hub"
	ServerAPI     = "api"
)

// Catalog is an immutable view of every upstream and every published tool.
// A new Catalog replaces the old one on every change.
type Catalog struct {
	Gen     uint64
	Servers []ServerView // sorted by name
	Tools   []Tool       // published tools of connected servers, sorted by name
	index   map[string]int
	// Features are the resources, templates and prompts of connected
	// servers.
	Features  Features
	upstreams []*upstream.Client // connected, by name
	// appServers are the connected servers with an MCP App: a tool of
	// theirs names a UI or says who may see it (_meta.ui).
	appServers map[string]bool
	// Virtual are the virtual servers, sorted by name (virtual.go).
	Virtual []toolspec.VirtualServer
	// endpoints are what /servers/NAME publishes, by NAME (virtual.go).
	endpoints map[string]Endpoint
}

// Upstreams returns the connected upstreams, sorted by name.
func (c *Catalog) Upstreams() []Upstream {
	out := make([]Upstream, len(c.upstreams))
	for i, u := range c.upstreams {
		out[i] = u.Extras()
	}
	return out
}

// Upstream returns the connected upstream called name.
func (c *Catalog) Upstream(name string) (Upstream, bool) {
	i := sort.Search(len(c.upstreams), func(i int) bool { return c.upstreams[i].Name() >= name })
	if i < len(c.upstreams) && c.upstreams[i].Name() == name {
		return c.upstreams[i].Extras(), true
	}
	return nil, false
}

// Tool returns the published tool called name, if it can be called now.
func (c *Catalog) Tool(name string) (Tool, bool) {
	i, ok := c.index[name]
	if !ok {
		return Tool{}, false
	}
	return c.Tools[i], true
}

// ServerView is one upstream as listed.
type ServerView struct {
	Name      string
	URL       string // without credentials or query
	Transport config.Transport
	// Auth is how the hub authenticates to the server (config's AuthMode:
	// none, bearer, oauth, tokenExchange); "" for the hub's own servers.
	Auth   string
	Source string
	Origin *config.Origin // the Kubernetes object, when it came from one
	Status Status
	Tools  []Tool // published tools, also when not connected (last known)
	// Hidden are tools not published because another server owns the name
	// (prefix policy never): original name -> owning server.
	Hidden map[string]string
	// Limits, when set, are the server's own call limits (its spec's),
	// replacing limits.perUpstream.
	Limits *config.Limits
	// Exchanges, when not nil, reads the counts of the server's token
	// exchanges (exchanged, failed, served from the cache), for metrics.
	Exchanges func() (exchanged, failed, cached uint64)
	// Quarantined are tools whose definition changed since it was pinned
	// (pinning mode enforce) or looks like a prompt injection (screening
	// mode enforce): not published, and their calls are refused.
	Quarantined []Tool
}

// Tool is one published tool.
type Tool struct {
	Name     string   // published name
	Original string   // name at the upstream
	Server   string   // owning server
	Def      mcp.Tool // definition with Name set to the published name
	// Class says whether the tool is read-only, and why; the same value
	// decides both what a session lists and what it may call.
	Class autonomy.Class
	// Agent, when set, is the only Purko Agent whose callers may use it.
	Agent string
	// Exchange, when set, is its server's token exchange: only callers
	// whose token it takes may use the tool.
	Exchange Exchange
	// PerUser: its server is reached as each caller's own account.
	PerUser bool
	// Quarantine, when set, says the definition is not the pinned one,
	// or looks like a prompt injection.
	Quarantine *quarantine.Quarantine
	client     *upstream.Client
	local      *LocalTool
}

// Exchange is what the catalog keeps of a server's token exchange for the
// decision on a tool: whether it takes a caller's token, and if not why
// (tokenexchange.Exchanger.Accepts). An interface so that the decision,
// above the catalog, names no upstream type.
type Exchange interface {
	Accepts(identity.Subject) error
}

// exchangeOf is c's token exchange, nil without one: never a nil pointer
// in the interface, which Decide would take for an exchange and call.
func exchangeOf(c *upstream.Client) Exchange {
	if x := c.Exchange(); x != nil {
		return x
	}
	return nil
}

// Route says where a published tool goes and what decides on it.
type Route struct {
	// Backend runs the call.
	Backend Backend
	// Original is the backend's own name of the tool.
	Original string
	// Class says whether the tool is read-only, and why.
	Class autonomy.Class
	// Agent, when set, is the only Purko Agent whose callers may run it.
	Agent string
	// Exchange, when set, is the server's token exchange: only callers
	// whose token it takes may run the tool.
	Exchange Exchange
	// PerUser says the server is reached as each caller's own account
	// there (servers[].userOAuth): the call carries who calls.
	PerUser bool
	// ResultCap bounds what the call's result may hold.
	ResultCap ResultCap
	// Quarantine, when set (pinning or screening mode warn), says the
	// definition is not the pinned one or looks like a prompt injection;
	// the call runs.
	Quarantine *quarantine.Quarantine
	// server names the owner for metrics and audit lines.
	server string
	// everyScope marks the hub's view helpers (find_tools, HubRoute).
	everyScope bool
}

// ResultCap is the most characters of text a tool's result may hold (0:
// no cap) and the setting that says so, which a cut result names.
type ResultCap struct {
	Chars   int
	Setting string
}

// Server names the route's owner for metrics and audit lines.
func (r Route) Server() string { return r.server }

// ScopeServer is the server an endpoint's scope (autonomy.Scope) judges
// the route by: its owner, or "" for the hub's view helpers, which are in
// every scope.
func (r Route) ScopeServer() string {
	if r.everyScope {
		return ""
	}
	return r.server
}

type route struct {
	gen uint64
	Route
}

// UnknownToolError is returned for a tool no server offers.
type UnknownToolError struct{ Name string }

func (e *UnknownToolError) Error() string {
	return fmt.Sprintf("unknown tool %q: no server in the catalog offers it", e.Name)
}

// Registry owns the upstream clients and the catalog.
type Registry struct {
	opts Options
	log  zerolog.Logger

	mu         sync.Mutex
	order      []string                       // source priority: first wins a name
	sources    map[string][]config.ServerSpec // last snapshot of each source
	clients    map[string]*upstream.Client
	agentSpecs map[string][]config.AgentTool // agent api tools of each source
	agentTools []LocalTool                   // built from agentSpecs
	// virtualSpecs are the virtual servers of each source (virtual.go).
	virtualSpecs map[string][]toolspec.VirtualServer
	gen          uint64
	stops        sync.WaitGroup // clients being stopped

	catalog atomic.Pointer[Catalog]
	routes  *lru.Cache[string, route]
	// readiness is what the faces ask of start-up (startup.go).
	readiness
	// reporters are the sources of Run that can report an outage
	// (outages.go).
	reporters atomic.Pointer[[]discovery.OutageReporter]

	dirty chan struct{}
	// events are the listeners and the log level (events.go).
	events

	// holds are the pin checks and screenings of the rebuilds: which
	// tools are quarantined.
	holds *quarantine.Checks
	// rebuilt is closed and replaced (under mu) by every rebuild.
	rebuilt chan struct{}

	// Stable names (naming.Claims). claims and contacted (the clients
	// that answered or failed their first connection, which say when new
	// names may be claimed) belong to the rebuild goroutine.
	claims    *naming.Claims
	contacted map[*upstream.Client]bool
}

// New returns an empty registry.
func New(opts Options, log zerolog.Logger) *Registry {
	size := opts.RouteCacheSize
	if size <= 0 {
		size = 16384
	}
	routes, _ := lru.New[string, route](size) // only fails for size <= 0
	r := &Registry{
		opts:         opts,
		log:          log.With().Str("component", "registry").Logger(),
		sources:      map[string][]config.ServerSpec{},
		clients:      map[string]*upstream.Client{},
		agentSpecs:   map[string][]config.AgentTool{},
		virtualSpecs: map[string][]toolspec.VirtualServer{},
		routes:       routes,
		dirty:        make(chan struct{}, 1),
		rebuilt:      make(chan struct{}),
		contacted:    map[*upstream.Client]bool{},
		readiness:    newReadiness(),
	}
	r.claims = naming.NewClaims(opts.Names, opts.Naming, r.log)
	r.holds = quarantine.New(opts.Pins, opts.Screening, r.log)
	r.catalog.Store(&Catalog{})
	r.logLevel.Store(opts.LogLevel)
	return r
}

// Catalog returns the current catalog.
func (r *Registry) Catalog() *Catalog { return r.catalog.Load() }

// Run starts the sources and reconciles until ctx ends, then stops every
// upstream (killing stdio children) before returning.
func (r *Registry) Run(ctx context.Context, sources ...discovery.Source) {
	in := make(chan discovery.Snapshot)
	var wg sync.WaitGroup
	unsynced := map[string]bool{}
	r.mu.Lock()
	for _, s := range sources {
		r.order = append(r.order, s.Name())
		unsynced[s.Name()] = true
	}
	r.mu.Unlock()
	r.watchOutages(sources)
	st := &startup{readiness: &r.readiness, log: r.log, began: time.Now()}
	defer st.stop()
	if len(sources) == 0 {
		st.sourcesSynced(r.opts.Upstream.ConnectTimeout)
		r.markDirty()
	}
	for _, s := range sources {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.Run(ctx, in)
		}()
	}

	var debounce *time.Timer
	var fire <-chan time.Time
	changed := false
	// The first catalog is announced at once: with no discovery source (the
	// embedded default) nothing else would ever announce the hub's own tools.
	pending := r.rebuild(ctx)
	r.announce(r.Catalog())
	if st.over(pending) {
		st.markTried(pending)
	}
	for {
		select {
		case <-ctx.Done():
			if debounce != nil {
				debounce.Stop()
			}
			wg.Wait()
			r.stopAll()
			return
		case snap := <-in:
			r.apply(ctx, snap)
			if unsynced[snap.Source] {
				delete(unsynced, snap.Source)
				if len(unsynced) == 0 {
					st.sourcesSynced(r.opts.Upstream.ConnectTimeout)
					r.markDirty()
				}
			}
		case <-r.opts.Pins.Changed():
			// Another replica pinned or approved: check again.
			r.pinsChanged()
		case <-r.claims.Changed():
			// Another replica claimed or released names: adopt them.
			r.markDirty()
		case <-st.giveUpC():
			st.boundPassed = true
			r.gaveUp.Store(true)
			r.markDirty()
		case <-r.dirty:
			pending := r.rebuild(ctx)
			over := st.over(pending)
			// The first change after a quiet spell goes out at once (a
			// server that just connected is callable through every face
			// right away); changes within the window after it are
			// coalesced into one more announcement at its end. The
			// catalog that ends start-up goes out at once too: the faces
			// waiting for it must serve it, not the one before.
			switch {
			case debounce == nil:
				r.announce(r.Catalog())
				debounce = time.NewTimer(r.opts.NotifyDebounce)
				fire = debounce.C
			case over:
				r.announce(r.Catalog())
				changed = false
			default:
				changed = true
			}
			if over {
				st.markTried(pending)
			}
		case <-fire:
			debounce, fire = nil, nil
			if changed {
				changed = false
				r.announce(r.Catalog())
				debounce = time.NewTimer(r.opts.NotifyDebounce)
				fire = debounce.C
			}
		}
	}
}

// markDirty schedules a catalog rebuild; it never blocks.
func (r *Registry) markDirty() {
	select {
	case r.dirty <- struct{}{}:
	default:
	}
}

// apply merges a snapshot and reconciles the set of clients.
func (r *Registry) apply(ctx context.Context, snap discovery.Snapshot) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// A snapshot that changes nothing (a new source with no servers, say)
	// leaves the catalog alone: a rebuild would hold the next real change
	// back by the notify debounce.
	virtualChanged := r.applyVirtual(snap)
	if discovery.SameServers(r.sources[snap.Source], snap.Servers) && reflect.DeepEqual(r.agentSpecs[snap.Source], snap.AgentTools) {
		r.sources[snap.Source] = snap.Servers
		if virtualChanged {
			r.markDirty()
		}
		return
	}
	r.sources[snap.Source] = snap.Servers
	if !reflect.DeepEqual(r.agentSpecs[snap.Source], snap.AgentTools) {
		r.agentSpecs[snap.Source] = snap.AgentTools
		r.agentTools = r.buildAgentTools()
	}

	want := map[string]config.ServerSpec{}
	for _, src := range r.order {
		for _, s := range r.sources[src] {
			if prev, taken := want[s.Name]; taken {
				r.log.Warn().Str("server", s.Name).Str("source", src).Str("kept", prev.Source).
					Msg("server name defined by two sources; the first source wins")
				continue
			}
			want[s.Name] = s
		}
	}
	for name, c := range r.clients {
		spec, keep := want[name]
		if keep && spec.Equal(c.Spec()) {
			continue
		}
		delete(r.clients, name)
		r.stopAsync(c)
		if keep {
			r.log.Info().Str("server", name).Msg("server changed; reconnecting")
		} else {
			r.log.Info().Str("server", name).Msg("server removed")
		}
	}
	for name, spec := range want {
		if _, ok := r.clients[name]; ok {
			continue
		}
		opts := r.opts.Upstream
		opts.Events = &r.events
		c := upstream.New(spec, opts, r.log, r.markDirty)
		r.clients[name] = c
		c.Start(ctx)
		r.log.Info().Str("server", name).Str("transport", string(spec.Transport)).Str("source", spec.Source).Msg("server added")
	}
	r.markDirty()
}

// buildAgentTools makes LocalTools of the agents' api tools (no network: a
// tool is an HTTP request waiting to be sent). A tool that cannot work
// answers every call with the reason.
func (r *Registry) buildAgentTools() []LocalTool {
	var out []LocalTool
	for _, src := range r.order {
		for _, at := range r.agentSpecs[src] {
			at := at
			def, run, err := apitools.New(at.Spec, at.Credential.Reveal(), r.opts.Upstream.HTTPClient)
			problem := at.Problem
			if err != nil {
				problem = err.Error()
				def = mcp.NewTool(at.Spec.Name, mcp.WithDescription(at.Spec.Description))
			}
			if problem != "" {
				msg := fmt.Sprintf("ERROR: api tool %s of agent %s cannot run: %s", at.Spec.Name, at.Agent, problem)
				run = func(context.Context, map[string]any, map[string]string) *mcp.CallToolResult {
					return mcp.NewToolResultError(msg)
				}
			}
			out = append(out, LocalTool{Def: def, Kind: autonomy.API, Method: at.Spec.EffectiveMethod(), Run: run, Agent: at.Agent})
		}
	}
	return agentToolNames(out, r.opts.Local, r.opts.Naming.Separator)
}

// agentToolNames keeps an agent tool's own name unless another hub tool or
// another agent's tool has it; then it becomes <agent><sep><name>.
func agentToolNames(tools, static []LocalTool, sep string) []LocalTool {
	count := map[string]int{}
	for _, l := range static {
		count[l.Def.Name]++
	}
	for _, l := range tools {
		count[l.Def.Name]++
	}
	for i := range tools {
		if count[tools[i].Def.Name] > 1 {
			agent := tools[i].Agent[strings.LastIndex(tools[i].Agent, "/")+1:]
			tools[i].Def.Name = naming.Sanitize(agent) + sep + tools[i].Def.Name
		}
	}
	return tools
}

// local returns every hub tool: the static ones and the agents'.
func (r *Registry) local() []LocalTool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append(append([]LocalTool(nil), r.opts.Local...), r.agentTools...)
}

func (r *Registry) stopAsync(c *upstream.Client) {
	r.stops.Add(1)
	go func() {
		defer r.stops.Done()
		c.Stop()
	}()
}

func (r *Registry) stopAll() {
	r.mu.Lock()
	for name, c := range r.clients {
		delete(r.clients, name)
		r.stopAsync(c)
	}
	r.mu.Unlock()
	r.stops.Wait()
}

// rebuild computes a new catalog from the clients' current state and
// returns the servers that were still connecting (their first attempt: a
// server that was ever tried is in error or connected).
func (r *Registry) rebuild(ctx context.Context) (pending []string) {
	r.mu.Lock()
	clients := make([]*upstream.Client, 0, len(r.clients))
	for _, c := range r.clients {
		clients = append(clients, c)
	}
	r.gen++
	gen := r.gen
	r.mu.Unlock()
	sort.Slice(clients, func(i, j int) bool { return clients[i].Name() < clients[j].Name() })

	type entry struct {
		c      *upstream.Client
		status upstream.Status
		tools  []mcp.Tool // the server's own list: pinning and screening read it
		// curated are the tools its curation publishes; shadowed the
		// ones a rename took the name of.
		curated  []curatedTool
		shadowed map[string]string
	}
	entries := make([]entry, len(clients))
	var keys []naming.Key
	servers := make([]string, len(clients))
	settled := r.Ready()
	for i, c := range clients {
		servers[i] = c.Name()
		e := entry{c: c, status: c.Status(), tools: c.Tools()}
		e.curated, e.shadowed = curate(c.Spec(), e.tools)
		entries[i] = e
		if e.status.State != upstream.StateConnecting || len(e.tools) > 0 {
			r.contacted[c] = true
		}
		settled = settled && r.contacted[c]
		if e.status.State == upstream.StateConnecting {
			pending = append(pending, c.Name())
		}
		for _, ct := range e.curated {
			keys = append(keys, ct.key)
		}
	}
	local := r.local()
	reserved := make([]string, len(local))
	for i, l := range local {
		reserved[i] = l.Def.Name
	}
	// Settled: every upstream answered or failed, or start-up gave up
	// waiting for the ones still connecting (upstream.connectTimeout), so
	// a server that never answers does not hold back everyone's claims.
	// No rebuild of its own: the give-up schedules one.
	settled = settled || r.Tried() || r.gaveUp.Load()
	names, hidden := r.claims.Names(ctx, keys, servers, reserved, r.Ready(), settled)
	classifier := classifierFor(clients)

	cat := &Catalog{Gen: gen, Servers: make([]ServerView, 0, len(entries)+2)}
	cat.Virtual = r.virtualServers()
	// First: a tool that points at its app's UI names the UI as published.
	cat.Features = buildFeatures(clients, r.opts.Naming, r.holds, r.opts.Upstream.Carried)
	builtins, apis := localViews(local, classifier)
	for _, sv := range []*ServerView{builtins, apis} {
		if sv != nil {
			cat.Tools = append(cat.Tools, sv.Tools...)
		}
	}
	if builtins != nil {
		cat.Servers = append(cat.Servers, *builtins)
	}
	pinClients, pinLists := make([]*upstream.Client, len(entries)), make([][]mcp.Tool, len(entries))
	for i, e := range entries {
		pinClients[i], pinLists[i] = e.c, e.tools
	}
	r.holds.Forget(ctx, servers, r.Ready())
	r.holds.CheckAll(ctx, pinClients, pinLists)
	for _, e := range entries {
		spec := e.c.Spec()
		sv := ServerView{Name: spec.Name, URL: displayURL(spec), Transport: spec.Transport, Auth: spec.AuthMode(), Source: spec.Source, Origin: spec.Origin, Status: statusOf(e.status), Limits: spec.Limits}
		if x := e.c.Exchange(); x != nil {
			sv.Exchanges = x.Stats
		}
		held := r.holds.Of(e.c, e.tools)
		for orig := range e.shadowed {
			if sv.Hidden == nil {
				sv.Hidden = map[string]string{}
			}
			sv.Hidden[orig] = spec.Name
		}
		if len(e.shadowed) > 0 {
			r.log.Warn().Str("server", spec.Name).Interface("renamedOver", e.shadowed).Msg("tools not published: an override renamed another of the server's tools to their name")
		}
		for _, ct := range e.curated {
			t := *ct.up
			name, ok := names[ct.key]
			if !ok {
				if sv.Hidden == nil {
					sv.Hidden = map[string]string{}
				}
				sv.Hidden[t.Name] = hidden[ct.key]
				continue
			}
			def := ct.published(withAppURI(t, spec.Name, &cat.Features), name)
			if def.Execution == nil && slices.Contains(cat.Features.Caps.TaskServers, spec.Name) {
				// A server of the Tasks extension decides per call whether
				// to make a task: a 2025-11-25 caller may ask for one of
				// any of its tools.
				def.Execution = &mcp.ToolExecution{TaskSupport: mcp.TaskSupportOptional}
			}
			// Classified by the server's name of it (what toolPolicy's
			// patterns are written against) and the published
			// annotations: an override's readOnlyHint is the operator's
			// (classifierFor), the rest counts for trusted servers only.
			class := classifier.Classify(autonomy.Tool{Server: spec.Name, Name: t.Name, Kind: autonomy.MCP,
				ReadOnlyHint: def.Annotations.ReadOnlyHint, DestructiveHint: def.Annotations.DestructiveHint})
			pt := Tool{Name: name, Original: t.Name, Server: spec.Name, Def: def, Class: class, Exchange: exchangeOf(e.c), PerUser: spec.UserOAuth != nil, client: e.c}
			if q := held[t.Name]; q != nil {
				pt.Quarantine = q
				if q.Enforced {
					sv.Quarantined = append(sv.Quarantined, pt)
					continue
				}
			}
			sv.Tools = append(sv.Tools, pt)
			if e.status.State == upstream.StateConnected {
				cat.Tools = append(cat.Tools, pt)
				if hasUI(t) {
					if cat.appServers == nil {
						cat.appServers = map[string]bool{}
					}
					cat.appServers[spec.Name] = true
				}
			}
		}
		if len(sv.Hidden) > 0 {
			r.log.Warn().Str("server", spec.Name).Interface("hidden", sv.Hidden).Msg("tools hidden by prefix policy never")
		}
		cat.Servers = append(cat.Servers, sv)
	}
	if apis != nil {
		cat.Servers = append(cat.Servers, *apis)
	}
	sort.Slice(cat.Tools, func(i, j int) bool { return cat.Tools[i].Name < cat.Tools[j].Name })
	cat.Features.Caps.declareApps(cat.appServers, r.opts.Upstream.Carried)
	cat.index = make(map[string]int, len(cat.Tools))
	for i, t := range cat.Tools {
		cat.index[t.Name] = i
	}
	cat.endpoints = endpoints(cat.Servers, cat.Virtual)
	for _, e := range entries {
		if e.status.State == upstream.StateConnected {
			cat.upstreams = append(cat.upstreams, e.c)
		}
	}
	r.catalog.Store(cat)
	r.holds.Keep(clients)
	for c := range r.contacted {
		if !slices.Contains(clients, c) {
			delete(r.contacted, c)
		}
	}
	r.holds.Report(cat.held(), r.quarantined)
	r.mu.Lock()
	close(r.rebuilt)
	r.rebuilt = make(chan struct{})
	r.mu.Unlock()
	return pending
}

// held are the quarantined tools of c, listed or not, server by server,
// and the screened definitions besides tools.
func (c *Catalog) held() []quarantine.Event {
	var out []quarantine.Event
	origins := map[string]*config.Origin{}
	for i := range c.Servers {
		sv := &c.Servers[i]
		origins[sv.Name] = sv.Origin
		for _, list := range [][]Tool{sv.Tools, sv.Quarantined} {
			for j := range list {
				if t := &list[j]; t.Quarantine != nil {
					out = append(out, quarantine.Event{Server: sv.Name, Tool: t.Original, Published: t.Name, Origin: sv.Origin, Quarantine: *t.Quarantine})
				}
			}
		}
	}
	for _, s := range c.Features.Screened {
		out = append(out, quarantine.Event{Server: s.Server, Tool: s.Original, Published: s.Published, Kind: s.Kind,
			Origin: origins[s.Server], Quarantine: s.Quarantine})
	}
	return out
}

// localViews lists the hub's own tools as two always-connected
// pseudo-servers, builtins and api tools (nil when there are none).
func localViews(local []LocalTool, classifier *autonomy.Classifier) (builtins, apis *ServerView) {
	views := map[autonomy.Kind]*ServerView{
		autonomy.Builtin: {Name: ServerBuiltin, Transport: "builtin", Source: "hub"},
		autonomy.API:     {Name: ServerAPI, Transport: "http", Source: "config"},
	}
	for i := range local {
		l := &local[i]
		sv := views[l.Kind]
		if sv == nil {
			continue
		}
		class := classifier.Classify(autonomy.Tool{Server: sv.Name, Name: l.Def.Name, Kind: l.Kind, Method: l.Method})
		sv.Tools = append(sv.Tools, Tool{Name: l.Def.Name, Original: l.Def.Name, Server: sv.Name, Def: l.Def, Class: class, Agent: l.Agent, local: l})
	}
	for _, sv := range views {
		sv.Status = Status{State: StateConnected}
	}
	if len(views[autonomy.Builtin].Tools) > 0 {
		builtins = views[autonomy.Builtin]
	}
	if len(views[autonomy.API].Tools) > 0 {
		apis = views[autonomy.API]
	}
	return builtins, apis
}

// classifierFor builds the read-only classifier from the servers' specs:
// operator rules from the hub config and from MCPServer annotations (a
// tool override's readOnlyHint among them), and the servers whose own
// annotations are trusted.
func classifierFor(clients []*upstream.Client) *autonomy.Classifier {
	cfg := autonomy.Config{ConfigOverrides: map[string]autonomy.Overrides{}, AnnotationOverrides: map[string]autonomy.Overrides{}}
	for _, c := range clients {
		spec := c.Spec()
		hinted := hintedTools(spec)
		if p := spec.ToolPolicy; p != nil || hinted != nil {
			o := autonomy.Overrides{Hinted: hinted}
			if p != nil {
				o.ReadOnly, o.Write = p.ReadOnly, p.Write
			}
			if spec.Origin != nil {
				cfg.AnnotationOverrides[spec.Name] = o
			} else {
				cfg.ConfigOverrides[spec.Name] = o
			}
		}
		if spec.TrustAnnotations {
			cfg.TrustedServers = append(cfg.TrustedServers, spec.Name)
		}
	}
	return autonomy.NewClassifier(cfg)
}

// displayURL is what listings show: no user info, no query (either may hold
// a token); for stdio, the command without its arguments.
func displayURL(s config.ServerSpec) string {
	if s.Transport == config.TransportStdio {
		return "stdio:" + filepath.Base(s.Command)
	}
	u, err := url.Parse(s.URL)
	if err != nil {
		return ""
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

// Lookup finds the route of a published tool name. Hits come from the
// tool-to-client LRU map; on a miss every server's tool list in the current
// catalog is asked and the map refilled. It allocates nothing on a hit.
func (r *Registry) Lookup(name string) (Route, error) {
	cat := r.catalog.Load()
	if rt, ok := r.routes.Get(name); ok && rt.gen == cat.Gen {
		return rt.Route, nil
	}
	// Servers are ordered builtins, upstreams, api tools: the routing order.
	for i := range cat.Servers {
		sv := &cat.Servers[i]
		for j := range sv.Tools {
			t := &sv.Tools[j]
			if t.Name != name {
				continue
			}
			if t.local == nil && sv.Status.State != StateConnected {
				reason := string(sv.Status.State)
				if sv.Status.Error != "" {
					reason += ": " + sv.Status.Error
				}
				return Route{}, &UnavailableError{Server: sv.Name, Reason: reason}
			}
			rt := Route{Original: t.Original, Class: t.Class, Agent: t.Agent, Exchange: t.Exchange, PerUser: t.PerUser, server: sv.Name,
				Quarantine: t.Quarantine, ResultCap: r.resultCap(t.client)}
			if t.local != nil {
				rt.Backend = localBackend{t.local}
			} else {
				rt.Backend = upstreamBackend{t.client}
			}
			r.routes.Add(name, route{gen: cat.Gen, Route: rt})
			return rt, nil
		}
		for j := range sv.Quarantined {
			if t := &sv.Quarantined[j]; t.Name == name {
				return Route{}, &QuarantinedError{Name: name, Server: sv.Name, Original: t.Original, Quarantine: *t.Quarantine}
			}
		}
	}
	if published, ok := cat.appTool(name); ok {
		return r.Lookup(published)
	}
	return Route{}, &UnknownToolError{Name: name}
}

// ResultCap is the cap on what a result of server may hold: its spec's
// maxResultChars, else upstream.maxResultChars. Resources and prompts are
// held to it as tool results are.
func (r *Registry) ResultCap(server string) ResultCap {
	cat := r.catalog.Load()
	i := sort.Search(len(cat.upstreams), func(i int) bool { return cat.upstreams[i].Name() >= server })
	if i < len(cat.upstreams) && cat.upstreams[i].Name() == server {
		return r.resultCap(cat.upstreams[i])
	}
	return r.resultCap(nil)
}

// resultCap is the cap of c's results (nil: a local tool's).
func (r *Registry) resultCap(c *upstream.Client) ResultCap {
	if c != nil {
		if n := c.Spec().MaxResultChars; n != nil {
			return ResultCap{Chars: *n, Setting: "maxResultChars of server " + c.Name()}
		}
	}
	return ResultCap{Chars: r.opts.MaxResultChars, Setting: "upstream.maxResultChars"}
}

// appTool is the published name of the tool an MCP App calls by name: an
// app calls its server's tools by the server's own names (its HTML holds
// them), and the host relays the call as it is. A name the catalog does not
// publish is the server's own name of exactly one published tool of a
// server with an app; when two such servers have it, it is unknown.
func (c *Catalog) appTool(name string) (string, bool) {
	if len(c.appServers) == 0 {
		return "", false
	}
	found := ""
	for i := range c.Tools {
		if t := &c.Tools[i]; t.Original == name && c.appServers[t.Server] {
			if found != "" {
				return "", false
			}
			found = t.Name
		}
	}
	return found, found != ""
}
