package hub

import (
	"slices"
	"testing"

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
