package naming

import (
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/purko-io/mcp-hub/internal/config"
)

var validName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func TestPublishNames(t *testing.T) {
	onConflict := config.Naming{Prefix: config.PrefixOnConflict, Separator: "__"}
	always := config.Naming{Prefix: config.PrefixAlways, Separator: "__"}
	never := config.Naming{Prefix: config.PrefixNever, Separator: "__"}
	keys := []Key{{"github", "search"}, {"jira", "search"}, {"github", "create_issue"}, {"fs", "read.file"}}
	cases := []struct {
		name   string
		naming config.Naming
		keys   []Key
		want   map[Key]string
		hidden map[Key]string
	}{
		{"on-conflict prefixes only colliding names", onConflict, keys, map[Key]string{
			{"github", "search"}: "github__search", {"jira", "search"}: "jira__search",
			{"github", "create_issue"}: "create_issue", {"fs", "read.file"}: "read_file",
		}, nil},
		{"always prefixes every name", always, keys, map[Key]string{
			{"github", "search"}: "github__search", {"jira", "search"}: "jira__search",
			{"github", "create_issue"}: "github__create_issue", {"fs", "read.file"}: "fs__read_file",
		}, nil},
		{"never keeps the first server's tool", never, keys, map[Key]string{
			{"github", "search"}: "search", {"github", "create_issue"}: "create_issue", {"fs", "read.file"}: "read_file",
		}, map[Key]string{{"jira", "search"}: "github"}},
		{"separator is configurable", config.Naming{Prefix: config.PrefixAlways, Separator: "-"},
			[]Key{{"a", "x"}}, map[Key]string{{"a", "x"}: "a-x"}, nil},
		{"dots in server names are sanitized", always, []Key{{"my.server", "x"}},
			map[Key]string{{"my.server", "x"}: "my_server__x"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, hidden := publish(tc.keys, tc.naming)
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
	a := []Key{{"s1", "t"}, {"s2", "t"}, {"s3", "u"}}
	b := []Key{{"s3", "u"}, {"s2", "t"}, {"s1", "t"}}
	for _, n := range []config.Naming{
		{Prefix: config.PrefixOnConflict, Separator: "__"},
		{Prefix: config.PrefixNever, Separator: "__"},
	} {
		ga, _ := publish(a, n)
		gb, _ := publish(b, n)
		for k, v := range ga {
			if gb[k] != v {
				t.Errorf("%s: %v named %q or %q depending on order", n.Prefix, k, v, gb[k])
			}
		}
	}
}

func TestLongNamesShortenedUniquely(t *testing.T) {
	long := strings.Repeat("x", 60)
	keys := []Key{
		{"server-with-a-long-name", long + "_one"},
		{"server-with-a-long-name", long + "_two"},
		{"other", long + "_one"},
	}
	for _, n := range []config.Naming{
		{Prefix: config.PrefixAlways, Separator: "__"},
		{Prefix: config.PrefixOnConflict, Separator: "__"},
	} {
		names, _ := publish(keys, n)
		seen := map[string]Key{}
		for k, name := range names {
			if !validName.MatchString(name) {
				t.Errorf("%s: %q is not a valid published name", n.Prefix, name)
			}
			if prev, dup := seen[name]; dup {
				t.Errorf("%s: %v and %v both published as %q", n.Prefix, prev, k, name)
			}
			seen[name] = k
		}
		again, _ := publish(keys, n)
		for k := range names {
			if again[k] != names[k] {
				t.Errorf("shortening is not deterministic: %q vs %q", names[k], again[k])
			}
		}
	}
}

func TestSanitizeCollisionsStayUnique(t *testing.T) {
	// "a.b" and "a_b" sanitize to the same name; a prefix can equal a bare name.
	keys := []Key{{"s", "a.b"}, {"s", "a_b"}, {"x", "y__z"}, {"y", "z"}}
	names, _ := publish(keys, config.Naming{Prefix: config.PrefixAlways, Separator: "__"})
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
	keys := []Key{{"lint", "static-analysis"}, {"static", "analysis"}, {"gh", "get_issue"}}
	for _, n := range []config.Naming{
		{Prefix: config.PrefixOnConflict, Separator: "__"},
		{Prefix: config.PrefixAlways, Separator: "-"},
		{Prefix: config.PrefixNever, Separator: "__"},
	} {
		names, hidden := publish(keys, n, "static-analysis", "trigger-workflow")
		for k, name := range names {
			if name == "static-analysis" || name == "trigger-workflow" {
				t.Errorf("%s: upstream tool %v published under the hub's name %q", n.Prefix, k, name)
			}
		}
		if n.Prefix == config.PrefixNever && hidden[Key{"lint", "static-analysis"}] != "hub" {
			t.Errorf("never: lint's static-analysis should be hidden by the hub, hidden = %v", hidden)
		}
	}
}

// claimsOf turns names as published into the claims a store would hold.
func claimsOf(names map[Key]string) map[string]Key {
	out := make(map[string]Key, len(names))
	for k, n := range names {
		out[n] = k
	}
	return out
}

// TestClaimedNamesStayStable walks one hub through the life the issue
// describes: names published while a server was down must keep reaching
// the same tools when it returns, after a restart, and only a removed
// server gives its names up.
func TestClaimedNamesStayStable(t *testing.T) {
	onConflict := config.Naming{Prefix: config.PrefixOnConflict, Separator: "__"}
	aEcho, bEcho, aOnly := Key{"a", "echo"}, Key{"b", "echo"}, Key{"a", "only_a"}
	cEcho := Key{"c", "echo"}
	claims := map[string]Key{}
	steps := []struct {
		name   string
		keys   []Key
		remove []string // servers removed from the sources before the step
		want   map[Key]string
		fresh  []Key // tools named for the first time
	}{
		{"b down at start: a's echo is bare", []Key{aEcho, aOnly},
			nil, map[Key]string{aEcho: "echo", aOnly: "only_a"}, []Key{aEcho, aOnly}},
		{"b comes up: a keeps echo, the newcomer is prefixed", []Key{aEcho, aOnly, bEcho},
			nil, map[Key]string{aEcho: "echo", aOnly: "only_a", bEcho: "b__echo"}, []Key{bEcho}},
		{"restart with both up and the saved claims: the same names", []Key{bEcho, aOnly, aEcho},
			nil, map[Key]string{aEcho: "echo", aOnly: "only_a", bEcho: "b__echo"}, nil},
		{"a down: its claim keeps echo from b", []Key{bEcho},
			nil, map[Key]string{bEcho: "b__echo"}, nil},
		{"a removed: its names are free, b keeps its own", []Key{bEcho},
			[]string{"a"}, map[Key]string{bEcho: "b__echo"}, nil},
		{"a newcomer is prefixed while b still offers the name", []Key{bEcho, cEcho},
			nil, map[Key]string{bEcho: "b__echo", cEcho: "c__echo"}, []Key{cEcho}},
	}
	for _, st := range steps {
		for n, k := range claims {
			if slices.Contains(st.remove, k.Server) {
				delete(claims, n)
			}
		}
		names, hidden, fresh := publishClaimed(st.keys, onConflict, claims)
		if len(hidden) != 0 {
			t.Errorf("%s: hidden %v", st.name, hidden)
		}
		if !maps.Equal(names, st.want) {
			t.Errorf("%s: names %v, want %v", st.name, names, st.want)
		}
		if len(fresh) != len(st.fresh) {
			t.Errorf("%s: fresh %v, want names for %v", st.name, fresh, st.fresh)
		}
		for _, k := range st.fresh {
			if _, ok := fresh[k]; !ok {
				t.Errorf("%s: %v not among the fresh names %v", st.name, k, fresh)
			}
		}
		maps.Copy(claims, claimsOf(fresh))
	}
}

func TestClaimedNames(t *testing.T) {
	onConflict := config.Naming{Prefix: config.PrefixOnConflict, Separator: "__"}
	long := strings.Repeat("x", 70)
	cases := []struct {
		name     string
		naming   config.Naming
		keys     []Key
		claims   map[string]Key
		reserved []string
		want     map[Key]string
	}{
		{"no claims: the old names", onConflict,
			[]Key{{"a", "echo"}, {"b", "echo"}, {"a", "x"}}, map[string]Key{},
			nil, map[Key]string{{"a", "echo"}: "a__echo", {"b", "echo"}: "b__echo", {"a", "x"}: "x"}},
		{"prefixed names stay prefixed when the conflict is gone", onConflict,
			[]Key{{"a", "echo"}}, map[string]Key{"a__echo": {"a", "echo"}, "b__echo": {"b", "echo"}},
			nil, map[Key]string{{"a", "echo"}: "a__echo"}},
		{"a claim of a down server keeps its name from a newcomer", onConflict,
			[]Key{{"b", "echo"}}, map[string]Key{"echo": {"a", "echo"}},
			nil, map[Key]string{{"b", "echo"}: "b__echo"}},
		{"always ignores claims", config.Naming{Prefix: config.PrefixAlways, Separator: "__"},
			[]Key{{"a", "echo"}}, map[string]Key{"echo": {"a", "echo"}},
			nil, map[Key]string{{"a", "echo"}: "a__echo"}},
		{"never ignores claims", config.Naming{Prefix: config.PrefixNever, Separator: "__"},
			[]Key{{"a", "echo"}, {"b", "echo"}}, map[string]Key{"echo": {"b", "echo"}},
			nil, map[Key]string{{"a", "echo"}: "echo"}},
		{"a hub tool's name beats a claim", onConflict,
			[]Key{{"lint", "static-analysis"}}, map[string]Key{"static-analysis": {"lint", "static-analysis"}},
			[]string{"static-analysis"}, map[Key]string{{"lint", "static-analysis"}: "lint__static-analysis"}},
		{"an invalid claimed name is ignored", onConflict,
			[]Key{{"a", "echo"}}, map[string]Key{"e.cho": {"a", "echo"}},
			nil, map[Key]string{{"a", "echo"}: "echo"}},
		{"long claimed names are kept as published", onConflict,
			[]Key{{"a", long}}, map[string]Key{withHash(long, Key{"a", long}): {"a", long}},
			nil, map[Key]string{{"a", long}: withHash(long, Key{"a", long})}},
		{"a newcomer's prefixed name meeting a claim is hashed", onConflict,
			[]Key{{"b", "echo"}}, map[string]Key{"echo": {"a", "echo"}, "b__echo": {"x", "b__echo"}},
			nil, map[Key]string{{"b", "echo"}: withHash("b__echo", Key{"b", "echo"})}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			names, _, fresh := publishClaimed(tc.keys, tc.naming, tc.claims, tc.reserved...)
			if !maps.Equal(names, tc.want) {
				t.Errorf("names %v, want %v", names, tc.want)
			}
			for k, n := range names {
				if !validName.MatchString(n) {
					t.Errorf("%v -> invalid %q", k, n)
				}
			}
			if tc.naming.Prefix != config.PrefixOnConflict && len(fresh) != 0 {
				t.Errorf("%s claims %v", tc.naming.Prefix, fresh)
			}
		})
	}
}
