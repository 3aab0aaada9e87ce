package server

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/mcpws"
	"github.com/purko-io/mcp-hub/internal/ratelimit"
	"github.com/purko-io/mcp-hub/internal/toolspec"
)

// dialAs opens an MCP client of the hub on face (mcp, sse, ws) with token.
func (h *testHub) dialAs(t *testing.T, face, token string) *client.Client {
	t.Helper()
	auth := map[string]string{"Authorization": "Bearer " + token}
	var tr transport.Interface
	var err error
	switch face {
	case "mcp":
		tr, err = transport.NewStreamableHTTP(h.url("/mcp"), transport.WithHTTPHeaders(auth))
	case "sse":
		tr, err = transport.NewSSE(h.url("/sse"), transport.WithHeaders(auth))
	case "ws":
		tr = mcpws.NewClientTransport(strings.Replace(h.url("/ws"), "http://", "ws://", 1), http.Header{"Authorization": {"Bearer " + token}})
	}
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The SSE stream lives as long as Start's context.
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatalf("initialize on %s: %v", face, err)
	}
	return c
}

// TestEveryMethodTakesThePipeline: prompts, reads and completions of a
// caller whose token carries content filters are screened both ways, on
// every face; a caller limited to one request a second is refused the
// reads over it as it would be refused calls; a caller whose allow-list
// names no resource reads none.
func TestEveryMethodTakesThePipeline(t *testing.T) {
	secret := "olga@fabrikam.de AKIAZ3MSJV5WKQ7TYRXB"
	a := newRichUpstream(t, "alpha")
	auth := callers.NewAuth([]callers.TokenCaller{
		{Name: "guarded", Token: "tok-g", Ceiling: autonomy.Full,
			Guardrails: &toolspec.Guardrails{ContentFilters: []string{"no-pii", "no-secrets-in-output"}}},
		{Name: "limited", Token: "tok-l", Ceiling: autonomy.Full,
			Limits: &ratelimit.Limits{Rate: 1, Burst: 1, Where: "auth.tokens[limited].limits"}},
		{Name: "listed", Token: "tok-t", Ceiling: autonomy.Full, Tools: []string{"grow_alpha"}},
	}, nil, nil)
	h := newTestHubAuth(t, []config.ServerSpec{a.spec("")}, auth)
	h.waitConnected("alpha")

	for _, face := range []string{"mcp", "sse", "ws"} {
		t.Run(face, func(t *testing.T) {
			c := h.dialAs(t, face, "tok-g")
			ctx := ctx10(t)
			gp := mcp.GetPromptRequest{}
			gp.Params.Name = "greet_alpha"
			gp.Params.Arguments = map[string]string{"who": secret}
			got, err := c.GetPrompt(ctx, gp)
			mustf(t, err == nil && len(got.Messages) == 1, "prompts/get: %v", err)
			text, _ := got.Messages[0].Content.(mcp.TextContent)
			mustf(t, strings.HasPrefix(text.Text, "Hello ") && strings.Contains(text.Text, "[redacted") &&
				!strings.Contains(text.Text, "olga@") && !strings.Contains(text.Text, "AKIA"), "prompt text %q", text.Text)
		})
	}

	// One request a second: of 8 reads at once, those over it are refused
	// with the busy code, and say when to retry.
	c := h.dialAs(t, "mcp", "tok-l")
	var wg sync.WaitGroup
	var mu sync.Mutex
	refused := 0
	for range 8 {
		wg.Go(func() {
			req := mcp.ReadResourceRequest{}
			req.Params.URI = "docs://alpha/readme"
			_, err := c.ReadResource(ctx10(t), req)
			if err != nil && strings.Contains(err.Error(), "auth.tokens[limited].limits") {
				mu.Lock()
				refused++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	mustf(t, refused >= 6, "%d of 8 reads refused at one request a second", refused)

	// An allow-list that names tools only reads no resource and lists none.
	lc := h.dialAs(t, "mcp", "tok-t")
	res, err := lc.ListResources(ctx10(t), mcp.ListResourcesRequest{})
	mustf(t, err == nil && len(res.Resources) == 0, "listed resources: %v %+v", err, res)
	req := mcp.ReadResourceRequest{}
	req.Params.URI = "docs://alpha/readme"
	_, err = lc.ReadResource(ctx10(t), req)
	mustf(t, err != nil && strings.Contains(err.Error(), "BLOCKED"), "read by an allow-listed caller: %v", err)
}
