package kube

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/kubeclient"
)

// tokens is a fake Secret cache: "ns/name" -> token; "" means no token key.
func tokens(m map[string]string) secretToken {
	return func(ns, name, key string) (config.Secret, error) {
		v, ok := m[ns+"/"+name]
		switch {
		case !ok:
			return "", fmt.Errorf("Secret %s/%s not found", ns, name)
		case v == "":
			return "", fmt.Errorf("Secret %s/%s has no key \"token\"", ns, name)
		}
		return config.Secret(v), nil
	}
}

func mcpServer(name string, spec map[string]any, ann map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "purko.io/v1alpha1", "kind": "MCPServer",
		"metadata": map[string]any{"name": name, "namespace": "purko"},
		"spec":     spec,
	}}
	u.SetAnnotations(ann)
	return u
}

func TestFromMCPServer(t *testing.T) {
	secrets := tokens(map[string]string{"purko/gh-token": "ghp_x", "purko/empty": ""})
	cases := []struct {
		name    string
		obj     *unstructured.Unstructured
		url     string
		tr      config.Transport
		token   string
		problem string
		err     string
		check   func(t *testing.T, s config.ServerSpec)
	}{
		{name: "defaults", obj: mcpServer("github", map[string]any{"image": "x"}, nil), url: "http://github.purko.svc:8000/mcp"},
		{name: "port and hostNetwork", obj: mcpServer("k8s", map[string]any{"port": int64(9100), "hostNetwork": true}, nil), url: "http://localhost:9100/mcp"},
		{name: "path annotation", obj: mcpServer("docs", map[string]any{"port": int64(7000)}, map[string]string{AnnotationPath: "api/mcp"}), url: "http://docs.purko.svc:7000/api/mcp"},
		{name: "url and transport annotations", obj: mcpServer("x", nil, map[string]string{AnnotationURL: "http://127.0.0.1:5555/sse", AnnotationTransport: "sse"}),
			url: "http://127.0.0.1:5555/sse", tr: config.TransportSSE},
		{name: "bearer with secret", obj: mcpServer("gh", map[string]any{"auth": "bearer", "secretRef": "gh-token"}, nil), url: "http://gh.purko.svc:8000/mcp", token: "ghp_x"},
		{name: "missing secret", obj: mcpServer("gh", map[string]any{"auth": "bearer", "secretRef": "nope"}, nil), url: "http://gh.purko.svc:8000/mcp", problem: "Secret purko/nope not found"},
		{name: "secret without key", obj: mcpServer("gh", map[string]any{"auth": "bearer", "secretRef": "empty"}, nil), url: "http://gh.purko.svc:8000/mcp", problem: `Secret purko/empty has no key "token"`},
		{name: "bearer without secretRef", obj: mcpServer("gh", map[string]any{"auth": "bearer"}, nil), url: "http://gh.purko.svc:8000/mcp", problem: "no secretRef"},
		{name: "bad port", obj: mcpServer("gh", map[string]any{"port": int64(70000)}, nil), err: "spec.port: 70000"},
		{name: "bad timeout", obj: mcpServer("gh", nil, map[string]string{AnnotationTimeout: "soon"}), err: AnnotationTimeout},
		{name: "bad pattern", obj: mcpServer("gh", nil, map[string]string{AnnotationWriteTools: "run_[x"}), err: AnnotationWriteTools},
		{name: "bad trust flag", obj: mcpServer("gh", nil, map[string]string{AnnotationTrustAnnotations: "maybe"}), err: AnnotationTrustAnnotations},
		{name: "bad rate", obj: mcpServer("gh", nil, map[string]string{AnnotationRate: "lots"}), err: AnnotationRate},
		{name: "negative rate", obj: mcpServer("gh", nil, map[string]string{AnnotationRate: "-2"}), err: "rate: -2 is not within"},
		{name: "bad max in flight", obj: mcpServer("gh", nil, map[string]string{AnnotationMaxInFlight: "1.5"}), err: AnnotationMaxInFlight},
		{name: "negative max in flight", obj: mcpServer("gh", nil, map[string]string{AnnotationMaxInFlight: "-1"}), err: "maxInFlight: -1 must not be negative"},
		{name: "limits", obj: mcpServer("gh", nil, map[string]string{AnnotationMaxInFlight: "16", AnnotationRate: "2.5"}),
			url: "http://gh.purko.svc:8000/mcp", check: func(t *testing.T, s config.ServerSpec) {
				if s.Limits == nil || *s.Limits != (config.Limits{Rate: 2.5, Burst: 3, MaxInFlight: 16}) {
					t.Errorf("limits %+v", s.Limits)
				}
			}},
		{name: "no limits", obj: mcpServer("gh", nil, nil), url: "http://gh.purko.svc:8000/mcp", check: func(t *testing.T, s config.ServerSpec) {
			if s.Limits != nil {
				t.Errorf("limits %+v without annotations", s.Limits)
			}
		}},
		{name: "bad result cap", obj: mcpServer("gh", nil, map[string]string{AnnotationMaxResultChars: "500"}), err: AnnotationMaxResultChars + `: "500": must be 0 (off)`},
		{name: "result cap", obj: mcpServer("gh", nil, map[string]string{AnnotationMaxResultChars: "0"}),
			url: "http://gh.purko.svc:8000/mcp", check: func(t *testing.T, s config.ServerSpec) {
				if s.MaxResultChars == nil || *s.MaxResultChars != 0 {
					t.Errorf("maxResultChars %v, want 0", s.MaxResultChars)
				}
			}},
		{name: "curation", obj: mcpServer("gh", nil, map[string]string{
			AnnotationToolsAllow: "get_*, search_*", AnnotationToolsDeny: "get_secret",
			AnnotationToolOverrides: "search_code:\n  name: code_search\n  annotations: {readOnlyHint: true}\n"}),
			url: "http://gh.purko.svc:8000/mcp", check: func(t *testing.T, s config.ServerSpec) {
				o, ok := s.Tools.Override("search_code")
				if !s.Tools.Publishes("get_issue") || s.Tools.Publishes("get_secret") || s.Tools.Publishes("delete_repo") ||
					!ok || o.Name != "code_search" || o.Annotations == nil || !*o.Annotations.ReadOnlyHint {
					t.Errorf("tools %+v", s.Tools)
				}
			}},
		{name: "curation as JSON", obj: mcpServer("gh", nil, map[string]string{AnnotationToolOverrides: `{"x": {"description": "X"}}`}),
			url: "http://gh.purko.svc:8000/mcp", check: func(t *testing.T, s config.ServerSpec) {
				if o, _ := s.Tools.Override("x"); o.Description != "X" || !s.Tools.Publishes("y") {
					t.Errorf("tools %+v", s.Tools)
				}
			}},
		{name: "no curation", obj: mcpServer("gh", nil, nil), url: "http://gh.purko.svc:8000/mcp", check: func(t *testing.T, s config.ServerSpec) {
			if s.Tools != nil {
				t.Errorf("tools %+v without annotations", s.Tools)
			}
		}},
		{name: "bad allow pattern", obj: mcpServer("gh", nil, map[string]string{AnnotationToolsAllow: "get_["}),
			url: "http://gh.purko.svc:8000/mcp", problem: AnnotationToolsAllow + `: allow: "get_[" is not a valid tool pattern`},
		{name: "bad deny pattern", obj: mcpServer("gh", nil, map[string]string{AnnotationToolsDeny: "x, ["}),
			url: "http://gh.purko.svc:8000/mcp", problem: AnnotationToolsDeny},
		{name: "overrides not a map", obj: mcpServer("gh", nil, map[string]string{AnnotationToolOverrides: "[search_code]"}),
			url: "http://gh.purko.svc:8000/mcp", problem: AnnotationToolOverrides + ": "},
		{name: "unknown override field", obj: mcpServer("gh", nil, map[string]string{AnnotationToolOverrides: "x: {nmae: y}"}),
			url: "http://gh.purko.svc:8000/mcp", problem: `unknown field "nmae"`},
		{name: "bad override name", obj: mcpServer("gh", nil, map[string]string{AnnotationToolOverrides: "x: {name: 'a b'}"}),
			url: "http://gh.purko.svc:8000/mcp", problem: AnnotationToolOverrides + `: overrides.x.name: "a b" holds " "`},
		{name: "override of a denied tool", obj: mcpServer("gh", map[string]any{"auth": "bearer", "secretRef": "gh-token"}, map[string]string{
			AnnotationToolsDeny: "x*", AnnotationToolOverrides: "x: {description: X}"}),
			url: "http://gh.purko.svc:8000/mcp", token: "ghp_x", problem: AnnotationToolOverrides + `: overrides.x: tool "x" is not published`},
		{name: "tool policy and timeout", obj: mcpServer("gh", nil, map[string]string{
			AnnotationReadOnlyTools: "get_*, list_issues", AnnotationWriteTools: "run_query", AnnotationTimeout: "30s"}),
			url: "http://gh.purko.svc:8000/mcp", check: func(t *testing.T, s config.ServerSpec) {
				if s.ToolPolicy == nil || len(s.ToolPolicy.ReadOnly) != 2 || s.ToolPolicy.Write[0] != "run_query" || s.Timeout.D() != 30*time.Second {
					t.Errorf("policy %+v timeout %s", s.ToolPolicy, s.Timeout.D())
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := fromMCPServer(tc.obj, secrets)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Normalize(); err != nil {
				t.Fatal(err)
			}
			want := tc.tr
			if want == "" {
				want = config.TransportStreamableHTTP
			}
			if s.URL != tc.url || s.Transport != want || s.BearerToken.Reveal() != tc.token || !strings.Contains(s.Problem, tc.problem) || (tc.problem == "") != (s.Problem == "") {
				t.Fatalf("spec = url %q transport %q token %q problem %q", s.URL, s.Transport, s.BearerToken.Reveal(), s.Problem)
			}
			if s.Origin == nil || s.Origin.Kind != kindMCPServer || s.Origin.Namespace != "purko" {
				t.Errorf("origin %+v", s.Origin)
			}
			if tc.check != nil {
				tc.check(t, s)
			}
		})
	}
}

func TestFromConfigMapJSONAndYAML(t *testing.T) {
	secrets := tokens(map[string]string{"purko/linear": "lin_x"})
	cases := map[string]string{
		"json": `[{"name":"linear","url":"https://mcp.linear.app/sse","auth":"bearer","secretRef":"linear","icon":"l","category":"pm"},
		          {"name":"docs","url":"http://docs:9000/mcp"},
		          {"name":"bad url","url":"nope"},
		          {"name":"broken","url":["http://x/mcp"]},
		          {"name":"nosecret","url":"http://y/mcp","auth":"bearer","secretRef":"missing"}]`,
		"yaml": `
- name: linear
  url: https://mcp.linear.app/sse
  auth: bearer
  secretRef: linear
  icon: l
  category: pm
- name: docs
  url: http://docs:9000/mcp
- name: bad url
  url: nope
- name: broken
  url: [http://x/mcp]
- name: nosecret
  url: http://y/mcp
  auth: bearer
  secretRef: missing
`,
	}
	for format, data := range cases {
		t.Run(format, func(t *testing.T) {
			cm := &kubeclient.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "mcp-servers", Namespace: "purko"}, Data: map[string]string{"servers": data}}
			specs, errs := fromConfigMap(cm, secrets)
			if len(specs) != 3 {
				t.Fatalf("%d specs, want linear, docs, nosecret: %+v", len(specs), specs)
			}
			if specs[0].Name != "linear" || specs[0].Transport != config.TransportSSE || specs[0].BearerToken.Reveal() != "lin_x" {
				t.Errorf("linear = %+v", specs[0])
			}
			if specs[2].Name != "nosecret" || !strings.Contains(specs[2].Problem, "Secret purko/missing not found") {
				t.Errorf("nosecret = %+v", specs[2])
			}
			if len(errs) != 2 || !strings.Contains(errs[0].Error(), "servers[2] (bad url)") || !strings.Contains(errs[1].Error(), "servers[3] (broken)") {
				t.Fatalf("errors = %v", errs)
			}
		})
	}
	cm := &kubeclient.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "mcp-servers", Namespace: "purko"}, Data: map[string]string{"servers": "{not a list"}}
	if specs, errs := fromConfigMap(cm, secrets); len(specs) != 0 || len(errs) != 1 || !strings.Contains(errs[0].Error(), "key servers") {
		t.Fatalf("unparsable ConfigMap: %v %v", specs, errs)
	}
}

func TestUniqueNames(t *testing.T) {
	spec := func(kind, ns, name string) config.ServerSpec {
		return config.ServerSpec{Name: name, URL: "http://" + name + "/mcp", Origin: &config.Origin{Kind: kind, Namespace: ns, Name: name}}
	}
	s := &Source{}
	got := s.uniqueNames([]config.ServerSpec{
		spec(kindConfigMap, "a", "github"), spec(kindMCPServer, "a", "github"), spec(kindMCPServer, "b", "github"),
		spec(kindMCPServer, "a", "solo"),
	})
	var names []string
	for _, g := range got {
		names = append(names, g.Name+"<"+g.Origin.Kind)
	}
	// The ConfigMap entry loses to the MCPServer of its namespace.
	want := "a.github<MCPServer solo<MCPServer b.github<MCPServer"
	if strings.Join(names, " ") != want {
		t.Fatalf("names %v, want %s", names, want)
	}
}
