package chart_test

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/purko-io/mcp-hub/internal/config"
)

// schemaNode is the part of a JSON Schema the config schema uses.
type schemaNode struct {
	Type                 any                    `json:"type"`
	Properties           map[string]*schemaNode `json:"properties"`
	AdditionalProperties any                    `json:"additionalProperties"`
	Items                *schemaNode            `json:"items"`
}

// notInSchema are config fields the hub's parser takes but the chart's
// schema leaves out on purpose: discovery sources set them, an operator
// writing them into the file would only confuse the hub's view.
var notInSchema = map[string]bool{
	"config.servers[].problem": true,
	"config.servers[].origin":  true,
}

// TestConfigSchemaMatchesConfig keeps values.schema.json's config in step
// with internal/config: every field of config.Config (by its json tags,
// walked by reflection) has a schema property of a fitting type, every
// schema property is a field, and every object is closed
// (additionalProperties: false) as the hub's strict parser is. A new config
// field without a schema entry fails here, not in a user's helm install.
func TestConfigSchemaMatchesConfig(t *testing.T) {
	data, err := os.ReadFile("values.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var root schemaNode
	if err := json.Unmarshal(data, &root); err != nil {
		t.Fatalf("values.schema.json: %v", err)
	}
	cfg := root.Properties["config"]
	if cfg == nil {
		t.Fatal("values.schema.json has no properties.config")
	}
	walkSchema(t, reflect.TypeFor[config.Config](), cfg, "config")
}

func walkSchema(t *testing.T, typ reflect.Type, node *schemaNode, path string) {
	t.Helper()
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	switch typ {
	case reflect.TypeFor[config.Duration]():
		wantTypes(t, node, path, "string", "number")
		return
	case reflect.TypeFor[json.RawMessage]():
		wantTypes(t, node, path, "object")
		return
	}
	switch typ.Kind() {
	case reflect.Struct:
		wantTypes(t, node, path, "object")
		if node.AdditionalProperties != false {
			t.Errorf("%s: additionalProperties is %v, want false: the hub refuses unknown fields", path, node.AdditionalProperties)
		}
		fields := map[string]reflect.Type{}
		jsonFields(typ, fields)
		for _, name := range slices.Sorted(maps.Keys(fields)) {
			child := path + "." + name
			if notInSchema[child] {
				if node.Properties[name] != nil {
					t.Errorf("%s: in the schema, but listed in notInSchema", child)
				}
				continue
			}
			sub := node.Properties[name]
			if sub == nil {
				t.Errorf("%s: a config field without a schema property in values.schema.json", child)
				continue
			}
			walkSchema(t, fields[name], sub, child)
		}
		for name := range node.Properties {
			if _, ok := fields[name]; !ok {
				t.Errorf("%s.%s: in values.schema.json but not a config field: the hub would refuse it", path, name)
			}
		}
	case reflect.Slice:
		wantTypes(t, node, path, "array")
		if node.Items == nil {
			t.Errorf("%s: array without items", path)
			return
		}
		walkSchema(t, typ.Elem(), node.Items, path+"[]")
	case reflect.Map:
		wantTypes(t, node, path, "object")
	case reflect.String:
		wantTypes(t, node, path, "string")
	case reflect.Bool:
		wantTypes(t, node, path, "boolean")
	case reflect.Int, reflect.Int64:
		wantTypes(t, node, path, "integer")
	case reflect.Float64:
		wantTypes(t, node, path, "number")
	default:
		t.Errorf("%s: no schema rule for Go type %s; extend walkSchema", path, typ)
	}
}

// jsonFields collects typ's fields by json name, inlining embedded
// structs as encoding/json does.
func jsonFields(typ reflect.Type, out map[string]reflect.Type) {
	for f := range typ.Fields() {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
		case f.Anonymous && name == "":
			jsonFields(f.Type, out)
		case name == "":
			out[f.Name] = f.Type
		default:
			out[name] = f.Type
		}
	}
}

// wantTypes checks that node's type (a name or a list of names; null may
// come beside) holds every one of want.
func wantTypes(t *testing.T, node *schemaNode, path string, want ...string) {
	t.Helper()
	var have []string
	switch v := node.Type.(type) {
	case string:
		have = []string{v}
	case []any:
		for _, x := range v {
			s, _ := x.(string)
			have = append(have, s)
		}
	}
	for _, w := range want {
		if !slices.Contains(have, w) {
			t.Errorf("%s: schema type %v, want %s", path, have, strings.Join(want, " and "))
		}
	}
}

// TestConfigRejected: a config the hub would refuse fails helm template
// with the field's path in the message, instead of becoming a pod that
// crash-loops on start.
func TestConfigRejected(t *testing.T) {
	cases := []struct {
		name, values, want string
	}{
		{"bad transport", "config: {servers: [{name: a, url: 'http://a:8000/mcp', transport: htttp}]}\n", "/config/servers/0/transport"},
		{"unknown server field", "config: {servers: [{name: a, url: 'http://a:8000/mcp', tranport: sse}]}\n", "'tranport' not allowed"},
		{"unknown top-level field", "config: {server: []}\n", "'server' not allowed"},
		{"server without name", "config: {servers: [{url: 'http://a:8000/mcp'}]}\n", "name"},
		{"bad anonymous level", "config: {auth: {anonymous: {enabled: true, maxLevel: root}}}\n", "/config/auth/anonymous/maxLevel"},
		{"bad token level", "config: {auth: {tokens: [{name: ci, token: {file: /t}, maxLevel: admin}]}}\n", "/config/auth/tokens/0/maxLevel"},
		{"inline token", "config: {servers: [{name: a, url: 'http://a:8000/mcp', token: ghp_x}]}\n", "/config/servers/0/token"},
		{"bad naming prefix", "config: {naming: {prefix: sometimes}}\n", "/config/naming/prefix"},
		{"bad duration", "config: {upstream: {timeout: 10x}}\n", "/config/upstream/timeout"},
		{"negative duration", "config: {shutdownGrace: -5s}\n", "/config/shutdownGrace"},
		{"bad log level", "config: {upstream: {logLevel: verbose}}\n", "/config/upstream/logLevel"},
		{"bad pinning mode", "config: {pinning: {mode: strict}}\n", "/config/pinning/mode"},
		{"bad screening mode", "config: {screening: {mode: strict}}\n", "/config/screening/mode"},
		{"bad oauth auth style", "config: {servers: [{name: a, url: 'https://a/mcp', oauth: {tokenURL: 'https://as/token', clientID: hub, authStyle: jwt}}]}\n", "/config/servers/0/oauth/authStyle"},
		{"bad binding source", "config: {apiTools: [{name: t, url: 'https://x/', bindings: [{from: user, header: X-User}]}]}\n", "/config/apiTools/0/bindings/0/from"},
		{"negative limit", "config: {limits: {perCaller: {rate: -1}}}\n", "/config/limits/perCaller/rate"},
		{"bad tool override name", "config: {servers: [{name: a, url: 'http://a:8000/mcp', tools: {overrides: {x: {name: 'a b'}}}}]}\n", "/config/servers/0/tools/overrides/x/name"},
		{"unknown tool override field", "config: {servers: [{name: a, url: 'http://a:8000/mcp', tools: {overrides: {x: {nmae: y}}}}]}\n", "'nmae' not allowed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := render(t, tc.values)
			if err == nil {
				t.Fatalf("rendered; want an error naming %s", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error does not name %q: %v", tc.want, err)
			}
		})
	}
}

// yamlBlock is a fenced yaml block of a markdown file.
var yamlBlock = regexp.MustCompile("(?s)```ya?ml\n(.*?)```")

// TestConfigReadmeExamples: every config example of the README and the docs
// (each yaml block of the pages below is one) passes the chart's schema as
// the chart's config, so the schema is not stricter than the documented
// config.
func TestConfigReadmeExamples(t *testing.T) {
	// The pages whose yaml blocks are all config examples: the README's guide
	// and the docs pages its reference sections moved to (issue 36). A page
	// that gets a config example joins the list.
	configExamplePages := []string{
		"README.md",
		"docs/operators.md",
		"docs/security.md",
		"docs/protocol.md",
		"docs/api.md",
	}
	total := 0
	for _, page := range configExamplePages {
		text, err := os.ReadFile(filepath.Join("..", "..", page))
		if err != nil {
			t.Fatal(err)
		}
		blocks := yamlBlock.FindAllSubmatch(text, -1)
		if len(blocks) == 0 {
			t.Errorf("%s has no yaml block: take it off configExamplePages, or its examples are no longer checked", page)
		}
		total += len(blocks)
		for i, b := range blocks {
			var example map[string]any
			if err := yaml.Unmarshal(b[1], &example); err != nil {
				t.Fatalf("%s yaml block %d: %v", page, i, err)
			}
			values, err := yaml.Marshal(map[string]any{"config": example})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := render(t, string(values)); err != nil {
				t.Errorf("%s yaml block %d (%s...) is refused by the chart: %v", page, i, firstLine(b[1]), err)
			}
		}
	}
	if total < 5 {
		t.Fatalf("%v hold %d yaml blocks; the test expects their config examples", configExamplePages, total)
	}
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(string(b), "\n")
	return s
}
