package adminapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/registry"
	"github.com/purko-io/mcp-hub/internal/toolspec"
	"github.com/purko-io/mcp-hub/internal/upstream"
)

// The pinned documents of the official registry (testdata/mcpregistry).
const (
	pinnedSchema  = "testdata/mcpregistry/server.schema.json"
	pinnedOpenAPI = "testdata/mcpregistry/openapi.yaml"
)

// testRegistry is the registry API over entries, its clock at a fixed time
// the test moves.
type testRegistry struct {
	m       *mcpRegistry
	mux     *http.ServeMux
	entries []registryEntry
	now     time.Time
}

func newTestRegistry(t testing.TB, auth *callers.Auth, o RegistryOptions, entries ...registryEntry) *testRegistry {
	t.Helper()
	tr := &testRegistry{entries: entries, now: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), mux: http.NewServeMux()}
	tr.m = newMCPRegistry(nil, auth, o)
	tr.m.entries = func() []registryEntry { return slices.Clone(tr.entries) }
	tr.m.now = func() time.Time { return tr.now }
	tr.m.mount(tr.mux)
	return tr
}

// get serves GET target and returns the status and body.
func (tr *testRegistry) get(t *testing.T, target string) (int, []byte) {
	t.Helper()
	rec := httptest.NewRecorder()
	tr.mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("GET %s: Content-Type %q", target, ct)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, rec.Body.Bytes()); err != nil {
		t.Fatalf("GET %s: %s: %v", target, rec.Body, err)
	}
	return rec.Code, compact.Bytes()
}

// list decodes a ServerList.
func list(t *testing.T, body []byte) serverList {
	t.Helper()
	var l serverList
	if err := json.Unmarshal(body, &l); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	return l
}

func names(l serverList) []string {
	out := []string{}
	for _, s := range l.Servers {
		out = append(out, s.Server.Name)
	}
	return out
}

func entry(name, version string) registryEntry {
	return registryEntry{Name: name, Description: "MCP server " + name, Version: version}
}

func TestRegistryVersion(t *testing.T) {
	for in, want := range map[string]string{
		"1.0.0":                 "1.0.0",
		"2.1.0-alpha.1":         "2.1.0-alpha.1",
		"1.0.0+20130313":        "1.0.0+20130313",
		"2025.12.01":            "2025.12.01",
		"":                      unknownVersion,
		"latest":                unknownVersion,
		"Latest":                unknownVersion,
		"^1.2.3":                unknownVersion,
		"~1.2.3":                unknownVersion,
		">=1.2.3":               unknownVersion,
		"1.x":                   unknownVersion,
		"1.*":                   unknownVersion,
		"1.0 beta":              unknownVersion,
		"v1/2":                  unknownVersion,
		strings.Repeat("1", 65): unknownVersion,
	} {
		if got := registryVersion(in); got != want {
			t.Errorf("registryVersion(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRegistryText(t *testing.T) {
	long := strings.Repeat("é", 150)
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"  Weather\tforecasts\n for  you ", "Weather forecasts for you"},
		{"bell\a here", "bell here"},
		{long, strings.Repeat("é", 99) + "…"},
		{strings.Repeat("x", 100), strings.Repeat("x", 100)},
	} {
		got := registryText(tc.in)
		if got != tc.want {
			t.Errorf("registryText(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if n := len([]rune(got)); n > maxRegistryText {
			t.Errorf("registryText(%q) has %d characters", tc.in, n)
		}
	}
}

// TestRegistryEntries: a catalog becomes one entry per server, with what
// the server announced, and nothing of how the hub reaches it.
func TestRegistryEntries(t *testing.T) {
	const upstreamURL = "http://10.9.8.7:9000/mcp"
	cat := &registry.Catalog{Servers: []registry.ServerView{
		{Name: "api", Transport: "http", Source: "config", Status: registry.Status{State: registry.StateConnected}},
		{Name: "github", URL: upstreamURL, Transport: "streamable-http", Auth: "bearer", Source: "file",
			Status: registry.Status{State: registry.StateConnected, Info: upstream.Info{Version: "0.9.1", Title: "GitHub", Description: "Issues,\npull requests"}}},
		{Name: "hub", Transport: "builtin", Source: "hub", Status: registry.Status{State: registry.StateConnected}},
		{Name: "ranged", URL: upstreamURL, Status: registry.Status{State: registry.StateError, Error: "down", Info: upstream.Info{Version: "^2"}}},
		{Name: "wiki", URL: upstreamURL, Status: registry.Status{State: registry.StateConnected, Info: upstream.Info{Version: "3"}}},
	}, Virtual: []toolspec.VirtualServer{{Name: "coding", Servers: []string{"github"}}, {Name: "wiki", Description: "The wiki, read only", Tools: []string{"wiki_get_*"}}}}
	got := registryEntries(cat, "v0.4.1-dev+1a2b3c4")
	want := []registryEntry{
		{Name: "coding", Title: "virtual server coding", Description: "A virtual server of mcp-hub: a chosen set of its servers and tools", Version: "0.4.1-dev+1a2b3c4"},
		// A virtual server takes the place of the server of its name.
		{Name: "wiki", Title: "virtual server wiki", Description: "The wiki, read only", Version: "0.4.1-dev+1a2b3c4"},
		{Name: "api", Title: "mcp-hub API tools", Description: "HTTP API tools of mcp-hub", Version: "0.4.1-dev+1a2b3c4"},
		{Name: "github", Title: "GitHub", Description: "Issues, pull requests", Version: "0.9.1"},
		{Name: "hub", Title: "mcp-hub builtins", Description: "mcp-hub's own tools", Version: "0.4.1-dev+1a2b3c4"},
		{Name: "ranged", Description: "MCP server ranged through mcp-hub", Version: unknownVersion},
	}
	if !slices.Equal(got, want) {
		t.Errorf("entries\n%+v\nwant\n%+v", got, want)
	}
}

// serverSchema compiles the pinned server.json schema, formats asserted.
func serverSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(pinnedSchema)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	id := doc.(map[string]any)["$id"].(string)
	if id != serverSchemaURL {
		t.Fatalf("the pinned schema is %s, the documents name %s", id, serverSchemaURL)
	}
	if err := c.AddResource(id, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// validateServers checks every server document of a ServerList or
// ServerResponse body against the schema and returns them.
func validateServers(t *testing.T, schema *jsonschema.Schema, body []byte) []map[string]any {
	t.Helper()
	var v struct {
		Servers []struct {
			Server json.RawMessage `json:"server"`
		} `json:"servers"`
		Server json.RawMessage `json:"server"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	raws := []json.RawMessage{}
	for _, s := range v.Servers {
		raws = append(raws, s.Server)
	}
	if v.Server != nil {
		raws = append(raws, v.Server)
	}
	var out []map[string]any
	for _, raw := range raws {
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		if err := schema.Validate(inst); err != nil {
			t.Errorf("server.json %s:\n%v", raw, err)
		}
		out = append(out, inst.(map[string]any))
	}
	return out
}

// TestRegistryDocumentsValid: every document the API answers is valid
// against the pinned server.json schema, for odd names and namespaces, a
// hub with and without auth, and no servers at all; its remotes are the
// hub's, with the Authorization header a client needs and never a value.
func TestRegistryDocumentsValid(t *testing.T) {
	schema := serverSchema(t)
	level := autonomy.Full
	tokens := []callers.TokenCaller{{Name: "ci", Token: "hub-caller-token"}}
	long := "a" + strings.Repeat("b.c-d_", 10) + "zz" // 63 characters, the longest server name
	for _, tc := range []struct {
		name            string
		auth            *callers.Auth
		opts            RegistryOptions
		entries         []registryEntry
		base            string
		header, require bool
	}{
		{name: "no servers", auth: callers.AnonymousOnly(level)},
		{name: "plain", auth: callers.AnonymousOnly(level), entries: []registryEntry{entry("github", "1.0.0")}, base: "http://example.com"},
		{name: "odd names", auth: callers.AnonymousOnly(level), opts: RegistryOptions{Namespace: "IO.Example-Team." + strings.Repeat("n", 100)},
			entries: []registryEntry{entry("GitHub.Enterprise", "2.0.0-rc.1+build.5"), entry(long, unknownVersion), entry("a", "1"),
				{Name: "x_y", Title: registryText(strings.Repeat("T", 300)), Description: registryText(strings.Repeat("D ", 300)), Version: "3"}},
			base: "http://example.com"},
		{name: "auth required", auth: callers.NewAuth(tokens, nil, nil), entries: []registryEntry{entry("github", "1.0.0")},
			base: "http://example.com", header: true, require: true},
		{name: "auth optional", auth: callers.NewAuth(tokens, &level, nil), entries: []registryEntry{entry("github", "1.0.0")},
			base: "http://example.com", header: true},
		{name: "no auth given", entries: []registryEntry{entry("github", "1.0.0")}, base: "http://example.com"},
		{name: "configured base", auth: callers.AnonymousOnly(level), opts: RegistryOptions{BaseURL: "https://hub.example.com/prefix/"},
			entries: []registryEntry{entry("github", "1.0.0")}, base: "https://hub.example.com/prefix"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTestRegistry(t, tc.auth, tc.opts, tc.entries...)
			ns := tc.opts.Namespace
			if ns == "" {
				ns = "local.mcp-hub"
			}
			targets := []string{"/v0.1/servers", "/v0.1/servers?version=latest&limit=100"}
			for _, e := range tc.entries {
				n := url.PathEscape(ns + "/" + e.Name)
				targets = append(targets, "/v0.1/servers/"+n+"/versions", "/v0.1/servers/"+n+"/versions/latest",
					"/v0.1/servers/"+n+"/versions/"+url.PathEscape(e.Version))
			}
			seen := 0
			for _, target := range targets {
				status, body := tr.get(t, target)
				if status != http.StatusOK {
					t.Fatalf("GET %s: %d %s", target, status, body)
				}
				if bytes.Contains(body, []byte("hub-caller-token")) {
					t.Errorf("GET %s answers a token: %s", target, body)
				}
				for _, doc := range validateServers(t, schema, body) {
					seen++
					name := doc["name"].(string)
					if !strings.HasPrefix(name, ns+"/") {
						t.Errorf("name %s is not in %s", name, ns)
					}
					remotes := doc["remotes"].([]any)
					if len(remotes) != 2 {
						t.Fatalf("%s: remotes %v", name, remotes)
					}
					server := strings.TrimPrefix(name, ns+"/")
					for i, kind := range []string{"mcp", "sse"} {
						r := remotes[i].(map[string]any)
						if want := tc.base + "/servers/" + server + "/" + kind; r["url"] != want {
							t.Errorf("%s: remote %v, want %s", name, r, want)
						}
						headers, _ := r["headers"].([]any)
						if (len(headers) == 1) != tc.header {
							t.Fatalf("%s: headers %v, want one: %v", name, headers, tc.header)
						}
						if tc.header {
							h := headers[0].(map[string]any)
							if h["name"] != "Authorization" || h["isSecret"] != true || h["isRequired"] != tc.require || h["value"] != "Bearer {token}" {
								t.Errorf("%s: header %v", name, h)
							}
						}
					}
				}
			}
			if want := 5 * len(tc.entries); seen != want { // twice in the lists, three times alone
				t.Errorf("validated %d documents, want %d", seen, want)
			}
		})
	}
}

// TestRegistryList: paging by the registry's cursor, search, version and
// updated_since filters, and the caller's errors named.
func TestRegistryList(t *testing.T) {
	var entries []registryEntry
	for _, n := range []string{"delta", "alpha", "Charlie", "bravo", "echo"} {
		entries = append(entries, entry(n, "1.0.0"))
	}
	entries = append(entries, entry("foxtrot", "2.0.0"))
	for _, tc := range []struct {
		name, query string
		status      int
		want        []string
		next        string
		err         string
	}{
		{name: "all", query: "", status: 200, want: []string{"Charlie", "alpha", "bravo", "delta", "echo", "foxtrot"}},
		{name: "a page", query: "limit=2", status: 200, want: []string{"Charlie", "alpha"}, next: "local.mcp-hub/alpha:1.0.0"},
		{name: "the next page", query: "limit=2&cursor=local.mcp-hub/alpha:1.0.0", status: 200, want: []string{"bravo", "delta"}, next: "local.mcp-hub/delta:1.0.0"},
		{name: "the last page", query: "limit=2&cursor=local.mcp-hub/delta:1.0.0", status: 200, want: []string{"echo", "foxtrot"}},
		{name: "a cursor past the end", query: "cursor=local.mcp-hub/zulu", status: 200, want: []string{}},
		{name: "a cursor without version", query: "cursor=local.mcp-hub/delta", status: 200, want: []string{"echo", "foxtrot"}},
		{name: "exactly a page", query: "limit=6", status: 200, want: []string{"Charlie", "alpha", "bravo", "delta", "echo", "foxtrot"}},
		{name: "search, any case", query: "search=CHAR", status: 200, want: []string{"Charlie"}},
		{name: "search the namespace", query: "search=local.mcp-hub/e", status: 200, want: []string{"echo"}},
		{name: "search nothing", query: "search=zulu", status: 200, want: []string{}},
		{name: "latest", query: "version=latest", status: 200, want: []string{"Charlie", "alpha", "bravo", "delta", "echo", "foxtrot"}},
		{name: "a version", query: "version=2.0.0", status: 200, want: []string{"foxtrot"}},
		{name: "updated since before", query: "updated_since=2026-11-30T00:00:00Z", status: 200, want: []string{"Charlie", "alpha", "bravo", "delta", "echo", "foxtrot"}},
		{name: "updated since after", query: "updated_since=2026-12-01T10:00:00.5%2B00:00", status: 200, want: []string{}},
		{name: "limit 0", query: "limit=0", status: 400, err: "limit"},
		{name: "limit 101", query: "limit=101", status: 400, err: "limit"},
		{name: "limit not a number", query: "limit=ten", status: 400, err: "limit"},
		{name: "updated_since not a time", query: "updated_since=yesterday", status: 400, err: "updated_since"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTestRegistry(t, callers.AnonymousOnly(autonomy.Full), RegistryOptions{}, entries...)
			status, body := tr.get(t, "/v0.1/servers?"+tc.query)
			if status != tc.status {
				t.Fatalf("%d %s, want %d", status, body, tc.status)
			}
			if tc.err != "" {
				var e struct{ Error string }
				if err := json.Unmarshal(body, &e); err != nil || !strings.HasPrefix(e.Error, tc.err+": ") {
					t.Errorf("error %s, want one naming %s", body, tc.err)
				}
				return
			}
			l := list(t, body)
			var got []string
			for _, n := range names(l) {
				got = append(got, strings.TrimPrefix(n, "local.mcp-hub/"))
			}
			if !slices.Equal(got, tc.want) && len(got)+len(tc.want) > 0 {
				t.Errorf("servers %v, want %v", got, tc.want)
			}
			if l.Metadata.Count != len(l.Servers) || l.Metadata.NextCursor != tc.next {
				t.Errorf("metadata %+v, want count %d, next %q", l.Metadata, len(l.Servers), tc.next)
			}
		})
	}
}

// TestRegistryLookups: one server by name, its versions, 404 for what the
// hub does not publish.
func TestRegistryLookups(t *testing.T) {
	tr := newTestRegistry(t, callers.AnonymousOnly(autonomy.Full), RegistryOptions{Namespace: "com.example"},
		entry("github", "1.2.3+b.7"), entry("web", unknownVersion))
	for _, tc := range []struct {
		path   string
		status int
		want   string
	}{
		{"/v0.1/servers/com.example%2Fgithub/versions", 200, `"count":1`},
		{"/v0.1/servers/com.example%2Fgithub/versions/latest", 200, `"version":"1.2.3+b.7"`},
		{"/v0.1/servers/com.example%2Fgithub/versions/1.2.3%2Bb.7", 200, `"isLatest":true`},
		{"/v0.1/servers/com.example%2Fweb/versions/0.0.0-unknown", 200, `"name":"com.example/web"`},
		{"/v0.1/servers/com.example%2Fgithub/versions/1.2.2", 404, `has no version \"1.2.2\": the hub serves 1.2.3+b.7`},
		{"/v0.1/servers/com.example%2Fgitlab/versions", 404, `server \"com.example/gitlab\" not found`},
		{"/v0.1/servers/com.example%2Fgitlab/versions/latest", 404, `not found`},
		{"/v0.1/servers/local.mcp-hub%2Fgithub/versions/latest", 404, `not found`},
		{"/v0.1/servers/github/versions/latest", 404, `not found`},
	} {
		status, body := tr.get(t, tc.path)
		if status != tc.status || !strings.Contains(string(body), tc.want) {
			t.Errorf("GET %s: %d %s, want %d with %s", tc.path, status, body, tc.status, tc.want)
		}
	}
}

// TestRegistryUpdatedAt: an entry's publishedAt stays, its updatedAt
// moves when what is published of it changes, and updated_since finds it.
func TestRegistryUpdatedAt(t *testing.T) {
	tr := newTestRegistry(t, nil, RegistryOptions{}, entry("a", "1.0.0"), entry("b", "1.0.0"))
	t0 := tr.now
	stamps := func() map[string]officialMeta {
		_, body := tr.get(t, "/v0.1/servers")
		out := map[string]officialMeta{}
		for _, s := range list(t, body).Servers {
			out[s.Server.Name] = s.Meta.Official
		}
		return out
	}
	first := stamps()
	tr.now = t0.Add(time.Hour)
	tr.entries[1].Version = "1.1.0"
	second := stamps()
	if a := second["local.mcp-hub/a"]; a != first["local.mcp-hub/a"] || !a.UpdatedAt.Equal(t0) {
		t.Errorf("unchanged a: %+v, was %+v", a, first["local.mcp-hub/a"])
	}
	if b := second["local.mcp-hub/b"]; !b.PublishedAt.Equal(t0) || !b.UpdatedAt.Equal(t0.Add(time.Hour)) || b.Status != "active" || !b.IsLatest {
		t.Errorf("changed b: %+v", b)
	}
	_, body := tr.get(t, "/v0.1/servers?updated_since="+url.QueryEscape(t0.Add(time.Minute).Format(time.RFC3339)))
	if got := names(list(t, body)); !slices.Equal(got, []string{"local.mcp-hub/b"}) {
		t.Errorf("updated since: %v", got)
	}
	// Gone and back: published anew.
	tr.entries = tr.entries[1:]
	stamps()
	tr.now = t0.Add(2 * time.Hour)
	tr.entries = append(tr.entries, entry("a", "1.0.0"))
	if a := stamps()["local.mcp-hub/a"]; !a.PublishedAt.Equal(tr.now) {
		t.Errorf("a back: %+v", a)
	}
}

// pinnedOpenAPIChecks validate the pinned document. Its examples are not
// all valid against its own schemas (a package without the required
// transport), and kin-openapi does not know the 3.1 document's $id:
// checked without either.
func pinnedOpenAPIChecks() []openapi3.ValidationOption {
	return []openapi3.ValidationOption{openapi3.DisableExamplesValidation(), openapi3.AllowExtraSiblingFields("$id")}
}

// pinnedOpenAPIDoc loads the registry's published OpenAPI document.
func pinnedOpenAPIDoc(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromFile(pinnedOpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background(), pinnedOpenAPIChecks()...); err != nil {
		t.Fatal(err)
	}
	return doc
}

// checkAgainstOpenAPI validates req with the pinned document, serves it and
// validates the answer; invalid says the request breaks the document, and
// then the hub must refuse it with a 400.
func checkAgainstOpenAPI(t *testing.T, doc *openapi3.T, h http.Handler, req *http.Request, invalid bool) (int, []byte) {
	t.Helper()
	router, err := legacy.NewRouter(doc, pinnedOpenAPIChecks()...)
	if err != nil {
		t.Fatal(err)
	}
	// The router matches the decoded path, in which an encoded server
	// name is two segments: route by a placeholder, validate the real one.
	routed := req.Clone(req.Context())
	name, rest, hasName := strings.Cut(strings.TrimPrefix(req.URL.EscapedPath(), "/v0.1/servers/"), "/versions")
	if hasName {
		routed.URL.Path, routed.URL.RawPath = "/v0.1/servers/NAME/versions"+rest, ""
	}
	route, params, err := router.FindRoute(routed)
	if err != nil {
		t.Fatalf("%s: no operation of the registry's OpenAPI: %v", req.URL, err)
	}
	if hasName {
		params["serverName"] = name // still encoded, as the document says
	}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{MultiError: true}}
	reqErr := openapi3filter.ValidateRequest(req.Context(), in)
	if (reqErr != nil) != invalid {
		t.Errorf("%s: request validation %v, want an error: %v", req.URL, reqErr, invalid)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if invalid {
		if rec.Code != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", req.URL, rec.Code, rec.Body)
		}
		return rec.Code, rec.Body.Bytes()
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: rec.Code, Header: rec.Header(),
		Body: io.NopCloser(bytes.NewReader(rec.Body.Bytes())), Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true}}
	if err := openapi3filter.ValidateResponse(req.Context(), out); err != nil {
		t.Errorf("%s: %d %s\nis not what the registry's OpenAPI says: %v", req.URL, rec.Code, rec.Body, err)
	}
	return rec.Code, rec.Body.Bytes()
}

// TestRegistryAgainstOpenAPI is a client of the registry's published
// OpenAPI document: for every GET operation it sends the requests the
// document describes (each parameter at its example, and with none of the
// optional ones), then the requests VS Code's gallery sends (its
// mcpGalleryService.ts and mcpGalleryManifestService.ts: a probe with
// limit=1, pages of limit=50&version=latest with the cursor as given and
// search encoded, and a server's versions/latest with the name encoded),
// and checks requests and answers with kin-openapi against the document
// and each server.json against the schema.
func TestRegistryAgainstOpenAPI(t *testing.T) {
	doc := pinnedOpenAPIDoc(t)
	schema := serverSchema(t)
	level := autonomy.Full
	var entries []registryEntry
	for _, n := range []string{"filesystem", "github", "Web.Search", "z"} {
		entries = append(entries, entry(n, "1.2.3"))
	}
	tr := newTestRegistry(t, callers.NewAuth([]callers.TokenCaller{{Name: "ci", Token: "tok"}}, &level, nil), RegistryOptions{}, entries...)
	const known = "local.mcp-hub/github"

	// The document's own requests.
	ops := 0
	for path, item := range doc.Paths.Map() {
		op := item.Get
		if op == nil {
			continue
		}
		ops++
		full, bare := url.Values{}, url.Values{}
		target := path
		for _, p := range append(item.Parameters, op.Parameters...) {
			v := p.Value
			switch v.In {
			case "path":
				value := "1.2.3"
				if v.Name == "serverName" {
					value = url.PathEscape(known)
				}
				target = strings.ReplaceAll(target, "{"+v.Name+"}", value)
			case "query":
				ex := v.Example
				if ex == nil && v.Schema != nil && v.Schema.Value != nil {
					ex = v.Schema.Value.Example
				}
				switch {
				case ex != nil:
					full.Set(v.Name, fmt.Sprint(ex))
				case v.Schema != nil && v.Schema.Value.Type.Is("integer"):
					full.Set(v.Name, "2")
				case v.Schema != nil && v.Schema.Value.Type.Is("boolean"):
					full.Set(v.Name, "true")
				default:
					full.Set(v.Name, known+":1.2.3")
				}
				if v.Required {
					bare.Set(v.Name, full.Get(v.Name))
				}
			}
		}
		for _, q := range []url.Values{full, bare} {
			u := target
			if len(q) > 0 {
				u += "?" + q.Encode()
			}
			status, body := checkAgainstOpenAPI(t, doc, tr.mux, httptest.NewRequest(http.MethodGet, u, nil), false)
			t.Logf("GET %s: %d", u, status)
			if status == http.StatusOK {
				validateServers(t, schema, body)
			}
		}
	}
	if ops != 3 {
		t.Errorf("the document has %d GET operations, want the 3 the hub serves", ops)
	}

	// VS Code's gallery, page by page.
	probe, _ := checkAgainstOpenAPI(t, doc, tr.mux, httptest.NewRequest(http.MethodGet, "/v0.1/servers?limit=1", nil), false)
	if probe != http.StatusOK {
		t.Fatalf("the probe: %d", probe)
	}
	var got []string
	cursor := ""
	for range len(entries) + 1 {
		u := "/v0.1/servers?limit=3&version=latest"
		if cursor != "" {
			u += "&cursor=" + cursor
		}
		_, body := checkAgainstOpenAPI(t, doc, tr.mux, httptest.NewRequest(http.MethodGet, u, nil), false)
		validateServers(t, schema, body)
		l := list(t, body)
		got = append(got, names(l)...)
		if cursor = l.Metadata.NextCursor; cursor == "" {
			break
		}
	}
	if want := []string{"local.mcp-hub/Web.Search", "local.mcp-hub/filesystem", "local.mcp-hub/github", "local.mcp-hub/z"}; !slices.Equal(got, want) {
		t.Errorf("paged %v, want %v", got, want)
	}
	_, body := checkAgainstOpenAPI(t, doc, tr.mux, httptest.NewRequest(http.MethodGet, "/v0.1/servers?limit=50&version=latest&search="+url.QueryEscape("web.s"), nil), false)
	if got := names(list(t, body)); !slices.Equal(got, []string{"local.mcp-hub/Web.Search"}) {
		t.Errorf("search: %v", got)
	}
	status, body := checkAgainstOpenAPI(t, doc, tr.mux, httptest.NewRequest(http.MethodGet, "/v0.1/servers/"+url.PathEscape("local.mcp-hub/Web.Search")+"/versions/latest", nil), false)
	if status != http.StatusOK {
		t.Errorf("versions/latest: %d %s", status, body)
	}
	validateServers(t, schema, body)

	// What the document refuses, the hub refuses.
	checkAgainstOpenAPI(t, doc, tr.mux, httptest.NewRequest(http.MethodGet, "/v0.1/servers?limit=many", nil), true)
	checkAgainstOpenAPI(t, doc, tr.mux, httptest.NewRequest(http.MethodGet, "/v0.1/servers?updated_since=monday", nil), true)
	// 404s in the document's shape.
	for _, u := range []string{"/v0.1/servers/" + url.PathEscape("local.mcp-hub/nope") + "/versions", "/v0.1/servers/" + url.PathEscape(known) + "/versions/9.9.9"} {
		if status, _ := checkAgainstOpenAPI(t, doc, tr.mux, httptest.NewRequest(http.MethodGet, u, nil), false); status != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", u, status)
		}
	}
}

// TestPinnedDocuments: the testdata are the documents named in its README.
func TestPinnedDocuments(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("testdata", "mcpregistry", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{serverSchemaURL, "server-registry-openapi"} {
		if !bytes.Contains(readme, []byte(want)) {
			t.Errorf("testdata/mcpregistry/README.md does not name %s", want)
		}
	}
	if doc := pinnedOpenAPIDoc(t); doc.Paths.Value("/v0.1/servers") == nil {
		t.Error("the pinned OpenAPI has no /v0.1/servers")
	}
}

// BenchmarkRegistryList: a page of 100 of a catalog of 1000 servers (every
// request builds, stamps and sorts the whole catalog's entries).
func BenchmarkRegistryList(b *testing.B) {
	var entries []registryEntry
	for i := range 1000 {
		entries = append(entries, entry(fmt.Sprintf("server-%04d", i), "1.0.0"))
	}
	tr := newTestRegistry(b, callers.AnonymousOnly(autonomy.Full), RegistryOptions{}, entries...)
	for b.Loop() {
		rec := httptest.NewRecorder()
		tr.mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v0.1/servers?limit=100&cursor=local.mcp-hub/server-0500:1.0.0", nil))
		if rec.Code != http.StatusOK {
			b.Fatal(rec.Code)
		}
	}
}
