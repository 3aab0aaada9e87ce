// Package features serves MCP beyond tools to the hub's callers: the
// catalog's resources, templates and prompts, completions, resource
// subscriptions and logging levels, through the sessions of mcp-go's
// server (which the faces hold). Tool calls are the pipeline's; this
// package reads, lists and subscribes.
package features

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/edge"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/pipeline"
	"github.com/purko-io/mcp-hub/internal/registry"
	"github.com/purko-io/mcp-hub/internal/registry/naming"
	"github.com/purko-io/mcp-hub/internal/resultcap"
)

// MCP beyond tools, on the caller's side: resources, templates and prompts
// from the catalog, completions, resource subscriptions, logging, and the
// relay that brings an upstream's progress, log messages, sampling,
// elicitation and roots requests to the caller whose call caused them.
//
// Resources, prompts and completions are reads: every level but manual
// may use them (manual is "the agent does nothing on its own"). Every read,
// prompt, completion and subscription of a caller's is served by the
// pipeline (pipeline.Serve): decided by pipeline.DecideRequest, which also
// filters the lists, limited, screened by the caller's content filters
// both ways, capped and recorded, as a tool call is.

// maxSessions bounds the per-session state the hub remembers.
const maxSessions = 1 << 16

// sessionID is the id of the session of ctx, "" when none: the one the
// dispatcher's request named (methods.go), else mcp-go's session's.
func sessionID(ctx context.Context) string {
	if id, ok := ctx.Value(sessionKey{}).(string); ok {
		return id
	}
	if cs := server.ClientSessionFromContext(ctx); cs != nil {
		return cs.SessionID()
	}
	return ""
}

// sessionState is what a replica remembers of a downstream session: its
// logging/setLevel. It is kept per replica (a request cannot change a
// session's id); on another replica the session gets every log message of
// its calls if they are relayed, and none if they take the fast path.
// Whether a session takes server requests is in its id (edge.SessionFlags).
type sessionState struct {
	mu sync.Mutex
	// level is the session's logging/setLevel, "" when never set.
	level mcp.LoggingLevel
}

func (st *sessionState) logLevel() mcp.LoggingLevel {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.level
}

// Features serves MCP beyond tools to the sessions of mcp-go's server: it
// publishes the catalog's resources, templates and prompts, pares the
// capabilities down, forwards logging levels and keeps the resource
// subscriptions.
type Features struct {
	reg *registry.Registry
	// mcp is the server whose sessions it serves (Attach).
	mcp *server.MCPServer
	log zerolog.Logger
	// relayFor brings what an upstream sends during a read or a prompt to
	// the caller's session (Register).
	relayFor func(context.Context) registry.Relay
	// pipe serves every request (Options.Pipeline).
	pipe     *pipeline.Pipeline
	sessions *lru.Cache[string, *sessionState]

	mu        sync.Mutex
	published registry.Features // what was last published
	// subs are the callers' resource subscriptions (subscriptions.go).
	subs *subscriptions
	// tasks: a published tool may run as a task, so sessions are told
	// of the tasks capability.
	tasks atomic.Bool
}

// Options are what Features works with.
type Options struct {
	// Registry holds the catalog whose features are served.
	Registry *registry.Registry
	Log      zerolog.Logger
	// Pipeline serves every read, prompt, completion and subscription.
	Pipeline *pipeline.Pipeline
}

// New serves the features of the catalog. Call Attach with the server
// built from ServerOptions.
func New(opts Options) *Features {
	sessions, _ := lru.New[string, *sessionState](maxSessions)
	return &Features{reg: opts.Registry, log: opts.Log, pipe: opts.Pipeline,
		sessions: sessions, subs: &subscriptions{reg: opts.Registry, log: opts.Log, pipe: opts.Pipeline, subs: map[subKey]map[string]deliverFunc{}}}
}

// ServerOptions are the mcp-go options of the session layer for
// everything besides tools: the capabilities initialize declares (pared
// down to what the upstreams offer, advertise), the logging level a
// session sets, the 2026-07-28 listen stream. The methods themselves are
// the hub's dispatcher's (Register).
func (f *Features) ServerOptions(hooks *server.Hooks) []server.ServerOption {
	hooks.AddAfterInitialize(f.afterInitialize)
	hooks.AddAfterDiscover(func(ctx context.Context, _ any, _ *mcp.DiscoverRequest, res *mcp.DiscoverResult) {
		f.advertise(ctx, &res.Capabilities)
	})
	hooks.AddAfterSetLevel(f.afterSetLevel)
	hooks.AddBeforeSubscriptionsListen(f.subs.listen)
	hooks.AddOnUnregisterSession(func(_ context.Context, cs server.ClientSession) { f.dropSession(cs.SessionID()) })
	return []server.ServerOption{
		server.WithResourceCapabilities(true, true),
		server.WithPromptCapabilities(true),
		server.WithLogging(),
		server.WithCompletions(),
	}
}

func featuresAllowed(c callers.Caller) bool { return c.Level != autonomy.Manual }

// keepAllowed keeps the items of a list the caller may use
// (pipeline.DecideRequest, the decision of their use), in place; whatOf
// says an item's server ("" for one the catalog no longer has), its
// published name or URI and its server's. Never nil, so an empty list
// encodes as [].
func keepAllowed[T any](ctx context.Context, items []T, whatOf func(T) (server, target, original string)) []T {
	c := callers.From(ctx)
	if !featuresAllowed(c) {
		return []T{}
	}
	if c.Scope == nil && c.Allow == nil {
		return items
	}
	out := items[:0]
	for _, it := range items {
		if srv, target, original := whatOf(it); pipeline.DecideRequest(c, srv, target, original) == "" {
			out = append(out, it)
		}
	}
	if out == nil {
		return []T{}
	}
	return out
}

// advertise pares the capabilities down to what the connected upstreams
// offer and the caller may use.
//
// Resources and prompts, with listChanged, are always declared, to every
// caller: upstreams with resources or prompts may connect at any time, and
// the hub then sends every session notifications/resources/list_changed
// and notifications/prompts/list_changed (mcp-go's SetResources,
// SetPrompts), which a client may only get for a capability it was told
// of. A gateway's lists are empty until such an upstream connects, and a
// manual caller's stay empty. Subscribe, completions and logging are
// requests the caller makes, so they are declared only when an upstream
// offers them now.
func (f *Features) advertise(ctx context.Context, caps *mcp.ServerCapabilities) {
	caller := callers.From(ctx)
	have := f.reg.Catalog().Features.Caps
	allowed := featuresAllowed(caller)
	if caps.Resources != nil && (!have.Subscribe || !allowed) {
		caps.Resources.Subscribe = false
	}
	if !have.Completions || !allowed {
		caps.Completions = nil
	}
	if !have.Logging {
		caps.Logging = nil
	}
	if f.tasks.Load() && ctx.Value(noTasksKey{}) == nil {
		caps.Tasks = taskCapability()
	}
	caps.Extensions = extensionsFor(ctx, caller, have.Extensions)
}

// extensionsFor are the extensions declared to caller (nil for none): the
// Tasks extension, which the hub serves itself, where the caller's face
// routes tasks and the caller may call tools; and each carried extension
// (config upstream.extensions) that a server the caller may reach
// declares, with the settings of the first such server. A caller of
// /servers/NAME/mcp is told of NAME's alone; a manual one, who may read
// no resource, of none (an MCP App is a ui:// resource).
func extensionsFor(ctx context.Context, caller callers.Caller, carried []registry.Extension) map[string]any {
	var ext map[string]any
	add := func(id string, settings any) {
		if ext == nil {
			ext = map[string]any{}
		}
		if _, ok := ext[id]; !ok {
			ext[id] = settings
		}
	}
	if ctx.Value(noTasksKey{}) == nil && caller.Level != autonomy.Manual {
		add(config.ExtensionTasks, struct{}{})
	}
	if featuresAllowed(caller) {
		for _, e := range carried {
			if caller.Scope.PermitsServer(e.Server) {
				add(e.ID, e.Settings)
			}
		}
	}
	return ext
}

// taskCapability is what the hub routes of MCP Tasks (on /mcp: the
// server package): task-augmented tools/call, tasks/list, tasks/cancel.
func taskCapability() *mcp.TasksCapability {
	c := &mcp.TasksCapability{List: &struct{}{}, Cancel: &struct{}{}, Requests: &mcp.TaskRequestsCapability{}}
	c.Requests.Tools = &struct {
		Call *struct{} `json:"call,omitempty"`
	}{Call: &struct{}{}}
	return c
}

// runsTasks reports whether a tool of cat may run as a task.
func runsTasks(cat *registry.Catalog) bool {
	for _, t := range cat.Tools {
		if e := t.Def.Execution; e != nil && (e.TaskSupport == mcp.TaskSupportOptional || e.TaskSupport == mcp.TaskSupportRequired) {
			return true
		}
	}
	return false
}

func (f *Features) afterInitialize(ctx context.Context, _ any, _ *mcp.InitializeRequest, res *mcp.InitializeResult) {
	f.advertise(ctx, &res.Capabilities)
}

// noTasksKey marks the requests of a face that does not route tasks.
type noTasksKey struct{}

// WithoutTasks marks ctx as a request of a face that does not route MCP
// Tasks (/sse, /ws, stdio: only /mcp does), so its sessions are not told
// of the tasks capability and never send a task-augmented call that would
// be answered as a plain one.
func WithoutTasks(ctx context.Context) context.Context {
	return context.WithValue(ctx, noTasksKey{}, true)
}

// TakesURLElicitation reports whether the caller of a tools/call takes a
// URL-mode elicitation (a sign-in link as -32042, or as a round of the
// call): a 2026-07-28 caller that declared it in the call's _meta, a
// session whose initialize did. Others get such a link as text.
func TakesURLElicitation(ctx context.Context, meta map[string]json.RawMessage) bool {
	if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
		var caps mcp.ClientCapabilities
		raw, ok := meta[jsonrpc.MetaClientCapabilities]
		return ok && json.Unmarshal(raw, &caps) == nil && caps.Elicitation != nil && caps.Elicitation.URL != nil
	}
	switch cs := server.ClientSessionFromContext(ctx).(type) {
	case server.SessionWithClientInfo:
		e := cs.GetClientCapabilities().Elicitation
		return e != nil && e.URL != nil
	case server.ClientSession:
		f, ok := edge.ParseSessionID(cs.SessionID())
		return ok && f.URLElicitation
	}
	return false
}

// TakesServerRequests reports whether a client declared a capability that
// lets an upstream send it requests.
func TakesServerRequests(caps mcp.ClientCapabilities) bool {
	return caps.Sampling != nil || caps.Elicitation != nil || caps.Roots != nil
}

// session returns what the hub remembers of a session, or nil.
func (f *Features) session(id string) *sessionState {
	if id == "" {
		return nil
	}
	st, _ := f.sessions.Get(id)
	return st
}

// NeedsRelay reports whether calls of the session must go through the
// relay: it takes server requests or asked for log messages.
func (f *Features) NeedsRelay(id string) bool {
	if f, ok := edge.ParseSessionID(id); ok && f.Relayed {
		return true
	}
	st := f.session(id)
	return st != nil && st.logLevel() != ""
}

func (f *Features) dropSession(id string) {
	f.sessions.Remove(id)
	f.subs.unsubscribeAll(id)
}

// afterSetLevel remembers the session's level and passes the most verbose
// level any session asked for to the upstreams: one upstream session serves
// every caller, and each caller gets only what its own level admits.
func (f *Features) afterSetLevel(ctx context.Context, _ any, req *mcp.SetLevelRequest, _ *mcp.EmptyResult) {
	level := req.Params.Level
	if id := sessionID(ctx); id != "" {
		st := f.session(id)
		if st == nil {
			st = &sessionState{}
			f.sessions.Add(id, st)
		}
		st.mu.Lock()
		st.level = level
		st.mu.Unlock()
	}
	f.mu.Lock()
	if cur := f.reg.LogLevel(); cur != "" && !moreVerbose(level, cur) {
		f.mu.Unlock()
		return
	}
	f.reg.SetLogLevel(level)
	f.mu.Unlock()
	f.forwardLevel(ctx, level)
}

// forwardLevel sets level on every connected upstream that offers logging.
func (f *Features) forwardLevel(ctx context.Context, level mcp.LoggingLevel) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, c := range f.reg.Catalog().Upstreams() {
		wg.Go(func() {
			if err := c.SetLogLevel(ctx, level); err != nil {
				f.log.Warn().Err(err).Str("server", c.Name()).Msg("forward logging/setLevel")
			}
		})
	}
	wg.Wait()
}

var levelRank = map[mcp.LoggingLevel]int{
	mcp.LoggingLevelDebug: 0, mcp.LoggingLevelInfo: 1, mcp.LoggingLevelNotice: 2, mcp.LoggingLevelWarning: 3,
	mcp.LoggingLevelError: 4, mcp.LoggingLevelCritical: 5, mcp.LoggingLevelAlert: 6, mcp.LoggingLevelEmergency: 7,
}

func moreVerbose(a, b mcp.LoggingLevel) bool { return levelRank[a] < levelRank[b] }

// Admits reports whether the caller of the request in ctx wants a log
// message at msg. A 2026-07-28 request names its level in its _meta, and
// names none when it wants no log message; an older session is admitted
// what the level it set, if it set one here, admits.
func (f *Features) Admits(ctx context.Context, msg mcp.LoggingLevel) bool {
	if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
		return info.LogLevel != "" && admits(info.LogLevel, msg)
	}
	st := f.session(sessionID(ctx))
	return st == nil || admits(st.logLevel(), msg)
}

// Attach gives f the server built with ServerOptions, whose sessions it
// serves. Call it before the first Publish.
func (f *Features) Attach(s *server.MCPServer) { f.mcp, f.subs.mcp = s, s }

// admits reports whether a session at level wants a message at msg.
func admits(level, msg mcp.LoggingLevel) bool {
	return level == "" || levelRank[msg] >= levelRank[level]
}

// Publish takes the catalog's resources, templates and prompts, and tells
// every session when a list changed (notifications/.../list_changed: the
// capabilities declare listChanged).
func (f *Features) Publish(cat *registry.Catalog) {
	f.tasks.Store(runsTasks(cat))
	now := cat.Features
	f.mu.Lock()
	old := f.published
	f.published = now
	f.mu.Unlock()
	resources := !sameList(old.Resources, now.Resources, func(a, b registry.Resource) bool {
		return a.Client == b.Client && reflect.DeepEqual(a.Def, b.Def)
	}) || !sameList(old.Templates, now.Templates, func(a, b registry.Template) bool {
		// The parsed template is a pointer; its text is URITemplate.
		return a.Client == b.Client && a.URITemplate == b.URITemplate && a.Def.Name == b.Def.Name &&
			a.Def.Description == b.Def.Description && a.Def.MIMEType == b.Def.MIMEType
	})
	if resources {
		f.mcp.SendNotificationToAllClients(string(mcp.MethodNotificationResourcesListChanged), nil)
	}
	if !sameList(old.Prompts, now.Prompts, func(a, b registry.Prompt) bool {
		return a.Client == b.Client && reflect.DeepEqual(a.Def, b.Def)
	}) {
		f.mcp.SendNotificationToAllClients(string(mcp.MethodNotificationPromptsListChanged), nil)
	}
}

// read serves resources/read of the upstream's uri: the pipeline's
// result, the contents with the caller's URIs (prefix added to each, when
// the naming policy added one).
func (f *Features) read(ctx context.Context, srv, prefix, uri string, c registry.Upstream, req mcp.ReadResourceRequest) pipeline.Result {
	rq := pipeline.Request{Method: string(mcp.MethodResourcesRead), Target: req.Params.URI, Server: srv, Original: uri,
		Shape: resultcap.Resource, Cap: f.reg.ResultCap(srv)}
	if strings.HasPrefix(uri, "ui://") {
		// An MCP App's page is rendered by the host, never read by a
		// model: cut, it would not run. It stays bounded by the bytes of
		// an upstream's answer.
		rq.Cap = registry.ResultCap{}
	}
	return f.pipe.Serve(ctx, callers.From(ctx), sessionID(ctx), rq, func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
		res, err := c.ReadResource(registry.WithRelay(ctx, f.relayFor(ctx)), uri, req)
		if err != nil {
			return nil, err
		}
		if prefix != "" {
			for i, rc := range res.Contents {
				switch v := rc.(type) {
				case mcp.TextResourceContents:
					v.URI = naming.PublishedURI(prefix, v.URI)
					res.Contents[i] = v
				case mcp.BlobResourceContents:
					v.URI = naming.PublishedURI(prefix, v.URI)
					res.Contents[i] = v
				}
			}
		}
		return json.Marshal(res)
	})
}

// getPrompt serves prompts/get of p: its arguments are what the caller's
// content filters screen on the way up.
func (f *Features) getPrompt(ctx context.Context, p registry.Prompt, req mcp.GetPromptRequest) pipeline.Result {
	var args json.RawMessage
	if len(req.Params.Arguments) > 0 {
		args, _ = json.Marshal(req.Params.Arguments)
	}
	rq := pipeline.Request{Method: string(mcp.MethodPromptsGet), Target: req.Params.Name, Server: p.Server, Original: p.Original,
		Params: args, Shape: resultcap.Prompt, Cap: f.reg.ResultCap(p.Server)}
	return f.pipe.Serve(ctx, callers.From(ctx), sessionID(ctx), rq, func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
		if args != nil {
			req.Params.Arguments = nil
			if err := json.Unmarshal(args, &req.Params.Arguments); err != nil {
				return nil, fmt.Errorf("read the screened arguments: %w", err)
			}
		}
		res, err := p.Client.GetPrompt(registry.WithRelay(ctx, f.relayFor(ctx)), p.Original, req)
		if err != nil {
			return nil, err
		}
		return json.Marshal(res)
	})
}

// sameList reports whether two lists hold the same items in order.
func sameList[T any](a, b []T, same func(x, y T) bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !same(a[i], b[i]) {
			return false
		}
	}
	return true
}

// ResourceUpdated delivers an upstream's notifications/resources/updated
// to the subscribers of that resource, with the URI they know.
func (f *Features) ResourceUpdated(srv string, params map[string]any) { f.subs.updated(srv, params) }

// completer answers completion/complete from the upstream that owns the
// prompt or template, through the pipeline.
type completer struct{ f *Features }

func (c completer) prompt(ctx context.Context, name string, arg mcp.CompleteArgument, cctx mcp.CompleteContext) pipeline.Result {
	p, ok := c.f.reg.Catalog().Features.Prompt(name)
	if !ok {
		return c.unknown(ctx, name, fmt.Sprintf("unknown prompt %q: no server in the catalog offers it", name))
	}
	return c.complete(ctx, name, p.Server, p.Original, p.Client, mcp.PromptReference{Type: "ref/prompt", Name: p.Original}, arg, cctx)
}

func (c completer) resource(ctx context.Context, uri string, arg mcp.CompleteArgument, cctx mcp.CompleteContext) pipeline.Result {
	f := &c.f.reg.Catalog().Features
	if t, ok := f.Template(uri); ok {
		return c.complete(ctx, uri, t.Server, t.Original, t.Client, mcp.ResourceReference{Type: "ref/resource", URI: t.Original}, arg, cctx)
	}
	if r, ok := f.Resource(uri); ok {
		return c.complete(ctx, uri, r.Server, r.Original, r.Client, mcp.ResourceReference{Type: "ref/resource", URI: r.Original}, arg, cctx)
	}
	return c.unknown(ctx, uri, fmt.Sprintf("unknown resource or template %q: no server in the catalog offers it", uri))
}

// unknown answers a completion of something no server offers: denied for
// a caller who may use no feature (it learns nothing of the catalog),
// invalid params for the others.
func (c completer) unknown(ctx context.Context, target, msg string) pipeline.Result {
	if caller := callers.From(ctx); !featuresAllowed(caller) {
		return pipeline.Result{Error: &jsonrpc.Error{Code: pipeline.CodeDenied, Message: pipeline.DecideRequest(caller, "", target, target)}}
	}
	return pipeline.Result{Error: &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg}}
}

// complete serves completion/complete of target (published; original, its
// server's) at srv: the argument and the context's arguments are what the
// caller's content filters screen on the way up, the values on the way
// back.
func (c completer) complete(ctx context.Context, target, srv, original string, up registry.Upstream, ref any, arg mcp.CompleteArgument, cctx mcp.CompleteContext) pipeline.Result {
	type params struct {
		Argument mcp.CompleteArgument `json:"argument"`
		Context  mcp.CompleteContext  `json:"context"`
	}
	sent, _ := json.Marshal(params{arg, cctx})
	rq := pipeline.Request{Method: string(mcp.MethodCompletionComplete), Target: target, Server: srv, Original: original, Params: sent}
	return c.f.pipe.Serve(ctx, callers.From(ctx), sessionID(ctx), rq, func(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
		var p params
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, fmt.Errorf("read the screened argument: %w", err)
		}
		res, err := up.Complete(ctx, ref, p.Argument, p.Context)
		if err != nil {
			return nil, err
		}
		return json.Marshal(res)
	})
}
