// Package hub wires one mcp-hub from its config: the registry and the
// sources of its catalog, the connection settings of every upstream, the
// hub's own tools, caller authentication, the server and its faces,
// tracing, pinning and the registrations written through the API.
//
// It is what `mcp-hub serve` and `mcp-hub stdio` run and what the tests
// start, so a test's hub is wired as the one that ships: no test wires a
// hub by hand, where it could drift from production. Command-line parsing,
// signals, logging set-up and the process's memory settings stay in main.
package hub

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/discovery"
	envsource "github.com/purko-io/mcp-hub/internal/discovery/env"
	filesource "github.com/purko-io/mcp-hub/internal/discovery/file"
	"github.com/purko-io/mcp-hub/internal/hubchain"
	"github.com/purko-io/mcp-hub/internal/netpolicy"
	"github.com/purko-io/mcp-hub/internal/registry"
	"github.com/purko-io/mcp-hub/internal/secrets"
	"github.com/purko-io/mcp-hub/internal/server"
	"github.com/purko-io/mcp-hub/internal/upstream"
	"github.com/purko-io/mcp-hub/internal/usergrants"
)

// name is the hub's name in initialize's serverInfo and in the clientInfo
// it sends upstream.
const name = "mcp-hub"

// Options are a hub's settings that are not in its config file: the
// command line's, and what the process knows about itself.
type Options struct {
	// ConfigPath is the file the config was read from; "" for the
	// embedded default. A hub with a file watches it for servers; its
	// state directory is named after it (StateDir).
	ConfigPath string
	// Listen is the address the HTTP faces will listen on; "" when the
	// hub serves none (stdio). With no auth configured, anonymous callers
	// are admitted only on a loopback address.
	Listen string
	// Kubeconfig is the cluster's kubeconfig out of a cluster (else
	// KUBECONFIG, else the pod's ServiceAccount in one).
	Kubeconfig string
	// Namespaces (comma-separated, * for all), LabelSelector and
	// SecretNames (comma-separated) narrow what the Kubernetes source
	// watches, over the config's kubernetes settings.
	Namespaces, LabelSelector, SecretNames string
	// AuthServiceAccounts admits pods by their ServiceAccount token, as
	// auth.serviceAccounts.enabled does.
	AuthServiceAccounts bool
	// Version is the hub's version in serverInfo and in the clientInfo
	// sent upstream.
	Version string
	// Tracer records the hub's spans; nil when tracing is off.
	Tracer trace.Tracer
	// StateDir is --state-dir: where a hub without a cluster keeps its
	// pins, stable names and registrations; "" for $MCP_HUB_STATE_DIR,
	// else one directory per config file (internal/statedir).
	StateDir string
	// Metrics is the registry the hub registers its metrics in and serves
	// at /metrics; nil for a registry of its own. A program embedding the
	// hub passes its own, and so can read every family the hub declares,
	// those no call has touched yet included (the chart's dashboard test).
	Metrics *prometheus.Registry
}

// Hub is one wired hub: a registry fed by its sources and the server that
// serves its catalog. It serves once (Serve or ServeStdio), then Close
// stops what it started.
type Hub struct {
	reg     *registry.Registry
	srv     *server.Server
	sources []discovery.Source
	// grace is how long Serve lets calls in flight finish once its
	// context ends (shutdownGrace).
	grace time.Duration
	// grants keep callers' own grants at servers with userOAuth; nil: none.
	grants *usergrants.Broker
	// close stops what the hub started besides the registry (the OAuth
	// refreshes, the pins ConfigMap watch, the Events sender); after the
	// registry stopped.
	close func()
}

// New wires the hub cfg describes. ctx bounds the work of start-up
// (OpenAPI documents, Secrets, the pins ConfigMap's first read); what the
// hub runs in the background afterwards (OAuth key refreshes) runs until
// Close. A config the hub cannot honour (a credential missing, a bad
// MCP_SERVERS entry, no auth off loopback) is an error naming the field.
func New(ctx context.Context, cfg *config.Config, o Options, log zerolog.Logger) (*Hub, error) {
	// Credentials stay at their origin: a redirect to another scheme, host
	// or port drops every header but the harmless ones (upstreams and api
	// tools refuse such redirects on their own copies of this client).
	// Every connection of it, redirects too, is checked by the dial policy
	// on the address it connects to (dialPolicy).
	dial := dialPolicy(cfg)
	httpClient := &http.Client{CheckRedirect: secrets.StripCredentials, Transport: outboundTransport(dial)}
	local, err := localTools(ctx, cfg, o, httpClient)
	if err != nil {
		return nil, err
	}
	state, err := openState(cfg, o, log)
	if err != nil {
		return nil, err
	}
	pins, err := newPins(ctx, cfg, o, state, log)
	if err != nil {
		state.Close()
		return nil, err
	}
	chain := hubchain.New(cfg.Replicas.InstanceID)
	// The id as it appears in other hubs' Mcp-Hub-Chain headers.
	log.Info().Str("instance", chain.Instance()).Str("chainId", string(chain.Own())).Msg("this hub's id: sent with its requests to upstreams, so that a request that comes back to it through another hub is refused instead of going round in a loop")
	grants, err := newGrants(ctx, cfg, o, state, dial, log)
	if err != nil {
		pins.close()
		state.Close()
		return nil, err
	}
	upstreamOpts := upstreamOptions(cfg, httpClient, o)
	upstreamOpts.Dial, upstreamOpts.Chain = dial, chain
	if grants != nil {
		upstreamOpts.UserGrants = grants.For
	}
	reg := registry.New(registry.Options{
		Local:          local,
		Naming:         cfg.Naming,
		RouteCacheSize: cfg.Catalog.RouteCacheSize,
		NotifyDebounce: cfg.Catalog.NotifyDebounce.D(),
		Upstream:       upstreamOpts,
		LogLevel:       upstreamLogLevel(cfg.Upstream.LogLevel),
		MaxResultChars: cfg.Upstream.ResultCap(),
		Pins:           pins.pinner,
		Screening:      cfg.Screening.Mode,
		Names:          pins.names,
	}, log)
	pins.reportTo(reg)
	// The OAuth verifier's discovery and key refreshes run until close.
	authCtx, stopAuth := context.WithCancel(context.WithoutCancel(ctx))
	closeAll := func() { stopAuth(); pins.close(); state.Close() }
	auth, err := buildAuth(authCtx, cfg, o, log)
	if err != nil {
		closeAll()
		return nil, err
	}
	registered, registeredSource, err := newRegistrations(cfg, o, state, log)
	if err != nil {
		closeAll()
		return nil, err
	}
	srv := faces(cfg, reg, auth, registered, chain, grants, name, o, log)
	var sources []discovery.Source
	if o.ConfigPath != "" {
		sources = append(sources, filesource.New(o.ConfigPath, cfg, log))
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
	return &Hub{reg: reg, srv: srv, sources: sources, grace: cfg.ShutdownGrace.D(), grants: grants, close: closeAll}, nil
}

// Sources is how many sources feed the catalog (the config file, the
// registrations file, MCP_SERVERS, Kubernetes): the start-up banner says
// it.
func (h *Hub) Sources() int { return len(h.sources) }

// Catalog is the catalog as last published; tests wait on it.
func (h *Hub) Catalog() *registry.Catalog { return h.reg.Catalog() }

// Serve serves the HTTP faces (/mcp, /sse, /ws, the REST API and the
// console) on ln until ctx ends, then lets the calls in flight finish
// within the shutdown grace. The catalog's upstreams run meanwhile and
// stop after the last call, so a draining call still reaches its
// upstream; Serve returns once they are stopped, nil for a shutdown.
func (h *Hub) Serve(ctx context.Context, ln net.Listener) error {
	if h.grants != nil {
		h.grants.DefaultPublicURL(listenURL(ln))
	}
	err := h.run(ctx, func() error { return h.srv.Serve(ctx, ln, h.grace) })
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// ServeStdio serves the stdio face on in and out, as the local user with
// autonomy level, until ctx ends or in does; the upstreams run meanwhile
// and are stopped when it returns, nil for either end. endpoint, when set,
// narrows it to that server's or virtual server's tools.
func (h *Hub) ServeStdio(ctx context.Context, in io.Reader, out io.Writer, level autonomy.Level, endpoint string) error {
	err := h.run(ctx, func() error { return h.srv.ServeStdio(ctx, in, out, level, endpoint) })
	if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// run runs the registry and its sources while serve runs. The registry's
// context is not ctx's cancellation: it stops only once serve returned,
// and run returns once every upstream is stopped and every stdio child is
// gone.
func (h *Hub) run(ctx context.Context, serve func() error) error {
	regCtx, cancelReg := context.WithCancel(context.WithoutCancel(ctx))
	regDone := make(chan struct{})
	go func() {
		defer close(regDone)
		h.reg.Run(regCtx, h.sources...)
	}()
	err := serve()
	cancelReg()
	<-regDone
	return err
}

// Close stops what New started besides the registry (Serve stops that):
// the OAuth refreshes, the pins ConfigMap watch and the Events sender.
func (h *Hub) Close() { h.close() }

// Check builds what New builds from cfg besides the catalog — the hub's
// own tools (api tools and OpenAPI imports, with their credentials) and
// the authenticators — and returns the first error, which names the field:
// `mcp-hub validate` runs it, so a config it accepts is one New accepts.
// The work it starts in the background (OAuth discovery) ends with ctx.
func Check(ctx context.Context, cfg *config.Config, o Options) error {
	// OpenAPI documents are fetched as New fetches them: under the dial
	// policy.
	hc := &http.Client{Timeout: 20 * time.Second, Transport: outboundTransport(dialPolicy(cfg))}
	if _, err := localTools(ctx, cfg, o, hc); err != nil {
		return err
	}
	if _, err := buildAuth(ctx, cfg, o, zerolog.Nop()); err != nil {
		return err
	}
	return nil
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
func upstreamOptions(cfg *config.Config, httpClient *http.Client, o Options) upstream.Options {
	opts := upstream.OptionsFrom(cfg.Upstream, httpClient, mcp.Implementation{Name: name, Version: o.Version})
	opts.Tracer = o.Tracer
	return opts
}

// upstreamLogLevel is the level upstreams get on connect; "off" is none.
func upstreamLogLevel(l string) mcp.LoggingLevel {
	if l == "off" {
		return ""
	}
	return mcp.LoggingLevel(l)
}
