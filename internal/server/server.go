// Package server is the hub's face: one MCP endpoint over Streamable HTTP
// (/mcp), legacy HTTP+SSE (/sse + /messages), WebSocket (/ws) and stdio, plus
// REST tool runs (/api/mcp/tools/{name}/run), health (/healthz, /readyz),
// metrics (/metrics), and the web console (/). It reads the registry's
// catalog, and every face hands each tools/call to the one pipeline
// (internal/pipeline) and encodes its Result. Who calls is
// internal/callers'; it mounts the REST API of internal/adminapi
// (listings, servers, pins, OpenAPI) and the console's feed of
// internal/callfeed (/api/mcp/calls, /api/events) behind the guards of
// internal/edge.
package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"

	"github.com/purko-io/mcp-hub/internal/adminapi"
	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/callfeed"
	"github.com/purko-io/mcp-hub/internal/console"
	"github.com/purko-io/mcp-hub/internal/dispatch"
	"github.com/purko-io/mcp-hub/internal/edge"
	"github.com/purko-io/mcp-hub/internal/eventstore"
	"github.com/purko-io/mcp-hub/internal/features"
	"github.com/purko-io/mcp-hub/internal/findtools"
	"github.com/purko-io/mcp-hub/internal/guardrails"
	"github.com/purko-io/mcp-hub/internal/hubchain"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/mcpsession"
	"github.com/purko-io/mcp-hub/internal/mcpsse"
	"github.com/purko-io/mcp-hub/internal/mcpws"
	"github.com/purko-io/mcp-hub/internal/oauth"
	"github.com/purko-io/mcp-hub/internal/peers"
	"github.com/purko-io/mcp-hub/internal/pipeline"
	"github.com/purko-io/mcp-hub/internal/ratelimit"
	"github.com/purko-io/mcp-hub/internal/registrations"
	"github.com/purko-io/mcp-hub/internal/registry"
	"github.com/purko-io/mcp-hub/internal/taskhandle"
	"github.com/purko-io/mcp-hub/internal/tasks"
	"github.com/purko-io/mcp-hub/internal/toollist"
)

// Options configure a Server.
type Options struct {
	// Name and Version are announced to MCP clients.
	Name, Version string
	// Instructions are sent in the initialize result.
	Instructions string
	// Auth admits callers; nil admits everyone with full autonomy (tests).
	Auth *callers.Auth
	// TaskKey seals task handles (replicas.secret; package taskhandle):
	// the same on every replica. Empty: a random key of this process.
	TaskKey []byte
	// Peers are the other replicas (host:port), to which a client's answer
	// to a server request is passed when another replica asked
	// (internal/peers).
	Peers []string

	// What a caller, anonymous included, can make the hub hold
	// (internal/edge). Zero means the default.

	// MaxBodyBytes caps a request body and a WebSocket message; 4 MiB.
	MaxBodyBytes int64
	// AllowedOrigins are the browser origins (scheme://host[:port]), besides
	// the hub's own, whose pages may call the MCP faces.
	AllowedOrigins []string
	// MaxSessions caps the live MCP sessions (registered Streamable HTTP
	// sessions, SSE streams, WebSocket connections); 10000.
	// MaxSessionsPerCaller caps one caller's; 1000 (or MaxSessions if less).
	MaxSessions, MaxSessionsPerCaller int
	// SessionIdleTimeout is how long the hub keeps the state of a
	// Streamable HTTP session nothing was sent to or received from (its
	// registration, its replay buffer; internal/mcpsession): clients that
	// vanish without DELETE (Purko's executor never sends one) would
	// otherwise hold it. The session's id stays valid, and its next request
	// is served as usual. A session with a GET stream open is never idle
	// (and its stream is pinged well within it); 5m.
	SessionIdleTimeout time.Duration
	// ReadTimeout bounds reading a whole request, body included (slow
	// bodies); ReadHeaderTimeout its headers (slowloris). Neither limits a
	// response stream (SSE) or an upgraded WebSocket. 30s and 10s.
	ReadTimeout, ReadHeaderTimeout time.Duration

	// PerCaller and PerUpstream limit the tool calls of every caller and
	// to every owning server that has no limits of its own
	// (callers.TokenCaller.Limits, the server spec's); zero: no limit
	// (internal/pipeline).
	PerCaller, PerUpstream ratelimit.Limits
	// FindToolsAbove, when above 0, is the number of tools a caller may
	// see above which its tools/list holds only find_tools and the tools
	// it found in its session (internal/findtools); 0 is off.
	FindToolsAbove int
	// Tracer makes a span of every request the hub serves
	// (tracing.Provider.Tracer); nil, tracing is off and costs nothing.
	Tracer trace.Tracer
	// Registrations stores the servers registered through POST
	// /api/mcp/server (internal/adminapi); nil, the write endpoints answer 501.
	Registrations registrations.Writer
	// RegistryAPI shapes the MCP Registry API (/v0.1/servers): the
	// namespace of its names, the base of its remote URLs.
	RegistryAPI adminapi.RegistryOptions
	// Chain is presented on every answer (instance.go), so a hub that
	// reaches this one through its upstreams can tell; nil presents none.
	Chain *hubchain.Chain
}

// Server serves the registry's catalog to MCP clients and operators.
type Server struct {
	// published is what the last catalog published (catalog.go).
	published publishedTools
	reg       *registry.Registry
	auth      *callers.Auth
	log       zerolog.Logger
	mcp       *server.MCPServer
	metrics   *metrics

	streamable *server.StreamableHTTPServer
	sse        *mcpsse.Handler
	ws         http.Handler

	// reader reads the messages of the /mcp face, keeping its decoders.
	reader jsonrpc.Reader

	feat    *features.Features
	peers   *peers.Peers // nil: no peers
	runs    *guardrails.Runs
	streams *streams
	// sessions are the Streamable HTTP sessions registered here, their GET
	// streams and the idle sweep (internal/mcpsession).
	sessions *mcpsession.Sessions
	// lists answers a plain tools/list on /mcp from the encoded catalog
	// (internal/toollist).
	lists      *toollist.Cache
	calls      *dispatch.Dispatcher // every request of every face (internal/dispatch)
	waits      replyWaits           // server requests on reply streams (replystream.go)
	requests   sync.Pool            // *dispatch.Request of /mcp, reused (streamable.go)
	pipe       *pipeline.Pipeline   // every tool call, whatever the face
	spans      methodSpans          // spans of the requests other than tools/call; its tracer is nil when tracing is off
	draining   atomic.Bool
	edge       *edge.Edge           // guards and limits on what callers can make the hub hold
	find       *findtools.Finder    // nil when tool search is off
	feed       *callfeed.Feed       // recent calls and event streams of the console
	registered registrations.Writer // nil: no registrations
	chain      *hubchain.Chain      // nil: no chain header
	tasks      *tasks.Routes        // MCP Tasks on /mcp (internal/tasks)

	// registryAPI shapes the MCP Registry API's documents.
	registryAPI adminapi.RegistryOptions
}

// New builds the server and subscribes it to catalog changes. Call before
// the registry runs, so the first catalog reaches it.
func New(reg *registry.Registry, opts Options, log zerolog.Logger) *Server {
	s := &Server{reg: reg, auth: opts.Auth, log: log.With().Str("component", "server").Logger(), peers: peers.New(opts.Peers, maxRequestBytes), streams: newStreams(), feed: callfeed.New()}
	if s.auth == nil {
		s.auth = callers.AnonymousOnly(autonomy.Full).LocalUserIsAdmin()
	}
	s.metrics = newMetrics(reg, s.peers.Replicas)
	s.edge = edge.New(edge.Options{
		MaxBodyBytes: opts.MaxBodyBytes, AllowedOrigins: opts.AllowedOrigins,
		MaxSessions: opts.MaxSessions, MaxSessionsPerCaller: opts.MaxSessionsPerCaller,
		SessionIdleTimeout: opts.SessionIdleTimeout, ReadTimeout: opts.ReadTimeout, ReadHeaderTimeout: opts.ReadHeaderTimeout,
		Log: s.log,
	})
	s.find = findtools.New(opts.FindToolsAbove, reg, s.toolsChanged)
	route := pipeline.Router(nil) // the registry's alone
	if s.find != nil {
		// find_tools, the hub's own tool, ahead of the registry's.
		route = s.find.Route
	}
	var share func(context.Context, string)
	if s.peers != nil {
		share = s.peers.TellRun
	}
	s.runs = guardrails.NewRuns(share)
	s.pipe = pipeline.New(pipeline.Options{
		Registry: reg, Route: route,
		PerCaller: opts.PerCaller, PerUpstream: opts.PerUpstream, OwnCallerLimits: s.auth.HasOwnLimits(), Replicas: s.peers.Replicas,
		Metrics: s.metrics.reg, Feed: s.feed, Log: s.log, Tracer: opts.Tracer,
		Guard: guardrails.New(guardrails.Options{Metrics: s.metrics.reg, Runs: s.runs}),
	})
	s.feat = features.New(features.Options{Registry: reg, Log: s.log, RelayFor: s.relayFor, Pipeline: s.pipe})
	// The one dispatcher: tools here, MCP beyond tools in features.
	s.calls = dispatch.New(opts.Name, opts.Version)
	s.calls.HandleTraced(string(mcp.MethodToolsCall), s.serveCall)
	s.calls.Handle(string(mcp.MethodToolsList), s.serveList)
	s.feat.Register(s.calls)
	if opts.Tracer != nil {
		s.calls.Trace(s.spans.dispatched)
	}
	s.registered = opts.Registrations
	s.registryAPI = opts.RegistryAPI
	if s.registryAPI.HubVersion == "" {
		s.registryAPI.HubVersion = opts.Version
	}
	s.chain = opts.Chain
	s.spans.tracer = opts.Tracer
	s.lists = s.newListCache(opts)
	hooks := &server.Hooks{}
	s.spans.install(hooks)
	s.edge.InstallHooks(hooks)
	hooks.AddOnRequestInitialization(s.gateHook)
	hooks.AddOnRegisterSession(func(_ context.Context, cs server.ClientSession) { s.streams.registered(cs) })
	hooks.AddOnUnregisterSession(func(_ context.Context, cs server.ClientSession) { s.streams.unregistered(cs.SessionID()) })
	if s.find != nil {
		hooks.AddOnUnregisterSession(func(_ context.Context, cs server.ClientSession) { s.find.Forget(cs.SessionID()) })
	}
	mcpOpts := append(s.feat.ServerOptions(hooks),
		server.WithToolCapabilities(true),
		server.WithHooks(hooks),
		server.WithInstructions(opts.Instructions),
		server.WithRecovery(),
	)
	s.mcp = server.NewMCPServer(opts.Name, opts.Version, mcpOpts...)
	s.feat.Attach(s.mcp)
	events := eventstore.New()
	s.sessions = mcpsession.New(mcpsession.Options{
		MCP: s.mcp, Events: events, Heartbeat: s.edge.Idle() / 3,
		IdleTTL: s.edge.Idle(), Busy: s.streams.isOpen, Forget: s.forgetSession, Log: s.log,
	})
	s.sessions.InstallHooks(hooks)
	s.streamable = server.NewStreamableHTTPServer(s.mcp,
		// Reply streams are resumable (Last-Event-ID); the GET streams the
		// hub serves itself are recorded in the same store.
		server.WithEventStore(events),
		// Pings on the GET streams mcp-go serves (of sessions it
		// registered itself, sessions.go); the hub's own are pinged by
		// s.sessions. The idle sweep is s.sessions': mcp-go's would count
		// neither the hub's fast path nor its streams as activity.
		server.WithHeartbeatInterval(s.edge.Idle()/3),
		server.WithSessionIdManagerResolver(edge.SessionIDs{}),
	)
	s.sse = mcpsse.NewHandler(s.mcp,
		mcpsse.WithDispatch(func(ctx context.Context, raw []byte) []byte { return s.dispatchMessage(ctx, raw, sessionID(ctx)) }),
		// A message the gate refuses is answered on its POST (400).
		mcpsse.WithMessageCheck(func(raw []byte) []byte {
			if _, _, err := admit(raw); err != nil {
				return jsonrpc.ErrorReplyTo(raw, err)
			}
			return nil
		}),
		// A session is only its own caller's: any other id, a live one of
		// another caller's included, is not found.
		mcpsse.WithSessionCheck(func(r *http.Request, id string) bool {
			owner, ok := s.edge.SessionOwner(id)
			return ok && owner == callers.From(r.Context()).Key()
		}),
		mcpsse.WithBasePath(sseBase),
		mcpsse.WithKeepAlive(25*time.Second),
		mcpsse.WithReadLimit(s.edge.MaxBody()),
	)
	s.ws = mcpws.NewHandler(s.mcp,
		mcpws.WithCheckOrigin(s.edge.OriginAllowed),
		mcpws.WithReadLimit(s.edge.MaxBody()),
		mcpws.WithDispatch(s.dispatchMessage),
	)
	s.streams.forget = s.forgetSession
	s.streams.mcp, s.streams.peers = s.mcp, s.peers
	reg.OnChange(s.publish)
	reg.OnChange(func(*registry.Catalog) { s.feed.CatalogChanged() })
	reg.OnQuarantine(s.quarantined)
	reg.OnResourceUpdated(s.feat.ResourceUpdated)
	s.tasks = tasks.New(tasks.Options{Codec: taskhandle.New(opts.TaskKey), Pipeline: s.pipe, Registry: reg, MCP: s.mcp, Peers: s.peers, Log: s.log})
	reg.OnTaskStatus(s.tasks.Status)
	return s
}

// Handler returns every HTTP route of the hub.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	g := s.edge
	// The MCP faces: the whole catalog at /mcp, /sse, /messages and /ws,
	// and the same faces of each server and virtual server under
	// /servers/NAME (endpoint.go), narrowed to its tools.
	for _, base := range []string{"", endpointBase} {
		caller := s.requireCaller
		if base != "" {
			caller = func(h http.Handler) http.Handler { return s.requireCaller(scoped(s.reg, h)) }
		}
		mux.Handle(base+"/mcp", g.MCPFace(caller(s.spans.traceHeaders(g.LimitSessions(edge.FaceStreamable, http.HandlerFunc(s.serveMCP)))), false))
		mux.Handle(base+"/sse", g.MCPFace(caller(g.LimitSessions(edge.FaceStream, withoutTasks(s.sse.SSE()))), true))
		mux.Handle(base+"/messages", g.MCPFace(caller(s.spans.traceHeaders(withoutTasks(s.sse.Messages()))), false))
		mux.Handle(base+"/ws", g.MCPFace(caller(g.LimitSessions(edge.FaceStream, withoutTasks(s.ws))), false))
	}
	mux.HandleFunc("POST "+peers.RequestPath, s.peers.Serve(s.streams.sendForPeer))
	mux.HandleFunc("POST "+peers.RunPath, s.peers.ServeRuns(s.runs.Heard))
	// The REST API of operators and Purko's dashboard (internal/adminapi):
	// its writes behind the guards and caller of the MCP faces.
	adminapi.New(adminapi.Options{
		Registry: s.reg, Auth: s.auth, Visible: pipeline.Visible, Registrations: s.registered, Log: s.log, RegistryAPI: s.registryAPI,
		Guard: func(h http.Handler) http.Handler { return g.MCPFace(s.requireRESTCaller(h), false) },
	}).Mount(mux)
	// A face like /mcp (rest.go): its guards, its caller, its pipeline.
	mux.Handle(runPath, g.MCPFace(s.requireRESTCaller(s.spans.traceHeaders(http.HandlerFunc(s.handleRun))), false))
	// The web console (internal/console) and its feed: the recent calls
	// and the event stream name callers, so they need one, as the MCP
	// faces do (a token in a header, never a cookie); only an admin sees
	// other callers' calls.
	page := console.Handler()
	mux.Handle("GET /{$}", page)
	mux.Handle("GET /console/", page)
	mux.Handle("GET /api/mcp/calls", g.MCPFace(s.requireRESTCaller(http.HandlerFunc(s.feed.HandleCalls)), false))
	mux.Handle("GET /api/events", g.MCPFace(s.requireRESTCaller(http.HandlerFunc(s.feed.HandleEvents)), false))
	if v := s.auth.OAuth(); v != nil {
		// Protected resource metadata (RFC 9728): public, and readable by
		// browser-based clients of any origin, like the 401 that names it.
		for _, p := range oauth.MetadataPaths(v.Metadata().Resource) {
			mux.HandleFunc("GET "+p, func(w http.ResponseWriter, _ *http.Request) {
				h := w.Header()
				h.Set("Content-Type", "application/json")
				h.Set("Access-Control-Allow-Origin", "*")
				h.Set("Cache-Control", "max-age=300")
				_ = json.NewEncoder(w).Encode(v.Metadata())
			})
		}
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	mux.HandleFunc("GET /readyz", s.handleReady)
	mux.Handle("GET /metrics", s.metrics.handler())
	// Every route: the chain header (instance.go), DNS rebinding
	// protection, bounded bodies.
	return s.presentChain(g.CheckHost(g.LimitBody(mux)))
}

func (s *Server) handleReady(w http.ResponseWriter, _ *http.Request) {
	if s.draining.Load() {
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
		return
	}
	// Ready is the sources (the kube informers among them) synced; Tried
	// is that plus every upstream of theirs tried once, so a replica takes
	// traffic with the catalog it will serve, not the builtins alone.
	if !s.reg.Ready() {
		http.Error(w, "discovery sources not synced yet", http.StatusServiceUnavailable)
		return
	}
	if !s.reg.Tried() {
		http.Error(w, "upstreams not all tried yet (bounded by upstream.connectTimeout)", http.StatusServiceUnavailable)
		return
	}
	// A source cut off (the Kubernetes API unreachable) keeps its last
	// catalog: the replica still serves it, so it stays ready (failing
	// every replica at once would take the fleet out) and says so.
	if outages := s.reg.Outages(); len(outages) > 0 {
		words := make([]string, len(outages))
		for i, o := range outages {
			words[i] = o.String()
		}
		_, _ = io.WriteString(w, "ok ("+strings.Join(words, "; ")+": serving the last catalog)\n")
		return
	}
	_, _ = io.WriteString(w, "ok\n")
}

// Serve serves HTTP on ln until ctx ends, then shuts down gracefully:
// readiness fails, no new connections are accepted, in-flight tool calls get
// up to grace to finish, then streams are closed.
func (s *Server) Serve(ctx context.Context, ln net.Listener, grace time.Duration) error {
	// Request contexts outlive ctx so in-flight calls can finish; they end
	// when the drain is over, which also closes WebSocket sessions (hijacked
	// connections that http.Server.Shutdown does not track).
	streamsCtx, closeStreams := context.WithCancel(context.WithoutCancel(ctx))
	defer closeStreams()
	hs := &http.Server{
		Handler:     s.Handler(),
		BaseContext: func(net.Listener) context.Context { return streamsCtx },
	}
	s.edge.Configure(hs)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	// The sessions' GET streams and idle sweep, until the streams close.
	sessionsDone := make(chan struct{})
	go func() { defer close(sessionsDone); s.sessions.Run(streamsCtx) }()
	// The count of replicas the limits are shared by, until the streams
	// close (after the last call).
	countDone := make(chan struct{})
	go func() { defer close(countDone); s.peers.WatchReplicas(streamsCtx, s.replicasCounted) }()
	defer func() { closeStreams(); <-sessionsDone; <-countDone }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.draining.Store(true)
	graceCtx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	shutdownDone := make(chan error, 1)
	go func() { shutdownDone <- hs.Shutdown(graceCtx) }()

	if !s.pipe.Wait(graceCtx) {
		s.log.Warn().Msg("grace period over with tool calls still running")
	}
	// Long-lived streams never end by themselves.
	s.streams.stop()
	closeStreams()
	s.sse.Close()
	// Shutdown closes the sessions and stops mcp-go's idle sweeper (the
	// streamable server has no listener of its own to close).
	_ = s.streamable.Shutdown(graceCtx)
	select {
	case err := <-shutdownDone:
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
	case <-graceCtx.Done():
	}
	_ = hs.Close() // stragglers
	<-errc
	return nil
}

// toolsChanged tells session its tools/list changed; a session without a
// stream has nowhere to hear it.
func (s *Server) toolsChanged(session string) {
	_ = s.mcp.SendNotificationToSpecificClient(session, string(mcp.MethodNotificationToolsListChanged), nil)
}

// forgetSession drops mcp-go's state of a session whose GET stream is gone:
// the same as the client's DELETE, which the session's id survives (it is
// valid on any replica, and its next request is served as usual).
func (s *Server) forgetSession(id string) {
	req, err := http.NewRequest(http.MethodDelete, "/mcp", nil)
	if err != nil {
		return
	}
	req.Header.Set("Mcp-Session-Id", id)
	s.streamable.ServeHTTP(&recorder{header: http.Header{}}, req)
}

// ServeStdio serves the catalog over stdin/stdout until ctx ends or stdin
// closes, for IDE clients that only launch stdio servers. Whoever can start
// the process is the local user: level is its autonomy.
//
// Nothing is read from stdin before every upstream was tried once
// (registry.Tried, bounded by upstream.connectTimeout): a stdio client
// starts the hub and at once sends initialize and tools/list, and many
// never list again, so the first answer must already hold the whole
// catalog.
//
// endpoint, when set, serves only that server's or virtual server's part of
// the catalog, as /servers/NAME/mcp does.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer, level autonomy.Level, endpoint string) error {
	if err := s.reg.WaitTried(ctx); err != nil {
		return fmt.Errorf("serve stdio: %w", err)
	}
	if _, ok := s.reg.Catalog().Endpoint(endpoint); endpoint != "" && !ok {
		return fmt.Errorf("serve stdio: --server %s: no server or virtual server of that name", quoteName(endpoint))
	}
	caller := callers.Caller{Name: "stdio", Ceiling: level, Level: level, Admin: true}
	// mcp-go's stdio server is the session layer (initialize, ping,
	// notifications, the server's requests and their answers); the
	// session's context, which it makes once, is where the dispatcher
	// serves the hub's requests (gateStdio).
	var sessionCtx context.Context
	ready := make(chan struct{})
	ss := server.NewStdioServer(s.mcp)
	ss.SetContextFunc(func(ctx context.Context) context.Context {
		ctx = features.WithoutTasks(stdioScope(callers.With(ctx, caller), s.reg, endpoint))
		sessionCtx = ctx
		close(ready)
		return ctx
	})
	ctx, cancel := context.WithCancel(ctx)
	var served sync.WaitGroup
	defer served.Wait()
	defer cancel()
	session := func() (context.Context, string) { return sessionCtx, sessionID(sessionCtx) }
	in, out = s.gateStdio(ctx, in, out, maxRequestBytes, session, ready, &served)
	return ss.Listen(callers.With(ctx, caller), in, out)
}

// dispatchMessage serves one message of a face that hands over messages
// with its session in ctx (WebSocket, legacy SSE): the hub's methods by
// the dispatcher, the rest by mcp-go's session layer.
func (s *Server) dispatchMessage(ctx context.Context, raw []byte, session string) []byte {
	return s.calls.Message(ctx, raw, session, s.sessionLayer)
}

// sessionLayer hands a message to mcp-go's server (initialize, ping,
// logging/setLevel, notifications) and encodes its answer.
func (s *Server) sessionLayer(ctx context.Context, raw []byte) []byte {
	resp := s.mcp.HandleMessage(ctx, raw)
	if resp == nil {
		return nil
	}
	out, err := json.Marshal(resp)
	if err != nil {
		return jsonrpc.ErrorReplyTo(raw, fmt.Errorf("encode the answer: %w", err))
	}
	return append(out, '\n')
}

// withoutTasks serves next as a face that does not route MCP Tasks (only
// /mcp does): its sessions are not told of the tasks capability.
func withoutTasks(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(features.WithoutTasks(r.Context())))
	})
}
