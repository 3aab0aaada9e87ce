package chart_test

import (
	"testing"

	"sigs.k8s.io/yaml"
)

// TestConfigInstanceID: the chart names the hub <namespace>/<fullname> in
// replicas.instanceId, one id for all its replicas, so that the hub's own
// Service registered on it is caught as a loop whichever pod answers; an
// id the user set wins.
func TestConfigInstanceID(t *testing.T) {
	for _, tc := range []struct{ name, values, want string }{
		{"default", "", namespace + "/" + fullname},
		{"one replica", "replicaCount: 1\n", namespace + "/" + fullname},
		{"user's own", "config: {replicas: {instanceId: team/hub}}\n", "team/hub"},
		{"user's empty", "config: {replicas: {instanceId: \"\"}}\n", namespace + "/" + fullname},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := render(t, tc.values)
			if err != nil {
				t.Fatal(err)
			}
			var cm dataObject
			index(objs).one(t, "ConfigMap").decode(t, &cm)
			var cfg struct {
				Replicas struct {
					InstanceID string `json:"instanceId"`
				} `json:"replicas"`
			}
			if err := yaml.Unmarshal([]byte(cm.Data["config.yaml"]), &cfg); err != nil {
				t.Fatalf("config.yaml: %v", err)
			}
			if cfg.Replicas.InstanceID != tc.want {
				t.Fatalf("replicas.instanceId %q, want %q", cfg.Replicas.InstanceID, tc.want)
			}
		})
	}
}
