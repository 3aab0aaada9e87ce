package hub

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/adminapi"
	"github.com/purko-io/mcp-hub/internal/approvals"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/callfeed"
	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/edge"
	"github.com/purko-io/mcp-hub/internal/features"
	"github.com/purko-io/mcp-hub/internal/findtools"
	"github.com/purko-io/mcp-hub/internal/guardrails"
	"github.com/purko-io/mcp-hub/internal/hubchain"
	"github.com/purko-io/mcp-hub/internal/peers"
	"github.com/purko-io/mcp-hub/internal/pipeline"
	"github.com/purko-io/mcp-hub/internal/registrations"
	"github.com/purko-io/mcp-hub/internal/registry"
	"github.com/purko-io/mcp-hub/internal/server"
	"github.com/purko-io/mcp-hub/internal/taskhandle"
	"github.com/purko-io/mcp-hub/internal/usergrants"
)

// peerBodyBytes bounds what a peer replica may send or return, as the
// hub bounds one message it reads.
const peerBodyBytes = 16 << 20

// faces builds the collaborators of the MCP faces from cfg (the replicas,
// the edge's guards, tool search, the guardrails and their shared runs,
// the pipeline, MCP beyond tools, the REST API, the metrics registry, the
// task handles' key) and the faces over them. The server receives them:
// what each is made of is the configuration's business, here.
func faces(cfg *config.Config, reg *registry.Registry, auth *callers.Auth, registered registrations.Writer, chain *hubchain.Chain, grants *usergrants.Broker, name string, o Options, log zerolog.Logger) *server.Server {
	// The faces' collaborators log as the faces do.
	flog := log.With().Str("component", "server").Logger()
	ps := peers.New(cfg.Replicas.PeerList(), peerBodyBytes)
	metrics := o.Metrics
	if metrics == nil {
		metrics = prometheus.NewRegistry()
	}
	if err := ps.Register(metrics); err != nil {
		flog.Warn().Err(err).Msg("mcphub_peer_requests_total is not exported")
	}
	find := findtools.New(cfg.Catalog.FindTools.Above, reg)
	route := pipeline.Router(nil) // the registry's alone
	if find != nil {
		// find_tools, the hub's own tool, ahead of the registry's.
		route = find.Route
	}
	// A caller's runs are counted by its owner among the replicas.
	runs := guardrails.NewRuns(peers.Asker[guardrails.Charge, guardrails.Spent](ps, peers.KindRun, peers.RunPath))
	feed := callfeed.New(cfg.HTTP.AnonymousPercent())
	gate := approvals.New(approvals.Options{
		Timeout: cfg.Approvals.Timeout.D(), Approvers: cfg.Approvals.Approvers, Webhook: approvalWebhook(cfg),
		Peers: ps, Metrics: metrics, Log: flog, OnChange: feed.ApprovalsChanged,
	})
	pipe := pipeline.New(pipeline.Options{
		Registry: reg, Route: route,
		PerCaller:       pipeline.LimitsOf(cfg.Limits.PerCaller, "limits.perCaller"),
		PerUpstream:     pipeline.LimitsOf(cfg.Limits.PerUpstream, "limits.perUpstream"),
		OwnCallerLimits: auth.HasOwnLimits(), Replicas: ps.Replicas,
		MaxInFlight: *cfg.Limits.MaxInFlight, AnonymousShare: cfg.HTTP.AnonymousPercent(),
		Metrics: metrics, Feed: feed, Log: flog, Tracer: o.Tracer,
		Guard:     guardrails.New(guardrails.Options{Metrics: metrics, Runs: runs}),
		Approvals: gate,
	})
	api := adminapi.RegistryOptions{Namespace: cfg.RegistryAPI.Namespace, BaseURL: cfg.RegistryBaseURL(), HubVersion: o.Version}
	return server.New(server.Parts{
		Registry: reg,
		Auth:     auth,
		Pipeline: pipe,
		Features: features.New(features.Options{Registry: reg, Log: flog, Pipeline: pipe}),
		Edge: edge.New(edge.Options{
			MaxBodyBytes: cfg.HTTP.MaxBodyBytes, AllowedOrigins: cfg.HTTP.AllowedOrigins,
			MaxSessions: cfg.HTTP.MaxSessions, MaxSessionsPerCaller: cfg.HTTP.MaxSessionsPerCaller,
			AnonymousShare: cfg.HTTP.AnonymousShare, Metrics: metrics,
			SessionIdleTimeout: cfg.HTTP.SessionIdleTimeout.D(),
			ReadTimeout:        cfg.HTTP.ReadTimeout.D(), ReadHeaderTimeout: cfg.HTTP.ReadHeaderTimeout.D(),
			Log: flog,
		}),
		Peers:   ps,
		Runs:    runs,
		Feed:    feed,
		Find:    find,
		Metrics: metrics,
		Admin: adminapi.New(adminapi.Options{
			Registry: reg, Auth: auth, Visible: pipeline.Visible, Registrations: registered, Log: flog, RegistryAPI: api,
		}),
		Tasks:     taskhandle.New([]byte(cfg.Replicas.SecretValue)),
		Chain:     chain,
		Approvals: gate,
		Grants:    grants,
	}, server.Options{
		Name:         name,
		Version:      o.Version,
		Instructions: "mcp-hub serves the tools of many MCP servers through this one endpoint.",
		Tracer:       o.Tracer,
	}, log)
}

// approvalWebhook is approvals.webhook, nil when none is set: its POSTs
// go under the dial policy of upstreams, its links to the hub's address as
// approvers reach it.
func approvalWebhook(cfg *config.Config) *approvals.Webhook {
	w := cfg.Approvals.Webhook
	if w == nil {
		return nil
	}
	hook := &approvals.Webhook{URL: w.URL, ConsoleURL: w.ConsoleURL,
		Client: &http.Client{Transport: outboundTransport(dialPolicy(cfg)), Timeout: 15 * time.Second,
			// A redirect would take the credential elsewhere.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	if hook.ConsoleURL == "" {
		hook.ConsoleURL = cfg.RegistryBaseURL()
	}
	if w.TokenValue != "" {
		hook.Authorization = "Bearer " + string(w.TokenValue)
	}
	return hook
}
