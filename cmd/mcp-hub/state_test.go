package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/purko-io/mcp-hub/internal/hubtest"
)

// TestStateDirHeldByOneProcess runs the binary three times on one
// --state-dir: the second hub, while the first runs, says at start-up that
// the directory is in use by the first one's pid and refuses
// registrations (409); once the first is killed (no clean stop), the lock
// is gone with it and a third hub writes there.
func TestStateDirHeldByOneProcess(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	cfg := filepath.Join(t.TempDir(), "hub.yaml")
	if err := os.WriteFile(cfg, []byte("servers: []\nauth:\n  tokens:\n  - {name: ops, token: {env: OPS_TOKEN}, maxLevel: full, admin: true}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"OPS_TOKEN=ops-secret"}
	up, _ := startUpstream(t)
	register := func(base, name string) (int, string) {
		return apiCall(t, "POST", base+"/api/mcp/server", "ops-secret", "application/json", "", fmt.Sprintf(`{"name":%q,"url":%q}`, name, up))
	}

	first := startHub(t, env, "--config", cfg, "--state-dir", dir)
	if code, body := register(first.Base, "one"); code != 200 {
		t.Fatalf("register on the first hub: %d %s", code, body)
	}
	second := startHub(t, env, "--config", cfg, "--state-dir", dir)
	held := fmt.Sprintf("state directory %s is in use by another hub (pid %d)", dir, first.PID())
	// The line may come through the pipe the test reads the hub's log
	// from after the hub is up (on a loaded machine it did).
	hubtest.Eventually(t, 5*time.Second, 50*time.Millisecond, "the second hub saying the directory is in use", func() error {
		if !strings.Contains(second.Output(), held) {
			return fmt.Errorf("the second hub does not say %q:\n%s", held, second.Output())
		}
		return nil
	})
	if code, body := register(second.Base, "two"); code != 409 || !strings.Contains(body, held) {
		t.Errorf("register on the second hub: %d %s", code, body)
	}
	waitStatus(t, second, "one", "connected")

	first.Kill()
	<-first.Done()
	third := startHub(t, env, "--config", cfg, "--state-dir", dir)
	if strings.Contains(third.Output(), "in use by another hub") {
		t.Errorf("the killed hub's lock outlived it:\n%s", third.Output())
	}
	if code, body := register(third.Base, "three"); code != 200 {
		t.Errorf("register on the third hub: %d %s", code, body)
	}
	b, err := os.ReadFile(filepath.Join(dir, "registered.yaml"))
	if err != nil || !strings.Contains(string(b), "one") || !strings.Contains(string(b), "three") || strings.Contains(string(b), "two") {
		t.Errorf("registrations: %v\n%s", err, b)
	}
}
