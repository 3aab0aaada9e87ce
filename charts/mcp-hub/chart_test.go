// Tests of the Helm chart: render it with `helm template` (helm comes from
// hack/helm.sh, or $HELM) under several value sets and check what reaches the
// cluster: least-privilege RBAC per watched namespace, the Deployment's
// hardening, probes and flags, replicas (spec.replicas or an HPA), the Service
// and its session affinity, the headless peers Service and the config's
// replicas.peers, the PDB, the tokens Secret, and a config.yaml the hub
// itself accepts.
package chart_test

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/purko-io/mcp-hub/internal/config"
)

const (
	release   = "hub"
	namespace = "purko"
	fullname  = "hub-mcp-hub"
	// tokensMountPath is where the tokens Secret is mounted by default.
	tokensMountPath = "/etc/mcp-hub/tokens"
	// peersService is the headless Service replicas find each other by, and
	// peersAddr the config replicas.peers naming it: a headless Service
	// resolves to the pods, so the port is the container's.
	peersService = fullname + "-peers"
	peersAddr    = peersService + "." + namespace + ".svc.cluster.local:8080"
)

// leastPrivilege is everything the hub may do in a watched namespace, as
// "group/resource verb" ("" is the core group).
var leastPrivilege = []string{
	"/configmaps get", "/configmaps list", "/configmaps watch",
	"/events create", "/events patch",
	"/secrets get", "/secrets list", "/secrets watch",
	"events.k8s.io/events create", "events.k8s.io/events patch",
	"purko.io/mcpservers get", "purko.io/mcpservers list", "purko.io/mcpservers watch",
	"purko.io/mcpservers/status get", "purko.io/mcpservers/status patch",
	"purko.io/mcpservers create", "purko.io/mcpservers update", "purko.io/mcpservers delete",
	"/configmaps update mcp-servers", "/configmaps create",
	"purko.io/agents get", "purko.io/agents list", "purko.io/agents watch",
}

// serviceAccountAuth is what auth.serviceAccounts.enabled adds in a watched
// namespace: the pod a caller's token is bound to, get only (Agents are
// always readable).
var serviceAccountAuth = []string{"/pods get"}

// tokenReview is all the extra ClusterRole of auth.serviceAccounts.enabled grants.
var tokenReview = []string{"authentication.k8s.io/tokenreviews create"}

// tokenReviewName names that ClusterRole and its binding (cluster-scoped, so
// prefixed with the release namespace).
const tokenReviewName = namespace + "-" + fullname + "-tokenreview"

// pinsRoleName names the Role (and binding) of tool pinning in the release
// namespace; pinsGrants is all it grants: the pins ConfigMap by name
// (create cannot be limited by name) and Events on it.
const pinsRoleName = fullname + "-pins"

var pinsGrants = []string{
	"/configmaps get mcp-hub-pins", "/configmaps list mcp-hub-pins", "/configmaps watch mcp-hub-pins", "/configmaps update mcp-hub-pins",
	"/configmaps create", "/events create", "/events patch",
}

var (
	helmOnce sync.Once
	helmPath string
	helmErr  error
)

// helm returns the helm binary: $HELM, or the one hack/helm.sh builds and caches.
func helm(t *testing.T) string {
	t.Helper()
	helmOnce.Do(func() {
		if p := os.Getenv("HELM"); p != "" {
			helmPath = p
			return
		}
		start := time.Now()
		var stdout, stderr bytes.Buffer
		cmd := exec.Command("bash", filepath.Join("..", "..", "hack", "helm.sh"))
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			helmErr = fmt.Errorf("hack/helm.sh: %v\n%s", err, stderr.String())
			return
		}
		helmPath = strings.TrimSpace(stdout.String())
		if d := time.Since(start); d > 10*time.Second {
			fmt.Fprintf(os.Stderr, "chart_test: hack/helm.sh took %s\n", d.Round(time.Second))
		}
	})
	if helmErr != nil {
		t.Fatal(helmErr)
	}
	return helmPath
}

// object is one rendered manifest: the common head, and the raw document to
// decode into a kind-specific struct.
type object struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name        string            `json:"name"`
		Namespace   string            `json:"namespace"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	raw []byte
}

func (o object) key() string {
	if o.Metadata.Namespace == "" {
		return o.Kind + "/" + o.Metadata.Name
	}
	return o.Kind + "/" + o.Metadata.Namespace + "/" + o.Metadata.Name
}

func (o object) decode(t *testing.T, v any) {
	t.Helper()
	if err := yaml.Unmarshal(o.raw, v); err != nil {
		t.Fatalf("%s: %v", o.key(), err)
	}
}

// render runs `helm template` on the chart in dir with values (a YAML
// document, given on stdin) and returns the manifests, or helm's error output.
func render(t *testing.T, values string, extra ...string) ([]object, error) {
	t.Helper()
	out, err := helmTemplate(t, ".", values, extra...)
	if err != nil {
		return nil, err
	}
	return parse(t, out), nil
}

func helmTemplate(t *testing.T, dir, values string, extra ...string) (string, error) {
	t.Helper()
	// Values go through stdin: --values splits its argument at commas.
	args := append([]string{"template", release, dir, "--namespace", namespace, "--values", "-"}, extra...)
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(helm(t), args...)
	cmd.Stdin = strings.NewReader(values)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("helm %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

func parse(t *testing.T, manifests string) []object {
	t.Helper()
	var objs []object
	for _, doc := range strings.Split(manifests, "\n---") {
		var o object
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("rendered document does not parse: %v\n%s", err, doc)
		}
		if o.Kind == "" {
			continue // comments only
		}
		o.raw = []byte(doc)
		objs = append(objs, o)
	}
	return objs
}

type manifests struct {
	all    []object
	byKind map[string][]object
}

func index(objs []object) manifests {
	m := manifests{all: objs, byKind: map[string][]object{}}
	for _, o := range objs {
		m.byKind[o.Kind] = append(m.byKind[o.Kind], o)
	}
	return m
}

// one returns the only object of kind, failing otherwise.
func (m manifests) one(t *testing.T, kind string) object {
	t.Helper()
	if n := len(m.byKind[kind]); n != 1 {
		t.Fatalf("want 1 %s, got %d", kind, n)
	}
	return m.byKind[kind][0]
}

// Kind-specific shapes, only the fields the tests read.

type policyRule struct {
	APIGroups       []string `json:"apiGroups"`
	Resources       []string `json:"resources"`
	Verbs           []string `json:"verbs"`
	ResourceNames   []string `json:"resourceNames"`
	NonResourceURLs []string `json:"nonResourceURLs"`
}

type role struct {
	Rules []policyRule `json:"rules"`
}

type binding struct {
	RoleRef struct {
		APIGroup string `json:"apiGroup"`
		Kind     string `json:"kind"`
		Name     string `json:"name"`
	} `json:"roleRef"`
	Subjects []struct {
		Kind      string `json:"kind"`
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"subjects"`
}

type securityContext struct {
	RunAsNonRoot             *bool  `json:"runAsNonRoot"`
	RunAsUser                *int64 `json:"runAsUser"`
	ReadOnlyRootFilesystem   *bool  `json:"readOnlyRootFilesystem"`
	AllowPrivilegeEscalation *bool  `json:"allowPrivilegeEscalation"`
	Capabilities             *struct {
		Add  []string `json:"add"`
		Drop []string `json:"drop"`
	} `json:"capabilities"`
	SeccompProfile *struct {
		Type string `json:"type"`
	} `json:"seccompProfile"`
}

type probe struct {
	HTTPGet *struct {
		Path string `json:"path"`
		Port any    `json:"port"`
	} `json:"httpGet"`
}

type deployment struct {
	Spec struct {
		Replicas *int `json:"replicas"`
		Selector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
		Template struct {
			Metadata struct {
				Labels      map[string]string `json:"labels"`
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
			Spec struct {
				ServiceAccountName            string          `json:"serviceAccountName"`
				AutomountServiceAccountToken  *bool           `json:"automountServiceAccountToken"`
				TerminationGracePeriodSeconds *int64          `json:"terminationGracePeriodSeconds"`
				SecurityContext               securityContext `json:"securityContext"`
				Affinity                      *struct {
					PodAntiAffinity *struct {
						Preferred []struct {
							PodAffinityTerm struct {
								TopologyKey string `json:"topologyKey"`
							} `json:"podAffinityTerm"`
						} `json:"preferredDuringSchedulingIgnoredDuringExecution"`
					} `json:"podAntiAffinity"`
				} `json:"affinity"`
				Containers []struct {
					Name            string          `json:"name"`
					Image           string          `json:"image"`
					Args            []string        `json:"args"`
					SecurityContext securityContext `json:"securityContext"`
					LivenessProbe   *probe          `json:"livenessProbe"`
					ReadinessProbe  *probe          `json:"readinessProbe"`
					Ports           []struct {
						Name          string `json:"name"`
						ContainerPort int    `json:"containerPort"`
					} `json:"ports"`
					VolumeMounts []struct {
						Name      string `json:"name"`
						MountPath string `json:"mountPath"`
						SubPath   string `json:"subPath"`
						ReadOnly  bool   `json:"readOnly"`
					} `json:"volumeMounts"`
				} `json:"containers"`
				Volumes []struct {
					Name      string `json:"name"`
					ConfigMap *struct {
						Name string `json:"name"`
					} `json:"configMap"`
					Secret *struct {
						SecretName string `json:"secretName"`
					} `json:"secret"`
					EmptyDir *struct{} `json:"emptyDir"`
				} `json:"volumes"`
			} `json:"spec"`
		} `json:"template"`
	} `json:"spec"`
}

type service struct {
	Spec struct {
		Type                     string            `json:"type"`
		ClusterIP                string            `json:"clusterIP"`
		PublishNotReadyAddresses *bool             `json:"publishNotReadyAddresses"`
		Selector                 map[string]string `json:"selector"`
		SessionAffinity          string            `json:"sessionAffinity"`
		SessionAffinityConfig    *struct {
			ClientIP *struct {
				TimeoutSeconds *int `json:"timeoutSeconds"`
			} `json:"clientIP"`
		} `json:"sessionAffinityConfig"`
		Ports []struct {
			Name        string `json:"name"`
			Port        int    `json:"port"`
			TargetPort  any    `json:"targetPort"`
			AppProtocol string `json:"appProtocol"`
		} `json:"ports"`
	} `json:"spec"`
}

type pdb struct {
	Spec struct {
		MaxUnavailable any `json:"maxUnavailable"`
		Selector       struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
	} `json:"spec"`
}

type hpa struct {
	Spec struct {
		ScaleTargetRef struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Name       string `json:"name"`
		} `json:"scaleTargetRef"`
		MinReplicas *int `json:"minReplicas"`
		MaxReplicas int  `json:"maxReplicas"`
		Metrics     []struct {
			Type     string `json:"type"`
			Resource *struct {
				Name   string `json:"name"`
				Target struct {
					Type               string `json:"type"`
					AverageUtilization int    `json:"averageUtilization"`
				} `json:"target"`
			} `json:"resource"`
		} `json:"metrics"`
		Behavior map[string]any `json:"behavior"`
	} `json:"spec"`
}

// hpaWant is the HorizontalPodAutoscaler a case expects: its bounds, its
// metrics as "resource=averageUtilization", and whether spec.behavior is set.
type hpaWant struct {
	min, max int
	metrics  []string
	behavior bool
}

type serviceMonitor struct {
	Spec struct {
		Selector metav1.LabelSelector `json:"selector"`
	} `json:"spec"`
}

type dataObject struct {
	Data map[string]string `json:"data"`
}

func TestTemplate(t *testing.T) {
	ha, err := os.ReadFile(filepath.Join("ci", "ha-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		values string
		// RBAC: namespaces with a Role and RoleBinding, or a ClusterRole.
		roleNamespaces []string
		clusterRole    bool
		noRBAC         bool
		// --namespaces and --label-selector (absent when "").
		nsFlag, selectorFlag string
		// replicas is the Deployment's spec.replicas; 0 with hpa, which
		// owns it (the Deployment must not set it).
		replicas int
		hpa      *hpaWant
		// pdb: a PodDisruptionBudget; multi: the peers Service and
		// replicas.peers in the config.
		pdb, multi      bool
		tokensSecret    string // secret volume name; "" = no tokens mount
		createsSecret   bool
		checksum        bool
		affinity        bool
		sessionAffinity string
		affinityTimeout int // sessionAffinityConfig.clientIP.timeoutSeconds with ClientIP
		servers         int // servers in the rendered config
		serviceMonitor  bool
		// auth.serviceAccounts.enabled: the --auth-service-accounts flag,
		// pods/agents get in the watched namespaces, tokenreviews create.
		saAuth bool
		// peers is config replicas.peers when not the chart's peersAddr.
		peers string
	}{
		{
			name:            "defaults: 2 replicas, PDB, anti-affinity, peers",
			values:          "",
			roleNamespaces:  []string{namespace},
			nsFlag:          namespace,
			replicas:        2,
			pdb:             true,
			multi:           true,
			affinity:        true,
			sessionAffinity: "None",
		},
		{
			name:            "one replica: no PDB, no peers",
			values:          "replicaCount: 1\n",
			roleNamespaces:  []string{namespace},
			nsFlag:          namespace,
			replicas:        1,
			affinity:        true,
			sessionAffinity: "None",
		},
		{
			name: "listed namespaces and a label selector",
			values: `
watch:
  namespaces: [team-a, team-b, team-a]
  labelSelector: purko.io/hub=main
`,
			roleNamespaces:  []string{"team-a", "team-b"},
			nsFlag:          "team-a,team-b",
			selectorFlag:    "purko.io/hub=main",
			replicas:        2,
			pdb:             true,
			multi:           true,
			affinity:        true,
			sessionAffinity: "None",
		},
		{
			name:            "ci/ha-values.yaml: autoscaling, ClientIP, all namespaces, created tokens",
			values:          string(ha),
			clusterRole:     true,
			nsFlag:          "*",
			selectorFlag:    "purko.io/hub=main",
			hpa:             &hpaWant{min: 3, max: 6, metrics: []string{"cpu=60", "memory=80"}, behavior: true},
			pdb:             true,
			multi:           true,
			tokensSecret:    fullname + "-tokens",
			createsSecret:   true,
			checksum:        true,
			affinity:        true,
			sessionAffinity: "ClientIP",
			affinityTimeout: 3600,
			servers:         1,
			serviceMonitor:  true,
		},
		{
			name:            "autoscaling on CPU by default",
			values:          "autoscaling: {enabled: true}\n",
			roleNamespaces:  []string{namespace},
			nsFlag:          namespace,
			hpa:             &hpaWant{min: 2, max: 10, metrics: []string{"cpu=70"}},
			pdb:             true,
			multi:           true,
			affinity:        true,
			sessionAffinity: "None",
		},
		{
			name:            "autoscaling from one pod: peers, no PDB",
			values:          "autoscaling: {enabled: true, minReplicas: 1, maxReplicas: 4}\nreplicaCount: 1\n",
			roleNamespaces:  []string{namespace},
			nsFlag:          namespace,
			hpa:             &hpaWant{min: 1, max: 4, metrics: []string{"cpu=70"}},
			multi:           true,
			affinity:        true,
			sessionAffinity: "None",
		},
		{
			name:            "ClientIP affinity with the default timeout",
			values:          "service: {sessionAffinity: ClientIP}\n",
			roleNamespaces:  []string{namespace},
			nsFlag:          namespace,
			replicas:        2,
			pdb:             true,
			multi:           true,
			affinity:        true,
			sessionAffinity: "ClientIP",
			affinityTimeout: 10800,
		},
		{
			name:            "own replicas.peers wins",
			values:          "config: {replicas: {peers: \"hub-a:8080,hub-b:8080\"}}\nclusterDomain: example.internal\n",
			roleNamespaces:  []string{namespace},
			nsFlag:          namespace,
			replicas:        2,
			pdb:             true,
			multi:           true,
			affinity:        true,
			sessionAffinity: "None",
			peers:           "hub-a:8080,hub-b:8080",
		},
		{
			name: "existing tokens secret, no RBAC, no anti-affinity, no PDB",
			values: `
tokens: {existingSecret: upstream-tokens}
rbac: {create: false}
podAntiAffinity: none
replicaCount: 3
podDisruptionBudget: {enabled: false, maxUnavailable: 1}
config:
  servers:
    - name: docs
      url: http://docs:9000/sse
      token: {file: /etc/mcp-hub/tokens/docs}
    - name: github
      url: http://github-mcp.purko.svc:8000/mcp
`,
			noRBAC:          true,
			nsFlag:          namespace,
			replicas:        3,
			multi:           true,
			tokensSecret:    "upstream-tokens",
			sessionAffinity: "None",
			servers:         2,
		},
		{
			name: "service-account auth, listed namespaces",
			values: `
auth: {serviceAccounts: {enabled: true}}
watch: {namespaces: [purko, team-a]}
`,
			roleNamespaces:  []string{namespace, "team-a"},
			nsFlag:          "purko,team-a",
			replicas:        2,
			pdb:             true,
			multi:           true,
			affinity:        true,
			sessionAffinity: "None",
			saAuth:          true,
		},
		{
			name:            "service-account auth, all namespaces",
			values:          "auth: {serviceAccounts: {enabled: true}}\nwatch: {allNamespaces: true}\n",
			clusterRole:     true,
			nsFlag:          "*",
			replicas:        2,
			pdb:             true,
			multi:           true,
			affinity:        true,
			sessionAffinity: "None",
			saAuth:          true,
		},
		{
			name:            "service-account auth without RBAC",
			values:          "auth: {serviceAccounts: {enabled: true}}\nrbac: {create: false}\n",
			noRBAC:          true,
			nsFlag:          namespace,
			replicas:        2,
			pdb:             true,
			multi:           true,
			affinity:        true,
			sessionAffinity: "None",
			saAuth:          true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := render(t, tc.values)
			if err != nil {
				t.Fatal(err)
			}
			m := index(objs)

			// Every object is unique and namespaced ones sit where they should.
			seen := map[string]bool{}
			for _, o := range m.all {
				if seen[o.key()] {
					t.Errorf("%s rendered twice", o.key())
				}
				seen[o.key()] = true
				switch o.Kind {
				case "ClusterRole", "ClusterRoleBinding":
					if o.Metadata.Namespace != "" {
						t.Errorf("%s: cluster-scoped object with a namespace", o.key())
					}
				case "Role", "RoleBinding":
				default:
					if o.Metadata.Namespace != namespace {
						t.Errorf("%s: namespace %q, want %q", o.key(), o.Metadata.Namespace, namespace)
					}
				}
				if o.Metadata.Labels["app.kubernetes.io/instance"] != release {
					t.Errorf("%s: no app.kubernetes.io/instance label", o.key())
				}
			}

			checkRBAC(t, m, tc.roleNamespaces, tc.clusterRole, tc.noRBAC, tc.saAuth)
			cfg := checkConfig(t, m, tc.servers)
			d := checkDeployment(t, m, cfg)
			c := d.Spec.Template.Spec.Containers[0]

			// Flags.
			if got := flagValue(c.Args, "--namespaces"); got != tc.nsFlag {
				t.Errorf("--namespaces %q, want %q", got, tc.nsFlag)
			}
			if got := flagValue(c.Args, "--label-selector"); got != tc.selectorFlag {
				t.Errorf("--label-selector %q, want %q", got, tc.selectorFlag)
			}
			if got := slices.Contains(c.Args, "--auth-service-accounts"); got != tc.saAuth {
				t.Errorf("--auth-service-accounts in args: %v, want %v (args %q)", got, tc.saAuth, c.Args)
			}
			// Replicas: spec.replicas, or an HPA that owns it.
			if tc.hpa != nil {
				if d.Spec.Replicas != nil {
					t.Errorf("replicas %d with autoscaling: the HPA must own spec.replicas", *d.Spec.Replicas)
				}
			} else if d.Spec.Replicas == nil || *d.Spec.Replicas != tc.replicas {
				t.Errorf("replicas %v, want %d", d.Spec.Replicas, tc.replicas)
			}
			checkHPA(t, m, tc.hpa)

			// Tokens.
			var tokensMount, tokensVolume string
			for _, vm := range c.VolumeMounts {
				if vm.MountPath == tokensMountPath {
					tokensMount = vm.Name
					if !vm.ReadOnly {
						t.Error("tokens mount is not read-only")
					}
				}
			}
			for _, v := range d.Spec.Template.Spec.Volumes {
				if v.Name == tokensMount && v.Secret != nil {
					tokensVolume = v.Secret.SecretName
				}
			}
			if tokensVolume != tc.tokensSecret {
				t.Errorf("tokens volume from Secret %q, want %q", tokensVolume, tc.tokensSecret)
			}
			// Besides the tokens Secret, the chart makes the replicas'
			// task handle key when more than one pod may run.
			var tokenSecrets []object
			for _, s := range m.byKind["Secret"] {
				if !strings.HasSuffix(s.Metadata.Name, "-replicas") {
					tokenSecrets = append(tokenSecrets, s)
				}
			}
			if got := len(tokenSecrets) == 1; got != tc.createsSecret {
				t.Errorf("tokens Secret created: %v, want %v", got, tc.createsSecret)
			} else if got {
				s := tokenSecrets[0]
				var sd dataObject
				s.decode(t, &sd)
				if s.Metadata.Name != tc.tokensSecret || len(sd.Data) == 0 {
					t.Errorf("Secret %s with %d keys, want %s with the tokens", s.Metadata.Name, len(sd.Data), tc.tokensSecret)
				}
			}

			// Rollout on config change is opt-in.
			_, hasChecksum := d.Spec.Template.Metadata.Annotations["checksum/config"]
			if hasChecksum != tc.checksum {
				t.Errorf("checksum/config annotation: %v, want %v", hasChecksum, tc.checksum)
			}

			// Soft anti-affinity by hostname.
			aff := d.Spec.Template.Spec.Affinity
			gotAff := aff != nil && aff.PodAntiAffinity != nil && len(aff.PodAntiAffinity.Preferred) == 1 &&
				aff.PodAntiAffinity.Preferred[0].PodAffinityTerm.TopologyKey == "kubernetes.io/hostname"
			if gotAff != tc.affinity {
				t.Errorf("preferred pod anti-affinity by hostname: %v, want %v", gotAff, tc.affinity)
			}

			// Service (and, with more than one pod, the headless peers Service).
			services := map[string]object{}
			for _, o := range m.byKind["Service"] {
				services[o.Metadata.Name] = o
			}
			so, ok := services[fullname]
			if !ok {
				t.Fatalf("no Service %s", fullname)
			}
			var svc service
			so.decode(t, &svc)
			if so.Metadata.Name != fullname || svc.Spec.Type != "ClusterIP" || len(svc.Spec.Ports) != 1 {
				t.Fatalf("Service %s: type %s, %d ports", so.Metadata.Name, svc.Spec.Type, len(svc.Spec.Ports))
			}
			p := svc.Spec.Ports[0]
			if p.Name != "http" || p.Port != 8080 || p.TargetPort != "http" || p.AppProtocol != "http" {
				t.Errorf("Service port %+v, want http 8080 -> http, appProtocol http", p)
			}
			if !reflect.DeepEqual(svc.Spec.Selector, d.Spec.Selector.MatchLabels) {
				t.Errorf("Service selector %v != Deployment selector %v", svc.Spec.Selector, d.Spec.Selector.MatchLabels)
			}
			if svc.Spec.SessionAffinity != tc.sessionAffinity {
				t.Errorf("sessionAffinity %q, want %q", svc.Spec.SessionAffinity, tc.sessionAffinity)
			}
			var timeout int
			if c := svc.Spec.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil {
				timeout = *c.ClientIP.TimeoutSeconds
			}
			if timeout != tc.affinityTimeout {
				t.Errorf("sessionAffinityConfig.clientIP.timeoutSeconds %d, want %d", timeout, tc.affinityTimeout)
			}
			wantPeers := ""
			if tc.multi {
				wantPeers = cmp.Or(tc.peers, peersAddr)
			}
			checkPeers(t, services, d, tc.multi, configPeers(t, m), wantPeers)
			if len(services) != 1+btoi(tc.multi) {
				t.Errorf("Services %v", slices.Sorted(maps.Keys(services)))
			}

			// PodDisruptionBudget iff at least two pods at all times (and not turned off).
			if got := len(m.byKind["PodDisruptionBudget"]) == 1; got != tc.pdb {
				t.Errorf("PodDisruptionBudget: %v, want %v", got, tc.pdb)
			} else if got {
				var b pdb
				m.one(t, "PodDisruptionBudget").decode(t, &b)
				if fmt.Sprint(b.Spec.MaxUnavailable) != "1" || !reflect.DeepEqual(b.Spec.Selector.MatchLabels, d.Spec.Selector.MatchLabels) {
					t.Errorf("PDB maxUnavailable %v selector %v", b.Spec.MaxUnavailable, b.Spec.Selector.MatchLabels)
				}
			}

			if got := len(m.byKind["ServiceMonitor"]) == 1; got != tc.serviceMonitor {
				t.Errorf("ServiceMonitor: %v, want %v", got, tc.serviceMonitor)
			} else if got {
				checkServiceMonitor(t, m.one(t, "ServiceMonitor"), services)
			}
		})
	}
}

// checkRBAC: each Role (or the ClusterRole) grants exactly leastPrivilege
// (plus serviceAccountAuth with saAuth), and each binding gives it to the hub's
// ServiceAccount. With saAuth (and RBAC) one more ClusterRole grants exactly
// tokenReview, bound to the hub's ServiceAccount.
func checkRBAC(t *testing.T, m manifests, roleNamespaces []string, clusterRole, none, saAuth bool) {
	t.Helper()
	if saAuth && !none {
		m = checkTokenReviewRBAC(t, m)
	}
	if !none {
		m = checkPinsRBAC(t, m)
		m = checkLeaderRBAC(t, m)
	}
	wantRoleKind, wantBindingKind := "Role", "RoleBinding"
	if clusterRole {
		wantRoleKind, wantBindingKind = "ClusterRole", "ClusterRoleBinding"
	}
	for _, kind := range []string{"Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"} {
		if (kind == wantRoleKind || kind == wantBindingKind) && !none {
			continue
		}
		if n := len(m.byKind[kind]); n != 0 {
			t.Errorf("%d unexpected %s", n, kind)
		}
	}
	if none {
		return
	}
	roles := map[string]bool{}
	var namespaces []string
	for _, o := range m.byKind[wantRoleKind] {
		var r role
		o.decode(t, &r)
		roles[o.Metadata.Namespace+"/"+o.Metadata.Name] = true
		if !clusterRole {
			namespaces = append(namespaces, o.Metadata.Namespace)
		}
		grants := ruleGrants(t, o.key(), r.Rules)
		want := slices.Clone(leastPrivilege)
		if saAuth {
			want = append(want, serviceAccountAuth...)
		}
		checkGrants(t, o.key(), grants, want)
	}
	if clusterRole {
		if len(roles) != 1 {
			t.Errorf("%d ClusterRoles, want 1", len(roles))
		}
	} else {
		sort.Strings(namespaces)
		want := slices.Clone(roleNamespaces)
		sort.Strings(want)
		if !slices.Equal(namespaces, want) {
			t.Errorf("Roles in %v, want %v", namespaces, want)
		}
	}
	bindings := 0
	for _, o := range m.byKind[wantBindingKind] {
		bindings++
		var b binding
		o.decode(t, &b)
		if b.RoleRef.Kind != wantRoleKind || b.RoleRef.APIGroup != "rbac.authorization.k8s.io" || !roles[o.Metadata.Namespace+"/"+b.RoleRef.Name] {
			t.Errorf("%s: roleRef %+v names no rendered %s in its namespace", o.key(), b.RoleRef, wantRoleKind)
		}
		if len(b.Subjects) != 1 || b.Subjects[0].Kind != "ServiceAccount" || b.Subjects[0].Name != fullname || b.Subjects[0].Namespace != namespace {
			t.Errorf("%s: subjects %+v, want only ServiceAccount %s/%s", o.key(), b.Subjects, namespace, fullname)
		}
	}
	if bindings != len(roles) {
		t.Errorf("%d bindings for %d roles", bindings, len(roles))
	}
}

func checkGrants(t *testing.T, what string, grants, want []string) {
	t.Helper()
	grants, want = slices.Clone(grants), slices.Clone(want)
	sort.Strings(grants)
	sort.Strings(want)
	if !slices.Equal(grants, want) {
		t.Errorf("%s grants\n  %s\nwant exactly\n  %s", what, strings.Join(grants, "\n  "), strings.Join(want, "\n  "))
	}
}

func ruleGrants(t *testing.T, what string, rules []policyRule) []string {
	t.Helper()
	var grants []string
	for _, rule := range rules {
		if len(rule.NonResourceURLs) > 0 {
			t.Errorf("%s: rule with nonResourceURLs: %+v", what, rule)
		}
		// A grant limited to named objects is "group/resource verb name".
		names := []string{""}
		if len(rule.ResourceNames) > 0 {
			names = rule.ResourceNames
		}
		for _, g := range rule.APIGroups {
			for _, res := range rule.Resources {
				for _, v := range rule.Verbs {
					for _, n := range names {
						grants = append(grants, strings.TrimSpace(g+"/"+res+" "+v+" "+n))
					}
				}
			}
		}
	}
	return grants
}

// checkPinsRBAC checks the Role and RoleBinding of tool pinning in the
// release namespace and returns m without them.
func checkPinsRBAC(t *testing.T, m manifests) manifests {
	t.Helper()
	return checkNamedRBAC(t, m, "Role", pinsRoleName, pinsGrants)
}

// checkNamedRBAC checks the one role of kind (Role or ClusterRole) named
// name, which must grant exactly want, and its one binding to the hub's
// ServiceAccount; a Role and its RoleBinding must be in the release
// namespace. It returns m without them.
func checkNamedRBAC(t *testing.T, m manifests, kind, name string, want []string) manifests {
	t.Helper()
	var rest []object
	var roles, bindings int
	for _, o := range m.all {
		if o.Metadata.Name != name || (o.Kind != kind && o.Kind != kind+"Binding") {
			rest = append(rest, o)
			continue
		}
		if kind == "Role" && o.Metadata.Namespace != namespace {
			t.Errorf("%s: not in the release namespace %s", o.key(), namespace)
		}
		if o.Kind == kind {
			roles++
			var r role
			o.decode(t, &r)
			checkGrants(t, o.key(), ruleGrants(t, o.key(), r.Rules), want)
			continue
		}
		bindings++
		checkBinding(t, o, kind, name)
	}
	if roles != 1 || bindings != 1 {
		t.Errorf("%d %ss and %d %sBindings named %s, want 1 each", roles, kind, bindings, kind, name)
	}
	return index(rest)
}

// checkBinding: the binding o gives the role kind/name to the hub's
// ServiceAccount and nothing else.
func checkBinding(t *testing.T, o object, kind, name string) {
	t.Helper()
	var b binding
	o.decode(t, &b)
	if b.RoleRef.Kind != kind || b.RoleRef.APIGroup != "rbac.authorization.k8s.io" || b.RoleRef.Name != name {
		t.Errorf("%s: roleRef %+v, want %s %s", o.key(), b.RoleRef, kind, name)
	}
	if len(b.Subjects) != 1 || b.Subjects[0].Kind != "ServiceAccount" || b.Subjects[0].Name != fullname || b.Subjects[0].Namespace != namespace {
		t.Errorf("%s: subjects %+v, want only ServiceAccount %s/%s", o.key(), b.Subjects, namespace, fullname)
	}
}

// checkTokenReviewRBAC checks the ClusterRole and ClusterRoleBinding of
// auth.serviceAccounts.enabled and returns m without them.
func checkTokenReviewRBAC(t *testing.T, m manifests) manifests {
	t.Helper()
	return checkNamedRBAC(t, m, "ClusterRole", tokenReviewName, tokenReview)
}

// checkConfig: the ConfigMap's config.yaml is a config the hub accepts.
func checkConfig(t *testing.T, m manifests, servers int) *config.Config {
	t.Helper()
	o := m.one(t, "ConfigMap")
	var cm dataObject
	o.decode(t, &cm)
	if o.Metadata.Name != fullname {
		t.Errorf("ConfigMap name %q, want %q", o.Metadata.Name, fullname)
	}
	data, ok := cm.Data["config.yaml"]
	if !ok {
		t.Fatalf("ConfigMap has no config.yaml: %v", cm.Data)
	}
	// The hub reads token files while it parses: stand in for the tokens
	// mount with a directory holding the files the config names, and check
	// that a chart-created Secret has a key for each of them.
	var refs struct {
		Servers []struct {
			Token *struct {
				File string `json:"file"`
			} `json:"token"`
		} `json:"servers"`
	}
	if err := yaml.Unmarshal([]byte(data), &refs); err != nil {
		t.Fatalf("config.yaml: %v", err)
	}
	var secret, replicasSecret dataObject
	for _, s := range m.byKind["Secret"] {
		if strings.HasSuffix(s.Metadata.Name, "-replicas") {
			s.decode(t, &replicasSecret)
		} else {
			s.decode(t, &secret)
		}
	}
	tokens := t.TempDir()
	for _, srv := range refs.Servers {
		if srv.Token == nil || !strings.HasPrefix(srv.Token.File, tokensMountPath+"/") {
			continue
		}
		key := strings.TrimPrefix(srv.Token.File, tokensMountPath+"/")
		if err := os.WriteFile(filepath.Join(tokens, key), []byte("dummy"), 0o600); err != nil {
			t.Fatal(err)
		}
		if secret.Data != nil && secret.Data[key] == "" {
			t.Errorf("config names token file %s, the tokens Secret has no key %q", srv.Token.File, key)
		}
	}
	data = strings.ReplaceAll(data, tokensMountPath+"/", tokens+"/")
	// The task handle key the chart makes (docs/protocol.md "Tasks"): its Secret
	// has it, and the hub reads it from the environment; a file here.
	if strings.Contains(data, "env: MCP_HUB_REPLICAS_SECRET") {
		if replicasSecret.Data["secret"] == "" {
			t.Errorf("config reads replicas.secret from MCP_HUB_REPLICAS_SECRET, no Secret -replicas has it")
		}
		key := filepath.Join(tokens, "replicas-secret")
		if err := os.WriteFile(key, []byte("dummy"), 0o600); err != nil {
			t.Fatal(err)
		}
		data = strings.ReplaceAll(data, "env: MCP_HUB_REPLICAS_SECRET", "file: "+key)
	}
	cfg, err := config.Parse("config.yaml", []byte(data))
	if err != nil {
		t.Fatalf("the hub rejects the rendered config: %v\n%s", err, data)
	}
	if len(cfg.Servers) != servers {
		t.Errorf("%d servers in the rendered config, want %d", len(cfg.Servers), servers)
	}
	return cfg
}

// checkDeployment: hardening, probes, ports, mounts and the serve flags.
func checkDeployment(t *testing.T, m manifests, cfg *config.Config) deployment {
	t.Helper()
	var d deployment
	o := m.one(t, "Deployment")
	o.decode(t, &d)
	ps := d.Spec.Template.Spec
	if len(ps.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(ps.Containers))
	}
	c := ps.Containers[0]

	if sa := m.one(t, "ServiceAccount"); ps.ServiceAccountName != sa.Metadata.Name || ps.ServiceAccountName != fullname {
		t.Errorf("serviceAccountName %q, ServiceAccount %q", ps.ServiceAccountName, sa.Metadata.Name)
	}
	if ps.AutomountServiceAccountToken == nil || !*ps.AutomountServiceAccountToken {
		t.Error("automountServiceAccountToken is not true: the hub cannot reach the API")
	}
	for k, v := range d.Spec.Selector.MatchLabels {
		if d.Spec.Template.Metadata.Labels[k] != v {
			t.Errorf("pod labels lack selector label %s=%s", k, v)
		}
	}

	// Pod and container security contexts.
	isTrue := func(b *bool) bool { return b != nil && *b }
	isFalse := func(b *bool) bool { return b != nil && !*b }
	for name, sc := range map[string]securityContext{"pod": ps.SecurityContext, "container": c.SecurityContext} {
		if !isTrue(sc.RunAsNonRoot) || sc.RunAsUser == nil || *sc.RunAsUser != 65532 {
			t.Errorf("%s securityContext: runAsNonRoot %v runAsUser %v, want true 65532", name, sc.RunAsNonRoot, sc.RunAsUser)
		}
		if sc.SeccompProfile == nil || sc.SeccompProfile.Type != "RuntimeDefault" {
			t.Errorf("%s securityContext: seccompProfile %+v, want RuntimeDefault", name, sc.SeccompProfile)
		}
	}
	sc := c.SecurityContext
	if !isTrue(sc.ReadOnlyRootFilesystem) || !isFalse(sc.AllowPrivilegeEscalation) {
		t.Errorf("container securityContext: readOnlyRootFilesystem %v allowPrivilegeEscalation %v", sc.ReadOnlyRootFilesystem, sc.AllowPrivilegeEscalation)
	}
	if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []string{"ALL"}) || len(sc.Capabilities.Add) != 0 {
		t.Errorf("container capabilities %+v, want drop [ALL] and nothing added", sc.Capabilities)
	}

	// Probes and port.
	for name, p := range map[string]struct {
		probe *probe
		path  string
	}{"liveness": {c.LivenessProbe, "/healthz"}, "readiness": {c.ReadinessProbe, "/readyz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil || p.probe.HTTPGet.Path != p.path || p.probe.HTTPGet.Port != "http" {
			t.Errorf("%s probe %+v, want GET %s on port http", name, p.probe, p.path)
		}
	}
	if len(c.Ports) != 1 || c.Ports[0].Name != "http" || c.Ports[0].ContainerPort != 8080 {
		t.Errorf("container ports %+v, want http 8080", c.Ports)
	}

	// The serve command line.
	wantHead := []string{"serve", "--listen", "0.0.0.0:8080", "--config", "/etc/mcp-hub/config/config.yaml"}
	if len(c.Args) < len(wantHead) || !slices.Equal(c.Args[:len(wantHead)], wantHead) {
		t.Errorf("args %q, want them to start with %q", c.Args, wantHead)
	}
	if flagValue(c.Args, "--log-level") != "info" || flagValue(c.Args, "--log-format") != "json" {
		t.Errorf("args %q, want --log-level info --log-format json", c.Args)
	}
	if !strings.HasPrefix(c.Image, "ghcr.io/purko-io/mcp-hub:") {
		t.Errorf("image %q", c.Image)
	}

	// Mounts: the config directory (not a subPath, which never sees updates)
	// from the rendered ConfigMap, and a writable /tmp.
	mounts := map[string]string{}
	for _, vm := range c.VolumeMounts {
		mounts[vm.MountPath] = vm.Name
		if vm.MountPath == "/etc/mcp-hub/config" && (vm.SubPath != "" || !vm.ReadOnly) {
			t.Errorf("config mount %+v: want the whole directory, read-only", vm)
		}
	}
	volumes := map[string]int{}
	for i, v := range ps.Volumes {
		volumes[v.Name] = i
	}
	if i, ok := volumes[mounts["/etc/mcp-hub/config"]]; !ok || ps.Volumes[i].ConfigMap == nil || ps.Volumes[i].ConfigMap.Name != fullname {
		t.Errorf("/etc/mcp-hub/config is not mounted from ConfigMap %s", fullname)
	}
	if i, ok := volumes[mounts["/tmp"]]; !ok || ps.Volumes[i].EmptyDir == nil {
		t.Error("/tmp is not an emptyDir")
	}

	// SIGTERM: in-flight calls get shutdownGrace, the pod must outlive it.
	grace := ps.TerminationGracePeriodSeconds
	if grace == nil || time.Duration(*grace)*time.Second <= cfg.ShutdownGrace.D() {
		t.Errorf("terminationGracePeriodSeconds %v, want more than shutdownGrace %s", grace, cfg.ShutdownGrace.D())
	}
	return d
}

// flagValue returns the argument after flag in args, or "".
func flagValue(args []string, flag string) string {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// checkHPA: with autoscaling, an autoscaling/v2 HorizontalPodAutoscaler
// scales the Deployment between want.min and want.max on want.metrics;
// without it (want nil), none.
func checkHPA(t *testing.T, m manifests, want *hpaWant) {
	t.Helper()
	if want == nil {
		if n := len(m.byKind["HorizontalPodAutoscaler"]); n != 0 {
			t.Errorf("%d HorizontalPodAutoscalers without autoscaling", n)
		}
		return
	}
	o := m.one(t, "HorizontalPodAutoscaler")
	if o.APIVersion != "autoscaling/v2" || o.Metadata.Name != fullname {
		t.Errorf("%s %s, want autoscaling/v2 %s", o.APIVersion, o.Metadata.Name, fullname)
	}
	var h hpa
	o.decode(t, &h)
	ref, d := h.Spec.ScaleTargetRef, m.one(t, "Deployment")
	if ref.APIVersion != d.APIVersion || ref.Kind != "Deployment" || ref.Name != d.Metadata.Name {
		t.Errorf("HPA scaleTargetRef %+v, want %s Deployment %s", ref, d.APIVersion, d.Metadata.Name)
	}
	if h.Spec.MinReplicas == nil || *h.Spec.MinReplicas != want.min || h.Spec.MaxReplicas != want.max {
		t.Errorf("HPA min %v max %d, want %d %d", h.Spec.MinReplicas, h.Spec.MaxReplicas, want.min, want.max)
	}
	var metrics []string
	for _, mt := range h.Spec.Metrics {
		if mt.Type != "Resource" || mt.Resource == nil || mt.Resource.Target.Type != "Utilization" {
			t.Errorf("HPA metric %+v, want a Resource Utilization target", mt)
			continue
		}
		metrics = append(metrics, fmt.Sprintf("%s=%d", mt.Resource.Name, mt.Resource.Target.AverageUtilization))
	}
	if !slices.Equal(metrics, want.metrics) {
		t.Errorf("HPA metrics %q, want %q", metrics, want.metrics)
	}
	if got := len(h.Spec.Behavior) > 0; got != want.behavior {
		t.Errorf("HPA behavior %v, want set: %v", h.Spec.Behavior, want.behavior)
	}
}

// checkPeers: with more than one pod (multi), a headless Service of the
// Deployment's ready pods on the container port, named by the config's
// replicas.peers (want, "" for none); otherwise neither.
func checkPeers(t *testing.T, services map[string]object, d deployment, multi bool, peers, want string) {
	t.Helper()
	if peers != want {
		t.Errorf("config replicas.peers %q, want %q", peers, want)
	}
	o, ok := services[peersService]
	if ok != multi {
		t.Fatalf("peers Service %s: %v, want %v", peersService, ok, multi)
	}
	if !multi {
		return
	}
	var svc service
	o.decode(t, &svc)
	if svc.Spec.ClusterIP != "None" {
		t.Errorf("peers Service clusterIP %q, want None (headless)", svc.Spec.ClusterIP)
	}
	if p := svc.Spec.PublishNotReadyAddresses; p == nil || *p {
		t.Error("peers Service publishNotReadyAddresses unset or true, want false: only ready replicas are peers")
	}
	if !reflect.DeepEqual(svc.Spec.Selector, d.Spec.Selector.MatchLabels) {
		t.Errorf("peers Service selector %v != Deployment selector %v", svc.Spec.Selector, d.Spec.Selector.MatchLabels)
	}
	c := d.Spec.Template.Spec.Containers[0]
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name != "http" || svc.Spec.Ports[0].TargetPort != "http" ||
		len(c.Ports) != 1 || svc.Spec.Ports[0].Port != c.Ports[0].ContainerPort {
		t.Errorf("peers Service ports %+v, want http on the container port", svc.Spec.Ports)
	}
	if want == peersAddr && !strings.HasPrefix(peersAddr, o.Metadata.Name+"."+o.Metadata.Namespace+".svc.") {
		t.Errorf("replicas.peers %q does not name Service %s", peersAddr, o.key())
	}
}

// configPeers returns replicas.peers of the rendered config.yaml.
func configPeers(t *testing.T, m manifests) string {
	t.Helper()
	var cm dataObject
	m.one(t, "ConfigMap").decode(t, &cm)
	var cfg struct {
		Replicas struct {
			Peers string `json:"peers"`
		} `json:"replicas"`
	}
	if err := yaml.Unmarshal([]byte(cm.Data["config.yaml"]), &cfg); err != nil {
		t.Fatalf("config.yaml: %v", err)
	}
	return cfg.Replicas.Peers
}

// checkServiceMonitor: the ServiceMonitor selects the hub's Service and not
// the peers Service (which would scrape every pod twice).
func checkServiceMonitor(t *testing.T, o object, services map[string]object) {
	t.Helper()
	var sm serviceMonitor
	o.decode(t, &sm)
	sel, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
	if err != nil {
		t.Fatalf("ServiceMonitor selector: %v", err)
	}
	for name, svc := range services {
		if got, want := sel.Matches(labels.Set(svc.Metadata.Labels)), name == fullname; got != want {
			t.Errorf("ServiceMonitor selects Service %s: %v, want %v", name, got, want)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestTemplateRejects: values.schema.json and the templates refuse bad values
// before anything is rendered.
func TestTemplateRejects(t *testing.T) {
	cases := []struct {
		name, values, want string
	}{
		{"unknown top-level value", "replicas: 3\n", "replicas"},
		{"bad session affinity", "service: {sessionAffinity: Sticky}\n", "sessionAffinity"},
		{"bad log level", "logLevel: verbose\n", "logLevel"},
		{"bad pull policy", "image: {pullPolicy: Sometimes}\n", "pullPolicy"},
		{"bad namespace name", "watch: {namespaces: [Team_A]}\n", "namespaces"},
		{"string replicas", "replicaCount: three\n", "replicaCount"},
		{"created tokens without data", "tokens: {create: true}\n", "data"},
		{"both tokens sources", "tokens: {create: true, existingSecret: x, data: {a: b}}\n", "exclusive"},
		{"bad naming prefix", "config: {naming: {prefix: sometimes}}\n", "prefix"},
		{"string service-account auth", "auth: {serviceAccounts: {enabled: \"yes\"}}\n", "enabled"},
		{"unknown auth value", "auth: {tokens: {enabled: true}}\n", "tokens"},
		{"session affinity timeout over a day", "service: {sessionAffinityTimeoutSeconds: 100000}\n", "sessionAffinityTimeoutSeconds"},
		{"zero minReplicas", "autoscaling: {enabled: true, minReplicas: 0}\n", "minReplicas"},
		{"string autoscaling target", "autoscaling: {targetCPUUtilizationPercentage: 70%}\n", "targetCPUUtilizationPercentage"},
		{"unknown autoscaling value", "autoscaling: {targetCPU: 70}\n", "targetCPU"},
		{"maxReplicas below minReplicas", "autoscaling: {enabled: true, minReplicas: 4, maxReplicas: 3}\n",
			"autoscaling.maxReplicas (3) must be at least autoscaling.minReplicas (4)"},
		{"autoscaling on CPU without a CPU request", "autoscaling: {enabled: true}\nresources: {requests: {cpu: null}}\n",
			"autoscaling.targetCPUUtilizationPercentage needs resources.requests.cpu"},
		{"autoscaling on memory without a memory request", "autoscaling: {enabled: true, targetMemoryUtilizationPercentage: 80}\nresources: {requests: {memory: null}, limits: {memory: null}}\n",
			"autoscaling.targetMemoryUtilizationPercentage needs resources.requests.memory"},
		{"autoscaling without a metric", "autoscaling: {enabled: true, targetCPUUtilizationPercentage: null}\n", "autoscaling.enabled needs a metric"},
		{"bad cluster domain", "clusterDomain: Cluster_Local\n", "clusterDomain"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := render(t, tc.values)
			if err == nil {
				t.Fatalf("rendered; want an error about %s", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error does not name %q: %v", tc.want, err)
			}
		})
	}
}

// TestNotes: NOTES.txt tells how to verify with curl + jq and what to put in
// a Purko executor's MCP_SERVERS. `helm template` skips NOTES.txt and
// `helm install --dry-run` wants a cluster, so a copy of the chart renders it
// through tpl into a ConfigMap.
func TestNotes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mcp-hub")
	if err := os.CopyFS(dir, os.DirFS(".")); err != nil {
		t.Fatal(err)
	}
	notes, err := os.ReadFile(filepath.Join(dir, "templates", "NOTES.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes-under-test.txt"), notes, 0o644); err != nil {
		t.Fatal(err)
	}
	const wrapper = `apiVersion: v1
kind: ConfigMap
metadata:
  name: notes
  namespace: {{ .Release.Namespace }}
  labels: {app.kubernetes.io/instance: {{ .Release.Name }}}
data:
  notes: {{ tpl (.Files.Get "notes-under-test.txt") . | toJson }}
`
	if err := os.WriteFile(filepath.Join(dir, "templates", "notes-under-test.yaml"), []byte(wrapper), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, values, want, notWant string }{
		{"defaults: 2 replicas without affinity", "", "Replicas: 2; they find each other through " + peersAddr + ".", ""},
		{"one replica", "replicaCount: 1\n", "purko", "Replicas:"},
		{"all namespaces, replicas without affinity", "watch: {allNamespaces: true}\nreplicaCount: 3\n", "need\nservice.sessionAffinity=ClientIP", ""},
		{"autoscaling with ClientIP", "autoscaling: {enabled: true}\nservice: {sessionAffinity: ClientIP}\n", "Replicas: 2-10 (HorizontalPodAutoscaler)", "Note:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := helmTemplate(t, dir, tc.values, "--show-only", "templates/notes-under-test.yaml")
			if err != nil {
				t.Fatal(err)
			}
			var cm dataObject
			parse(t, out)[0].decode(t, &cm)
			text := cm.Data["notes"]
			for _, want := range []string{
				"kubectl -n " + namespace + " port-forward svc/" + fullname + " 8080",
				"curl -s localhost:8080/api/mcp/tools | jq '.servers[].tools[].name'",
				`MCP_SERVERS=[{"name":"hub","url":"http://` + fullname + "." + namespace + `.svc:8080/mcp"}]`,
				tc.want,
			} {
				if !strings.Contains(text, want) {
					t.Errorf("NOTES lack %q:\n%s", want, text)
				}
			}
			if tc.notWant != "" && strings.Contains(text, tc.notWant) {
				t.Errorf("NOTES have %q:\n%s", tc.notWant, text)
			}
		})
	}
}

// TestCRD: the MCPServer CRD is structural (no preserved unknown fields) and
// has the fields, defaults and columns the hub and kubectl rely on.
func TestCRD(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("crds", "mcpservers.purko.io.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd map[string]any
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		t.Fatal(err)
	}
	get := func(v any, path ...string) any {
		for _, p := range path {
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[p]
		}
		return v
	}
	check := func(what string, got, want any) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %#v, want %#v", what, got, want)
		}
	}
	check("apiVersion", crd["apiVersion"], "apiextensions.k8s.io/v1")
	check("kind", crd["kind"], "CustomResourceDefinition")
	check("metadata.name", get(crd, "metadata", "name"), "mcpservers.purko.io")
	check("group", get(crd, "spec", "group"), "purko.io")
	check("scope", get(crd, "spec", "scope"), "Namespaced")
	check("names", get(crd, "spec", "names"), map[string]any{
		"kind": "MCPServer", "listKind": "MCPServerList", "plural": "mcpservers", "singular": "mcpserver",
		"shortNames": []any{"mcps"},
	})
	versions, _ := get(crd, "spec", "versions").([]any)
	if len(versions) != 1 {
		t.Fatalf("%d versions, want 1", len(versions))
	}
	v := versions[0]
	check("version", get(v, "name"), "v1alpha1")
	check("served", get(v, "served"), true)
	check("storage", get(v, "storage"), true)
	check("status subresource", get(v, "subresources", "status"), map[string]any{})
	var columns []string
	cols, _ := get(v, "additionalPrinterColumns").([]any)
	for _, c := range cols {
		columns = append(columns, fmt.Sprint(get(c, "name"), "=", get(c, "jsonPath")))
	}
	check("printer columns", columns, []string{
		"Port=.spec.port", "Auth=.spec.auth", "Tools=.status.toolCount", "Age=.metadata.creationTimestamp",
	})

	schema := get(v, "schema", "openAPIV3Schema")
	spec := get(schema, "properties", "spec")
	specFields := map[string]any{}
	for k, f := range get(spec, "properties").(map[string]any) {
		specFields[k] = get(f, "type")
	}
	check("spec fields", specFields, map[string]any{
		"image": "string", "port": "integer", "auth": "string", "secretRef": "string",
		"hostNetwork": "boolean", "category": "string", "icon": "string",
	})
	check("spec.port default", get(spec, "properties", "port", "default"), float64(8000))
	check("spec.auth enum", get(spec, "properties", "auth", "enum"), []any{"none", "bearer"})
	check("spec.auth default", get(spec, "properties", "auth", "default"), "none")
	status := get(schema, "properties", "status", "properties")
	check("status.toolCount", get(status, "toolCount", "type"), "integer")
	check("status.lastDiscovery format", get(status, "lastDiscovery", "format"), "date-time")
	conds := get(status, "conditions")
	check("conditions list type", get(conds, "x-kubernetes-list-type"), "map")
	check("conditions list keys", get(conds, "x-kubernetes-list-map-keys"), []any{"type"})
	condFields := []string{}
	for k := range get(conds, "items", "properties").(map[string]any) {
		condFields = append(condFields, k)
	}
	sort.Strings(condFields)
	check("condition fields", condFields, []string{"lastTransitionTime", "message", "observedGeneration", "reason", "status", "type"})

	// Structural: every node has a type and nothing preserves unknown fields
	// (metadata is the one object the API server types itself).
	var walk func(path string, node any)
	walk = func(path string, node any) {
		m, ok := node.(map[string]any)
		if !ok {
			t.Errorf("%s: not a schema object", path)
			return
		}
		if _, ok := m["type"]; !ok {
			t.Errorf("%s: no type (the schema must be structural)", path)
		}
		for k := range m {
			if strings.HasPrefix(k, "x-kubernetes-preserve-unknown-fields") || k == "x-kubernetes-int-or-string" || k == "x-kubernetes-embedded-resource" {
				t.Errorf("%s: %s", path, k)
			}
		}
		if props, ok := m["properties"].(map[string]any); ok {
			for k, p := range props {
				walk(path+"."+k, p)
			}
		}
		if items, ok := m["items"]; ok {
			walk(path+"[]", items)
		}
	}
	walk("openAPIV3Schema", schema)
}
