// Command mcp-hub puts many MCP servers behind one MCP endpoint.
//
//	mcp-hub [serve] [--listen ADDR] [--config FILE] [--log-level LEVEL] [--log-format json|console]
//	mcp-hub stdio   [--config FILE] [--server NAME] [--log-level LEVEL] [--log-format json|console]
//	mcp-hub pins list|approve [--url URL] [--server S] [--tool T] [-o table|json]
//	mcp-hub tools list [--autonomy L] | call NAME [JSON] [--url URL] [-o json]
//	mcp-hub servers list|add|rm [NAME] [--url URL] [-o table|json]
//	mcp-hub servers import FILE|REGISTRY_URL [--secret-ref REF] [--var K=V] [--hub URL] [--dry-run]
//	mcp-hub version
package main

import (
	"context"
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
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"
	"k8s.io/klog/v2"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/hub"
	"github.com/purko-io/mcp-hub/internal/tracing"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `mcp-hub puts many MCP servers behind one MCP endpoint.

Usage:
  mcp-hub [serve] [flags]   serve MCP over HTTP (/mcp, /sse, /ws; /servers/NAME/mcp for one server or virtual server) and the JSON listing
  mcp-hub stdio [flags]     serve the same catalog over stdin/stdout (--server NAME: one server's or virtual server's part)
  mcp-hub pins list|approve list or approve pinned tool definitions of a running hub
  mcp-hub tools list|call   list the tools of a running hub, or run one (mcp-hub tools for help)
  mcp-hub servers list|add|rm|import  list, register, remove or import (server.json) the servers of a running hub
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
	stateDir            string
	logLevel            string
	logFormat           string
	// endpoint is stdio's --server: one server's or virtual server's part
	// of the catalog, "" the whole.
	endpoint string
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
	} else {
		fs.StringVar(&o.endpoint, "server", "", "serve only this server's or virtual server's tools, as /servers/NAME/mcp does (default: the whole catalog)")
	}
	fs.StringVar(&o.config, "config", "", "YAML config file (default: the embedded default config)")
	fs.StringVar(&o.stateDir, "state-dir", "", "directory of this hub's pins, stable names and registered servers (also MCP_HUB_STATE_DIR; default: one per config file under $XDG_STATE_HOME/mcp-hub; unused in a cluster)")
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

// hubOptions are the hub's settings from the command line.
func (o options) hubOptions() hub.Options {
	return hub.Options{
		ConfigPath:          o.config,
		Listen:              o.listen,
		Kubeconfig:          o.kubeconfig,
		Namespaces:          o.namespaces,
		LabelSelector:       o.labelSelector,
		SecretNames:         o.secretNames,
		AuthServiceAccounts: o.authServiceAccounts,
		Version:             hubVersion(),
		Tracer:              o.tracer,
		StateDir:            o.stateDir,
	}
}

func serveHTTP(ctx context.Context, cfg *config.Config, o options, log zerolog.Logger, stdout io.Writer) error {
	h, err := hub.New(context.Background(), cfg, o.hubOptions(), log)
	if err != nil {
		return err
	}
	defer h.Close()
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
	addr := ln.Addr().String()
	// The first line on stdout says where the hub listens (scripts and
	// tests read it); in JSON mode it is a JSON log line like every other.
	banner := fmt.Sprintf("mcp-hub %s listening on http://%s/mcp (SSE: /sse, WebSocket: /ws, tools: /api/mcp/tools)", hubVersion(), addr)
	if o.logFormat == "json" {
		out := zerolog.New(stdout).With().Timestamp().Logger()
		out.Info().Str("url", "http://"+addr+"/mcp").Str("version", hubVersion()).Int("sources", h.Sources()).Msg(banner)
	} else {
		fmt.Fprintln(stdout, banner)
	}
	err = h.Serve(ctx, ln)
	log.Info().Msg("stopped")
	return err
}

func serveStdio(ctx context.Context, cfg *config.Config, o options, log zerolog.Logger) error {
	level, err := stdioLevel()
	if err != nil {
		return err
	}
	h, err := hub.New(context.Background(), cfg, o.hubOptions(), log)
	if err != nil {
		return err
	}
	defer h.Close()
	return h.ServeStdio(ctx, os.Stdin, os.Stdout, level, o.endpoint)
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

// stdioLevel is the autonomy of the stdio face's local user: the executor's
// AUTONOMY_LEVEL when set, else full.
func stdioLevel() (autonomy.Level, error) {
	v, ok := os.LookupEnv("AUTONOMY_LEVEL")
	if !ok || v == "" {
		return autonomy.Full, nil
	}
	lvl, err := autonomy.ParseLevel(v)
	if err != nil {
		return 0, fmt.Errorf("AUTONOMY_LEVEL: %w", err)
	}
	return lvl, nil
}
