package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// remoteDoc is a server.json of name with the remotes and packages given
// as JSON arrays.
func remoteDoc(name, remotes, packages string) string {
	return fmt.Sprintf(`{"name":%q,"description":"d","version":"1","remotes":%s,"packages":%s}`, name, remotes, packages)
}

func TestParseServerDocs(t *testing.T) {
	one := remoteDoc("io.github.a/one", `[{"type":"streamable-http","url":"https://one.example/mcp"}]`, `[]`)
	for _, tc := range []struct {
		name, doc string
		want      []string // server.json names
		next, err string
	}{
		{name: "server.json", doc: one, want: []string{"io.github.a/one"}},
		{name: "versions/latest answer", doc: `{"server":` + one + `,"_meta":{"` + officialMeta + `":{"status":"active","isLatest":true}}}`, want: []string{"io.github.a/one"}},
		{name: "list page", doc: `{"servers":[{"server":` + one + `},{"server":` + remoteDoc("b/two", `[]`, `[]`) + `}],"metadata":{"nextCursor":"b/two","count":2}}`,
			want: []string{"io.github.a/one", "b/two"}, next: "b/two"},
		{name: "an older version asked for", doc: `{"server":` + one + `,"_meta":{"` + officialMeta + `":{"isLatest":false}}}`, want: []string{"io.github.a/one"}},
		{name: "older versions are left out", doc: `{"servers":[{"server":` + one + `,"_meta":{"` + officialMeta + `":{"isLatest":false}}},{"server":` + one + `}]}`,
			want: []string{"io.github.a/one"}},
		{name: "empty list", doc: `{"servers":[],"metadata":{}}`},
		{name: "not JSON", doc: "{\n\"name\": x}", err: "$: not JSON: line 2: "},
		{name: "an array", doc: `[1]`, err: "$: an array, want an object"},
		{name: "null", doc: `null`, err: "$: null, want a server.json"},
		{name: "no name", doc: `{"description":"d"}`, err: "$: not a server.json (no name)"},
		{name: "empty name", doc: `{"name":""}`, err: "$.name: is required"},
		{name: "list item without server", doc: `{"servers":[{"server":` + one + `},{"_meta":{}}]}`, err: "$.servers[1].server: is required"},
		{name: "remote url a number", doc: `{"servers":[{"server":` + one + `},{"server":` + remoteDoc("b/two", `[{"type":"sse","url":"https://x/sse"},{"type":"sse","url":3}]`, `[]`) + `}]}`,
			err: "$.servers[1].server.remotes[1].url: a number, want a string"},
		{name: "headers an object", doc: remoteDoc("a/b", `[{"type":"sse","url":"u","headers":{"a":1}}]`, `[]`), err: "$.remotes[0].headers: an object, want an array"},
		{name: "isRequired a string", doc: remoteDoc("a/b", `[{"type":"sse","url":"u","headers":[{"name":"A","isRequired":"yes"}]}]`, `[]`), err: "$.remotes[0].headers.isRequired: a string, want true or false"},
		{name: "packages a string", doc: remoteDoc("a/b", `[]`, `"npm"`), err: "$.packages: a string, want an array"},
		{name: "metadata an array", doc: `{"servers":[],"metadata":[]}`, err: "$.metadata: an array, want an object"},
		{name: "official meta a string", doc: `{"server":` + one + `,"_meta":{"` + officialMeta + `":"x"}}`, err: `$._meta["` + officialMeta + `"]: a string, want an object`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			docs, next, err := parseServerDocs("reg.json", []byte(tc.doc))
			if tc.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), "reg.json: "+tc.err) {
					t.Fatalf("err = %v, want reg.json: %s...", err, tc.err)
				}
				return
			}
			var names []string
			for _, d := range latestOnly(docs) {
				names = append(names, d.Name)
			}
			if err != nil || fmt.Sprint(names) != fmt.Sprint(tc.want) || next != tc.next {
				t.Fatalf("= %v, %q, %v; want %v, %q", names, next, err, tc.want, tc.next)
			}
		})
	}
}

func TestPlanServer(t *testing.T) {
	auth := `"headers":[{"name":"Authorization","isSecret":true,"isRequired":true}]`
	for _, tc := range []struct {
		name     string
		doc      string
		o        importOptions
		status   string
		url      string // the entry's
		secret   string // the entry's secretRef
		inReason string
	}{
		{name: "streamable-http", doc: remoteDoc("a/b", `[{"type":"streamable-http","url":"https://b.example/mcp"}]`, `[]`),
			status: statusReady, url: "https://b.example/mcp"},
		{name: "streamable-http before sse", doc: remoteDoc("a/b", `[{"type":"sse","url":"https://b.example/sse"},{"type":"streamable-http","url":"https://b.example/mcp"}]`, `[]`),
			status: statusReady, url: "https://b.example/mcp"},
		{name: "sse", doc: remoteDoc("a/b", `[{"type":"sse","url":"https://b.example/v1/sse"}]`, `[]`), status: statusReady, url: "https://b.example/v1/sse"},
		{name: "sse at a path the hub takes for streamable", doc: remoteDoc("a/b", `[{"type":"sse","url":"https://b.example/events"}]`, `[]`),
			status: statusSkipped, inReason: "remotes[0]: sse remote at https://b.example/events: the hub takes a URL whose path ends in /sse as SSE"},
		{name: "required Authorization without --secret-ref", doc: remoteDoc("a/b", `[{"type":"streamable-http","url":"https://b.example/mcp",`+auth+`}]`, `[]`),
			status: statusFailed, inReason: "remotes[0]: its Authorization header is required: give --secret-ref"},
		{name: "required Authorization with --secret-ref", doc: remoteDoc("a/b", `[{"type":"streamable-http","url":"https://b.example/mcp",`+auth+`}]`, `[]`),
			o: importOptions{secretRef: "B_TOKEN"}, status: statusReady, url: "https://b.example/mcp", secret: "B_TOKEN"},
		{name: "--secret-ref only where an Authorization header is", doc: remoteDoc("a/b", `[{"type":"streamable-http","url":"https://b.example/mcp"}]`, `[]`),
			o: importOptions{secretRef: "B_TOKEN"}, status: statusReady, url: "https://b.example/mcp"},
		{name: "optional Authorization takes --secret-ref", doc: remoteDoc("a/b", `[{"type":"streamable-http","url":"https://b.example/mcp","headers":[{"name":"authorization"}]}]`, `[]`),
			o: importOptions{secretRef: "B_TOKEN"}, status: statusReady, url: "https://b.example/mcp", secret: "B_TOKEN"},
		{name: "another mcp-hub's registry API", doc: remoteDoc("local.mcp-hub/b", `[{"type":"streamable-http","url":"https://hub.example/servers/b/mcp",`+
			`"headers":[{"name":"Authorization","isRequired":true,"isSecret":true,"value":"Bearer {token}","variables":{"token":{"isRequired":true,"isSecret":true}}}]},`+
			`{"type":"sse","url":"https://hub.example/servers/b/sse"}]`, `[]`),
			o: importOptions{secretRef: "HUB_TOKEN"}, status: statusReady, url: "https://hub.example/servers/b/mcp", secret: "HUB_TOKEN"},
		{name: "Authorization not bearer", doc: remoteDoc("a/b", `[{"type":"streamable-http","url":"https://b.example/mcp","headers":[{"name":"Authorization","value":"Basic {creds}"}]}]`, `[]`),
			o: importOptions{secretRef: "B_TOKEN"}, status: statusSkipped, inReason: "not a bearer token"},
		{name: "another required header", doc: remoteDoc("a/b", `[{"type":"streamable-http","url":"https://b.example/mcp","headers":[{"name":"X-Api-Key","isRequired":true,"isSecret":true}]}]`, `[]`),
			o: importOptions{secretRef: "B_TOKEN"}, status: statusSkipped, inReason: "header X-Api-Key: the hub sends an upstream no header but Authorization"},
		{name: "an optional header is not sent", doc: remoteDoc("a/b", `[{"type":"streamable-http","url":"https://b.example/mcp","headers":[{"name":"X-Trace"}]}]`, `[]`),
			status: statusReady, url: "https://b.example/mcp"},
		{name: "URL variable without a value", doc: remoteDoc("a/b", `[{"type":"streamable-http","url":"https://{tenant}.b.example/{region}/mcp","variables":{"tenant":{"description":"your tenant"},"region":{"default":"eu"}}}]`, `[]`),
			status: statusFailed, inReason: "its URL https://{tenant}.b.example/{region}/mcp needs --var tenant (your tenant)"},
		{name: "URL variables from --var and default", doc: remoteDoc("a/b", `[{"type":"streamable-http","url":"https://{tenant}.b.example/{region}/mcp","variables":{"tenant":{},"region":{"default":"eu"}}}]`, `[]`),
			o: importOptions{vars: map[string]string{"tenant": "acme"}}, status: statusReady, url: "https://acme.b.example/eu/mcp"},
		{name: "--var over the default", doc: remoteDoc("a/b", `[{"type":"streamable-http","url":"https://b.example/{region}/mcp","variables":{"region":{"default":"eu","choices":["eu","us"]}}}]`, `[]`),
			o: importOptions{vars: map[string]string{"region": "us"}}, status: statusReady, url: "https://b.example/us/mcp"},
		{name: "--var not a choice", doc: remoteDoc("a/b", `[{"type":"streamable-http","url":"https://b.example/{region}/mcp","variables":{"region":{"choices":["eu","us"]}}}]`, `[]`),
			o: importOptions{vars: map[string]string{"region": "mars"}}, status: statusFailed, inReason: `URL variable {region}: "mars" is not one of eu, us`},
		{name: "secret URL variable", doc: remoteDoc("a/b", `[{"type":"streamable-http","url":"https://b.example/mcp/{key}","variables":{"key":{"isSecret":true}}}]`, `[]`),
			o: importOptions{vars: map[string]string{"key": "k"}}, status: statusSkipped, inReason: "URL variable {key} is a secret"},
		{name: "a fixable remote fails the server", doc: remoteDoc("a/b", `[{"type":"websocket","url":"wss://b.example/ws"},{"type":"streamable-http","url":"https://b.example/mcp",`+auth+`}]`, `[]`),
			status: statusFailed, inReason: "remotes[1]: its Authorization header is required"},
		{name: "unknown remote type", doc: remoteDoc("a/b", `[{"type":"websocket","url":"wss://b.example/ws"}]`, `[]`),
			status: statusSkipped, inReason: `remotes[0]: type "websocket": the hub connects streamable-http and sse remotes`},
		{name: "the format of before 2025-09-29", doc: remoteDoc("a/b", `[{"transport_type":"sse","url":"https://b.example/sse"}]`, `[]`),
			status: statusSkipped, inReason: "remotes[0]: transport_type is the server.json of before the 2025-09-29 schema"},
		{name: "packages only", doc: remoteDoc("a/b", `[]`, `[{"registryType":"npm","identifier":"@a/b","version":"1.0.0"},{"registryType":"pypi","identifier":"b","version":"2"}]`),
			status: statusSkipped, inReason: "packages run on the client, the hub connects remotes: npm @a/b 1.0.0, pypi b 2"},
		{name: "oci package", doc: remoteDoc("a/b", `[]`, `[{"registryType":"oci","identifier":"ghcr.io/a/b","version":"1.0.0"}]`),
			status: statusSkipped, inReason: "(on Kubernetes: mcp-hub servers add NAME --image ghcr.io/a/b:1.0.0 --port PORT)"},
		{name: "oci package with its tag", doc: remoteDoc("a/b", `[]`, `[{"registryType":"oci","identifier":"docker.io/a/b:1.0.0","version":"1.0.0"}]`),
			status: statusSkipped, inReason: "--image docker.io/a/b:1.0.0 --port"},
		{name: "nothing", doc: remoteDoc("a/b", `[]`, `[]`), status: statusSkipped, inReason: "no remotes and no packages"},
		{name: "deleted", doc: `{"server":` + remoteDoc("a/b", `[{"type":"streamable-http","url":"https://b.example/mcp"}]`, `[]`) + `,"_meta":{"` + officialMeta + `":{"status":"deleted"}}}`,
			status: statusSkipped, inReason: "deleted in the registry"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			docs, _, err := parseServerDocs("x", []byte(tc.doc))
			if err != nil || len(docs) != 1 {
				t.Fatalf("parse: %v, %d docs", err, len(docs))
			}
			r := planServer(docs[0], tc.o)
			if r.Status != tc.status || r.entry.URL != tc.url || r.entry.SecretRef != tc.secret || !strings.Contains(r.Reason, tc.inReason) {
				t.Fatalf("= %s %q (url %q, secretRef %q), want %s with %q (url %q, secretRef %q)", r.Status, r.Reason, r.entry.URL, r.entry.SecretRef,
					tc.status, tc.inReason, tc.url, tc.secret)
			}
			if (r.entry.SecretRef != "") != (r.entry.Auth == "bearer") {
				t.Fatalf("auth %q with secretRef %q", r.entry.Auth, r.entry.SecretRef)
			}
		})
	}
}

func TestPlanImportNames(t *testing.T) {
	doc := func(name string) serverDoc {
		return serverDoc{Name: name, Remotes: []json.RawMessage{json.RawMessage(`{"type":"streamable-http","url":"https://x.example/mcp"}`)}}
	}
	for _, tc := range []struct {
		name  string
		docs  []string
		o     importOptions
		names []string // the hub names, or name status: reason
	}{
		{name: "after the slash", docs: []string{"io.github.acme/weather"}, names: []string{"weather"}},
		{name: "made a DNS label", docs: []string{"com.example/My_Server.v2--beta", "x/" + strings.Repeat("a", 70) + ".b"},
			names: []string{"my-server-v2-beta", strings.Repeat("a", 63)}},
		{name: "nothing usable", docs: []string{"a/..."}, names: []string{" failed: no hub name can be made of it; import it alone with --name"}},
		{name: "--name", docs: []string{"io.github.acme/weather"}, o: importOptions{name: "wx"}, names: []string{"wx"}},
		{name: "two servers, one name", docs: []string{"io.github.a/mcp", "io.github.b/mcp", "io.github.c/other"},
			names: []string{"mcp", "mcp failed: name mcp is io.github.a/mcp's in this import; import it alone with --name", "other"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var docs []serverDoc
			for _, n := range tc.docs {
				docs = append(docs, doc(n))
			}
			var got []string
			for _, r := range planImport(docs, tc.o) {
				if r.Status != statusReady {
					got = append(got, r.Name+" "+r.Status+": "+r.Reason)
				} else if r.entry.Name != r.Name {
					t.Fatalf("entry named %q, result %q", r.entry.Name, r.Name)
				} else {
					got = append(got, r.Name)
				}
			}
			if strings.Join(got, "|") != strings.Join(tc.names, "|") {
				t.Fatalf("= %q, want %q", got, tc.names)
			}
		})
	}
}

// registryServer serves pages, keyed by the cursor query parameter ("" the
// first), on 127.0.0.1 (httptest's address); it returns the list's URL.
func registryServer(t *testing.T, pages map[string]string) string {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		page, ok := pages[r.URL.Query().Get("cursor")]
		if !ok || r.URL.Query().Get("limit") != "2" {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"error":"no such page"}`)
			return
		}
		fmt.Fprint(w, page)
	}))
	t.Cleanup(s.Close)
	return s.URL + "/v0.1/servers?limit=2"
}

func TestReadServerDocs(t *testing.T) {
	item := func(name string) string {
		return `{"server":` + remoteDoc(name, `[{"type":"streamable-http","url":"https://x.example/mcp"}]`, `[]`) + `}`
	}
	page := func(next string, names ...string) string {
		var items []string
		for _, n := range names {
			items = append(items, item(n))
		}
		return fmt.Sprintf(`{"servers":[%s],"metadata":{"nextCursor":%q,"count":%d}}`, strings.Join(items, ","), next, len(names))
	}
	dir := t.TempDir()
	one, listFile := filepath.Join(dir, "one.json"), filepath.Join(dir, "page.json")
	for p, body := range map[string]string{one: item("a/1"), listFile: page("p2", "a/1")} {
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name     string
		source   func() string
		maxPages int
		want     string // names, or the error's start
	}{
		{name: "two pages", source: func() string {
			return registryServer(t, map[string]string{"": page("b/2", "a/1", "b/2"), "b/2": page("", "c/3")})
		}, maxPages: 5, want: "[a/1 b/2 c/3]"},
		{name: "more pages than --max-pages", source: func() string {
			return registryServer(t, map[string]string{"": page("p2", "a/1"), "p2": page("p3", "b/2"), "p3": page("", "c/3")})
		}, maxPages: 2, want: "http://127.0.0.1:PORT/v0.1/servers?… (page 2): the list has more than 2 pages (--max-pages)"},
		{name: "pages going round", source: func() string {
			return registryServer(t, map[string]string{"": page("p2", "a/1"), "p2": page("p2", "b/2")})
		}, maxPages: 5, want: `http://127.0.0.1:PORT/v0.1/servers?… (page 2): $.metadata.nextCursor "p2" was given before`},
		{name: "a bad page", source: func() string {
			return registryServer(t, map[string]string{"": page("p2", "a/1"), "p2": `{"servers":[{"server":{"name":7}}]}`})
		}, maxPages: 5, want: "http://127.0.0.1:PORT/v0.1/servers?… (page 2): $.servers[0].server.name: a number, want a string"},
		{name: "the registry refuses", source: func() string {
			return registryServer(t, map[string]string{"": page("gone", "a/1")})
		}, maxPages: 5, want: "http://127.0.0.1:PORT/v0.1/servers?… (page 2): 404 Not Found: no such page"},
		{name: "too large", source: func() string {
			return registryServer(t, map[string]string{"": `{"servers":[], "x":"` + strings.Repeat("x", maxDocument) + `"}`})
		}, maxPages: 5, want: "http://127.0.0.1:PORT/v0.1/servers?…: larger than 4 MiB"},
		{name: "not http", source: func() string { return "ftp://registry.example/v0.1/servers" }, maxPages: 5,
			want: "ftp://registry.example/v0.1/servers: a registry is read over http(s) only"},
		{name: "a file", source: func() string { return one }, maxPages: 1, want: "[a/1]"},
		{name: "a file of a list that goes on", source: func() string { return listFile }, maxPages: 5,
			want: "DIR/page.json: $.metadata.nextCursor: the list goes on; import from the registry's URL"},
		{name: "no file", source: func() string { return filepath.Join(dir, "nosuch.json") }, maxPages: 5, want: "read DIR/nosuch.json: open "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := tc.source()
			docs, err := readServerDocs(context.Background(), src, tc.maxPages)
			got := ""
			if err != nil {
				got = err.Error()
				if u, _, ok := strings.Cut(strings.TrimPrefix(src, "http://127.0.0.1:"), "/"); ok {
					got = strings.ReplaceAll(got, "127.0.0.1:"+u, "127.0.0.1:PORT")
				}
				got = strings.ReplaceAll(got, dir, "DIR")
			} else {
				var names []string
				for _, d := range docs {
					names = append(names, d.Name)
				}
				got = fmt.Sprint(names)
			}
			if !strings.HasPrefix(got, tc.want) {
				t.Fatalf("= %s\nwant %s...", got, tc.want)
			}
		})
	}
}

// TestRegisterAllAndWait drives registerAll and awaitConnections against
// a fake hub: a refusal of an entry (400) is that server's, one about the
// caller (403) stops the rest; what the listing says after the wait is
// each server's status.
func TestRegisterAllAndWait(t *testing.T) {
	answers := map[string]int{"refused": http.StatusBadRequest, "forbidden": http.StatusForbidden}
	var posted []string
	hub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			fmt.Fprint(w, `{"servers":[{"metadata":{"name":"slow"},"status":{"phase":"connecting"}},`+
				`{"metadata":{"name":"refused-later"},"status":{"phase":"error","message":"dial policy:\n10.0.0.1 is a private address"}}]}`)
			return
		}
		var e struct{ Name string }
		_ = json.NewDecoder(r.Body).Decode(&e)
		posted = append(posted, e.Name)
		if code := answers[e.Name]; code != 0 {
			w.WriteHeader(code)
			fmt.Fprintf(w, `{"error":"no %s"}`, e.Name)
			return
		}
		fmt.Fprintf(w, `{"status":"connected","name":%q}`, e.Name)
	}))
	defer hub.Close()
	c, err := newHubClient("hub", hub.URL)
	if err != nil {
		t.Fatal(err)
	}
	var results []importResult
	for _, n := range []string{"slow", "refused", "skipped", "refused-later", "unlisted", "forbidden", "after"} {
		r := importResult{Server: "x/" + n, Name: n, Status: statusReady}
		r.entry.Name = n
		if n == "skipped" {
			r.Status = statusSkipped
		}
		results = append(results, r)
	}
	err = registerAll(context.Background(), c, results)
	if err == nil || !strings.Contains(err.Error(), "stopped at forbidden: the hub refused: 403 Forbidden: no forbidden") {
		t.Errorf("registerAll: %v", err)
	}
	if err := awaitConnections(context.Background(), c, results, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range results {
		got = append(got, r.Name+" "+r.Status+": "+r.Reason)
	}
	want := []string{
		"slow connecting: not connected within --wait 300ms",
		"refused failed: the hub refused: 400 Bad Request: no refused",
		"skipped skipped: ",
		"refused-later error: dial policy: 10.0.0.1 is a private address",
		"unlisted registered: not connected within --wait 300ms",
		"forbidden failed: the hub refused: 403 Forbidden: no forbidden",
		"after failed: not sent: forbidden failed first",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") || strings.Join(posted, ",") != "slow,refused,refused-later,unlisted,forbidden" {
		t.Fatalf("posted %v, results:\n%s\nwant:\n%s", posted, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestServersImportOnALaptopHub imports a server.json file and a registry
// list of two pages into a hub whose dial policy refuses private
// addresses: what the hub can connect is registered through its API, what
// it refuses (a credential reference not set aside, an address the policy
// refuses) is printed naming the server, and packages are skipped saying
// why.
func TestServersImportOnALaptopHub(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "hub.yaml")
	if err := os.WriteFile(cfg, []byte(`auth:
  tokens:
  - {name: ops, token: {env: OPS_TOKEN}, maxLevel: full, admin: true}
  - {name: bot, token: {env: BOT_TOKEN}, maxLevel: full}
registrations: {credentialRefs: [UP_TOKEN]}
upstream: {dial: {private: false}}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	up, _ := startUpstream(t)
	port := strings.TrimSuffix(strings.TrimPrefix(up, "http://127.0.0.1:"), "/mcp")
	h := startHub(t, []string{"MCP_HUB_STATE_DIR=" + dir, "OPS_TOKEN=ops-secret", "BOT_TOKEN=bot-secret", "UP_TOKEN=up-secret"}, "--config", cfg)
	importCLI := func(token string, args ...string) (string, string, int) {
		return serversCLI(t, token, append([]string{"import"}, append(args, "--hub", h.Base, "--wait", "15s")...)...)
	}
	listed := func() map[string]string {
		l, err := h.Listing("")
		if err != nil {
			t.Fatal(err)
		}
		phases := map[string]string{}
		for _, s := range l.Servers {
			phases[s.Name] = s.Status
		}
		return phases
	}
	file := filepath.Join("testdata", "import", "server.json")

	// The file's server needs its port and a credential.
	out, errOut, code := importCLI("ops-secret", file, "--var", "port="+port)
	if code != 1 || !regexpLine(out, "io.github.acme/echo-Server", "echo-server", "failed", "remotes[1], remotes[0]: its Authorization header is required: give --secret-ref") ||
		!strings.Contains(errOut, "1 of 1 servers failed") {
		t.Fatalf("import without --secret-ref: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = importCLI("ops-secret", file, "--var", "port="+port, "--secret-ref", "UP_TOKEN")
	if code != 0 || !strings.Contains(out, "SERVER") || !regexpLine(out, "io.github.acme/echo-Server", "echo-server", "connected", up, "streamable-http, bearer from UP_TOKEN") {
		t.Fatalf("import %s: exit %d\n%s%s", file, code, out, errOut)
	}
	if reg, err := os.ReadFile(filepath.Join(dir, "registered.yaml")); err != nil || !strings.Contains(string(reg), "UP_TOKEN") || strings.Contains(string(reg), "up-secret") {
		t.Fatalf("registrations file: %v\n%s", err, reg)
	}
	// Only an admin registers; the first refusal about the caller stops
	// the import.
	if out, errOut, code := importCLI("bot-secret", file, "--var", "port="+port, "--secret-ref", "UP_TOKEN", "--name", "bots"); code != 1 ||
		!regexpLine(out, "io.github.acme/echo-Server", "bots", "failed", "the hub refused: 403 Forbidden") || !strings.Contains(errOut, "stopped at bots") {
		t.Fatalf("import as bot: exit %d\n%s%s", code, out, errOut)
	}

	remote := func(name, url, headers string) string {
		return `{"server":` + remoteDoc(name, `[{"type":"streamable-http","url":"`+url+`","headers":[`+headers+`]}]`, `[]`) +
			`,"_meta":{"` + officialMeta + `":{"status":"active","isLatest":true}}}`
	}
	reg := registryServer(t, map[string]string{
		"": `{"servers":[` + remote("io.github.acme/weather", up, "") + `,{"server":` +
			remoteDoc("io.github.acme/files", `[]`, `[{"registryType":"npm","identifier":"@acme/files","version":"1.0.0"},{"registryType":"oci","identifier":"ghcr.io/acme/files","version":"1.0.0"}]`) +
			`}],"metadata":{"nextCursor":"io.github.acme/files","count":2}}`,
		"io.github.acme/files": `{"servers":[` + remote("io.github.acme/private", "http://10.0.0.1:9/mcp", "") + `,` +
			remote("io.github.acme/secure", up, `{"name":"Authorization","isRequired":true,"isSecret":true}`) + `],"metadata":{"count":2}}`,
	})

	// --dry-run asks the hub nothing.
	out, errOut, code = importCLI("ops-secret", reg, "--dry-run", "-o", "json", "--secret-ref", "NOT_SET_ASIDE")
	var planned struct{ Servers []importResult }
	if err := json.Unmarshal([]byte(out), &planned); code != 0 || err != nil || len(planned.Servers) != 4 {
		t.Fatalf("import --dry-run: exit %d, %v\n%s%s", code, err, out, errOut)
	}
	for i, want := range []string{"weather would-register", "files skipped", "private would-register", "secure would-register"} {
		if got := cmp.Or(planned.Servers[i].Name, "-") + " " + planned.Servers[i].Status; got != want {
			t.Errorf("--dry-run: servers[%d] = %s, want %s", i, got, want)
		}
	}
	if _, ok := listed()["weather"]; ok {
		t.Fatal("--dry-run registered weather")
	}

	out, errOut, code = importCLI("ops-secret", reg, "--secret-ref", "NOT_SET_ASIDE")
	for _, row := range [][]string{
		{"io.github.acme/weather", "weather", "connected", up, "streamable-http"},
		{"io.github.acme/files", "files", "skipped", "-", "packages run on the client, the hub connects remotes: npm @acme/files 1.0.0, oci ghcr.io/acme/files 1.0.0 (on Kubernetes: mcp-hub servers add NAME --image ghcr.io/acme/files:1.0.0 --port PORT)"},
		{"io.github.acme/private", "private", "error", "http://10.0.0.1:9/mcp", "dial policy: 10.0.0.1 is a private address: upstream.dial.private is false"},
		{"io.github.acme/secure", "secure", "failed", up, `the hub refused: 400 Bad Request: secretRef: "NOT_SET_ASIDE" is not in registrations.credentialRefs`},
	} {
		if !regexpLine(out, row...) {
			t.Errorf("import %s: no row %q", reg, row)
		}
	}
	if code != 1 || !strings.Contains(errOut, "2 of 4 servers failed") || t.Failed() {
		t.Fatalf("import %s: exit %d\n%s%s", reg, code, out, errOut)
	}
	phases := listed()
	if _, ok := phases["secure"]; phases["weather"] != "connected" || phases["private"] != "error" || phases["echo-server"] != "connected" || ok {
		t.Fatalf("after the import the hub lists %v", phases)
	}
}

// TestServersImportFromAnotherHub: one hub's MCP Registry API is a
// registry another imports from: the virtual server a hub publishes at
// /v0.1/servers is registered on the second hub by the URL of its
// endpoint there, connects, and brings exactly that endpoint's tools.
func TestServersImportFromAnotherHub(t *testing.T) {
	dir := t.TempDir()
	up, _ := startUpstream(t)
	first := filepath.Join(dir, "first.yaml")
	if err := os.WriteFile(first, []byte("servers:\n- {name: weather, url: \""+up+"\"}\nvirtualServers:\n- {name: lookups, servers: [weather]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	second := filepath.Join(dir, "second.yaml")
	if err := os.WriteFile(second, []byte("servers: []\nauth:\n  tokens:\n  - {name: ops, token: {env: OPS_TOKEN}, maxLevel: full, admin: true}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := startHub(t, nil, "--config", first)
	waitStatus(t, a, "weather", "connected")
	b := startHub(t, []string{"OPS_TOKEN=ops-secret"}, "--config", second)

	src := a.Base + "/v0.1/servers/" + url.PathEscape("local.mcp-hub/lookups") + "/versions/latest"
	out, errOut, code := serversCLI(t, "ops-secret", "import", src, "--name", "team-lookups", "--hub", b.Base, "--wait", "15s")
	if code != 0 || !regexpLine(out, "local.mcp-hub/lookups", "team-lookups", "connected", a.Base+"/servers/lookups/mcp") {
		t.Fatalf("import %s: exit %d\n%s%s", src, code, out, errOut)
	}
	got := waitStatus(t, b, "team-lookups", "connected")
	if got.ToolCount != 1 {
		t.Fatalf("the imported virtual server brings %d tools, want weather's 1: %+v", got.ToolCount, got)
	}
}
