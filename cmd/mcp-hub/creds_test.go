package main

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/purko-io/mcp-hub/internal/hubtest"
)

// TestRegistrationCannotNameTheHubsSecrets is issue 20's first red-team
// win: an admin caller (here one whose ceiling is restricted) registered a
// server whose secretRef was the environment variable of the full admin
// token, pointed at its own listener, and the hub sent that token there.
// A laptop registration may now name only registrations.credentialRefs
// (none by default): the hub's caller tokens, any other variable of its
// environment and anything unlisted are a 400 that names secretRef,
// through the API and the CLI, with nothing written and nothing dialled.
// An entry that names one in the registrations file (written by hand, or
// before an upgrade) is listed as error and not dialled either. Listing a
// caller token's variable in credentialRefs stops start-up.
func TestRegistrationCannotNameTheHubsSecrets(t *testing.T) {
	listener := hubtest.StartBait(t)
	up, upAuth := startUpstream(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "hub.yaml")
	regFile := filepath.Join(dir, "registered.yaml") // the state directory is dir
	const hubConfig = `servers: []
auth:
  tokens:
  - {name: ops, token: {env: OPS_TOKEN}, maxLevel: restricted, admin: true}
  - {name: root, token: {env: ROOT_TOKEN}, maxLevel: full, admin: true}
`
	planted := "- {name: planted, url: \"" + listener.URL + "\", auth: bearer, secretRef: ROOT_TOKEN}\n"
	if err := os.WriteFile(cfg, []byte(hubConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(regFile, []byte(planted), 0o600); err != nil {
		t.Fatal(err)
	}
	secrets := []string{"ops-secret", "root-secret", "up-secret"}
	h := startHub(t, []string{"MCP_HUB_STATE_DIR=" + dir, "OPS_TOKEN=ops-secret", "ROOT_TOKEN=root-secret", "UP_TOKEN=up-secret"}, "--config", cfg)

	for _, tc := range []struct{ name, ref, auth string }{
		{"the full admin's token", "ROOT_TOKEN", "bearer"},
		{"the caller's own token", "OPS_TOKEN", "bearer"},
		{"a variable set for upstreams but not listed", "UP_TOKEN", "bearer"},
		{"any variable of the hub", "PATH", "bearer"},
		{"a variable that is not set", "NOT_SET_ANYWHERE", "bearer"},
		{"kept with auth none", "ROOT_TOKEN", "none"},
	} {
		body := `{"name":"x","url":"` + listener.URL + `","auth":"` + tc.auth + `","secretRef":"` + tc.ref + `"}`
		status, answer := apiCall(t, "POST", h.Base+"/api/mcp/server", "ops-secret", "application/json", "", body)
		if status != http.StatusBadRequest || !strings.Contains(answer, `"error": "secretRef: \"`+tc.ref+`\" is not in registrations.credentialRefs`) {
			t.Errorf("%s: %d %s, want 400 naming secretRef", tc.name, status, answer)
		}
		for _, s := range secrets {
			if strings.Contains(answer, s) {
				t.Errorf("%s: a secret in the answer: %s", tc.name, answer)
			}
		}
	}
	out, errOut, code := serversCLI(t, "ops-secret", "add", "y", "--url", listener.URL, "--auth", "bearer", "--secret-ref", "ROOT_TOKEN", "--hub", h.Base)
	if code != 1 || !strings.Contains(errOut, "400") || !strings.Contains(errOut, `secretRef: "ROOT_TOKEN" is not in registrations.credentialRefs`) {
		t.Errorf("servers add --secret-ref ROOT_TOKEN: exit %d\n%s%s", code, out, errOut)
	}

	// A registration without a credential goes through, so the file
	// source has sent its snapshot by the time it is connected.
	if status, answer := apiCall(t, "POST", h.Base+"/api/mcp/server", "ops-secret", "application/json", "",
		`{"name":"plain","url":"`+up+`"}`); status != http.StatusOK {
		t.Fatalf("POST plain: %d %s", status, answer)
	}
	waitStatus(t, h, "plain", "connected")
	if sv := waitStatus(t, h, "planted", "error"); !strings.Contains(sv.Error, `secretRef: "ROOT_TOKEN" is not in registrations.credentialRefs`) {
		t.Errorf("planted: %q, want the refused secretRef as its error", sv.Error)
	}
	l, err := h.Listing("")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"x", "y"} {
		if _, ok := l.Server(name); ok {
			t.Errorf("refused server %s is listed: %s", name, l.Summary())
		}
	}
	if b, _ := os.ReadFile(regFile); strings.Contains(string(b), "name: x") || strings.Contains(string(b), "name: y") {
		t.Errorf("a refused registration was written:\n%s", b)
	}
	time.Sleep(200 * time.Millisecond) // room for a dial that should not come
	if conns, auth := listener.Seen(); conns != 0 {
		t.Fatalf("the hub opened %d connections to the registered listener (Authorization %q)", conns, auth)
	}
	if got := upAuth(); got != "" {
		t.Errorf("plain was sent Authorization %q", got)
	}
	if strings.Contains(h.Output(), "root-secret") || strings.Contains(h.Output(), "ops-secret") {
		t.Error("a caller token is in the hub's log")
	}

	// Listing a caller token's variable is a config error naming the
	// field, whatever the case it is written in.
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte(hubConfig+"registrations: {credentialRefs: [UP_TOKEN, root_token]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(hubBin, "serve", "--listen", "127.0.0.1:0", "--config", bad)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "XDG_STATE_HOME=" + dir, "OPS_TOKEN=ops-secret", "ROOT_TOKEN=root-secret"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); exitCode(err) == 0 || !strings.Contains(stderr.String(),
		"registrations.credentialRefs[1]: env root_token holds auth.tokens[1] (root).token, a secret of the hub itself") {
		t.Errorf("credentialRefs naming a caller token: %v\n%s", err, stderr.String())
	}
}
