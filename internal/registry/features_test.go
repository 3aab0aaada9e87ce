package registry

import (
	"reflect"
	"testing"

	"github.com/purko-io/mcp-hub/internal/config"
)

func TestPublishURIs(t *testing.T) {
	onConflict := config.Naming{Prefix: config.PrefixOnConflict, Separator: "__"}
	always := config.Naming{Prefix: config.PrefixAlways, Separator: "__"}
	never := config.Naming{Prefix: config.PrefixNever, Separator: "__"}
	keys := []toolKey{
		{"docs", "file:///readme"}, {"wiki", "file:///readme"},
		{"docs", "docs://pages/{id}"}, {"My_Server", "git://x"},
	}
	cases := []struct {
		name   string
		naming config.Naming
		want   map[toolKey]string
		hidden map[toolKey]string
	}{
		{"on-conflict prefixes only the shared URI", onConflict, map[toolKey]string{
			{"docs", "file:///readme"}: "docs+file:///readme", {"wiki", "file:///readme"}: "wiki+file:///readme",
			{"docs", "docs://pages/{id}"}: "docs://pages/{id}", {"My_Server", "git://x"}: "git://x",
		}, nil},
		{"always prefixes every URI with a valid scheme", always, map[toolKey]string{
			{"docs", "file:///readme"}: "docs+file:///readme", {"wiki", "file:///readme"}: "wiki+file:///readme",
			{"docs", "docs://pages/{id}"}: "docs+docs://pages/{id}", {"My_Server", "git://x"}: "my-server+git://x",
		}, nil},
		{"never keeps the first server's URI", never, map[toolKey]string{
			{"docs", "file:///readme"}:    "file:///readme",
			{"docs", "docs://pages/{id}"}: "docs://pages/{id}", {"My_Server", "git://x"}: "git://x",
		}, map[toolKey]string{{"wiki", "file:///readme"}: "docs"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Order must not matter: replicas see servers in any order.
			rev := append([]toolKey(nil), keys...)
			for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
				rev[i], rev[j] = rev[j], rev[i]
			}
			for _, in := range [][]toolKey{keys, rev} {
				got, hidden := publishURIs(in, tc.naming)
				if !reflect.DeepEqual(got, tc.want) {
					t.Errorf("names = %v, want %v", got, tc.want)
				}
				if len(hidden) != len(tc.hidden) || (len(tc.hidden) > 0 && !reflect.DeepEqual(hidden, tc.hidden)) {
					t.Errorf("hidden = %v, want %v", hidden, tc.hidden)
				}
			}
		})
	}
}

func TestSchemePrefix(t *testing.T) {
	for in, want := range map[string]string{
		"docs":           "docs",
		"My_Server":      "my-server",
		"purko.github":   "purko.github",
		"9lives":         "s9lives",
		"":               "s",
		"ns.name-with_x": "ns.name-with-x",
	} {
		if got := schemePrefix(in); got != want {
			t.Errorf("schemePrefix(%q) = %q, want %q", in, got, want)
		}
	}
}

// Prompt names keep their characters (only tools must fit model APIs) and
// follow the same collision policy as tools.
func TestPromptNamesKeepTheirCharacters(t *testing.T) {
	keys := []toolKey{{"a", "code.review"}, {"b", "code.review"}, {"a", "summarize"}}
	got, _, _ := assignNames(keys, config.Naming{Prefix: config.PrefixOnConflict, Separator: "__"}, func(s string) string { return s }, nil)
	want := map[toolKey]string{{"a", "code.review"}: "a__code.review", {"b", "code.review"}: "b__code.review", {"a", "summarize"}: "summarize"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("prompt names = %v, want %v", got, want)
	}
}
