// Command mcp-hub puts many MCP servers behind one MCP endpoint.
//
//	mcp-hub [serve] [--listen ADDR] [--config FILE] [--log-level LEVEL] [--log-format json|console]
//	mcp-hub stdio   [--config FILE] [--log-level LEVEL] [--log-format json|console]
//	mcp-hub pins list|approve [--url URL] [--server S] [--tool T] [-o table|json]
//	mcp-hub tools list [--autonomy L] | call NAME [JSON] [--url URL] [-o json]
//	mcp-hub servers list|add|rm [NAME] [--url URL] [-o table|json]
//	mcp-hub version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"
	"k8s.io/klog/v2"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/discovery"
	envsource "github.com/purko-io/mcp-hub/internal/discovery/env"
	filesource "github.com/purko-io/mcp-hub/internal/discovery/file"
	"github.com/purko-io/mcp-hub/internal/hubchain"
	"github.com/purko-io/mcp-hub/internal/netpolicy"
	"github.com/purko-io/mcp-hub/internal/registry"
	"github.com/purko-io/mcp-hub/internal/secrets"
	"github.com/purko-io/mcp-hub/internal/server"
	"github.com/purko-io/mcp-hub/internal/tracing"
	"github.com/purko-io/mcp-hub/internal/upstream"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `mcp-hub puts many MCP servers behind one MCP endpoint.

Usage:
  mcp-hub [serve] [flags]   serve MCP over HTTP (/mcp, /sse, /ws) and the JSON listing
  mcp-hub stdio [flags]     serve the same catalog over stdin/stdout
  mcp-hub pins list|approve list or approve pinned tool definitions of a running hub
  mcp-hub tools list|call   list the tools of a running hub, or run one (mcp-hub tools for help)
  mcp-hub servers list|add|rm  list, register or remove the servers of a running hub
  mcp-hub validate --config FILE  check a config file (and every token and file it names) without starting
  mcp-hub version           print the version, commit and build date

Flags:
`

// options are the command-line settings shared by serve and stdio.
type options struct {
	listen              string
	pprof               string
	kubeconfig          string
	namespaces          string
	labelSelector       string
	secretNames         string
	authServiceAccounts bool
	config              string
	logLevel            string
	logFormat           string
	// tracer is from the OTEL_* environment (internal/tracing), nil when
	// tracing is off.
	tracer trace.Tracer
}

func run(args []string, stdout, stderr io.Writer) int {
	cmd := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "version":
		fmt.Fprintf(stdout, "mcp-hub %s\n", currentBuild())
		return 0
	case "serve", "stdio":
	case "pins":
		return runPins(args, stdout, stderr)
	case "tools":
		return runTools(args, stdout, stderr)
	case "servers":
		return runServers(args, stdout, stderr)
	case "validate":
		return runValidate(args, stdout, stderr)
	case "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "mcp-hub: unknown command %q (want serve, stdio, pins, servers, tools, validate or version)\n", cmd)
		return 2
	}

	fs := flag.NewFlagSet("mcp-hub "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	var o options
	if cmd == "serve" {
		fs.StringVar(&o.listen, "listen", "127.0.0.1:8080", "address to serve HTTP on")
		fs.StringVar(&o.pprof, "pprof", "", "serve Go profiles (net/http/pprof) on this address, e.g. 127.0.0.1:6060; off when empty")
	}
	fs.StringVar(&o.config, "config", "", "YAML config file (default: the embedded default config)")
	fs.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&o.logFormat, "log-format", "json", "log format: json or console")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file for the Kubernetes source out of a cluster (also KUBECONFIG); in a cluster the ServiceAccount is used")
	fs.StringVar(&o.namespaces, "namespaces", "", "namespaces to watch for MCPServers and the mcp-servers ConfigMap, comma-separated, * for all (default: the hub's own)")
	fs.StringVar(&o.labelSelector, "label-selector", "", "only MCPServers matching this label selector")
	fs.StringVar(&o.secretNames, "secret-names", "", "comma-separated: read only these Secrets, each watched by name, so RBAC can name them (default: every Secret of the watched namespaces)")
	fs.BoolVar(&o.authServiceAccounts, "auth-service-accounts", false, "admit pods by their ServiceAccount token (TokenReview) with their Agent's autonomy (also auth.serviceAccounts.enabled)")
	if err := fs.Parse(args); err != nil {
		return parseExit(err)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mcp-hub %s: unexpected arguments %q\n", cmd, fs.Args())
		return 2
	}

	// Logs go to stderr: in stdio mode stdout carries the protocol.
	log, err := newLogger(o.logLevel, o.logFormat, stderr)
	if err != nil {
		if o.logFormat == "json" {
			// Even a bad --log-level is a JSON line in JSON mode: log
			// collectors parse every line.
			plain := zerolog.New(stderr).With().Timestamp().Logger()
			plain.Error().Err(err).Msg("mcp-hub cannot start")
		} else {
			fmt.Fprintf(stderr, "mcp-hub: %v\n", err)
		}
		return 2
	}
	// The hub's heap is small and short-lived (requests); trading a little
	// memory for fewer collections shortens the call path. GOGC still wins.
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(400)
	}
	setMemoryLimit(memlimit.FromCgroup, log)
	// Libraries that log through log/slog end up in the same stream.
	slog.SetDefault(slog.New(zerolog.NewSlogHandler(log)))
	klog.SetSlogLogger(slog.Default()) // client-go's watch errors, e.g. RBAC denials
	cfg, err := loadConfig(o.config)
	if err != nil {
		log.Error().Err(err).Msg("mcp-hub cannot start")
		return 1
	}

	traces, err := tracing.Setup(context.Background(), "mcp-hub", hubVersion())
	if err != nil {
		log.Error().Err(fmt.Errorf("tracing: %w", err)).Msg("mcp-hub cannot start")
		return 1
	}
	defer flushTraces(traces, log)
	o.tracer = traces.Tracer()
	if traces.Enabled() {
		log.Info().Msg("tracing on: exporting spans over OTLP (OTEL_* environment)")
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if cmd == "stdio" {
		err = serveStdio(ctx, cfg, o, log)
	} else {
		err = serveHTTP(ctx, cfg, o, log, stdout)
	}
	if err != nil {
		log.Error().Err(err).Msg("mcp-hub stopped with an error")
		return 1
	}
	return 0
}

// traceFlushTimeout bounds how long a stopping hub waits for its last
// spans to reach the trace backend.
const traceFlushTimeout = 5 * time.Second

// flushTraces exports what spans are still buffered, as the hub stops.
func flushTraces(p *tracing.Provider, log zerolog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), traceFlushTimeout)
	defer cancel()
	if err := p.Shutdown(ctx); err != nil {
		log.Warn().Err(err).Msg("flushing traces on shutdown")
	}
}

func newLogger(level, format string, w io.Writer) (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(strings.ToLower(level))
	if err != nil || level == "" {
		return zerolog.Logger{}, fmt.Errorf("--log-level: %q is not one of debug, info, warn, error", level)
	}
	switch format {
	case "json":
	case "console":
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly}
	default:
		return zerolog.Logger{}, fmt.Errorf("--log-format: %q is not one of json, console", format)
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Logger(), nil
}

func loadConfig(path string) (*config.Config, error) {
	if path == "" {
		return config.Default()
	}
	return config.Load(path)
}

// hub is the wiring shared by serve and stdio.
type hub struct {
	reg     *registry.Registry
	srv     *server.Server
	sources []discovery.Source
	// close stops what the hub started besides the registry (the pins
	// ConfigMap watch, the Events sender); after the registry stopped.
	close func()
}

func newHub(cfg *config.Config, o options, log zerolog.Logger) (*hub, error) {
	// Credentials stay at their origin: a redirect to another scheme, host
	// or port drops every header but the harmless ones (upstreams and api
	// tools refuse such redirects on their own copies of this client).
	// Every connection of it, redirects too, is checked by the dial policy
	// on the address it connects to (dialPolicy).
	dial := dialPolicy(cfg)
	httpClient := &http.Client{CheckRedirect: secrets.StripCredentials, Transport: outboundTransport(dial)}
	local, err := localTools(context.Background(), cfg, o, httpClient)
	if err != nil {
		return nil, err
	}
	pins, err := newPins(cfg, o, log)
	if err != nil {
		return nil, err
	}
	chain := hubchain.New(cfg.Replicas.InstanceID)
	// The id as it appears in other hubs' Mcp-Hub-Chain headers.
	log.Info().Str("instance", chain.Instance()).Str("chainId", string(chain.Own())).Msg("instance id (registration loops are refused by it)")
	upstreamOpts := upstreamOptions(cfg, httpClient, o.tracer)
	upstreamOpts.Dial, upstreamOpts.Chain = dial, chain
	reg := registry.New(registry.Options{
		Local:          local,
		Naming:         cfg.Naming,
		RouteCacheSize: cfg.Catalog.RouteCacheSize,
		NotifyDebounce: cfg.Catalog.NotifyDebounce.D(),
		Upstream:       upstreamOpts,
		LogLevel:       upstreamLogLevel(cfg.Upstream.LogLevel),
		MaxResultChars: cfg.Upstream.ResultCap(),
		Pins:           pins.pinner,
		Names:          pins.names,
	}, log)
	pins.reportTo(reg)
	// The OAuth verifier's discovery and key refreshes run until close.
	authCtx, stopAuth := context.WithCancel(context.Background())
	closeAll := func() { stopAuth(); pins.close() }
	auth, err := buildAuth(authCtx, cfg, o, o.listen, log)
	if err != nil {
		closeAll()
		return nil, err
	}
	registered, registeredSource, err := newRegistrations(cfg, o, log)
	if err != nil {
		closeAll()
		return nil, err
	}
	srv := server.New(reg, server.Options{
		Name:         "mcp-hub",
		Version:      hubVersion(),
		Instructions: "mcp-hub serves the tools of many MCP servers through this one endpoint.",
		Auth:         auth,
		Peers:        cfg.Replicas.PeerList(),

		MaxBodyBytes:         cfg.HTTP.MaxBodyBytes,
		AllowedOrigins:       cfg.HTTP.AllowedOrigins,
		MaxSessions:          cfg.HTTP.MaxSessions,
		MaxSessionsPerCaller: cfg.HTTP.MaxSessionsPerCaller,
		SessionIdleTimeout:   cfg.HTTP.SessionIdleTimeout.D(),
		ReadTimeout:          cfg.HTTP.ReadTimeout.D(),
		ReadHeaderTimeout:    cfg.HTTP.ReadHeaderTimeout.D(),

		PerCaller:   server.LimitsOf(cfg.Limits.PerCaller, "limits.perCaller"),
		PerUpstream: server.LimitsOf(cfg.Limits.PerUpstream, "limits.perUpstream"),
		Tracer:      o.tracer,

		FindToolsAbove: cfg.Catalog.FindTools.Above,
		Registrations:  registered,
		Chain:          chain,
	}, log)
	var sources []discovery.Source
	if o.config != "" {
		sources = append(sources, filesource.New(o.config, cfg, log))
	}
	if registeredSource != nil {
		sources = append(sources, registeredSource)
	}
	if v, ok := os.LookupEnv("MCP_SERVERS"); ok && strings.TrimSpace(v) != "" {
		// A bad entry stops start-up, as a bad config file does: a hub
		// without a server it was given is not what was asked for.
		if _, errs := envsource.Parse(v); len(errs) > 0 {
			closeAll()
			return nil, errors.Join(errs...)
		}
		sources = append(sources, envsource.New(v, log))
	}
	ks, err := kubeSource(o, cfg.Kubernetes, log)
	if err != nil {
		closeAll()
		return nil, err
	}
	if ks != nil {
		sources = append(sources, ks)
		reg.OnChange(func(cat *registry.Catalog) { ks.ReportStatus(kubeStatuses(cat)) })
	}
	return &hub{reg: reg, srv: srv, sources: sources, close: closeAll}, nil
}

// dialPolicy is what addresses the hub's outbound connections for
// upstreams, api tools and their redirects may reach (upstream.dial).
func dialPolicy(cfg *config.Config) *netpolicy.Policy {
	d := cfg.Upstream.Dial
	return &netpolicy.Policy{Loopback: d.LoopbackAllowed(), Private: d.PrivateAllowed(), Setting: "upstream.dial"}
}

// outboundTransport is the connection pool of everything the hub reaches
// for its catalog, every connection checked by dial.
func outboundTransport(dial *netpolicy.Policy) *http.Transport {
	return &http.Transport{
		Proxy:               dial.Proxy(http.ProxyFromEnvironment),
		DialContext:         dial.Dialer(&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        1024,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   true,
	}
}

// upstreamOptions are the connection settings of every upstream.
func upstreamOptions(cfg *config.Config, httpClient *http.Client, tracer trace.Tracer) upstream.Options {
	opts := upstream.OptionsFrom(cfg.Upstream, httpClient, mcp.Implementation{Name: "mcp-hub", Version: hubVersion()})
	opts.Tracer = tracer
	return opts
}

// runRegistry runs the registry until ctx ends; the returned channel closes
// once every upstream is stopped and every stdio child is gone.
func (h *hub) runRegistry(ctx context.Context) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.reg.Run(ctx, h.sources...)
	}()
	return done
}

func serveHTTP(ctx context.Context, cfg *config.Config, o options, log zerolog.Logger, stdout io.Writer) error {
	h, err := newHub(cfg, o, log)
	if err != nil {
		return err
	}
	defer h.close()
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.listen, err)
	}
	if o.pprof != "" {
		stopProfiles, err := serveProfiles(o.pprof, log)
		if err != nil {
			ln.Close()
			return err
		}
		defer stopProfiles()
	}
	regCtx, cancelReg := context.WithCancel(context.Background())
	regDone := h.runRegistry(regCtx)
	addr := ln.Addr().String()
	// The first line on stdout says where the hub listens (scripts and
	// tests read it); in JSON mode it is a JSON log line like every other.
	banner := fmt.Sprintf("mcp-hub %s listening on http://%s/mcp (SSE: /sse, WebSocket: /ws, tools: /api/mcp/tools)", hubVersion(), addr)
	if o.logFormat == "json" {
		out := zerolog.New(stdout).With().Timestamp().Logger()
		out.Info().Str("url", "http://"+addr+"/mcp").Str("version", hubVersion()).Int("sources", len(h.sources)).Msg(banner)
	} else {
		fmt.Fprintln(stdout, banner)
	}
	err = h.srv.Serve(ctx, ln, cfg.ShutdownGrace.D())
	cancelReg()
	<-regDone
	log.Info().Msg("stopped")
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

func serveStdio(ctx context.Context, cfg *config.Config, o options, log zerolog.Logger) error {
	level, err := stdioLevel()
	if err != nil {
		return err
	}
	h, err := newHub(cfg, o, log)
	if err != nil {
		return err
	}
	defer h.close()
	regCtx, cancelReg := context.WithCancel(context.Background())
	regDone := h.runRegistry(regCtx)
	err = h.srv.ServeStdio(ctx, os.Stdin, os.Stdout, level)
	cancelReg()
	<-regDone
	if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// serveProfiles serves net/http/pprof on its own listener, apart from the
// MCP endpoint, so profiles are never exposed where callers connect.
func serveProfiles(addr string, log zerolog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--pprof: listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	log.Info().Str("addr", ln.Addr().String()).Msg("serving profiles at /debug/pprof/")
	return func() { _ = hs.Close() }, nil
}

// upstreamLogLevel is the level upstreams get on connect; "off" is none.
func upstreamLogLevel(l string) mcp.LoggingLevel {
	if l == "off" {
		return ""
	}
	return mcp.LoggingLevel(l)
}
