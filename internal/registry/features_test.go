package registry

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/registry/naming"
)

// A tool's pointers at its app's UI name the UI as the hub publishes it;
// the rest of _meta, visibility above all, stays the server's, and the
// upstream's own definition is not changed.
func TestWithAppURI(t *testing.T) {
	tmpl := mcp.NewResourceTemplate("ui://docs+{id}/app.html", "views")
	f := &Features{
		Templates:   []Template{{URITemplate: "ui://docs+{id}/app.html", Original: "ui://{id}/app.html", Prefix: "docs+", Server: "docs", Def: tmpl}},
		originIndex: map[naming.Key]string{{Server: "docs", Original: "ui://view/app.html"}: "ui://docs+view/app.html", {Server: "docs", Original: "ui://same/app.html"}: "ui://same/app.html"},
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
