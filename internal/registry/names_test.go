package registry

import (
	"regexp"
	"strings"
	"testing"

	"github.com/purko-io/mcp-hub/internal/config"
)

var validName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func TestPublishNames(t *testing.T) {
	onConflict := config.Naming{Prefix: config.PrefixOnConflict, Separator: "__"}
	always := config.Naming{Prefix: config.PrefixAlways, Separator: "__"}
	never := config.Naming{Prefix: config.PrefixNever, Separator: "__"}
	keys := []toolKey{{"github", "search"}, {"jira", "search"}, {"github", "create_issue"}, {"fs", "read.file"}}
	cases := []struct {
		name   string
		naming config.Naming
		keys   []toolKey
		want   map[toolKey]string
		hidden map[toolKey]string
	}{
		{"on-conflict prefixes only colliding names", onConflict, keys, map[toolKey]string{
			{"github", "search"}: "github__search", {"jira", "search"}: "jira__search",
			{"github", "create_issue"}: "create_issue", {"fs", "read.file"}: "read_file",
		}, nil},
		{"always prefixes every name", always, keys, map[toolKey]string{
			{"github", "search"}: "github__search", {"jira", "search"}: "jira__search",
			{"github", "create_issue"}: "github__create_issue", {"fs", "read.file"}: "fs__read_file",
		}, nil},
		{"never keeps the first server's tool", never, keys, map[toolKey]string{
			{"github", "search"}: "search", {"github", "create_issue"}: "create_issue", {"fs", "read.file"}: "read_file",
		}, map[toolKey]string{{"jira", "search"}: "github"}},
		{"separator is configurable", config.Naming{Prefix: config.PrefixAlways, Separator: "-"},
			[]toolKey{{"a", "x"}}, map[toolKey]string{{"a", "x"}: "a-x"}, nil},
		{"dots in server names are sanitized", always, []toolKey{{"my.server", "x"}},
			map[toolKey]string{{"my.server", "x"}: "my_server__x"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, hidden := publishNames(tc.keys, tc.naming)
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for k, w := range tc.want {
				if got[k] != w {
					t.Errorf("%v -> %q, want %q", k, got[k], w)
				}
			}
			if len(hidden) != len(tc.hidden) {
				t.Fatalf("hidden %v, want %v", hidden, tc.hidden)
			}
			for k, w := range tc.hidden {
				if hidden[k] != w {
					t.Errorf("hidden %v -> %q, want %q", k, hidden[k], w)
				}
			}
		})
	}
}

func TestPublishNamesOrderIndependent(t *testing.T) {
	a := []toolKey{{"s1", "t"}, {"s2", "t"}, {"s3", "u"}}
	b := []toolKey{{"s3", "u"}, {"s2", "t"}, {"s1", "t"}}
	for _, n := range []config.Naming{
		{Prefix: config.PrefixOnConflict, Separator: "__"},
		{Prefix: config.PrefixNever, Separator: "__"},
	} {
		ga, _ := publishNames(a, n)
		gb, _ := publishNames(b, n)
		for k, v := range ga {
			if gb[k] != v {
				t.Errorf("%s: %v named %q or %q depending on order", n.Prefix, k, v, gb[k])
			}
		}
	}
}

func TestLongNamesShortenedUniquely(t *testing.T) {
	long := strings.Repeat("x", 60)
	keys := []toolKey{
		{"server-with-a-long-name", long + "_one"},
		{"server-with-a-long-name", long + "_two"},
		{"other", long + "_one"},
	}
	for _, n := range []config.Naming{
		{Prefix: config.PrefixAlways, Separator: "__"},
		{Prefix: config.PrefixOnConflict, Separator: "__"},
	} {
		names, _ := publishNames(keys, n)
		seen := map[string]toolKey{}
		for k, name := range names {
			if !validName.MatchString(name) {
				t.Errorf("%s: %q is not a valid published name", n.Prefix, name)
			}
			if prev, dup := seen[name]; dup {
				t.Errorf("%s: %v and %v both published as %q", n.Prefix, prev, k, name)
			}
			seen[name] = k
		}
		again, _ := publishNames(keys, n)
		for k := range names {
			if again[k] != names[k] {
				t.Errorf("shortening is not deterministic: %q vs %q", names[k], again[k])
			}
		}
	}
}

func TestSanitizeCollisionsStayUnique(t *testing.T) {
	// "a.b" and "a_b" sanitize to the same name; a prefix can equal a bare name.
	keys := []toolKey{{"s", "a.b"}, {"s", "a_b"}, {"x", "y__z"}, {"y", "z"}}
	names, _ := publishNames(keys, config.Naming{Prefix: config.PrefixAlways, Separator: "__"})
	seen := map[string]bool{}
	for k, n := range names {
		if !validName.MatchString(n) {
			t.Errorf("%v -> invalid %q", k, n)
		}
		if seen[n] {
			t.Errorf("duplicate published name %q", n)
		}
		seen[n] = true
	}
	if len(names) != len(keys) {
		t.Fatalf("published %d of %d tools", len(names), len(keys))
	}
}

func TestReservedNamesStayWithTheHub(t *testing.T) {
	keys := []toolKey{{"lint", "static-analysis"}, {"static", "analysis"}, {"gh", "get_issue"}}
	for _, n := range []config.Naming{
		{Prefix: config.PrefixOnConflict, Separator: "__"},
		{Prefix: config.PrefixAlways, Separator: "-"},
		{Prefix: config.PrefixNever, Separator: "__"},
	} {
		names, hidden := publishNames(keys, n, "static-analysis", "trigger-workflow")
		for k, name := range names {
			if name == "static-analysis" || name == "trigger-workflow" {
				t.Errorf("%s: upstream tool %v published under the hub's name %q", n.Prefix, k, name)
			}
		}
		if n.Prefix == config.PrefixNever && hidden[toolKey{"lint", "static-analysis"}] != "hub" {
			t.Errorf("never: lint's static-analysis should be hidden by the hub, hidden = %v", hidden)
		}
	}
}
