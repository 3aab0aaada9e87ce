package main

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
