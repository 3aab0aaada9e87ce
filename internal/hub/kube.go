package hub

import (
	"cmp"
	"fmt"
	"os"
	"strings"

	"github.com/rs/zerolog"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/discovery/kube"
	"github.com/purko-io/mcp-hub/internal/registry"
)

// serviceAccountNamespace is where a pod finds its own namespace.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// clusterConfig finds the cluster: an explicit --kubeconfig or KUBECONFIG,
// else the pod's ServiceAccount; nil when there is neither. It also returns
// the namespace the hub runs in (or the kubeconfig context's).
func clusterConfig(o Options) (*rest.Config, string, error) {
	kubeconfig := o.Kubeconfig
	if kubeconfig == "" {
		kubeconfig = os.Getenv("KUBECONFIG")
	}
	switch {
	case kubeconfig != "":
		rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig}
		if o.Kubeconfig == "" {
			rules = &clientcmd.ClientConfigLoadingRules{Precedence: strings.Split(kubeconfig, string(os.PathListSeparator))}
		}
		cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
		cfg, err := cc.ClientConfig()
		if err != nil {
			return nil, "", fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
		}
		ns, _, _ := cc.Namespace()
		return cfg, ns, nil
	case os.Getenv("KUBERNETES_SERVICE_HOST") != "":
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, "", fmt.Errorf("in-cluster Kubernetes config: %w", err)
		}
		ns := ""
		if b, err := os.ReadFile(serviceAccountNamespace); err == nil {
			ns = strings.TrimSpace(string(b))
		}
		if v := os.Getenv("POD_NAMESPACE"); v != "" {
			ns = v
		}
		return cfg, ns, nil
	}
	return nil, "", nil
}

// kubeSource returns the Kubernetes source, or nil when no cluster is
// configured: out of a cluster only an explicit --kubeconfig or KUBECONFIG
// turns it on, so a laptop with a ~/.kube/config still runs without one.
func kubeSource(o Options, settings config.KubeSettings, log zerolog.Logger) (*kube.Source, error) {
	cfg, ownNamespace, err := clusterConfig(o)
	if err != nil || cfg == nil {
		return nil, err
	}
	namespaces := watchNamespaces(o.Namespaces, settings, ownNamespace)
	selector := settings.LabelSelector
	if o.LabelSelector != "" {
		selector = o.LabelSelector
	}
	return kube.New(cfg, kube.Options{Namespaces: namespaces, LabelSelector: selector, ConfigMapName: settings.ConfigMapName,
		SecretNames: secretNames(o, settings), Election: election(settings.LeaderElection, ownNamespace)}, log)
}

// election is the status writer's election: the Lease in the configured
// namespace, else the hub's own, else "default"; nil when turned off.
func election(le config.LeaderElection, ownNamespace string) *kube.Election {
	if !le.On() {
		return nil
	}
	return &kube.Election{
		Namespace: cmp.Or(le.Namespace, ownNamespace, "default"), LeaseName: le.LeaseName, Identity: kube.Identity(),
		LeaseDuration: le.LeaseDuration.D(), RenewDeadline: le.RenewDeadline.D(), RetryPeriod: le.RetryPeriod.D(),
	}
}

// secretNames are the only Secrets the hub reads: the flag over the config;
// none means every labelled Secret of the watched namespaces.
func secretNames(o Options, settings config.KubeSettings) []string {
	if o.SecretNames != "" {
		return config.SplitList(o.SecretNames)
	}
	return settings.SecretNames
}

// watchNamespaces decides what to watch: the flag over the config; "*" or
// allNamespaces means all (""); nothing named means the hub's own namespace.
func watchNamespaces(flag string, settings config.KubeSettings, own string) []string {
	namespaces := settings.Namespaces
	if flag != "" {
		namespaces = config.SplitList(flag)
	}
	switch {
	case settings.AllNamespaces && flag == "", len(namespaces) == 1 && namespaces[0] == "*":
		return []string{""}
	case len(namespaces) == 0 && own != "":
		return []string{own}
	case len(namespaces) == 0:
		return []string{"default"}
	}
	return namespaces
}

// kubeStatuses turns the catalog into the reports written to MCPServers.
func kubeStatuses(cat *registry.Catalog) []kube.Status {
	var out []kube.Status
	for _, sv := range cat.Servers {
		if sv.Origin == nil {
			continue
		}
		st := kube.Status{Origin: *sv.Origin, ToolCount: len(sv.Tools), ListedAt: sv.Status.ListedAt, Message: sv.Status.Error}
		switch sv.Status.State {
		case registry.StateConnected:
			st.Connected, st.Reason, st.Message = true, "Connected", fmt.Sprintf("%d tools over %s", len(sv.Tools), sv.Status.Protocol)
		case registry.StateConnecting:
			st.Reason = "Connecting"
		default:
			st.Reason = kube.ReasonUnavailable
		}
		out = append(out, st)
	}
	return out
}
