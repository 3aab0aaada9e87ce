package hub

import (
	"slices"
	"testing"
	"time"

	"github.com/purko-io/mcp-hub/internal/config"
)

func TestWatchNamespaces(t *testing.T) {
	cases := []struct {
		name     string
		flag     string
		settings config.KubeSettings
		own      string
		want     []string
	}{
		{"own namespace by default", "", config.KubeSettings{}, "purko", []string{"purko"}},
		{"default without any", "", config.KubeSettings{}, "", []string{"default"}},
		{"config list", "", config.KubeSettings{Namespaces: []string{"a", "b"}}, "purko", []string{"a", "b"}},
		{"flag over config", "x, y", config.KubeSettings{Namespaces: []string{"a"}}, "purko", []string{"x", "y"}},
		{"flag star", "*", config.KubeSettings{}, "purko", []string{""}},
		{"config all", "", config.KubeSettings{AllNamespaces: true}, "purko", []string{""}},
		{"flag list over config all", "a", config.KubeSettings{AllNamespaces: true}, "purko", []string{"a"}},
	}
	for _, tc := range cases {
		if got := watchNamespaces(tc.flag, tc.settings, tc.own); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestPinsNamespace(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	cases := []struct {
		name, flag, own, want string
		settings              config.KubeSettings
	}{
		{name: "one watched namespace", flag: "team-a", own: "default", want: "team-a"},
		{name: "several watched: the context's", flag: "a,b", own: "ops", want: "ops"},
		{name: "all: the context's", flag: "*", own: "ops", want: "ops"},
		{name: "nothing named: the context's", own: "ops", want: "ops"},
		{name: "from the config", settings: config.KubeSettings{Namespaces: []string{"purko"}}, own: "default", want: "purko"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := pinsNamespace(Options{Namespaces: tc.flag, Kubeconfig: "/k"}, tc.settings, tc.own); got != tc.want {
				t.Errorf("pinsNamespace = %q, want %q", got, tc.want)
			}
		})
	}
	t.Setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
	t.Setenv("KUBECONFIG", "")
	if got := pinsNamespace(Options{Namespaces: "team-a"}, config.KubeSettings{}, "purko"); got != "purko" {
		t.Errorf("in a cluster: %q, want the hub's own namespace", got)
	}
}

// TestElection: the Lease is in the configured namespace, else the hub's
// own, else "default"; each process stands under an identity of its own;
// enabled: false elects nobody (every replica writes).
func TestElection(t *testing.T) {
	off := false
	le := config.LeaderElection{LeaseName: "mcp-hub", LeaseDuration: config.Duration(15 * time.Second),
		RenewDeadline: config.Duration(10 * time.Second), RetryPeriod: config.Duration(2 * time.Second)}
	cases := []struct {
		name, configured, own, want string
		enabled                     *bool
	}{
		{"own namespace", "", "purko", "purko", nil},
		{"configured", "leases", "purko", "leases", nil},
		{"default without any", "", "", "default", nil},
		{"off", "", "purko", "", &off},
	}
	for _, tc := range cases {
		le.Namespace, le.Enabled = tc.configured, tc.enabled
		e := election(le, tc.own)
		if tc.want == "" {
			if e != nil {
				t.Errorf("%s: %+v, want no election", tc.name, e)
			}
			continue
		}
		if e == nil || e.Namespace != tc.want || e.LeaseName != "mcp-hub" || e.LeaseDuration != 15*time.Second || e.RenewDeadline != 10*time.Second || e.RetryPeriod != 2*time.Second {
			t.Errorf("%s: %+v, want the Lease in %s", tc.name, e, tc.want)
		}
	}
	le.Enabled = nil
	if a, b := election(le, "x"), election(le, "x"); a == nil || b == nil || a.Identity == b.Identity {
		t.Error("two processes would stand under one identity")
	}
}
