package hub

import (
	"cmp"
	"fmt"

	"github.com/rs/zerolog"
	"k8s.io/client-go/dynamic"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/discovery"
	"github.com/purko-io/mcp-hub/internal/registrations"
	"github.com/purko-io/mcp-hub/internal/statedir"
)

// newRegistrations opens where POST /api/mcp/server writes: with a cluster
// the mcp-servers ConfigMap and MCPServers of the namespace the hub
// watches (the Kubernetes source brings them into the catalog); without
// one a hub-managed file in the state directory, which is also returned as
// the discovery source that reads it (read-only when another hub holds the
// directory).
func newRegistrations(cfg *config.Config, o Options, state *statedir.Dir, log zerolog.Logger) (registrations.Writer, discovery.Source, error) {
	rc, own, err := clusterConfig(o)
	if err != nil {
		return nil, nil, err
	}
	if rc == nil {
		path := state.Registrations()
		f, err := registrations.OpenFile(path, cfg.Registrations, log)
		if err != nil {
			return nil, nil, err
		}
		if state.ReadOnly {
			f.SetReadOnly(state.HeldBy())
		}
		reportUnkept(f, cfg, log)
		log.Info().Str("file", path).Msg("servers registered through the API are kept in this file")
		return f, f, nil
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, nil, fmt.Errorf("registrations: %w", err)
	}
	ns := registrationsNamespace(o, cfg.Kubernetes, own)
	k := registrations.NewKube(dyn, ns, cfg.Kubernetes.ConfigMapName, secretNames(o, cfg.Kubernetes))
	log.Info().Str("namespace", ns).Msg("servers registered through the API are written to the mcp-servers ConfigMap and MCPServers")
	return k, nil, nil
}

// registrationsNamespace is where registrations are written: the one
// namespace watched when a single one is named (so the hub reads what it
// writes), else the hub's own (Purko's dashboard writes its own namespace).
func registrationsNamespace(o Options, settings config.KubeSettings, own string) string {
	if ns := watchNamespaces(o.Namespaces, settings, own); len(ns) == 1 && ns[0] != "" {
		return ns[0]
	}
	return cmp.Or(own, "default")
}
