package server

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"

	"github.com/purko-io/mcp-hub/internal/adminapi"
	"github.com/purko-io/mcp-hub/internal/approvals"
	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/callfeed"
	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/discovery"
	"github.com/purko-io/mcp-hub/internal/edge"
	"github.com/purko-io/mcp-hub/internal/features"
	"github.com/purko-io/mcp-hub/internal/findtools"
	"github.com/purko-io/mcp-hub/internal/guardrails"
	"github.com/purko-io/mcp-hub/internal/hubchain"
	"github.com/purko-io/mcp-hub/internal/peers"
	"github.com/purko-io/mcp-hub/internal/pipeline"
	"github.com/purko-io/mcp-hub/internal/ratelimit"
	"github.com/purko-io/mcp-hub/internal/registry"
	"github.com/purko-io/mcp-hub/internal/taskhandle"
	"github.com/purko-io/mcp-hub/internal/toolspec"
	"github.com/purko-io/mcp-hub/internal/upstream"
	"github.com/purko-io/mcp-hub/internal/upstream/carried"
)

// fakeUpstream is a real mcp-go streamable HTTP server on a loopback port
// that tests can stop and start again on the same port.
type fakeUpstream struct {
	t       *testing.T
	name    string
	mcp     *mcpserver.MCPServer
	addr    string
	mu      sync.Mutex
	hs      *http.Server
	calls   atomic.Int64
	lastTok atomic.Value // Authorization header of the last request
	// canceled is closed when the slow tool observes its context ending.
	canceled chan struct{}
	release  chan struct{} // closes to let "block" return
	blocked  atomic.Int64  // calls of "block" running
}

// newFakeUpstream serves tools: echo (returns "<name>:<text>"), whoami
// (returns the server name), slow (sleeps "ms" milliseconds or until
// canceled) and block (waits for release).
func newFakeUpstream(t *testing.T, name string, extra ...string) *fakeUpstream {
	t.Helper()
	f := &fakeUpstream{t: t, name: name, canceled: make(chan struct{}), release: make(chan struct{})}
	f.mcp = mcpserver.NewMCPServer(name, "1.0.0", mcpserver.WithToolCapabilities(true))
	f.mcp.AddTool(mcp.NewTool("echo", mcp.WithDescription("echo from "+name), mcp.WithString("text")),
		func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			f.calls.Add(1)
			return mcp.NewToolResultText(name + ":" + r.GetString("text", "")), nil
		})
	f.mcp.AddTool(mcp.NewTool("whoami_"+name), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(name), nil
	})
	var once sync.Once
	f.mcp.AddTool(mcp.NewTool("slow_"+name, mcp.WithNumber("ms")), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ms := r.GetFloat("ms", 10000)
		select {
		case <-time.After(time.Duration(ms) * time.Millisecond):
			return mcp.NewToolResultText("done"), nil
		case <-ctx.Done():
			once.Do(func() { close(f.canceled) })
			return nil, ctx.Err()
		}
	})
	f.mcp.AddTool(mcp.NewTool("block_"+name), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		f.blocked.Add(1)
		defer f.blocked.Add(-1)
		select {
		case <-f.release:
		case <-ctx.Done():
		}
		return mcp.NewToolResultText("released"), nil
	})
	for _, tool := range extra {
		f.addTool(tool)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.addr = ln.Addr().String()
	f.serve(ln)
	t.Cleanup(f.stop)
	return f
}

func (f *fakeUpstream) addTool(name string) {
	f.mcp.AddTool(mcp.NewTool(name), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(f.name + ":" + name), nil
	})
}

func (f *fakeUpstream) serve(ln net.Listener) {
	h := mcpserver.NewStreamableHTTPServer(f.mcp)
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.lastTok.Store(r.Header.Get("Authorization"))
		h.ServeHTTP(w, r)
	})}
	f.mu.Lock()
	f.hs = hs
	f.mu.Unlock()
	go func() { _ = hs.Serve(ln) }()
}

func (f *fakeUpstream) url() string { return "http://" + f.addr + "/mcp" }

// stop kills the server: the listener and every open connection.
func (f *fakeUpstream) stop() {
	f.mu.Lock()
	hs := f.hs
	f.hs = nil
	f.mu.Unlock()
	if hs != nil {
		_ = hs.Close()
	}
}

// start serves again on the same port.
func (f *fakeUpstream) start() {
	var ln net.Listener
	var err error
	for i := 0; i < 50; i++ {
		if ln, err = net.Listen("tcp", f.addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		f.t.Fatalf("restart %s: %v", f.name, err)
	}
	f.serve(ln)
}

func (f *fakeUpstream) spec() config.ServerSpec {
	return config.ServerSpec{Name: f.name, URL: f.url(), Transport: config.TransportStreamableHTTP, Source: "test"}
}

// chanSource lets a test push snapshots.
type chanSource struct {
	ch chan []config.ServerSpec
	// virtual, when not nil, sets the source's virtual servers.
	virtual chan []toolspec.VirtualServer
}

func (s chanSource) Name() string { return "test" }
func (s chanSource) Run(ctx context.Context, out chan<- discovery.Snapshot) {
	var snap discovery.Snapshot
	snap.Source = "test"
	for {
		select {
		case <-ctx.Done():
			return
		case snap.Servers = <-s.ch:
		case snap.Virtual = <-s.virtual:
		}
		select {
		case out <- snap:
		case <-ctx.Done():
			return
		}
	}
}

// testHub is a registry and server on a loopback port.
type testHub struct {
	t    *testing.T
	reg  *registry.Registry
	srv  *Server
	src  chanSource
	addr string
}

type hubOption func(*registry.Options)

// hubOpts are the settings a test gives its hub: what the configuration
// gives internal/hub, which builds the server's parts from it.
type hubOpts struct {
	Name, Version string
	// Auth admits callers; nil admits everyone with full autonomy.
	Auth *callers.Auth
	// Peers are the other replicas' addresses.
	Peers                             []string
	MaxBodyBytes                      int64
	AllowedOrigins                    []string
	MaxSessions, MaxSessionsPerCaller int
	AnonymousShare                    *int // http.anonymousShare; nil: 25
	SessionIdleTimeout                time.Duration
	ReadTimeout, ReadHeaderTimeout    time.Duration
	PerCaller, PerUpstream            ratelimit.Limits
	FindToolsAbove                    int
	Tracer                            trace.Tracer
	Chain                             *hubchain.Chain
	RegistryAPI                       adminapi.RegistryOptions
}

// newServer builds the server's parts from so as internal/hub builds them
// from the configuration (hub/faces.go), and the server over them.
func newServer(reg *registry.Registry, so hubOpts, log zerolog.Logger) *Server {
	auth := so.Auth
	if auth == nil {
		auth = callers.AnonymousOnly(autonomy.Full).LocalUserIsAdmin()
	}
	ps := peers.New(so.Peers, maxRequestBytes)
	metrics := prometheus.NewRegistry()
	find := findtools.New(so.FindToolsAbove, reg)
	route := pipeline.Router(nil)
	if find != nil {
		route = find.Route
	}
	runs := guardrails.NewRuns(peers.Asker[guardrails.Charge, guardrails.Spent](ps, peers.KindRun, peers.RunPath))
	feed := callfeed.New(100)
	gate := approvals.New(approvals.Options{Peers: ps, Metrics: metrics, Log: log, OnChange: feed.ApprovalsChanged})
	pipe := pipeline.New(pipeline.Options{
		Registry: reg, Route: route, PerCaller: so.PerCaller, PerUpstream: so.PerUpstream,
		OwnCallerLimits: auth.HasOwnLimits(), Replicas: ps.Replicas, Metrics: metrics, Feed: feed, Log: log, Tracer: so.Tracer,
		Guard: guardrails.New(guardrails.Options{Metrics: metrics, Runs: runs}), Approvals: gate,
	})
	if so.RegistryAPI.HubVersion == "" {
		so.RegistryAPI.HubVersion = so.Version
	}
	return New(Parts{
		Registry: reg, Auth: auth, Pipeline: pipe,
		Features: features.New(features.Options{Registry: reg, Log: log, Pipeline: pipe}),
		Edge: edge.New(edge.Options{
			MaxBodyBytes: so.MaxBodyBytes, AllowedOrigins: so.AllowedOrigins, MaxSessions: so.MaxSessions, MaxSessionsPerCaller: so.MaxSessionsPerCaller,
			AnonymousShare: so.AnonymousShare, Metrics: metrics,
			SessionIdleTimeout: so.SessionIdleTimeout, ReadTimeout: so.ReadTimeout, ReadHeaderTimeout: so.ReadHeaderTimeout, Log: log,
		}),
		Peers: ps, Runs: runs, Feed: feed, Find: find, Metrics: metrics,
		Admin: adminapi.New(adminapi.Options{Registry: reg, Auth: auth, Visible: pipeline.Visible, Log: log, RegistryAPI: so.RegistryAPI}),
		Tasks: taskhandle.New(nil),
		Chain: so.Chain, Approvals: gate,
	}, Options{Name: so.Name, Version: so.Version, Tracer: so.Tracer}, log)
}

func newTestHub(t *testing.T, specs []config.ServerSpec, opts ...hubOption) *testHub {
	t.Helper()
	return newTestHubAuth(t, specs, nil, opts...)
}

// newTestHubAuth is newTestHub with an authenticator (nil: everyone full).
func newTestHubAuth(t *testing.T, specs []config.ServerSpec, auth *callers.Auth, opts ...hubOption) *testHub {
	t.Helper()
	return newTestHubOpts(t, specs, hubOpts{Auth: auth}, opts...)
}

// newTestHubOpts is newTestHub with the server's Options chosen by the test.
func newTestHubOpts(t *testing.T, specs []config.ServerSpec, so hubOpts, opts ...hubOption) *testHub {
	t.Helper()
	return newTestHubLog(t, specs, so, nil, opts...)
}

// newTestHubLog is newTestHubOpts whose log, from level info on (the audit
// lines of allowed calls), also goes to audit when it is not nil.
func newTestHubLog(t *testing.T, specs []config.ServerSpec, so hubOpts, audit io.Writer, opts ...hubOption) *testHub {
	t.Helper()
	cfg, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	ro := registry.Options{
		Naming:         cfg.Naming,
		RouteCacheSize: 64,
		NotifyDebounce: 20 * time.Millisecond,
		Upstream: upstream.Options{
			Timeout: 5 * time.Second, ConnectTimeout: 2 * time.Second, PingInterval: 200 * time.Millisecond,
			BackoffMin: 50 * time.Millisecond, BackoffMax: 300 * time.Millisecond,
			BreakerFailures: 3, BreakerOpenFor: 500 * time.Millisecond, DiscoverTimeout: time.Second,
			ClientInfo: mcp.Implementation{Name: "mcp-hub-test", Version: "0"},
			Carried:    carried.New(cfg.Upstream.Extensions),
		},
	}
	for _, o := range opts {
		o(&ro)
	}
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	if audit != nil {
		log = zerolog.New(io.MultiWriter(zerolog.NewTestWriter(t), audit)).Level(zerolog.InfoLevel)
	}
	reg := registry.New(ro, log)
	so.Name, so.Version = "mcp-hub", "test"
	srv := newServer(reg, so, log)
	h := &testHub{t: t, reg: reg, srv: srv, src: chanSource{ch: make(chan []config.ServerSpec), virtual: make(chan []toolspec.VirtualServer)}}
	ctx, cancel := context.WithCancel(context.Background())
	regDone := make(chan struct{})
	go func() { defer close(regDone); reg.Run(ctx, h.src) }()
	h.src.ch <- specs

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.addr = ln.Addr().String()
	srvCtx, stopSrv := context.WithCancel(context.Background())
	srvDone := make(chan struct{})
	go func() { defer close(srvDone); _ = srv.Serve(srvCtx, ln, 2*time.Second) }()
	t.Cleanup(func() {
		stopSrv()
		<-srvDone
		cancel()
		<-regDone
	})
	return h
}

func (h *testHub) set(specs ...config.ServerSpec) { h.src.ch <- specs }

// setVirtual replaces the test source's virtual servers.
func (h *testHub) setVirtual(v ...toolspec.VirtualServer) { h.src.virtual <- v }

func (h *testHub) url(path string) string { return "http://" + h.addr + path }

// waitFor polls cond (reading the catalog, never sleeping blindly).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (h *testHub) status(server string) registry.Status {
	for _, sv := range h.reg.Catalog().Servers {
		if sv.Name == server {
			return sv.Status
		}
	}
	return registry.Status{}
}

func (h *testHub) waitConnected(servers ...string) {
	h.t.Helper()
	for _, s := range servers {
		waitFor(h.t, s+" connected", func() bool { return h.status(s).State == registry.StateConnected })
	}
	h.waitPublished()
}

// waitPublished waits until the MCP face serves the current catalog.
func (h *testHub) waitPublished() {
	h.t.Helper()
	// Gen 0 is the empty catalog before the registry's first build: the
	// hub's own tools are not in it yet.
	waitFor(h.t, "catalog published", func() bool {
		g := h.reg.Catalog().Gen
		return g > 0 && h.srv.tools.published.gen.Load() == g
	})
}

// dial returns an initialized mcp-go client of the hub with a listening
// stream, and a channel that receives every tools/list_changed.
func (h *testHub) dial() (*client.Client, <-chan struct{}) {
	h.t.Helper()
	tr, err := transport.NewStreamableHTTP(h.url("/mcp"), transport.WithContinuousListening())
	if err != nil {
		h.t.Fatal(err)
	}
	return dialFace(h.t, tr)
}

func toolNames(t *testing.T, c *client.Client) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

func call(t *testing.T, c *client.Client, name string, args map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	return resultText(res), res.IsError
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("decode %s: %v", url, err)
	}
}

func mustf(t *testing.T, cond bool, format string, args ...any) {
	t.Helper()
	if !cond {
		t.Fatalf(format, args...)
	}
}
