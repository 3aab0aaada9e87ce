package naming

import (
	"reflect"
	"testing"

	"github.com/purko-io/mcp-hub/internal/config"
)

func TestPublishURIs(t *testing.T) {
	onConflict := config.Naming{Prefix: config.PrefixOnConflict, Separator: "__"}
	always := config.Naming{Prefix: config.PrefixAlways, Separator: "__"}
	never := config.Naming{Prefix: config.PrefixNever, Separator: "__"}
	keys := []Key{
		{"docs", "file:///readme"}, {"wiki", "file:///readme"},
		{"docs", "docs://pages/{id}"}, {"My_Server", "git://x"},
		{"docs", "ui://view/app.html"}, {"wiki", "ui://view/app.html"},
	}
	cases := []struct {
		name   string
		naming config.Naming
		want   map[Key]string
		hidden map[Key]string
	}{
		{"on-conflict prefixes only the shared URI", onConflict, map[Key]string{
			{"docs", "file:///readme"}: "docs+file:///readme", {"wiki", "file:///readme"}: "wiki+file:///readme",
			{"docs", "docs://pages/{id}"}: "docs://pages/{id}", {"My_Server", "git://x"}: "git://x",
			{"docs", "ui://view/app.html"}: "ui://docs+view/app.html", {"wiki", "ui://view/app.html"}: "ui://wiki+view/app.html",
		}, nil},
		{"always prefixes every URI with a valid scheme", always, map[Key]string{
			{"docs", "file:///readme"}: "docs+file:///readme", {"wiki", "file:///readme"}: "wiki+file:///readme",
			{"docs", "docs://pages/{id}"}: "docs+docs://pages/{id}", {"My_Server", "git://x"}: "my-server+git://x",
			{"docs", "ui://view/app.html"}: "ui://docs+view/app.html", {"wiki", "ui://view/app.html"}: "ui://wiki+view/app.html",
		}, nil},
		{"never keeps the first server's URI", never, map[Key]string{
			{"docs", "file:///readme"}:    "file:///readme",
			{"docs", "docs://pages/{id}"}: "docs://pages/{id}", {"My_Server", "git://x"}: "git://x",
			{"docs", "ui://view/app.html"}: "ui://view/app.html",
		}, map[Key]string{{"wiki", "file:///readme"}: "docs", {"wiki", "ui://view/app.html"}: "docs"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Order must not matter: replicas see servers in any order.
			rev := append([]Key(nil), keys...)
			for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
				rev[i], rev[j] = rev[j], rev[i]
			}
			for _, in := range [][]Key{keys, rev} {
				got, hidden := URIs(in, tc.naming)
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
	keys := []Key{{"a", "code.review"}, {"b", "code.review"}, {"a", "summarize"}}
	got := Prompts(keys, config.Naming{Prefix: config.PrefixOnConflict, Separator: "__"})
	want := map[Key]string{{"a", "code.review"}: "a__code.review", {"b", "code.review"}: "b__code.review", {"a", "summarize"}: "summarize"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("prompt names = %v, want %v", got, want)
	}
}

// An app's UI keeps the ui:// scheme its host requires; every other URI
// gets the prefix in front of its scheme. UpstreamURI undoes either.
func TestPublishedURI(t *testing.T) {
	cases := []struct{ prefix, uri, pub string }{
		{"", "ui://view/app.html", "ui://view/app.html"},
		{"docs+", "ui://view/app.html", "ui://docs+view/app.html"},
		{"docs+", "ui:///app.html", "ui://docs+/app.html"},
		{"docs+", "file:///readme", "docs+file:///readme"},
		{"docs+", "ui://{id}/app.html", "ui://docs+{id}/app.html"},
	}
	for _, tc := range cases {
		if got := PublishedURI(tc.prefix, tc.uri); got != tc.pub {
			t.Errorf("PublishedURI(%q, %q) = %q, want %q", tc.prefix, tc.uri, got, tc.pub)
		}
		if got, ok := UpstreamURI(tc.prefix, tc.pub); !ok || got != tc.uri {
			t.Errorf("UpstreamURI(%q, %q) = %q, %v, want %q", tc.prefix, tc.pub, got, ok, tc.uri)
		}
	}
	for _, pub := range []string{"ui://wiki+view/app.html", "docs+ui://view/app.html", "wiki+file:///readme"} {
		if got, ok := UpstreamURI("docs+", pub); ok {
			t.Errorf("UpstreamURI(docs+, %q) = %q; want no URI of docs", pub, got)
		}
	}
}
