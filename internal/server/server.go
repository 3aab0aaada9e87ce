// Package server is the hub's face: one MCP endpoint over Streamable HTTP
// (/mcp), legacy HTTP+SSE (/sse + /messages), WebSocket (/ws) and stdio, plus
// REST tool runs (/api/mcp/tools/{name}/run), health (/healthz, /readyz),
// metrics (/metrics), and the web console (/). It reads the registry's
// catalog, and every face hands each tools/call to the one pipeline
// (internal/pipeline) and encodes its Result. Who calls is
// internal/callers'; it mounts the REST API of internal/adminapi
// (listings, servers, pins, OpenAPI) and the console's feed of
// internal/callfeed (/api/mcp/calls, /api/mcp/stats, /api/events) behind
// the guards of internal/edge.
package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"

	"github.com/purko-io/mcp-hub/internal/adminapi"
	"github.com/purko-io/mcp-hub/internal/approvals"
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
	"github.com/purko-io/mcp-hub/internal/registry"
	"github.com/purko-io/mcp-hub/internal/restrun"
	"github.com/purko-io/mcp-hub/internal/rounds"
	"github.com/purko-io/mcp-hub/internal/taskhandle"
	"github.com/purko-io/mcp-hub/internal/tasks"
	"github.com/purko-io/mcp-hub/internal/toollist"
	"github.com/purko-io/mcp-hub/internal/usergrants"
)

// Options configure a Server's faces.
type Options struct {
	// Name and Version are announced to MCP clients.
	Name, Version string
	// Instructions are sent in the initialize result.
	Instructions string
	// Tracer makes a span of every request the hub serves
	// (tracing.Provider.Tracer); nil, tracing is off and costs nothing.
	Tracer trace.Tracer
}

// Parts are the collaborators the faces serve through. The wiring
// (internal/hub) builds them from the configuration and hands them over:
// the server builds only the faces themselves (mcp-go's session layer, the
// transports, the dispatcher and what they keep per session).
type Parts struct {
	// Registry holds the catalog the faces serve.
	Registry *registry.Registry
	// Auth admits callers.
	Auth *callers.Auth
	// Pipeline serves every request of every face (internal/pipeline).
	Pipeline *pipeline.Pipeline
	// Features serves MCP beyond tools on the dispatcher and keeps the
	// sessions' logging levels and subscriptions (internal/features).
	Features *features.Features
	// Edge guards and limits what a caller, anonymous included, can make
	// the hub hold (internal/edge).
	Edge *edge.Edge
	// Peers are the other replicas (internal/peers); nil, there are none.
	Peers *peers.Peers
	// Runs are the guardrails' runs of suspect calls, shared with the
	// peers (internal/guardrails).
	Runs *guardrails.Runs
	// Feed is the console's feed of recent calls and events
	// (internal/callfeed).
	Feed *callfeed.Feed
	// Find is tool search (internal/findtools); nil, it is off.
	Find *findtools.Finder
	// Metrics is the Prometheus registry /metrics serves; the faces add
	// the catalog's series to it.
	Metrics *prometheus.Registry
	// Admin is the REST API of operators (internal/adminapi), mounted
	// behind the faces' guards and caller.
	Admin *adminapi.API
	// Tasks seals the handles of MCP Tasks (internal/taskhandle).
	Tasks *taskhandle.Codec
	// Chain is presented on every answer (internal/hubchain), so a hub
	// that reaches this one through its upstreams can tell; nil presents
	// none.
	Chain *hubchain.Chain
	// Approvals hold the calls waiting for a person (internal/approvals):
	// /api/mcp/approvals is theirs; nil, it is not served.
	Approvals *approvals.Gate
	// Grants keep callers' own grants at servers with userOAuth
	// (internal/usergrants): the sign-in pages and /api/mcp/connections
	// are theirs; nil, they are not served.
	Grants *usergrants.Broker
}

// Server serves the registry's catalog to MCP clients and operators.
type Server struct {
	// The parts it was given (Parts).
	reg     *registry.Registry
	auth    *callers.Auth
	pipe    *pipeline.Pipeline
	feat    *features.Features
	edge    *edge.Edge
	peers   *peers.Peers // nil: no peers
	runs    *guardrails.Runs
	feed    *callfeed.Feed
	metrics *prometheus.Registry
	admin   *adminapi.API
	chain   *hubchain.Chain // nil: no chain header
	// approvals hold calls for a person; nil: none are held.
	approvals *approvals.Gate
	grants    *usergrants.Broker // nil: no user grants

	log        zerolog.Logger
	mcp        *server.MCPServer
	streamable *server.StreamableHTTPServer
	sse        *mcpsse.Handler
	ws         http.Handler
	// reader reads the messages of the /mcp face, keeping its decoders.
	reader jsonrpc.Reader
	// tools serves tools/call and tools/list on the dispatcher (tools.go).
	tools   *tools
	streams *streams
	// sessions are the Streamable HTTP sessions registered here, their GET
	// streams and the idle sweep (internal/mcpsession).
	sessions *mcpsession.Sessions
	// lists answers a plain tools/list on /mcp from the encoded catalog
	// (internal/toollist).
	lists    *toollist.Cache
	calls    *dispatch.Dispatcher // every request of every face (internal/dispatch)
	waits    replyWaits           // server requests on reply streams (replystream.go)
	requests sync.Pool            // *dispatch.Request of /mcp, reused (streamable.go)
	spans    methodSpans          // spans of the requests other than tools/call; its tracer is nil when tracing is off
	draining atomic.Bool
	tasks    *tasks.Routes // MCP Tasks on /mcp (internal/tasks)
}

// New builds the faces over parts and subscribes them to catalog changes.
// Call before the registry runs, so the first catalog reaches it.
func New(parts Parts, opts Options, log zerolog.Logger) *Server {
	s := &Server{
		reg: parts.Registry, auth: parts.Auth, pipe: parts.Pipeline, feat: parts.Features, edge: parts.Edge, peers: parts.Peers,
		runs: parts.Runs, feed: parts.Feed, metrics: parts.Metrics, admin: parts.Admin, chain: parts.Chain, approvals: parts.Approvals, grants: parts.Grants,
		log: log.With().Str("component", "server").Logger(), streams: newStreams(),
	}
	reg := parts.Registry
	registerMetrics(s.metrics, reg, s.peers.Replicas)
	find := parts.Find
	s.tools = &tools{reg: reg, find: find, pipe: s.pipe, relayFor: s.relayFor, rounds: rounds.New(rounds.DefaultWait, s.peers.Self()), askFor: s.askRelay}
	// The one dispatcher: tools here, MCP beyond tools in features.
	s.calls = dispatch.New(opts.Name, opts.Version)
	s.calls.HandleTraced(string(mcp.MethodToolsCall), s.tools.serveCall)
	s.calls.Handle(string(mcp.MethodToolsList), s.tools.serveList)
	s.feat.Register(s.calls, s.relayFor)
	s.spans.tracer = opts.Tracer
	if opts.Tracer != nil {
		s.calls.Trace(s.spans.dispatched)
	}
	lists := toollist.Options{Name: opts.Name, Version: opts.Version, Catalog: reg.Catalog, Visible: pipeline.Visible, Def: s.tools.listedDef}
	if find != nil {
		lists.Short = find
		find.OnFound(s.toolsChanged)
	}
	if opts.Tracer != nil {
		lists.StartSpan = s.spans.startList
	}
	lists.Through = func(ctx context.Context, id json.RawMessage, session string, write func() error) *jsonrpc.Error {
		out := s.pipe.Serve(ctx, callers.From(ctx), session, pipeline.Request{Method: string(mcp.MethodToolsList), List: true},
			func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, write() })
		return out.Error
	}
	s.lists = toollist.New(lists)
	hooks := &server.Hooks{}
	s.spans.install(hooks)
	s.edge.InstallHooks(hooks)
	hooks.AddOnRequestInitialization(s.gateHook)
	hooks.AddOnRegisterSession(func(_ context.Context, cs server.ClientSession) { s.streams.registered(cs) })
	hooks.AddOnUnregisterSession(func(_ context.Context, cs server.ClientSession) { s.streams.unregistered(cs.SessionID()) })
	if find != nil {
		hooks.AddOnUnregisterSession(func(_ context.Context, cs server.ClientSession) { find.Forget(cs.SessionID()) })
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
		RequestIDPrefix: s.peers.Tag("hub-"),
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
		// Its lines in the hub's log, not in slog's default.
		server.WithStreamableHTTPLogger(slog.New(zerolog.NewSlogHandler(s.log))),
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
	reg.OnChange(s.feed.CatalogChanged)
	reg.OnQuarantine(newPinSignals(s.metrics, s.log).heard)
	reg.OnResourceUpdated(s.feat.ResourceUpdated)
	s.tasks = tasks.New(tasks.Options{Codec: parts.Tasks, Pipeline: s.pipe, Registry: reg, MCP: s.mcp, Peers: s.peers, Log: s.log})
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
	mux.HandleFunc("POST "+peers.RunPath, peers.ServeOwned(s.peers, s.runs.Take))
	mux.HandleFunc("GET "+peers.IDPath, s.peers.ServeID)
	// The REST API of operators and Purko's dashboard (internal/adminapi):
	// its writes behind the guards and caller of the MCP faces.
	s.admin.Mount(mux, func(h http.Handler) http.Handler { return g.MCPFace(s.requireRESTCaller(h), false) })
	// A face like /mcp (internal/restrun): its guards, its caller, its pipeline.
	mux.Handle(restrun.Path, g.MCPFace(s.requireRESTCaller(s.spans.traceHeaders(restrun.Handler(s.pipe, s.edge))), false))
	// The web console (internal/console) and its feed: the recent calls
	// and the event stream name callers, so they need one, as the MCP
	// faces do (a token in a header, never a cookie); only an admin sees
	// other callers' calls.
	page := console.Handler()
	mux.Handle("GET /{$}", page)
	mux.Handle("GET /console/", page)
	mux.Handle("GET /api/mcp/calls", g.MCPFace(s.requireRESTCaller(http.HandlerFunc(s.feed.HandleCalls)), false))
	mux.Handle("GET /api/mcp/stats", g.MCPFace(s.requireRESTCaller(http.HandlerFunc(s.feed.Stats().Handle)), false))
	mux.Handle("GET /api/events", g.MCPFace(s.requireRESTCaller(http.HandlerFunc(s.feed.HandleEvents)), false))
	if s.approvals != nil {
		// Calls held for a person's approval: listed to any caller (its
		// own; every one to an approver), decided by approvers only.
		mux.Handle("GET /api/mcp/approvals", g.MCPFace(s.requireRESTCaller(http.HandlerFunc(s.approvals.HandleList)), false))
		mux.Handle("POST /api/mcp/approvals/{id}", g.MCPFace(s.requireRESTCaller(http.HandlerFunc(s.approvals.HandleDecide)), false))
	}
	if s.grants != nil {
		s.grants.Mount(mux, func(h http.Handler) http.Handler { return g.MCPFace(s.requireRESTCaller(h), false) },
			func(r *http.Request) (string, bool) { c := callers.From(r.Context()); return c.Key(), c.Admin })
	}
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
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics, promhttp.HandlerOpts{}))
	// Every route: the chain header (hubchain), DNS rebinding
	// protection, bounded bodies.
	return s.chain.Present(g.CheckHost(g.LimitBody(mux)))
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
	if s.approvals != nil {
		// Calls waiting for a person end now, run nothing: their callers
		// hear why instead of waiting out the grace period.
		s.approvals.Close()
	}
	s.tools.rounds.Close() // calls kept for their callers' next round
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

// publish takes a new catalog: the servers' limits, the tools (tools.go)
// and the features, and a notifications/tools/list_changed to every
// session when what is published changed (the registry already debounced
// the changes).
func (s *Server) publish(cat *registry.Catalog) {
	s.pipe.Follow(cat)
	if s.tools.publish(cat) {
		s.mcp.SendNotificationToAllClients(string(mcp.MethodNotificationToolsListChanged), nil)
	}
	s.feat.Publish(cat)
	s.log.Debug().Uint64("gen", cat.Gen).Int("tools", len(cat.Tools)).Msg("catalog published")
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
	s.streamable.ServeHTTP(httptest.NewRecorder(), req)
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
	if s.approvals != nil {
		// Last: held calls ended with ctx; the webhook's deliveries end here.
		defer s.approvals.Close()
	}
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
