package env

import (
	"context"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/discovery"
)

func TestParse(t *testing.T) {
	specs, errs := Parse(`[
	  {"name":"github","url":"http://github-mcp.purko.svc:8000/mcp","auth":"bearer","token":"ghp_secret"},
	  {"name":"docs","url":"http://docs:9000/sse"},
	  {"name":"bad","url":"http://x/mcp","auth":"basic"},
	  {"name":"notoken","url":"http://x/mcp","auth":"bearer"},
	  {"name":"github","url":"http://dup/mcp"},
	  {"url":"http://noname/mcp"}
	]`)
	if len(specs) != 3 || specs[2].Name != "notoken" || specs[2].Problem == "" || specs[2].BearerToken != "" {
		t.Fatalf("got %d specs, want 3, notoken in error: %+v", len(specs), specs)
	}
	if specs[0].BearerToken.Reveal() != "ghp_secret" || specs[0].Transport != config.TransportStreamableHTTP {
		t.Errorf("github spec = %+v", specs[0])
	}
	if specs[1].Transport != config.TransportSSE || specs[1].Source != SourceName {
		t.Errorf("docs spec = %+v", specs[1])
	}
	want := []string{`MCP_SERVERS[2] (bad).auth: "basic"`, "MCP_SERVERS[3] (notoken).token", `MCP_SERVERS[4].name: "github" appears twice`, "MCP_SERVERS[5] ().name: is required"}
	if len(errs) != len(want) {
		t.Fatalf("errors %v, want %d", errs, len(want))
	}
	for i, w := range want {
		if !strings.Contains(errs[i].Error(), w) {
			t.Errorf("error %d = %q, want it to contain %q", i, errs[i], w)
		}
		if strings.Contains(errs[i].Error(), "ghp_secret") {
			t.Errorf("error leaks the token: %q", errs[i])
		}
	}
}

func TestParseNotJSON(t *testing.T) {
	specs, errs := Parse(`{"name":"x"}`)
	if len(specs) != 0 || len(errs) != 1 || !strings.Contains(errs[0].Error(), "MCP_SERVERS: not a JSON list") {
		t.Fatalf("specs %v errs %v", specs, errs)
	}
}

func TestSourceSendsOneSnapshot(t *testing.T) {
	out := make(chan discovery.Snapshot, 1)
	New(`[{"name":"a","url":"http://127.0.0.1:1/mcp"}]`, zerolog.Nop()).Run(context.Background(), out)
	snap := <-out
	if snap.Source != SourceName || len(snap.Servers) != 1 || snap.Servers[0].Name != "a" {
		t.Fatalf("snapshot = %+v", snap)
	}
}

// A token with no auth is a bearer token, as Purko's executor sends it; a
// token that cannot be used refuses its entry with an error naming it, the
// entry listed in error (never dropped in silence), and no error or
// problem holds the token.
func TestParseToken(t *testing.T) {
	const tok = "pk_live_Secret-Value.123"
	cases := []struct {
		name       string
		entry      string
		wantBearer string
		wantErr    string // "" for none; else in the error and the spec's Problem
	}{
		{"token without auth is bearer", `{"name":"s","url":"http://h/mcp","token":"` + tok + `"}`, tok, ""},
		{"auth bearer", `{"name":"s","url":"http://h/mcp","auth":"Bearer","token":"` + tok + `"}`, tok, ""},
		{"no token, no auth", `{"name":"s","url":"http://h/mcp"}`, "", ""},
		{"auth none, no token", `{"name":"s","url":"http://h/mcp","auth":"none"}`, "", ""},
		{"auth none beside a token", `{"name":"s","url":"http://h/mcp","auth":"none","token":"` + tok + `"}`, "", `MCP_SERVERS[0] (s).token: auth is "none" but a token is given`},
		{"blank token", `{"name":"s","url":"http://h/mcp","token":"   "}`, "", "MCP_SERVERS[0] (s).token: is blank"},
		{"token with a newline", `{"name":"s","url":"http://h/mcp","token":"` + tok + `\n"}`, "", "MCP_SERVERS[0] (s).token: starts or ends with white space"},
		{"token with a control character", `{"name":"s","url":"http://h/mcp","token":"` + tok + `\u0000x"}`, "", "MCP_SERVERS[0] (s).token: holds a character an HTTP header cannot carry (at byte 24)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			specs, errs := Parse("[" + tc.entry + "]")
			if len(specs) != 1 {
				t.Fatalf("specs %+v, errs %v: want the entry listed", specs, errs)
			}
			s := specs[0]
			if got := s.BearerToken.Reveal(); got != tc.wantBearer {
				t.Errorf("bearer token %q, want %q", got, tc.wantBearer)
			}
			if tc.wantErr == "" {
				if len(errs) != 0 || s.Problem != "" {
					t.Fatalf("errs %v, problem %q; want none", errs, s.Problem)
				}
				return
			}
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.wantErr) || !strings.Contains(s.Problem, tc.wantErr) {
				t.Fatalf("errs %v, problem %q; want %q in both", errs, s.Problem, tc.wantErr)
			}
			if strings.Contains(errs[0].Error(), tok) || strings.Contains(s.Problem, tok) {
				t.Errorf("the token leaks: %v / %q", errs[0], s.Problem)
			}
		})
	}
}
