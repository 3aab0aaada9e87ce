package interop

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"sigs.k8s.io/yaml"

	"github.com/purko-io/mcp-hub/internal/hubtest"
)

// The values the guardrails test sends: shaped as what the filters know
// (an e-mail address, an AWS access key id), made up.
const (
	guardEmail = "alice.smith@corp-mail.de"
	guardKey   = "AKIAZ3MSJV5WKQ7TYRXB"
)

// TestGuardrailsThroughHub puts the reference server behind the real hub
// and calls its echo tool (which answers with the message it got, so the
// answer shows what the upstream saw) as token callers with guardrails,
// over Streamable HTTP and SSE: redaction reaches the upstream's
// arguments, block mode refuses before the upstream, maxIterations counts
// a run by its traceparent across sessions, and the hub's log names rules
// but never what they matched.
func TestGuardrailsThroughHub(t *testing.T) {
	dir := t.TempDir()
	cfg := map[string]any{
		"naming":   map[string]any{"prefix": "on-conflict"},
		"builtins": map[string]any{"staticAnalysis": map[string]any{"enabled": false}},
		"servers":  []serverCfg{{Name: "ev", Transport: "stdio", Command: "node", Args: []string{everything, "stdio"}}},
		"auth": map[string]any{"tokens": []map[string]any{
			{"name": "redactor", "token": map[string]string{"env": "TOKEN_REDACTOR"}, "maxLevel": "full",
				"guardrails": map[string]any{"contentFilters": []string{"no-pii", "secrets"}}},
			{"name": "blocker", "token": map[string]string{"env": "TOKEN_BLOCKER"}, "maxLevel": "full",
				"guardrails": map[string]any{"contentFilters": []string{"no-secrets-in-output"}, "contentFilterMode": "block"}},
			{"name": "counted", "token": map[string]string{"env": "TOKEN_COUNTED"}, "maxLevel": "full",
				"guardrails": map[string]any{"maxIterations": 2}},
		}},
	}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "hub.yaml")
	if err := os.WriteFile(cfgPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	hub := hubtest.StartHub(t, hubtest.HubOptions{Bin: hubBin, ConfigFile: cfgPath, Dir: dir, Wait: hubtest.Connected,
		Env: []string{"TOKEN_REDACTOR=redactor-token-1", "TOKEN_BLOCKER=blocker-token-1", "TOKEN_COUNTED=counted-token-1"}})

	message := "write to " + guardEmail + " with key " + guardKey
	for _, face := range []string{"streamable", "sse"} {
		t.Run(face, func(t *testing.T) {
			echo := func(t *testing.T, token string, headers map[string]string) (string, bool) {
				t.Helper()
				c := guardClient(t, hub, face, token, headers)
				res, err := c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": message}}})
				if err != nil {
					t.Fatalf("call echo: %v", err)
				}
				return resultText(res), res.IsError
			}
			text, isErr := echo(t, "redactor-token-1", nil)
			if isErr || !strings.Contains(text, "write to [redacted: email] with key [redacted: aws-access-token]") ||
				strings.Contains(text, guardEmail) || strings.Contains(text, guardKey) {
				t.Fatalf("redactor: %q (error %v): the upstream must have seen the redacted message", text, isErr)
			}
			text, isErr = echo(t, "blocker-token-1", nil)
			if !isErr || text != "BLOCKED: the arguments of tool 'echo' hold what the content filter secrets refuses (aws-access-token); the call was not sent." {
				t.Fatalf("blocker: %q (error %v)", text, isErr)
			}
			// A run of two calls, in two sessions (the executor
			// reconnecting): the third call is refused in a new session
			// too; another run starts afresh.
			run := fmt.Sprintf("00-%032x-00f067aa0ba902b7-01", time.Now().UnixNano())
			for i := range 2 {
				if text, isErr := echo(t, "counted-token-1", map[string]string{"traceparent": run}); isErr {
					t.Fatalf("counted call %d: %q", i+1, text)
				}
			}
			text, isErr = echo(t, "counted-token-1", map[string]string{"traceparent": run})
			if !isErr || !strings.Contains(text, "BLOCKED: tool call budget used up") || !strings.Contains(text, "may make 2 tool calls (guardrails maxIterations)") {
				t.Fatalf("counted call 3: %q (error %v)", text, isErr)
			}
			other := fmt.Sprintf("00-%032x-00f067aa0ba902b7-01", time.Now().UnixNano()+1)
			if text, isErr := echo(t, "counted-token-1", map[string]string{"traceparent": other}); isErr {
				t.Fatalf("another run: %q", text)
			}
		})
	}
	log := hub.Output()
	if strings.Contains(log, guardEmail) || strings.Contains(log, guardKey) {
		t.Fatal("the hub's log holds a filtered value")
	}
	for _, want := range []string{`"audit":"guardrail"`, `"direction":"arguments"`, `"action":"blocked"`, `"aws-access-token":1`} {
		if !strings.Contains(log, want) {
			t.Errorf("the hub's log lacks %s", want)
		}
	}
	_, metrics, err := httpGet(hub.Base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`mcphub_guardrail_hits_total{action="redacted",direction="arguments",filter="pii",rule="email"} 2`,
		`mcphub_guardrail_hits_total{action="blocked",direction="arguments",filter="secrets",rule="aws-access-token"} 2`,
		`mcphub_guardrail_budget_refusals_total 2`,
	} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// guardClient is an initialized mcp-go client of the hub over face, with
// a bearer token and extra headers on every request.
func guardClient(t *testing.T, hub *hubtest.Hub, face, token string, headers map[string]string) *client.Client {
	t.Helper()
	h := map[string]string{"Authorization": "Bearer " + token}
	for k, v := range headers {
		h[k] = v
	}
	var c *client.Client
	var err error
	switch face {
	case "sse":
		c, err = client.NewSSEMCPClient(hub.Base+"/sse", transport.WithHeaders(h))
		if err == nil {
			err = c.Start(context.Background())
		}
	default:
		c, err = client.NewStreamableHttpClient(hub.MCPURL(), transport.WithHTTPHeaders(h))
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: mcp.LATEST_PROTOCOL_VERSION,
		ClientInfo: mcp.Implementation{Name: "guardrails-test", Version: "0"}}}); err != nil {
		t.Fatalf("initialize over %s: %v", face, err)
	}
	return c
}

func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}
