package hub

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"time"

	"github.com/rs/zerolog"
	"k8s.io/client-go/dynamic"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/discovery/kube"
	"github.com/purko-io/mcp-hub/internal/pinning"
	"github.com/purko-io/mcp-hub/internal/registry"
	"github.com/purko-io/mcp-hub/internal/registry/quarantine"
	"github.com/purko-io/mcp-hub/internal/statedir"
)

// pinsSyncTimeout bounds the wait for the pins ConfigMap at start-up; the
// store is correct without it (writes read the live object), it only
// spares the first listings a round trip each.
const pinsSyncTimeout = 5 * time.Second

// pinsWiring is what pinning adds to a hub: the pinner, the store of the
// name claims that keep published names stable (it shares the pins'
// store), the Kubernetes Events sender (nil without a cluster), and what
// stops them.
type pinsWiring struct {
	pinner *pinning.Pinner
	names  pinning.ClaimStore
	events *pinning.Events
	close  func()
}

// newPins opens the pins store: in a cluster (or with --kubeconfig) the
// ConfigMap mcp-hub-pins in the hub's namespace, shared by the replicas;
// else pinning.stateFile when set, else pins.json of the state directory
// (kept in memory when another hub holds it). The name claims live in the
// same place (key names.json, or names.json beside the pins file)
// whatever the pinning mode: with pinning.mode off only the pins are left
// out.
func newPins(ctx context.Context, cfg *config.Config, o Options, state *statedir.Dir, log zerolog.Logger) (*pinsWiring, error) {
	p := cfg.Pinning
	mode, err := pinning.ParseMode(p.Mode)
	if err != nil {
		return nil, fmt.Errorf("pinning.mode: %w", err)
	}
	w := &pinsWiring{close: func() {}}
	rules := make([]pinning.Rule, len(p.Approve))
	for i, a := range p.Approve {
		rules[i] = pinning.Rule{Server: a.Server, Tool: a.Tool, SHA256: a.SHA256}
	}
	rc, own, err := clusterConfig(o)
	if err != nil {
		return nil, err
	}
	if rc == nil || p.StateFile != "" {
		path, namesPath := p.StateFile, pinning.NamesFileFor(p.StateFile)
		openPins, openNames := pinning.OpenFile, pinning.OpenClaimsFile
		if path == "" {
			path, namesPath = state.Pins(), state.Names()
			if state.ReadOnly {
				openPins, openNames = pinning.OpenFileInMemory, pinning.OpenClaimsFileInMemory
			}
		}
		names, err := openNames(namesPath)
		if err != nil {
			return nil, err
		}
		w.names = names
		if mode == pinning.Off {
			return w, nil
		}
		store, err := openPins(path)
		if err != nil {
			return nil, err
		}
		log.Info().Str("mode", string(mode)).Str("file", path).Msg("tool pinning on: each tool's definition is remembered in this file, and a tool whose definition changes is held until approved (mcp-hub pins list)")
		w.pinner = pinning.New(mode, store, rules)
		return w, nil
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("pins ConfigMap: %w", err)
	}
	ns := pinsNamespace(o, cfg.Kubernetes, own)
	store, err := pinning.OpenConfigMap(dyn, ns, log)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, pinsSyncTimeout)
	defer cancel()
	if err := store.WaitSynced(ctx); err != nil {
		// Not fatal: pins are compared, and names claimed, in memory and
		// saved once the ConfigMap can be written; the error says what
		// RBAC is missing.
		log.Error().Err(err).Msg("tool pinning and stable names: the pins ConfigMap cannot be read; held in memory until it can")
	}
	w.names = store
	w.close = store.Close
	if mode == pinning.Off {
		return w, nil
	}
	log.Info().Str("mode", string(mode)).Str("configmap", ns+"/"+pinning.ConfigMapName).Msg("tool pinning on: each tool's definition is remembered in this ConfigMap, and a tool whose definition changes is held until approved (mcp-hub pins list)")
	w.pinner = pinning.New(mode, store, rules)
	w.events = pinning.NewEvents(dyn, store, log)
	w.close = func() {
		w.events.Stop()
		store.Close()
	}
	return w, nil
}

// pinsNamespace is where the pins ConfigMap lives: in a cluster the hub's
// own namespace (the chart's pins Role is there); out of one, the one
// namespace watched when a single one is named (the kubeconfig context's
// namespace is often just "default"), else the context's.
func pinsNamespace(o Options, settings config.KubeSettings, own string) string {
	inCluster := o.Kubeconfig == "" && os.Getenv("KUBECONFIG") == "" && os.Getenv("KUBERNETES_SERVICE_HOST") != ""
	if !inCluster {
		if ns := watchNamespaces(o.Namespaces, settings, own); len(ns) == 1 && ns[0] != "" {
			return ns[0]
		}
	}
	return cmp.Or(own, "default")
}

// reportTo sends a Kubernetes Event for every changed or screened
// definition, a tool's or a prompt's, resource's or server's
// instructions (its Diff says why: the change, the screening's hits).
func (w *pinsWiring) reportTo(reg *registry.Registry) {
	if w.events == nil {
		return
	}
	reg.OnQuarantine(func(ev quarantine.Event) {
		var obj *pinning.Object
		if o := ev.Origin; o != nil && o.Kind == "MCPServer" {
			g := kube.MCPServerGVR
			obj = &pinning.Object{Group: g.Group, Version: g.Version, Resource: g.Resource, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name}
		}
		q := ev.Quarantine
		w.events.Report(obj, pinning.Change{Key: pinning.Key{Server: ev.Server, Tool: ev.Tool, Kind: ev.Kind}, PinnedSHA256: q.PinnedSHA256,
			CurrentSHA256: q.CurrentSHA256, Diff: q.Reason(), PinnedAt: q.PinnedAt}, q.Enforced)
	})
}
