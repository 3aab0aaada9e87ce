package toolspec

import (
	"strings"
	"testing"
)

func TestVirtualServerValidate(t *testing.T) {
	tests := []struct {
		name string
		v    VirtualServer
		want string // substring of the error, "" valid
	}{
		{"servers", VirtualServer{Name: "coding", Servers: []string{"github"}}, ""},
		{"tools", VirtualServer{Name: "support.v2", Tools: []string{"tickets_*", "static_analysis"}}, ""},
		{"no name", VirtualServer{Servers: []string{"github"}}, `name: "" must start with a letter or digit`},
		{"a slash in the name", VirtualServer{Name: "a/b", Servers: []string{"github"}}, `name: "a/b"`},
		{"nothing to publish", VirtualServer{Name: "empty"}, "servers: a virtual server needs servers or tools"},
		{"a bad server name", VirtualServer{Name: "v", Servers: []string{"git hub"}}, `servers[0]: "git hub" is not a server name`},
		{"a bad pattern", VirtualServer{Name: "v", Tools: []string{"ok", "[x"}}, `tools[1]: "[x" is not a valid tool pattern`},
		{"a blank tool", VirtualServer{Name: "v", Tools: []string{" "}}, `tools[0]: empty tool pattern`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.v.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate = %v, want %q", err, tt.want)
			}
		})
	}
}
