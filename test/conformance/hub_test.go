package conformance

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// TestHubTransparency runs the suite (all 32 scenarios) against go-sdk's
// everything-server directly and through the hub, in the same test: every
// scenario that passes directly must pass through the hub, on both of the
// server's modes. With one
// upstream the tools, prompts and resources keep their names (naming policy
// on-conflict), so the suite finds them by the fixed names it calls.
func TestHubTransparency(t *testing.T) {
	hub := buildHub(t)
	for _, stateless := range []bool{false, true} {
		t.Run(fmt.Sprintf("stateless=%v", stateless), func(t *testing.T) {
			// Every scenario, the pending ones too: json-schema-2020-12
			// checks that a tool's schema reaches the client as written.
			upstream := EverythingServer(t, stateless)
			direct := RunSuite(t, upstream, "all")
			through := RunSuite(t, startHub(t, hub, upstream), "all")

			passedDirect, _ := Passing(direct)
			if len(passedDirect) == 0 {
				t.Fatal("no scenario passed directly: the comparison would be empty")
			}
			for _, name := range passedDirect {
				r, ok := through[name]
				switch {
				case !ok:
					t.Errorf("%s passes directly but did not run through the hub", name)
				case !r.Passed:
					t.Errorf("%s passes directly but fails through the hub:\n%s", name, indent(r.Details))
				}
			}
			passedHub, _ := Passing(through)
			t.Logf("passed: %d/%d directly, %d/%d through the hub", len(passedDirect), len(direct), len(passedHub), len(through))
		})
	}
}

// buildHub builds cmd/mcp-hub once for the test.
func buildHub(t *testing.T) string {
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

// startHub starts the hub with upstream as its only server and returns its
// /mcp URL once the upstream is connected.
func startHub(t *testing.T, bin, upstream string) string {
	t.Helper()
	dir := t.TempDir()
	cfg := fmt.Sprintf(`naming: {prefix: on-conflict}
builtins: {staticAnalysis: {enabled: false}, triggerWorkflow: {enabled: false}}
servers:
  - name: everything
    url: %s
    transport: streamable-http
`, upstream)
	cfgPath := filepath.Join(dir, "hub.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startProcess(t, "mcp-hub", bin, "--listen", "127.0.0.1:0", "--config", cfgPath, "--log-level", "info")
	var url string
	deadline := time.Now().Add(readyTimeout)
	for url == "" {
		if m := listeningRE.FindSubmatch(p.out.Bytes()); m != nil {
			url = string(m[1])
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("hub printed no listening address within %v:\n%s", readyTimeout, tail(p.out.Bytes()))
		}
		time.Sleep(20 * time.Millisecond)
	}
	base := url[:len(url)-len("/mcp")]
	for {
		if connected(base+"/api/mcp/tools", "everything") {
			return url
		}
		if time.Now().After(deadline) {
			t.Fatalf("upstream not connected through the hub within %v:\n%s", readyTimeout, tail(p.out.Bytes()))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// connected reports whether the hub's listing shows server as connected.
func connected(listURL, server string) bool {
	resp, err := http.Get(listURL)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var l struct {
		Servers []struct {
			Name   string `json:"name"`
			Status string `json:"status"`
		} `json:"servers"`
	}
	if err := json.NewDecoder(bufio.NewReader(resp.Body)).Decode(&l); err != nil {
		return false
	}
	for _, s := range l.Servers {
		if s.Name == server && s.Status == "connected" {
			return true
		}
	}
	return false
}
