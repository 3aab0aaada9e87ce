package hub

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/purko-io/mcp-hub/internal/hubtest"
)

// TestMCPServersEnvAndConfigReload: a server of MCP_SERVERS connects with
// its token, which no log line shows; an edit of the config file adds a
// server while the hub runs, and a bad edit is reported and changes
// nothing.
func TestMCPServersEnvAndConfigReload(t *testing.T) {
	up := hubtest.StartUpstream(t, "up", echoTool())
	upURL, auth := up.URL, up.Authorization
	other := echoUpstream(t)
	cfg := filepath.Join(t.TempDir(), "hub.yaml")
	if err := os.WriteFile(cfg, []byte("servers: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := serveConfig(t, cfg, `MCP_SERVERS=[{"name":"fromenv","url":"`+upURL+`","auth":"bearer","token":"tok-abc-123"}]`)
	sv := waitConnected(t, h, "fromenv")
	if sv.ToolCount != 1 || auth() != "Bearer tok-abc-123" {
		t.Fatalf("fromenv = %v, upstream saw %q", sv, auth())
	}

	// Edit the file while the hub runs: a server appears, then a bad edit
	// is rejected and the server stays.
	if err := os.WriteFile(cfg, []byte("servers:\n- name: fromfile\n  url: "+other+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitConnected(t, h, "fromfile")
	if err := os.WriteFile(cfg, []byte("servers:\n- name: fromfile\n  url: 12\n  bogus: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(h.Log.String(), "config edit rejected") {
		if time.Now().After(deadline) {
			t.Fatalf("bad edit not reported:\n%s", h.Log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	waitConnected(t, h, "fromfile")
	h.Stop()
	if strings.Contains(h.Log.String(), "tok-abc-123") {
		t.Fatal("the bearer token appears in the hub's debug log")
	}
}
