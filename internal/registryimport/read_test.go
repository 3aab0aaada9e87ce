package registryimport

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseDocument(t *testing.T) {
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
			docs, next, err := parseDocument("reg.json", []byte(tc.doc))
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

func TestRead(t *testing.T) {
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
			docs, err := Read(context.Background(), src, tc.maxPages)
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
