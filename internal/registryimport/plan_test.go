package registryimport

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// remoteDoc is a server.json of name with the remotes and packages given
// as JSON arrays.
func remoteDoc(name, remotes, packages string) string {
	return fmt.Sprintf(`{"name":%q,"description":"d","version":"1","remotes":%s,"packages":%s}`, name, remotes, packages)
}

func TestPlanServer(t *testing.T) {
	auth := `"headers":[{"name":"Authorization","isSecret":true,"isRequired":true}]`
	for _, tc := range []struct {
		name     string
		doc      string
		o        Options
		status   string
		url      string // the entry's
		secret   string // the entry's secretRef
		inReason string
	}{
		{name: "streamable-http", doc: remoteDoc("a/b", `[{"type":"streamable-http","url":"https://b.example/mcp"}]`, `[]`),
			status: StatusReady, url: "https://b.example/mcp"},
		{name: "streamable-http before sse", doc: remoteDoc("a/b", `[{"type":"sse","url":"https://b.example/sse"},{"type":"streamable-http","url":"https://b.example/mcp"}]`, `[]`),
			status: StatusReady, url: "https://b.example/mcp"},
		{name: "sse", doc: remoteDoc("a/b", `[{"type":"sse","url":"https://b.example/v1/sse"}]`, `[]`), status: StatusReady, url: "https://b.example/v1/sse"},
		{name: "sse at a path the hub takes for streamable", doc: remoteDoc("a/b", `[{"type":"sse","url":"https://b.example/events"}]`, `[]`),
			status: StatusSkipped, inReason: "remotes[0]: sse remote at https://b.example/events: the hub takes a URL whose path ends in /sse as SSE"},
		{name: "required Authorization without --secret-ref", doc: remoteDoc("a/b", `[{"type":"streamable-http","url":"https://b.example/mcp",`+auth+`}]`, `[]`),
			status: StatusFailed, inReason: "remotes[0]: its Authorization header is required: give --secret-ref"},
		{name: "required Authorization with --secret-ref", doc: remoteDoc("a/b", `[{"type":"streamable-http","url":"https://b.example/mcp",`+auth+`}]`, `[]`),
			o: Options{SecretRef: "B_TOKEN"}, status: StatusReady, url: "https://b.example/mcp", secret: "B_TOKEN"},
		{name: "--secret-ref only where an Authorization header is", doc: remoteDoc("a/b", `[{"type":"streamable-http","url":"https://b.example/mcp"}]`, `[]`),
			o: Options{SecretRef: "B_TOKEN"}, status: StatusReady, url: "https://b.example/mcp"},
		{name: "optional Authorization takes --secret-ref", doc: remoteDoc("a/b", `[{"type":"streamable-http","url":"https://b.example/mcp","headers":[{"name":"authorization"}]}]`, `[]`),
			o: Options{SecretRef: "B_TOKEN"}, status: StatusReady, url: "https://b.example/mcp", secret: "B_TOKEN"},
		{name: "another mcp-hub's registry API", doc: remoteDoc("local.mcp-hub/b", `[{"type":"streamable-http","url":"https://hub.example/servers/b/mcp",`+
			`"headers":[{"name":"Authorization","isRequired":true,"isSecret":true,"value":"Bearer {token}","variables":{"token":{"isRequired":true,"isSecret":true}}}]},`+
			`{"type":"sse","url":"https://hub.example/servers/b/sse"}]`, `[]`),
			o: Options{SecretRef: "HUB_TOKEN"}, status: StatusReady, url: "https://hub.example/servers/b/mcp", secret: "HUB_TOKEN"},
		{name: "Authorization not bearer", doc: remoteDoc("a/b", `[{"type":"streamable-http","url":"https://b.example/mcp","headers":[{"name":"Authorization","value":"Basic {creds}"}]}]`, `[]`),
			o: Options{SecretRef: "B_TOKEN"}, status: StatusSkipped, inReason: "not a bearer token"},
		{name: "another required header", doc: remoteDoc("a/b", `[{"type":"streamable-http","url":"https://b.example/mcp","headers":[{"name":"X-Api-Key","isRequired":true,"isSecret":true}]}]`, `[]`),
			o: Options{SecretRef: "B_TOKEN"}, status: StatusSkipped, inReason: "header X-Api-Key: the hub sends an upstream no header but Authorization"},
		{name: "an optional header is not sent", doc: remoteDoc("a/b", `[{"type":"streamable-http","url":"https://b.example/mcp","headers":[{"name":"X-Trace"}]}]`, `[]`),
			status: StatusReady, url: "https://b.example/mcp"},
		{name: "URL variable without a value", doc: remoteDoc("a/b", `[{"type":"streamable-http","url":"https://{tenant}.b.example/{region}/mcp","variables":{"tenant":{"description":"your tenant"},"region":{"default":"eu"}}}]`, `[]`),
			status: StatusFailed, inReason: "its URL https://{tenant}.b.example/{region}/mcp needs --var tenant (your tenant)"},
		{name: "URL variables from --var and default", doc: remoteDoc("a/b", `[{"type":"streamable-http","url":"https://{tenant}.b.example/{region}/mcp","variables":{"tenant":{},"region":{"default":"eu"}}}]`, `[]`),
			o: Options{Vars: map[string]string{"tenant": "acme"}}, status: StatusReady, url: "https://acme.b.example/eu/mcp"},
		{name: "--var over the default", doc: remoteDoc("a/b", `[{"type":"streamable-http","url":"https://b.example/{region}/mcp","variables":{"region":{"default":"eu","choices":["eu","us"]}}}]`, `[]`),
			o: Options{Vars: map[string]string{"region": "us"}}, status: StatusReady, url: "https://b.example/us/mcp"},
		{name: "--var not a choice", doc: remoteDoc("a/b", `[{"type":"streamable-http","url":"https://b.example/{region}/mcp","variables":{"region":{"choices":["eu","us"]}}}]`, `[]`),
			o: Options{Vars: map[string]string{"region": "mars"}}, status: StatusFailed, inReason: `URL variable {region}: "mars" is not one of eu, us`},
		{name: "secret URL variable", doc: remoteDoc("a/b", `[{"type":"streamable-http","url":"https://b.example/mcp/{key}","variables":{"key":{"isSecret":true}}}]`, `[]`),
			o: Options{Vars: map[string]string{"key": "k"}}, status: StatusSkipped, inReason: "URL variable {key} is a secret"},
		{name: "a fixable remote fails the server", doc: remoteDoc("a/b", `[{"type":"websocket","url":"wss://b.example/ws"},{"type":"streamable-http","url":"https://b.example/mcp",`+auth+`}]`, `[]`),
			status: StatusFailed, inReason: "remotes[1]: its Authorization header is required"},
		{name: "unknown remote type", doc: remoteDoc("a/b", `[{"type":"websocket","url":"wss://b.example/ws"}]`, `[]`),
			status: StatusSkipped, inReason: `remotes[0]: type "websocket": the hub connects streamable-http and sse remotes`},
		{name: "the format of before 2025-09-29", doc: remoteDoc("a/b", `[{"transport_type":"sse","url":"https://b.example/sse"}]`, `[]`),
			status: StatusSkipped, inReason: "remotes[0]: transport_type is the server.json of before the 2025-09-29 schema"},
		{name: "packages only", doc: remoteDoc("a/b", `[]`, `[{"registryType":"npm","identifier":"@a/b","version":"1.0.0"},{"registryType":"pypi","identifier":"b","version":"2"}]`),
			status: StatusSkipped, inReason: "packages run on the client, the hub connects remotes: npm @a/b 1.0.0, pypi b 2"},
		{name: "oci package", doc: remoteDoc("a/b", `[]`, `[{"registryType":"oci","identifier":"ghcr.io/a/b","version":"1.0.0"}]`),
			status: StatusSkipped, inReason: "(on Kubernetes: mcp-hub servers add NAME --image ghcr.io/a/b:1.0.0 --port PORT)"},
		{name: "oci package with its tag", doc: remoteDoc("a/b", `[]`, `[{"registryType":"oci","identifier":"docker.io/a/b:1.0.0","version":"1.0.0"}]`),
			status: StatusSkipped, inReason: "--image docker.io/a/b:1.0.0 --port"},
		{name: "nothing", doc: remoteDoc("a/b", `[]`, `[]`), status: StatusSkipped, inReason: "no remotes and no packages"},
		{name: "deleted", doc: `{"server":` + remoteDoc("a/b", `[{"type":"streamable-http","url":"https://b.example/mcp"}]`, `[]`) + `,"_meta":{"` + officialMeta + `":{"status":"deleted"}}}`,
			status: StatusSkipped, inReason: "deleted in the registry"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			docs, _, err := parseDocument("x", []byte(tc.doc))
			if err != nil || len(docs) != 1 {
				t.Fatalf("parse: %v, %d docs", err, len(docs))
			}
			r := planServer(docs[0], tc.o)
			if r.Status != tc.status || r.Entry.URL != tc.url || r.Entry.SecretRef != tc.secret || !strings.Contains(r.Reason, tc.inReason) {
				t.Fatalf("= %s %q (url %q, secretRef %q), want %s with %q (url %q, secretRef %q)", r.Status, r.Reason, r.Entry.URL, r.Entry.SecretRef,
					tc.status, tc.inReason, tc.url, tc.secret)
			}
			if (r.Entry.SecretRef != "") != (r.Entry.Auth == "bearer") {
				t.Fatalf("auth %q with secretRef %q", r.Entry.Auth, r.Entry.SecretRef)
			}
		})
	}
}

func TestPlanNames(t *testing.T) {
	doc := func(name string) Doc {
		return Doc{Name: name, Remotes: []json.RawMessage{json.RawMessage(`{"type":"streamable-http","url":"https://x.example/mcp"}`)}}
	}
	for _, tc := range []struct {
		name  string
		docs  []string
		o     Options
		names []string // the hub names, or name status: reason
	}{
		{name: "after the slash", docs: []string{"io.github.acme/weather"}, names: []string{"weather"}},
		{name: "made a DNS label", docs: []string{"com.example/My_Server.v2--beta", "x/" + strings.Repeat("a", 70) + ".b"},
			names: []string{"my-server-v2-beta", strings.Repeat("a", 63)}},
		{name: "nothing usable", docs: []string{"a/..."}, names: []string{" failed: no hub name can be made of it; import it alone with --name"}},
		{name: "--name", docs: []string{"io.github.acme/weather"}, o: Options{Name: "wx"}, names: []string{"wx"}},
		{name: "two servers, one name", docs: []string{"io.github.a/mcp", "io.github.b/mcp", "io.github.c/other"},
			names: []string{"mcp", "mcp failed: name mcp is io.github.a/mcp's in this import; import it alone with --name", "other"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var docs []Doc
			for _, n := range tc.docs {
				docs = append(docs, doc(n))
			}
			var got []string
			for _, r := range Plan(docs, tc.o) {
				if r.Status != StatusReady {
					got = append(got, r.Name+" "+r.Status+": "+r.Reason)
				} else if r.Entry.Name != r.Name {
					t.Fatalf("entry named %q, result %q", r.Entry.Name, r.Name)
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
