package lint

import (
	"errors"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	onPath := func(name string) (string, error) {
		if name == "npx" || name == "/usr/bin/node" {
			return "/usr/bin/" + name, nil
		}
		return "", errors.New("not found")
	}
	for _, tc := range []struct {
		name, doc string
		want      []string // each problem formatted for f.yaml, in order
	}{
		{name: "valid", doc: "servers:\n- name: a\n  command: npx\n  args: [-y, x]\n- name: b\n  url: http://127.0.0.1:1/mcp\n"},
		{name: "unknown fields everywhere, with suggestions", doc: "servers:\n- name: a\n  comand: npx\n  argz: [x]\nnaming:\n  prefx: always\nupstream:\n  conectTimeout: 5s\n",
			want: []string{
				// the one of comand: with it gone, a has no command
				`f.yaml:2:3: servers[0] (a).url: one of url or command is required`,
				`f.yaml:3:3: servers[0] (a).comand: unknown field; did you mean "command"?`,
				`f.yaml:4:3: servers[0] (a).argz: unknown field; did you mean "args"?`,
				`f.yaml:6:3: naming.prefx: unknown field; did you mean "prefix"?`,
				`f.yaml:8:3: upstream.conectTimeout: unknown field; did you mean "connectTimeout"?`,
			}},
		{name: "anchors and merge keys", doc: "x-common: &common\n  url: http://127.0.0.1:1/mcp\nservers:\n- <<: *common\n  name: a\n- {<<: *common, name: b}\n",
			want: []string{`f.yaml:1:1: x-common: unknown field`}},
		{name: "an alias of its own ancestor", doc: "servers: []\nnaming: &n\n  prefix: *n\n", want: []string{"f.yaml: not YAML: anchor 'n' value contains itself"}},
		{name: "aliases of aliases", doc: "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n",
			want: []string{"f.yaml: not YAML: document contains excessive aliasing"}},
		{name: "a second document is not read", doc: "servers: []\n---\nbogus: 1\n"},
		{name: "a scalar where a list goes", doc: "servers: 3\n", want: []string{"f.yaml:1:10: servers: got a number, want a list"}},
		{name: "a list where a mapping goes", doc: "servers: []\nnaming: [a]\n", want: []string{"f.yaml:2:9: naming: got a list, want a mapping"}},
		{name: "a field with any case is the field", doc: "servers:\n- Name: a\n  URL: http://127.0.0.1:1/mcp\n"},
		{name: "command not on PATH, URL without a scheme", doc: "servers:\n- name: a\n  command: npx-typo\n- name: b\n  url: localhost:3000/mcp\n- name: c\n  command: ./bin/missing\n",
			want: []string{
				`f.yaml:3:12: servers[0] (a).command: "npx-typo" not found on PATH`,
				`f.yaml:5:8: servers[1] (b).url: "localhost:3000/mcp" has no scheme: want http://, https://, ws:// or wss://`,
				`f.yaml:7:12: servers[2] (c).command: "./bin/missing" is not an executable file`,
			}},
		{name: "every mistake of Parse, at its place, by the file's indices", doc: "servers:\n- name: a\n  url: http://127.0.0.1:1/mcp\n  transport: grpc\n- name: b\n  url: http://127.0.0.1:1/mcp\n  timeout: -1s\n- name: ok\n  url: http://127.0.0.1:1/mcp\n- name: ok\n  url: http://127.0.0.1:2/mcp\nupstream:\n  backoffMin: 5s\n  backoffMax: 1s\n",
			want: []string{
				`f.yaml:4:14: servers[0] (a).transport: "grpc" is not one of streamable-http, sse, stdio, websocket`,
				`f.yaml:7:12: servers[1] (b).timeout: -1s must not be negative`,
				`f.yaml:10:9: servers[3].name: "ok" is already used by servers[2]`,
				`f.yaml:14:15: upstream.backoffMax: 1s is shorter than upstream.backoffMin 5s`,
			}},
		{name: "unset variable", doc: "servers:\n- name: a\n  url: http://127.0.0.1:1/mcp\n  token: {env: MCPHUB_LINT_UNSET_36}\n",
			want: []string{`f.yaml:4:10: servers[0] (a).token: env: variable MCPHUB_LINT_UNSET_36 is not set`}},
		{name: "not YAML", doc: "servers:\n- name: a\n  url: [\n", want: []string{"f.yaml:3:1: not YAML: did not find expected node content"}},
		{name: "empty", doc: "# nothing\n", want: []string{`f.yaml:1:1: the file is empty; a config without servers says "servers: []"`}},
		{name: "a list, not a mapping", doc: "- a\n", want: []string{"f.yaml:1:1: "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, p := range Check("f.yaml", []byte(tc.doc), Options{LookPath: onPath}) {
				got = append(got, p.Format("f.yaml"))
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d problems, want %d:\n%s", len(got), len(tc.want), strings.Join(got, "\n"))
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tc.want[i]) {
					t.Errorf("problem %d:\n got %s\nwant %s", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		d    int
	}{{"comand", "command", 1}, {"", "abc", 3}, {"kitten", "sitting", 3}, {"same", "same", 0}} {
		if d := distance(tc.a, tc.b); d != tc.d {
			t.Errorf("distance(%q, %q) = %d, want %d", tc.a, tc.b, d, tc.d)
		}
	}
}

// FuzzCheck: no document makes the linter panic or loop, and every
// problem it reports has a message.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{"servers: []\n", "servers:\n- name: a\n  comand: x\n", "a: &a [*a]\n", "servers:\n- {name: a, url: 'h:'}\n- {name: a, url: ftp://x}\n", "[", "naming: {prefix: 3}\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		for _, p := range Check("f.yaml", []byte(doc), Options{LookPath: func(string) (string, error) { return "", errors.New("no") }}) {
			if p.Message == "" {
				t.Fatalf("a problem without a message: %+v", p)
			}
		}
	})
}
