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

	"github.com/purko-io/mcp-hub/internal/registryimport"
)

// officialMeta is the key of the official registry's _meta block of a
// listed server (status, isLatest).
const officialMeta = "io.modelcontextprotocol.registry/official"

// remoteDoc is a server.json of name with the remotes and packages given
// as JSON arrays.
func remoteDoc(name, remotes, packages string) string {
	return fmt.Sprintf(`{"name":%q,"description":"d","version":"1","remotes":%s,"packages":%s}`, name, remotes, packages)
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
		r := importResult{Server: "x/" + n, Name: n, Status: registryimport.StatusReady}
		r.Entry.Name = n
		if n == "skipped" {
			r.Status = registryimport.StatusSkipped
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
