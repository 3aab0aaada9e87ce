// Package kube discovers upstream servers in a Kubernetes cluster: Purko's
// MCPServer resources (purko.io/v1alpha1), the "connect by URL" ConfigMap
// mcp-servers, and the Secrets both refer to for bearer tokens (only those
// labelled config.UpstreamCredentialLabel). It watches
// with informers over the dynamic client (it polls only discovery, for the
// CRDs installed or deleted while it runs), sends a full snapshot after
// every change, writes the hub's view back to each MCPServer's status, and
// says when the API server is unreachable (health.go).
package kube

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/credential"
	"github.com/purko-io/mcp-hub/internal/discovery"
	"github.com/purko-io/mcp-hub/internal/kubeclient"
	"github.com/purko-io/mcp-hub/internal/toolspec"
)

// SourceName is the name of this source in snapshots and listings.
const SourceName = "kubernetes"

// MCPServerGVR is Purko's MCPServer resource.
var MCPServerGVR = schema.GroupVersionResource{Group: "purko.io", Version: "v1alpha1", Resource: "mcpservers"}

// settle coalesces a burst of informer events into one snapshot.
const settle = 20 * time.Millisecond

// Options say what to watch.
type Options struct {
	// Namespaces to watch; a single "" watches all namespaces.
	Namespaces []string
	// LabelSelector limits the MCPServer resources considered.
	LabelSelector string
	// ConfigMapName is the "connect by URL" ConfigMap, mcp-servers by default.
	ConfigMapName string
	// SecretNames, when set, are the only Secrets the source reads, each
	// watched on its own (a field selector on its name), so the hub's RBAC
	// can grant get, list and watch on exactly these resourceNames instead
	// of every Secret of a namespace. A Secret not listed is refused, and
	// a listed one needs config.UpstreamCredentialLabel too.
	SecretNames []string
	// Election, when set, makes status and Events the work of the one
	// replica holding its Lease; nil: this replica always writes.
	Election *Election
	// CRDPoll is how often discovery is asked again whether the MCPServer
	// and Agent CRDs are served; 0 is crdPoll. Tests lower it.
	CRDPoll time.Duration
}

// crdPoll is how often the source asks whether the CRDs it watches are
// served: a CRD installed (or deleted) while the hub runs is watched (or
// let go) within it.
const crdPoll = 10 * time.Second

// crdQuestion bounds one question of the poll.
const crdQuestion = 10 * time.Second

// Source watches one cluster.
type Source struct {
	opts      Options
	discovery *kubeclient.Discovery
	dyn       dynamic.Interface
	log       zerolog.Logger

	status *statusWriter
	// api is whether the API server answers (health.go).
	api *apiState
}

// New returns a source for the cluster behind cfg.
func New(cfg *rest.Config, opts Options, log zerolog.Logger) (*Source, error) {
	if len(opts.Namespaces) == 0 {
		return nil, fmt.Errorf("kubernetes source: no namespace to watch")
	}
	if opts.ConfigMapName == "" {
		opts.ConfigMapName = "mcp-servers"
	}
	if opts.LabelSelector != "" {
		if _, err := metav1.ParseToLabelSelector(opts.LabelSelector); err != nil {
			return nil, fmt.Errorf("kubernetes label selector %q: %w", opts.LabelSelector, err)
		}
	}
	for _, n := range opts.SecretNames {
		if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 {
			return nil, fmt.Errorf("kubernetes secret names: %q: %s", n, strings.Join(errs, "; "))
		}
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "mcp-hub"
	disc, err := kubeclient.NewDiscovery(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes dynamic client: %w", err)
	}
	if opts.CRDPoll <= 0 {
		opts.CRDPoll = crdPoll
	}
	log = log.With().Str("source", SourceName).Logger()
	return &Source{opts: opts, discovery: disc, dyn: dyn, log: log, status: newStatusWriter(dyn, opts.Election, log), api: &apiState{log: log}}, nil
}

// Outage implements discovery.OutageReporter: the API server unreachable,
// since when. The informers keep their caches meanwhile, so the catalog
// stays as it was.
func (s *Source) Outage() (discovery.Outage, bool) { return s.api.outage() }

// Name implements discovery.Source.
func (s *Source) Name() string { return SourceName }

// listers are the caches of one namespace (or of all).
type listers struct {
	mcpServers cache.GenericLister // nil when the CRD is not installed
	agents     cache.GenericLister // nil when the Agent CRD is not installed
	configMaps cache.Indexer
	secrets    secretCache
}

// secretCache is where Secrets are looked up by namespace/name: one
// informer's cache, or several (Options.SecretNames).
type secretCache interface {
	GetByKey(key string) (any, bool, error)
}

// namedSecrets are the caches of the informers of Options.SecretNames, one
// Secret each.
type namedSecrets []cache.Indexer

// GetByKey implements secretCache.
func (n namedSecrets) GetByKey(key string) (any, bool, error) {
	for _, idx := range n {
		if o, ok, err := idx.GetByKey(key); ok || err != nil {
			return o, ok, err
		}
	}
	return nil, false, nil
}

// crds are the CRDs the cluster serves, of those the source watches.
type crds struct{ mcpServers, agents bool }

// Run implements discovery.Source. The informers are built for the CRDs
// served at start; a poll of discovery (every Options.CRDPoll) notices a
// CRD installed or deleted later, and the informers are built again for
// the new set. Discovery needs no RBAC (a watch of the
// CustomResourceDefinitions themselves would need a cluster-wide read,
// even for a hub confined to one namespace).
func (s *Source) Run(ctx context.Context, out chan<- discovery.Snapshot) {
	served, ok := s.crdsServed(ctx)
	switch {
	case ok:
		s.logCRDs(served, served, true)
	case ctx.Err() == nil:
		s.log.Warn().Dur("every", s.opts.CRDPoll).Msg("cannot ask the API server which CRDs it serves; asking again")
	}
	var sent *discovery.Snapshot // the last snapshot sent, over every watch
	for {
		watchCtx, stop := context.WithCancel(ctx)
		next := make(chan crds, 1)
		var wg sync.WaitGroup
		wg.Go(func() {
			if c, changed := s.pollCRDs(watchCtx, served); changed {
				next <- c
				stop()
			}
		})
		s.watch(watchCtx, served, out, &sent)
		stop()
		wg.Wait()
		select {
		case served = <-next:
		default:
			return // ctx ended, or the watch could not start
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// pollCRDs asks discovery every Options.CRDPoll whether the CRDs are
// served, until the answer differs from now (true) or ctx ends. A failed
// question (the API server unreachable) changes nothing: the informers
// keep their caches and retry on their own.
func (s *Source) pollCRDs(ctx context.Context, now crds) (crds, bool) {
	t := time.NewTicker(s.opts.CRDPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return now, false
		case <-t.C:
		}
		if c, ok := s.crdsServed(ctx); ok && c != now {
			s.logCRDs(now, c, false)
			return c, true
		}
	}
}

// crdsServed asks discovery which CRDs are served; false when the API
// server did not answer. The question is bounded by crdQuestion: a server
// that takes the connection and never answers (a partition) is as
// unreachable as one that refuses it.
func (s *Source) crdsServed(ctx context.Context) (crds, bool) {
	asked := time.Now()
	qctx, cancel := context.WithTimeout(ctx, crdQuestion)
	defer cancel()
	var now crds
	var err error
	now.mcpServers, err = s.discovery.Serves(qctx, MCPServerGVR)
	if err == nil {
		now.agents, err = s.discovery.Serves(qctx, AgentGVR)
	}
	if err != nil {
		if ctx.Err() == nil {
			s.api.failed(time.Now(), err)
			s.log.Debug().Err(err).Msg("cannot ask the API server which CRDs it serves")
		}
		return crds{}, false
	}
	s.api.answered(asked)
	return now, true
}

// logCRDs says what changed between two answers of crdsServed; at start
// (first), what is not there. Without the MCPServer CRD the ConfigMap
// still works, and without the Agent CRD there are no agent api tools.
func (s *Source) logCRDs(before, now crds, first bool) {
	for _, c := range []struct {
		kind, resource string
		before, now    bool
	}{
		{kindMCPServer, MCPServerGVR.GroupResource().String(), before.mcpServers, now.mcpServers},
		{"Agent", AgentGVR.GroupResource().String(), before.agents, now.agents},
	} {
		switch {
		case first && !c.now:
			s.log.Warn().Str("resource", c.resource).Msgf("the %s CRD is not installed; watching for it", c.kind)
		case first:
		case c.now && !c.before:
			s.log.Info().Str("resource", c.resource).Msgf("the %s CRD appeared; watching it", c.kind)
		case c.before && !c.now:
			s.log.Info().Str("resource", c.resource).Msgf("the %s CRD disappeared; its objects leave the catalog", c.kind)
		}
	}
}

// watch runs the informers of the CRDs served until ctx ends, sending a
// snapshot once they synced and after every change that matters. sent is
// the last snapshot sent by any watch: a watch that starts again sends its
// first one only if it differs, and only once its caches synced, so the
// servers of the ConfigMap never leave the catalog in between.
func (s *Source) watch(ctx context.Context, served crds, out chan<- discovery.Snapshot, sent **discovery.Snapshot) {
	changed := make(chan struct{}, 1)
	poke := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { poke() },
		UpdateFunc: func(any, any) { poke() },
		DeleteFunc: func(any) { poke() },
	}

	all, informed, err := s.informers(served.mcpServers, served.agents)
	if err != nil {
		s.log.Error().Err(err).Msg("cannot watch the cluster")
		return
	}
	var synced []cache.InformerSynced
	for _, inf := range informed {
		if _, err := inf.AddEventHandler(handler); err != nil {
			s.log.Error().Err(err).Msg("add event handler")
		}
		if err := inf.SetWatchErrorHandlerWithContext(s.api.watchErrors); err != nil {
			s.log.Error().Err(err).Msg("set watch error handler")
		}
		synced = append(synced, inf.HasSynced)
	}
	defer kubeclient.Start(ctx, informed...)()
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return
	}
	s.log.Info().Strs("namespaces", s.opts.Namespaces).Strs("secretNames", s.opts.SecretNames).Bool("mcpservers", served.mcpServers).Bool("agents", served.agents).Msg("kubernetes caches synced")

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.status.run(ctx, all)
	}()
	defer wg.Wait()

	for {
		tools, virtual := s.agentTools(all)
		snap := discovery.Snapshot{Source: SourceName, Servers: s.build(all), AgentTools: tools, Virtual: virtual}
		if last := *sent; last == nil || !discovery.SameServers(last.Servers, snap.Servers) || !reflect.DeepEqual(last.AgentTools, snap.AgentTools) || !reflect.DeepEqual(last.Virtual, snap.Virtual) {
			select {
			case out <- snap:
			case <-ctx.Done():
				return
			}
			*sent = &snap
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
		// Let a burst (a Secret and the object that names it) settle.
		t := time.NewTimer(settle)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// informers makes the caches of every watched namespace, and returns
// them with the informers that fill them (not started).
func (s *Source) informers(haveCRD, haveAgents bool) ([]listers, []cache.SharedIndexInformer, error) {
	// Only Secrets set aside for upstreams are read at all: the rest
	// (the hub's own tokens among them) never reach its caches.
	upstreamCredentials := labels.Set{config.UpstreamCredentialLabel: "true"}.String()
	named := func(name string) string { return fields.OneTermEqualSelector("metadata.name", name).String() }
	var all []listers
	var informed []cache.SharedIndexInformer
	for _, ns := range s.opts.Namespaces {
		l := listers{}
		cm, err := kubeclient.ConfigMaps.Informer(s.dyn, ns, func(o *metav1.ListOptions) { o.FieldSelector = named(s.opts.ConfigMapName) })
		if err != nil {
			return nil, nil, err
		}
		informed = append(informed, cm)
		l.configMaps = cm.GetIndexer()
		if len(s.opts.SecretNames) == 0 {
			sec, err := kubeclient.Secrets.Informer(s.dyn, ns, func(o *metav1.ListOptions) { o.LabelSelector = upstreamCredentials })
			if err != nil {
				return nil, nil, err
			}
			informed = append(informed, sec)
			l.secrets = sec.GetIndexer()
		} else {
			var secrets namedSecrets
			for _, name := range s.opts.SecretNames {
				sec, err := kubeclient.Secrets.Informer(s.dyn, ns, func(o *metav1.ListOptions) {
					o.FieldSelector = named(name)
					o.LabelSelector = upstreamCredentials
				})
				if err != nil {
					return nil, nil, err
				}
				informed = append(informed, sec)
				secrets = append(secrets, sec.GetIndexer())
			}
			l.secrets = secrets
		}
		if haveCRD {
			inf := kubeclient.NewInformer(s.dyn, MCPServerGVR, ns, func(o *metav1.ListOptions) { o.LabelSelector = s.opts.LabelSelector })
			informed = append(informed, inf)
			l.mcpServers = cache.NewGenericLister(inf.GetIndexer(), MCPServerGVR.GroupResource())
		}
		if haveAgents {
			inf := kubeclient.NewInformer(s.dyn, AgentGVR, ns, nil)
			informed = append(informed, inf)
			l.agents = cache.NewGenericLister(inf.GetIndexer(), AgentGVR.GroupResource())
		}
		all = append(all, l)
	}
	return all, informed, nil
}

// ReportStatus hands the hub's current view of its upstreams to the status
// writer; only MCPServer origins are written. It never blocks.
func (s *Source) ReportStatus(reports []Status) { s.status.report(reports) }

// agentTools collects the api tools of every cached Agent.
func (s *Source) agentTools(all []listers) ([]config.AgentTool, []toolspec.VirtualServer) {
	var out []config.AgentTool
	var virtual []toolspec.VirtualServer
	for _, l := range all {
		if l.agents == nil {
			continue
		}
		objs, err := l.agents.List(everything)
		if err != nil {
			s.log.Error().Err(err).Msg("list Agents from cache")
		}
		for _, o := range objs {
			u, ok := o.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			tools, errs := fromAgent(u, secretGetter(l.secrets, s.opts.SecretNames))
			for _, err := range errs {
				s.log.Error().Err(err).Msg("ignoring agent api tool")
			}
			out = append(out, tools...)
			switch v, ok, err := virtualFromAgent(u); {
			case err != nil:
				s.log.Error().Err(err).Msg("ignoring virtual server")
			case ok:
				virtual = append(virtual, v)
			}
		}
	}
	sortAgentTools(out)
	sort.Slice(virtual, func(i, j int) bool { return virtual[i].Source < virtual[j].Source })
	return out, virtual
}

// build makes the snapshot from the caches.
func (s *Source) build(all []listers) []config.ServerSpec {
	var found []config.ServerSpec
	for _, l := range all {
		if l.mcpServers != nil {
			objs, err := l.mcpServers.List(everything)
			if err != nil {
				s.log.Error().Err(err).Msg("list MCPServers from cache")
			}
			for _, o := range objs {
				u, ok := o.(*unstructured.Unstructured)
				if !ok {
					continue
				}
				spec, err := fromMCPServer(u, secretGetter(l.secrets, s.opts.SecretNames))
				if err != nil {
					s.log.Error().Err(err).Str("mcpserver", u.GetNamespace()+"/"+u.GetName()).Msg("ignoring MCPServer")
					continue
				}
				found = append(found, spec)
			}
		}
		for _, o := range l.configMaps.List() {
			cm, ok := o.(*kubeclient.ConfigMap)
			if !ok || cm.Name != s.opts.ConfigMapName {
				continue
			}
			specs, errs := fromConfigMap(cm, secretGetter(l.secrets, s.opts.SecretNames))
			for _, err := range errs {
				s.log.Error().Err(err).Str("configmap", cm.Namespace+"/"+cm.Name).Msg("ignoring ConfigMap entry")
			}
			found = append(found, specs...)
		}
	}
	return s.uniqueNames(found)
}

// uniqueNames keeps names bare where they are unique; a name used in several
// namespaces becomes <namespace>.<name> for each of them. Within one
// namespace an MCPServer wins over a ConfigMap entry of the same name.
func (s *Source) uniqueNames(specs []config.ServerSpec) []config.ServerSpec {
	sort.SliceStable(specs, func(i, j int) bool {
		a, b := specs[i].Origin, specs[j].Origin
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Kind != b.Kind {
			return a.Kind == kindMCPServer // MCPServer first
		}
		return specs[i].Name < specs[j].Name
	})
	namespaces := map[string]map[string]bool{}
	for _, sp := range specs {
		if namespaces[sp.Name] == nil {
			namespaces[sp.Name] = map[string]bool{}
		}
		namespaces[sp.Name][sp.Origin.Namespace] = true
	}
	out := make([]config.ServerSpec, 0, len(specs))
	taken := map[string]config.Origin{}
	for _, sp := range specs {
		if len(namespaces[sp.Name]) > 1 {
			sp.Name = sp.Origin.Namespace + "." + sp.Name
		}
		if prev, dup := taken[sp.Name]; dup {
			s.log.Warn().Str("server", sp.Name).Str("kept", prev.Kind+" "+prev.Namespace+"/"+prev.Name).
				Str("ignored", sp.Origin.Kind+" "+sp.Origin.Namespace+"/"+sp.Origin.Name).Msg("two objects name the same server")
			continue
		}
		if err := sp.Normalize(); err != nil {
			s.log.Error().Str("object", sp.Origin.Kind+" "+sp.Origin.Namespace+"/"+sp.Origin.Name).Err(err).Msg("ignoring server")
			continue
		}
		taken[sp.Name] = *sp.Origin
		out = append(out, sp)
	}
	return out
}

// secretToken reads the bearer token of a Secret from the cache. The error
// is the reason shown for the server; it never holds the value.
type secretToken func(namespace, name, key string) (config.Secret, error)

// secretGetter reads credentials from the cache of Secrets. Only a Secret
// labelled config.UpstreamCredentialLabel "true" (and, with names, one of
// them) is ever read: MCPServers, the ConfigMap and Agents are written by
// people (or by the hub's registration API) who choose where the
// credential is sent, and need not be allowed to read the Secret
// themselves. An unlabelled Secret reads as a missing one.
func secretGetter(idx secretCache, names []string) secretToken {
	return func(namespace, name, key string) (config.Secret, error) {
		where := namespace + "/" + name
		if len(names) > 0 && !slices.Contains(names, name) {
			return "", fmt.Errorf("Secret %s is not in kubernetes.secretNames (--secret-names), the only Secrets the hub reads", where)
		}
		// The informer cache answers without blocking, so no context is
		// needed to bound the read.
		if o, ok, _ := idx.GetByKey(where); !ok || !upstreamCredential(o) {
			return "", fmt.Errorf("Secret %s not found with the label %s: \"true\" (the hub reads no Secret without it)", where, config.UpstreamCredentialLabel)
		}
		v, err := credential.Resolve(context.Background(),
			credential.Ref{Secret: &credential.SecretKey{Namespace: namespace, Name: name, Key: key}},
			cachedSecrets(idx))
		if err != nil {
			return "", err
		}
		return config.Secret(v), nil
	}
}

// upstreamCredential reports whether a cached object is a Secret set aside
// for upstreams. The informers list only those; this keeps any other cache
// from widening what is read.
func upstreamCredential(o any) bool {
	sec, ok := o.(*kubeclient.Secret)
	return ok && sec.Labels[config.UpstreamCredentialLabel] == "true"
}

// cachedSecrets reads Secrets from the informer cache for the credential
// resolver, which decides trimming, emptiness and size.
func cachedSecrets(idx secretCache) credential.SecretReader {
	return func(_ context.Context, namespace, name string) (map[string][]byte, bool, error) {
		o, ok, err := idx.GetByKey(namespace + "/" + name)
		if err != nil || !ok {
			return nil, false, nil
		}
		sec, isSecret := o.(*kubeclient.Secret)
		if !isSecret {
			return nil, false, fmt.Errorf("cache holds a %T, not a Secret", o)
		}
		return sec.Data, true, nil
	}
}
