// Command mcp-hub puts many MCP servers behind one MCP endpoint.
//
//	mcp-hub [serve] [--listen ADDR] [--config FILE] [--log-level LEVEL] [--log-format auto|json|console]
//	mcp-hub stdio   [--config FILE] [--server NAME] [--log-level LEVEL] [--log-format auto|json|console]
//	mcp-hub pins list|approve [--server S] [--tool T] [--hub URL] [-o table|json|yaml|wide]
//	mcp-hub tools list [--autonomy L] | call NAME [KEY=VALUE...] [--hub URL] [-o ...]
//	mcp-hub servers list|add|rm|import ... [--hub URL] [-o ...]
//	mcp-hub validate FILE
//	mcp-hub version | --version | completion bash|zsh|fish|powershell
//
// See docs/cli.md.
package main

import (
	"context"
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
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/term"
	"k8s.io/klog/v2"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/hub"
	"github.com/purko-io/mcp-hub/internal/tracing"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

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

// newServeCommand is `mcp-hub serve` (mode "serve") or `mcp-hub stdio`.
func newServeCommand(mode string, stdout, stderr io.Writer) *cobra.Command {
	var o options
	c := &cobra.Command{
		Use:   mode,
		Short: "Serve MCP over HTTP (/mcp, /sse, /ws, /servers/NAME/mcp), the REST API and the web console",
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return serve(cmd, mode, &o, stdout, stderr) },
	}
	if mode == "stdio" {
		c.Short = "Serve the same catalog over stdin/stdout (for clients that start the hub themselves)"
	}
	serveFlags(c.Flags(), &o, mode)
	return c
}

// serveFlags adds the flags of serve (also the root command's) or stdio.
func serveFlags(fs *pflag.FlagSet, o *options, mode string) {
	if mode == "serve" {
		fs.StringVar(&o.listen, "listen", "127.0.0.1:8080", "address to serve HTTP on")
		fs.StringVar(&o.pprof, "pprof", "", "serve Go profiles (net/http/pprof) on this address, e.g. 127.0.0.1:6060; off when empty")
	} else {
		fs.StringVar(&o.endpoint, "server", "", "serve only this server's or virtual server's tools, as /servers/NAME/mcp does (default: the whole catalog)")
	}
	fs.StringVar(&o.config, "config", "", "YAML config file (default: the embedded default config)")
	fs.StringVar(&o.stateDir, "state-dir", "", "directory of this hub's pins, stable names and registered servers (also MCP_HUB_STATE_DIR; default: one per config file under $XDG_STATE_HOME/mcp-hub; unused in a cluster)")
	fs.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&o.logFormat, "log-format", "auto", "log format: console, json, or auto (console when stderr is a terminal, else json)")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file for the Kubernetes source out of a cluster (also KUBECONFIG); in a cluster the ServiceAccount is used")
	fs.StringVar(&o.namespaces, "namespaces", "", "namespaces to watch for MCPServers and the mcp-servers ConfigMap, comma-separated, * for all (default: the hub's own)")
	fs.StringVar(&o.labelSelector, "label-selector", "", "only MCPServers matching this label selector")
	fs.StringVar(&o.secretNames, "secret-names", "", "comma-separated: read only these Secrets, each watched by name, so RBAC can name them (default: every Secret of the watched namespaces)")
	fs.BoolVar(&o.authServiceAccounts, "auth-service-accounts", false, "admit pods by their ServiceAccount token (TokenReview) with their Agent's autonomy (also auth.serviceAccounts.enabled)")
}

// serve runs the hub (mode serve or stdio) until SIGTERM or SIGINT. Its
// failures are log lines; the error is the exit status.
func serve(_ *cobra.Command, mode string, o *options, stdout, stderr io.Writer) error {
	// Logs go to stderr: in stdio mode stdout carries the protocol.
	o.logFormat = resolveLogFormat(o.logFormat, stderr)
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
		return exitStatus(2)
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
		return exitStatus(1)
	}

	traces, err := tracing.Setup(context.Background(), "mcp-hub", hubVersion())
	if err != nil {
		log.Error().Err(fmt.Errorf("tracing: %w", err)).Msg("mcp-hub cannot start")
		return exitStatus(1)
	}
	defer flushTraces(traces, log)
	o.tracer = traces.Tracer()
	if traces.Enabled() {
		log.Info().Msg("tracing on: exporting spans over OTLP (OTEL_* environment)")
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if mode == "stdio" {
		err = serveStdio(ctx, cfg, *o, log)
	} else {
		err = serveHTTP(ctx, cfg, *o, log, stdout)
	}
	if err != nil {
		log.Error().Err(err).Msg("mcp-hub stopped with an error")
		return exitStatus(1)
	}
	return nil
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

// resolveLogFormat is --log-format with auto resolved: console for a
// person at a terminal (stderr is one), json for a log collector.
func resolveLogFormat(format string, stderr io.Writer) string {
	if format != "auto" {
		return format
	}
	if isTerminal(stderr) {
		return "console"
	}
	return "json"
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// colour reports whether console lines to w may be coloured: w is a
// terminal and NO_COLOR (https://no-color.org) is not set in getenv.
func colour(w io.Writer, getenv func(string) string) bool {
	return getenv("NO_COLOR") == "" && isTerminal(w)
}

// newLogger is the hub's logger on w: JSON lines, or console lines for
// people, in colour only where colour says.
func newLogger(level, format string, w io.Writer) (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(strings.ToLower(level))
	if err != nil || level == "" {
		return zerolog.Logger{}, fmt.Errorf("--log-level: %q is not one of debug, info, warn, error", level)
	}
	switch format {
	case "json":
	case "console":
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly, NoColor: !colour(w, os.Getenv)}
	default:
		return zerolog.Logger{}, fmt.Errorf("--log-format: %q is not one of auto, json, console", format)
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
	printBanner(stdout, o.logFormat, ln.Addr().String(), cfg.Auth.Configured(), h.Sources())
	err = h.Serve(ctx, ln)
	log.Info().Msg("stopped")
	return err
}

// printBanner prints where the hub listens, its web console and how to
// connect a client. Its first line on stdout says where the hub listens
// (scripts and tests read it); in JSON mode it is one JSON log line like
// every other, with the console and the hint as fields.
func printBanner(stdout io.Writer, format, addr string, auth bool, sources int) {
	listening := "http://" + addr
	local := listening // what a client on this machine dials
	if host, port, err := net.SplitHostPort(addr); err == nil && net.ParseIP(host).IsUnspecified() {
		local = "http://" + net.JoinHostPort("127.0.0.1", port)
	}
	connect := "claude mcp add --transport http mcp-hub " + local + "/mcp"
	if auth {
		connect += ` --header "Authorization: Bearer $MCP_HUB_TOKEN"`
	}
	banner := fmt.Sprintf("mcp-hub %s listening on %s/mcp (SSE: /sse, WebSocket: /ws, tools: /api/mcp/tools)", hubVersion(), listening)
	if format == "json" {
		out := zerolog.New(stdout).With().Timestamp().Logger()
		out.Info().Str("url", listening+"/mcp").Str("console", local+"/").Str("connect", connect).
			Str("version", hubVersion()).Int("sources", sources).Msg(banner)
		return
	}
	fmt.Fprintf(stdout, "%s\n  web console:          %s/\n  connect Claude Code:  %s\n", banner, local, connect)
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
