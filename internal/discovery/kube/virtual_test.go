package kube

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/purko-io/mcp-hub/internal/toolspec"
)

func TestVirtualFromAgent(t *testing.T) {
	agent := func(annotations map[string]any, tools ...any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "purko.io/v1alpha1", "kind": "Agent",
			"metadata": map[string]any{"name": "coder", "namespace": "team"},
			"spec":     map[string]any{"description": "writes code", "tools": tools},
		}}
		if annotations != nil {
			u.Object["metadata"].(map[string]any)["annotations"] = annotations
		}
		return u
	}
	tests := []struct {
		name    string
		u       *unstructured.Unstructured
		want    toolspec.VirtualServer
		ok      bool
		wantErr string
	}{
		{"not annotated", agent(nil, "x"), toolspec.VirtualServer{}, false, ""},
		{"true: the Agent's name, its tools", agent(map[string]any{AnnotationVirtualServer: "true"},
			"static_analysis", map[string]any{"name": "github__*"}, map[string]any{"type": "api"}),
			toolspec.VirtualServer{Name: "coder", Description: "writes code", Tools: []string{"static_analysis", "github__*"}, Source: "Agent team/coder"}, true, ""},
		{"a name and whole servers", agent(map[string]any{AnnotationVirtualServer: "coding", AnnotationVirtualServers: "github, wiki,"}),
			toolspec.VirtualServer{Name: "coding", Description: "writes code", Servers: []string{"github", "wiki"}, Source: "Agent team/coder"}, true, ""},
		{"nothing to publish", agent(map[string]any{AnnotationVirtualServer: "true"}), toolspec.VirtualServer{}, true,
			"Agent team/coder (annotation mcp-hub.purko.io/virtual-server): servers: a virtual server needs servers or tools"},
		{"a bad name", agent(map[string]any{AnnotationVirtualServer: "a/b"}, "x"), toolspec.VirtualServer{}, true, `name: "a/b"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := virtualFromAgent(tt.u)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v", ok, tt.ok)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ok && !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}
