package autonomy

import (
	"testing"

	"github.com/purko-io/mcp-hub/internal/toolspec"
)

func TestScope(t *testing.T) {
	virtual := VirtualScope(toolspec.VirtualServer{Name: "coding", Servers: []string{"github"}, Tools: []string{"Static-Analysis", "search_*"}})
	tests := []struct {
		name                        string
		scope                       *Scope
		server, published, original string
		want, wholeServer           bool
	}{
		{"no scope: the whole hub", nil, "wiki", "edit_page", "edit_page", true, true},
		{"a server's endpoint, its tool", ServerScope("github"), "github", "github__create_issue", "create_issue", true, true},
		{"a server's endpoint, another's tool", ServerScope("github"), "wiki", "edit_page", "edit_page", false, false},
		{"a view helper is in every scope", ServerScope("github"), "", "find_tools", "find_tools", true, false},
		{"virtual: a whole server", virtual, "github", "create_issue", "create_issue", true, true},
		{"virtual: a tool by name, case and dash folded", virtual, "hub", "static_analysis", "static_analysis", true, false},
		{"virtual: a tool by pattern on its upstream name", virtual, "wiki", "wiki__search_pages", "search_pages", true, false},
		{"virtual: neither", virtual, "wiki", "edit_page", "edit_page", false, false},
		{"virtual without servers or tools publishes nothing", VirtualScope(toolspec.VirtualServer{Name: "gone"}), "github", "x", "x", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.scope.Permits(tt.server, tt.published, tt.original); got != tt.want {
				t.Errorf("Permits(%q, %q, %q) = %v, want %v", tt.server, tt.published, tt.original, got, tt.want)
			}
			if tt.server != "" {
				if got := tt.scope.PermitsServer(tt.server); got != tt.wholeServer {
					t.Errorf("PermitsServer(%q) = %v, want %v", tt.server, got, tt.wholeServer)
				}
			}
		})
	}
}

// TestScopeKey: equal contents, equal keys (views are cached by them);
// different contents, different keys.
func TestScopeKey(t *testing.T) {
	a := VirtualScope(toolspec.VirtualServer{Name: "a", Servers: []string{"x", "y"}, Tools: []string{"T", "u"}})
	b := VirtualScope(toolspec.VirtualServer{Name: "b", Servers: []string{"y", "x"}, Tools: []string{"u", "t", "t"}})
	if a.Key() != b.Key() {
		t.Errorf("same contents, keys %q and %q", a.Key(), b.Key())
	}
	for _, other := range []*Scope{
		VirtualScope(toolspec.VirtualServer{Name: "a", Servers: []string{"x"}, Tools: []string{"y", "t", "u"}}),
		ServerScope("x"),
		nil,
	} {
		if other.Key() == a.Key() {
			t.Errorf("different contents share key %q", a.Key())
		}
	}
}
