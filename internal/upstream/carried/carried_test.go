package carried

import (
	"encoding/json"
	"testing"

	"github.com/purko-io/mcp-hub/internal/config"
)

// TestDeclared: what the hub declares to an upstream of the extensions it
// carries, on its own requests and in place of a caller's.
func TestDeclared(t *testing.T) {
	ui := config.Extensions{config.ExtensionUI: json.RawMessage(`{"mimeTypes":["text/html;profile=mcp-app"]}`)}
	s, none := New(ui), New(config.Extensions{})
	var nilSet *Set
	for _, tc := range []struct {
		name, got, want string
	}{
		{"own", string(s.Capabilities()), `{"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]}}}`},
		{"own, none carried", string(none.Capabilities()), `{}`},
		{"own, no set", string(nilSet.Capabilities()), `{}`},
		{"with the relay's", string(s.With(json.RawMessage(`{"sampling":{}}`))), `{"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]}},"sampling":{}}`},
		{"with, none carried", string(none.With(json.RawMessage(`{"sampling":{}}`))), `{"sampling":{}}`},
		{"a caller's, pared", string(s.Filter(json.RawMessage(`{"elicitation":{},"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["a"]},"io.modelcontextprotocol/tasks":{},"com.example/x":{}}}`))),
			`{"elicitation":{},"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["a"]}}}`},
		{"a caller's, none carried", string(none.Filter(json.RawMessage(`{"extensions":{"io.modelcontextprotocol/ui":{}}}`))), `{}`},
		{"a caller's without extensions", string(s.Filter(json.RawMessage(`{"roots":{}}`))), `{"roots":{}}`},
		{"the hub's own declared", string(Declare(json.RawMessage(`{"extensions":{"a.b/c":{"x":1}},"roots":{}}`), config.ExtensionTasks)),
			`{"extensions":{"a.b/c":{"x":1},"io.modelcontextprotocol/tasks":{}},"roots":{}}`},
		{"the hub's own declared alone", string(Declare(nil, config.ExtensionTasks)), `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, tc.got, tc.want)
		}
	}
	if !s.Carries(config.ExtensionUI) || s.Carries(config.ExtensionTasks) || nilSet.Carries(config.ExtensionUI) {
		t.Errorf("Carries is wrong")
	}
}
