package registry

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/config"
)

func TestPublishURIs(t *testing.T) {
	onConflict := config.Naming{Prefix: config.PrefixOnConflict, Separator: "__"}
	always := config.Naming{Prefix: config.PrefixAlways, Separator: "__"}
	never := config.Naming{Prefix: config.PrefixNever, Separator: "__"}
	keys := []toolKey{
		{"docs", "file:///readme"}, {"wiki", "file:///readme"},
		{"docs", "docs://pages/{id}"}, {"My_Server", "git://x"},
		{"docs", "ui://view/app.html"}, {"wiki", "ui://view/app.html"},
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
			{"docs", "ui://view/app.html"}: "ui://docs+view/app.html", {"wiki", "ui://view/app.html"}: "ui://wiki+view/app.html",
		}, nil},
		{"always prefixes every URI with a valid scheme", always, map[toolKey]string{
			{"docs", "file:///readme"}: "docs+file:///readme", {"wiki", "file:///readme"}: "wiki+file:///readme",
			{"docs", "docs://pages/{id}"}: "docs+docs://pages/{id}", {"My_Server", "git://x"}: "my-server+git://x",
			{"docs", "ui://view/app.html"}: "ui://docs+view/app.html", {"wiki", "ui://view/app.html"}: "ui://wiki+view/app.html",
		}, nil},
		{"never keeps the first server's URI", never, map[toolKey]string{
			{"docs", "file:///readme"}:    "file:///readme",
			{"docs", "docs://pages/{id}"}: "docs://pages/{id}", {"My_Server", "git://x"}: "git://x",
			{"docs", "ui://view/app.html"}: "ui://view/app.html",
		}, map[toolKey]string{{"wiki", "file:///readme"}: "docs", {"wiki", "ui://view/app.html"}: "docs"}},
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

// A tool's pointers at its app's UI name the UI as the hub publishes it;
// the rest of _meta, visibility above all, stays the server's, and the
// upstream's own definition is not changed.
func TestWithAppURI(t *testing.T) {
	tmpl := mcp.NewResourceTemplate("ui://docs+{id}/app.html", "views")
	f := &Features{
		Templates:   []Template{{URITemplate: "ui://docs+{id}/app.html", Original: "ui://{id}/app.html", Prefix: "docs+", Server: "docs", Def: tmpl}},
		originIndex: map[toolKey]string{{"docs", "ui://view/app.html"}: "ui://docs+view/app.html", {"docs", "ui://same/app.html"}: "ui://same/app.html"},
	}
	tool := func(meta map[string]any) mcp.Tool {
		t := mcp.NewTool("show")
		if meta != nil {
			t.Meta = mcp.NewMetaFromMap(meta)
		}
		return t
	}
	cases := []struct {
		name         string
		server       string
		meta, wantMD map[string]any
	}{
		{"no _meta", "docs", nil, nil},
		{"renamed resource, visibility kept", "docs",
			map[string]any{"ui": map[string]any{"resourceUri": "ui://view/app.html", "visibility": []any{"app"}}, "x": 1.0},
			map[string]any{"ui": map[string]any{"resourceUri": "ui://docs+view/app.html", "visibility": []any{"app"}}, "x": 1.0}},
		{"the older flat key too", "docs",
			map[string]any{"ui": map[string]any{"resourceUri": "ui://view/app.html"}, "ui/resourceUri": "ui://view/app.html"},
			map[string]any{"ui": map[string]any{"resourceUri": "ui://docs+view/app.html"}, "ui/resourceUri": "ui://docs+view/app.html"}},
		{"a template's resource", "docs",
			map[string]any{"ui/resourceUri": "ui://chart/app.html"},
			map[string]any{"ui/resourceUri": "ui://docs+chart/app.html"}},
		{"a resource published as it is", "docs",
			map[string]any{"ui": map[string]any{"resourceUri": "ui://same/app.html"}},
			map[string]any{"ui": map[string]any{"resourceUri": "ui://same/app.html"}}},
		{"another server's tool is not renamed", "wiki",
			map[string]any{"ui": map[string]any{"resourceUri": "ui://view/app.html"}},
			map[string]any{"ui": map[string]any{"resourceUri": "ui://view/app.html"}}},
		{"no resource serves it", "docs",
			map[string]any{"ui": map[string]any{"resourceUri": "ui://gone/other.html"}},
			map[string]any{"ui": map[string]any{"resourceUri": "ui://gone/other.html"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := tool(tc.meta)
			before, _ := json.Marshal(in)
			out := withAppURI(in, tc.server, f)
			if after, _ := json.Marshal(in); string(after) != string(before) {
				t.Errorf("the upstream's definition changed: %s, was %s", after, before)
			}
			var got map[string]any
			if out.Meta != nil {
				got = out.Meta.AdditionalFields
			}
			if !reflect.DeepEqual(got, tc.wantMD) {
				t.Errorf("_meta = %v, want %v", got, tc.wantMD)
			}
		})
	}
}

// Which tools belong to an app (hasUI) and which are for the app alone.
func TestAppOnly(t *testing.T) {
	cases := []struct {
		meta           map[string]any
		appOnly, hasUI bool
	}{
		{nil, false, false},
		{map[string]any{"other": 1}, false, false},
		{map[string]any{"ui": map[string]any{"resourceUri": "ui://v/app.html"}}, false, true},
		{map[string]any{"ui/resourceUri": "ui://v/app.html"}, false, true},
		{map[string]any{"ui": map[string]any{"visibility": []any{"model", "app"}}}, false, true},
		{map[string]any{"ui": map[string]any{"visibility": []any{"model"}}}, false, true},
		{map[string]any{"ui": map[string]any{"visibility": []any{"app"}}}, true, true},
		{map[string]any{"ui": map[string]any{"visibility": []any{}}}, true, true},
		{map[string]any{"ui": "not an object"}, false, false},
	}
	for _, tc := range cases {
		tool := mcp.NewTool("t")
		if tc.meta != nil {
			tool.Meta = mcp.NewMetaFromMap(tc.meta)
		}
		if got := AppOnly(tool); got != tc.appOnly {
			t.Errorf("AppOnly(_meta %v) = %v, want %v", tc.meta, got, tc.appOnly)
		}
		if got := hasUI(tool); got != tc.hasUI {
			t.Errorf("hasUI(_meta %v) = %v, want %v", tc.meta, got, tc.hasUI)
		}
	}
}
