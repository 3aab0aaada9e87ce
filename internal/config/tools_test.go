package config

import (
	"strings"
	"testing"
)

// TestToolCurationErrorsNameTheField: a bad curation is refused where the
// config is read, naming the server and the field.
func TestToolCurationErrorsNameTheField(t *testing.T) {
	const server = "servers:\n- name: a\n  url: http://x/mcp\n  tools:\n"
	cases := []struct{ name, tools, want string }{
		{"allow pattern", "    allow: ['get_[']\n", `servers[0] (a).tools.allow: "get_[" is not a valid tool pattern`},
		{"deny empty pattern", "    deny: ['']\n", `servers[0] (a).tools.deny: empty tool pattern`},
		{"unknown key", "    allowed: [x]\n", `unknown field "allowed"`},
		{"unknown override key", "    overrides: {search_code: {title: x}}\n", `unknown field "title"`},
		{"bad name", "    overrides: {search_code: {name: 'code search'}}\n", `servers[0] (a).tools.overrides.search_code.name: "code search" holds " "`},
		{"long name", "    overrides: {search_code: {name: " + strings.Repeat("n", 65) + "}}\n", `servers[0] (a).tools.overrides.search_code.name: "nnn`},
		{"two tools one name", "    overrides: {a: {name: x}, b: {name: x}}\n", `servers[0] (a).tools.overrides.b.name: "x" is already the name of overrides.a`},
		{"name of a kept tool", "    overrides: {a: {name: b}, b: {description: B}}\n", `servers[0] (a).tools.overrides.a.name: "b" is the name of another of the server's tools`},
		{"denied override", "    deny: ['delete_*']\n    overrides: {delete_repo: {description: x}}\n", `servers[0] (a).tools.overrides.delete_repo: tool "delete_repo" is not published`},
		{"override outside allow", "    allow: [get_issue]\n    overrides: {search_code: {description: x}}\n", `servers[0] (a).tools.overrides.search_code: tool "search_code" is not published`},
		{"annotation type", "    overrides: {a: {annotations: {readOnlyHint: maybe}}}\n", "readOnlyHint"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("test.yaml", []byte(server+tc.tools))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

func TestToolCurationParsesAndPublishes(t *testing.T) {
	c, err := Parse("test.yaml", []byte(`servers:
- name: github
  url: http://x/mcp
  tools:
    allow: ["get_*", "search_*", create_issue]
    deny: [get_secret]
    overrides:
      search_code:
        name: code_search
        description: Search code in the org's repositories.
        annotations: {readOnlyHint: true, title: Code search}
      search_same: {name: search_same}
      get_x: {name: search_code}
`))
	if err != nil {
		t.Fatal(err)
	}
	cur := c.Servers[0].Tools
	for name, want := range map[string]bool{
		"get_issue": true, "search_code": true, "create_issue": true,
		"get_secret": false, "delete_repo": false, "create_issue2": false,
	} {
		if got := cur.Publishes(name); got != want {
			t.Errorf("Publishes(%q) = %v, want %v", name, got, want)
		}
	}
	o, ok := cur.Override("search_code")
	if !ok || o.Name != "code_search" || o.Annotations == nil || !*o.Annotations.ReadOnlyHint || o.Annotations.Title != "Code search" || o.Annotations.DestructiveHint != nil {
		t.Errorf("override %+v", o)
	}
	var none *ToolCuration
	if !none.Publishes("anything") {
		t.Error("no curation must publish every tool")
	}
	if _, ok := none.Override("x"); ok {
		t.Error("no curation has no override")
	}
}
