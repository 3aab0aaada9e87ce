package hub

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/purko-io/mcp-hub/internal/statedir"
)

// TestNameClaimsKeptWithPinningOff: the name claims share the pins' state
// directory but not their switch; with pinning off the hub still writes
// names.json (and no pins).
func TestNameClaimsKeptWithPinningOff(t *testing.T) {
	state := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "hub.yaml")
	if err := os.WriteFile(cfg, []byte("servers: []\npinning: {mode: \"off\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := serveConfig(t, cfg, "XDG_STATE_HOME="+state, `MCP_SERVERS=[{"name":"up","url":"`+echoUpstream(t)+`"}]`)
	waitConnected(t, h, "up")
	h.Stop()
	dir, err := statedir.Resolve("", cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "names.json"))
	if err != nil || !strings.Contains(string(b), `"name": "echo"`) || !strings.Contains(string(b), `"server": "up"`) {
		t.Fatalf("names file with pinning off: %v\n%s", err, b)
	}
	if _, err := os.Stat(filepath.Join(dir, "pins.json")); err == nil {
		t.Errorf("pins written with pinning off")
	}
}
