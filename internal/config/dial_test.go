package config

import (
	"strings"
	"testing"
)

func TestDialSettings(t *testing.T) {
	for _, tc := range []struct {
		name, yaml        string
		loopback, private bool
	}{
		{"default allows both", "servers: []\n", true, true},
		{"loopback off", "servers: []\nupstream: {dial: {loopback: false}}\n", false, true},
		{"both off", "servers: []\nupstream: {dial: {loopback: false, private: false}}\n", false, false},
		{"explicit on", "servers: []\nupstream: {dial: {loopback: true, private: true}}\n", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse("t.yaml", []byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			d := c.Upstream.Dial
			if d.LoopbackAllowed() != tc.loopback || d.PrivateAllowed() != tc.private {
				t.Errorf("loopback %v, private %v; want %v, %v", d.LoopbackAllowed(), d.PrivateAllowed(), tc.loopback, tc.private)
			}
		})
	}
}

func TestDialAndInstanceErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"servers: []\nupstream: {dial: {loopback: maybe}}\n", "loopback"},
		{"servers: []\nupstream: {dial: {metadata: true}}\n", "metadata"},
		{"servers: []\nreplicas: {instanceId: 'a b'}\n", "replicas.instanceId"},
		{"servers: []\nreplicas: {instanceId: '-x'}\n", "replicas.instanceId"},
		{"servers: []\nreplicas: {instanceId: '" + strings.Repeat("x", 129) + "'}\n", "replicas.instanceId"},
	} {
		_, err := Parse("t.yaml", []byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want one naming %s", tc.yaml, err, tc.want)
		}
	}
	c, err := Parse("t.yaml", []byte("servers: []\nreplicas: {instanceId: mcp/mcp-hub}\n"))
	if err != nil || c.Replicas.InstanceID != "mcp/mcp-hub" {
		t.Fatalf("instanceId mcp/mcp-hub: %v", err)
	}
}
