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
	if len(specs) != 2 {
		t.Fatalf("got %d specs, want 2: %+v", len(specs), specs)
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
