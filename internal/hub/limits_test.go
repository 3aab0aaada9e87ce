package hub

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLimitsFromConfig: the limits of the config file reach the call path,
// a token's own and a server's own, named by their settings.
func TestLimitsFromConfig(t *testing.T) {
	upURL := echoUpstream(t)
	cfg := filepath.Join(t.TempDir(), "hub.yaml")
	body := `
auth:
  tokens:
    - {name: ci, token: {env: MCPHUB_TEST_CI}, maxLevel: full, limits: {rate: 0.2}}
    - {name: other, token: {env: MCPHUB_TEST_OTHER}, maxLevel: full}
servers:
  - name: up
    url: ` + upURL + `
    limits: {rate: 0.2}
`
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MCPHUB_TEST_CI", "tok-ci")
	t.Setenv("MCPHUB_TEST_OTHER", "tok-other")
	h := serveConfig(t, cfg)
	waitConnected(t, h, "up")
	call := func(token string) (msg string, retryAfterMs int64) {
		t.Helper()
		status, raw := post(t, h.MCPURL(), token,
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`)
		var r struct {
			Error *struct {
				Message string `json:"message"`
				Data    struct {
					RetryAfterMs int64 `json:"retryAfterMs"`
				} `json:"data"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(raw), &r); err != nil {
			t.Fatalf("%d: %q", status, raw)
		}
		if r.Error == nil {
			return "", 0
		}
		return r.Error.Message, r.Error.Data.RetryAfterMs
	}
	if msg, _ := call("tok-ci"); msg != "" {
		t.Fatalf("first call of ci: %s", msg)
	}
	msg, retry := call("tok-ci")
	if !strings.Contains(msg, `caller "ci" is over its limit of 0.2 calls/s (auth.tokens[ci].limits.rate)`) || retry <= 0 {
		t.Fatalf("second call of ci: %q, retry after %d ms", msg, retry)
	}
	// other has no limits, but ci's first call took up's one token.
	msg, _ = call("tok-other")
	if !strings.Contains(msg, `upstream "up" is over its limit of 0.2 calls/s (servers[up].limits.rate)`) {
		t.Fatalf("call of other: %q, want up's own limit", msg)
	}
}
