package kube

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/toolspec"
)

// AgentGVR is Purko's Agent resource.
var AgentGVR = schema.GroupVersionResource{Group: "purko.io", Version: "v1alpha1", Resource: "agents"}

// agentToolEntry is one spec.tools item of an Agent that is an api tool:
// `type: api`, or an `endpoint`. The endpoint fields may sit in `endpoint`
// or on the entry itself.
type agentToolEntry struct {
	Name                 string          `json:"name"`
	Type                 string          `json:"type"`
	Description          string          `json:"description"`
	Endpoint             json.RawMessage `json:"endpoint"`
	CredentialsSecretRef json.RawMessage `json:"credentialsSecretRef"`
}

// fromAgent returns the Agent's api tools. Entries that are not api tools
// (plain names, MCP tools) are skipped; a broken api entry is an error
// naming it, and the Agent's other tools still count.
func fromAgent(u *unstructured.Unstructured, token secretToken) ([]config.AgentTool, []error) {
	items, _, _ := unstructured.NestedSlice(u.Object, "spec", "tools")
	agent := u.GetNamespace() + "/" + u.GetName()
	var out []config.AgentTool
	var errs []error
	for i, item := range items {
		m, ok := item.(map[string]any)
		if !ok {
			continue
		}
		raw, _ := json.Marshal(m)
		var e agentToolEntry
		_ = json.Unmarshal(raw, &e)
		if e.Type != "api" && len(e.Endpoint) == 0 {
			continue
		}
		where := fmt.Sprintf("Agent %s spec.tools[%d] (%s)", agent, i, e.Name)
		var spec toolspec.EndpointSpec
		src := raw
		if len(e.Endpoint) > 0 {
			src = e.Endpoint
		}
		if err := json.Unmarshal(src, &spec); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
			continue
		}
		spec.Name, spec.Description = e.Name, e.Description
		tool := config.AgentTool{Agent: agent, Spec: spec}
		if ref, key := secretRef(e.CredentialsSecretRef); ref != "" {
			spec.Credential = toolspec.CredentialRef{SecretRef: &toolspec.SecretKeyRef{Name: ref, Key: key, Namespace: u.GetNamespace()}}
			tool.Spec = spec
			if tok, err := token(u.GetNamespace(), ref, key); err != nil {
				tool.Problem = "credentialsSecretRef: " + err.Error()
			} else {
				tool.Credential = tok
			}
		}
		if err := tool.Spec.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
			continue
		}
		out = append(out, tool)
	}
	return out, errs
}

// secretRef reads credentialsSecretRef: a Secret name (key "token") or
// {name, key}.
func secretRef(raw json.RawMessage) (name, key string) {
	if len(raw) == 0 {
		return "", ""
	}
	if json.Unmarshal(raw, &name) == nil {
		return name, "token"
	}
	var ref struct{ Name, Key string }
	if json.Unmarshal(raw, &ref) == nil && ref.Name != "" {
		if ref.Key == "" {
			ref.Key = "token"
		}
		return ref.Name, ref.Key
	}
	return "", ""
}

// sortAgentTools keeps snapshots comparable.
func sortAgentTools(tools []config.AgentTool) {
	sort.Slice(tools, func(i, j int) bool {
		if tools[i].Agent != tools[j].Agent {
			return tools[i].Agent < tools[j].Agent
		}
		return tools[i].Spec.Name < tools[j].Spec.Name
	})
}

// Annotations that make an Agent a virtual server: its spec.tools (names
// and patterns) published at /servers/NAME/mcp, so a platform team hands
// the tools it gave an agent to whatever else should have exactly those.
const (
	// AnnotationVirtualServer is the virtual server's name, or "true" for
	// the Agent's own name.
	AnnotationVirtualServer = annotationPrefix + "virtual-server"
	// AnnotationVirtualServers lists servers (comma-separated) the virtual
	// server publishes whole, besides the Agent's tools.
	AnnotationVirtualServers = annotationPrefix + "virtual-server-servers"
)

// virtualFromAgent reads an annotated Agent as a virtual server; ok is
// false for an Agent without the annotation. Its tools are the names of
// spec.tools (plain names, or entries' name).
func virtualFromAgent(u *unstructured.Unstructured) (v toolspec.VirtualServer, ok bool, err error) {
	name, ok := u.GetAnnotations()[AnnotationVirtualServer]
	if !ok {
		return v, false, nil
	}
	if name = strings.TrimSpace(name); name == "true" {
		name = u.GetName()
	}
	v = toolspec.VirtualServer{Name: name, Source: "Agent " + u.GetNamespace() + "/" + u.GetName()}
	v.Description, _, _ = unstructured.NestedString(u.Object, "spec", "description")
	for _, s := range strings.Split(u.GetAnnotations()[AnnotationVirtualServers], ",") {
		if s = strings.TrimSpace(s); s != "" {
			v.Servers = append(v.Servers, s)
		}
	}
	items, _, _ := unstructured.NestedSlice(u.Object, "spec", "tools")
	for _, item := range items {
		switch t := item.(type) {
		case string:
			v.Tools = append(v.Tools, strings.TrimSpace(t))
		case map[string]any:
			if n, _ := t["name"].(string); n != "" {
				v.Tools = append(v.Tools, strings.TrimSpace(n))
			}
		}
	}
	if err := v.Validate(); err != nil {
		return v, true, fmt.Errorf("%s (annotation %s): %w", v.Source, AnnotationVirtualServer, err)
	}
	return v, true, nil
}
