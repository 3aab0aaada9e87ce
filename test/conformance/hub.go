package conformance

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// BuildHub builds cmd/mcp-hub into a test directory and returns the binary.
func BuildHub(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "mcp-hub")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/mcp-hub")
	cmd.Dir = RepoRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/mcp-hub: %v\n%s", err, out)
	}
	return bin
}

var listeningRE = regexp.MustCompile(`listening on (http://\S+/mcp)`)

// StartHub starts the hub binary on listen (host:port, port 0 for any) with
// config (YAML) and returns its /mcp URL once every server in its listing
// is connected. The process is stopped by its PID at t.Cleanup.
func StartHub(t testing.TB, bin, listen, config string) string {
	t.Helper()
	cfgPath := filepath.Join(t.TempDir(), "hub.yaml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startProcess(t, "mcp-hub", bin, "--listen", listen, "--config", cfgPath, "--log-level", "info")
	deadline := time.Now().Add(readyTimeout)
	for {
		if m := listeningRE.FindSubmatch(p.out.Bytes()); m != nil && allConnected(strings.TrimSuffix(string(m[1]), "/mcp")+"/api/mcp/tools") {
			return string(m[1])
		}
		select {
		case <-p.done:
			t.Fatalf("hub exited:\n%s", tail(p.out.Bytes()))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("hub not serving every server within %v:\n%s", readyTimeout, tail(p.out.Bytes()))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// allConnected reports whether the hub's listing shows servers, all
// connected.
func allConnected(listURL string) bool {
	resp, err := http.Get(listURL)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var l struct {
		Servers []struct {
			Status string `json:"status"`
		} `json:"servers"`
	}
	if json.NewDecoder(resp.Body).Decode(&l) != nil || len(l.Servers) == 0 {
		return false
	}
	for _, s := range l.Servers {
		if s.Status != "connected" {
			return false
		}
	}
	return true
}
