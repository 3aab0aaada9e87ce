package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
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

// TestEveryMethodTakesThePipeline: prompts, reads, completions and lists
// of a caller whose token carries content filters are screened both ways,
// on every face (a tools/list on /mcp included, which the list cache
// answers for other callers); a caller limited to one request a second is refused the
// reads over it as it would be refused calls; a caller whose allow-list
// names no resource reads none.
func TestEveryMethodTakesThePipeline(t *testing.T) {
	secret := "olga@fabrikam.de AKIAZ3MSJV5WKQ7TYRXB"
	a := newRichUpstream(t, "alpha")
	// beta describes a tool and a resource with the secret: every list a
	// guarded caller gets is screened as a result is.
	b, bs := newRichServer("beta")
	bs.AddTool(mcp.NewTool("notes_beta", mcp.WithDescription("ask "+secret)), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("noted"), nil
	})
	bs.AddResource(mcp.NewResource("docs://beta/contacts", "contacts", mcp.WithResourceDescription("write to "+secret)),
		func(_ context.Context, r mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: r.Params.URI, Text: "none"}}, nil
		})
	serveRich(t, b, bs)
	auth := callers.NewAuth([]callers.TokenCaller{
		{Name: "guarded", Token: "tok-g", Ceiling: autonomy.Full,
			Guardrails: &toolspec.Guardrails{ContentFilters: []string{"no-pii", "no-secrets-in-output"}}},
		{Name: "limited", Token: "tok-l", Ceiling: autonomy.Full,
			Limits: &ratelimit.Limits{Rate: 1, Burst: 1, Where: "auth.tokens[limited].limits"}},
		{Name: "listed", Token: "tok-t", Ceiling: autonomy.Full, Tools: []string{"grow_alpha"}},
	}, nil, nil)
	h := newTestHubAuth(t, []config.ServerSpec{a.spec(""), b.spec("")}, auth)
	h.waitConnected("alpha")
	h.waitConnected("beta")

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
			tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
			mustf(t, err == nil, "tools/list: %v", err)
			resources, err := c.ListResources(ctx, mcp.ListResourcesRequest{})
			mustf(t, err == nil, "resources/list: %v", err)
			lists, _ := json.Marshal([]any{tools.Tools, resources.Resources})
			mustf(t, strings.Contains(string(lists), "notes_beta") && strings.Contains(string(lists), "docs://beta/contacts") &&
				strings.Contains(string(lists), "[redacted") && !strings.Contains(string(lists), "olga@") && !strings.Contains(string(lists), "AKIA"),
				"lists of a guarded caller: %s", lists)
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

// TestEveryMethodOnEveryFace: every method the dispatcher serves gets the
// same answer, result or error, on every face: Streamable HTTP as one JSON
// reply and as a reply stream (a progress token), legacy SSE, WebSocket and
// stdio. The stdio caller is the local user (full autonomy), as are the
// others here.
func TestEveryMethodOnEveryFace(t *testing.T) {
	a := newRichUpstream(t, "alpha")
	tokens := map[string]*ratelimit.Limits{}
	for _, n := range faceCallers {
		tokens[n] = nil
	}
	h := newTestHubAuth(t, []config.ServerSpec{a.spec("")}, limitedTokens(tokens))
	h.waitConnected("alpha")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// A session's plain JSON replies in place of the fast path's
	// sessionless calls: the other methods need a session before
	// 2026-07-28.
	resp, body := h.send(t, http.MethodPost, "/mcp", strings.NewReader(initBody),
		"Authorization", "Bearer tok-fast", "Content-Type", "application/json", "Accept", "application/json, text/event-stream")
	sid := resp.Header.Get("Mcp-Session-Id")
	mustf(t, sid != "", "initialize: %s %s", resp.Status, body)
	faces := []face{{"streamable JSON", "fast", func(t *testing.T, msg string) faceReply {
		resp, body := h.send(t, http.MethodPost, "/mcp", strings.NewReader(faceMessage(7, msg)), "Authorization", "Bearer tok-fast",
			"Mcp-Session-Id", sid, "Content-Type", "application/json", "Accept", "application/json, text/event-stream")
		mustf(t, resp.Header.Get("Content-Type") == "application/json", "%s: %s, want one JSON reply", msg, resp.Header.Get("Content-Type"))
		r, ok := readReply(t, []byte(body), 7)
		mustf(t, ok, "%s: %s %s", msg, resp.Status, body)
		return r
	}}}
	for _, f := range h.everyFace(ctx, t) {
		if f.caller != "rest" && f.caller != "fast" { // REST runs tools only
			faces = append(faces, f)
		}
	}
	for _, msg := range []string{
		`{"jsonrpc":"2.0","id":0,"method":"tools/list","params":{}}`,
		`{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":0,"method":"resources/list","params":{}}`,
		`{"jsonrpc":"2.0","id":0,"method":"resources/templates/list","params":{}}`,
		`{"jsonrpc":"2.0","id":0,"method":"prompts/list","params":{}}`,
		`{"jsonrpc":"2.0","id":0,"method":"resources/read","params":{"uri":"docs://alpha/readme"}}`,
		`{"jsonrpc":"2.0","id":0,"method":"resources/read","params":{"uri":"docs://alpha/pages/7"}}`,
		`{"jsonrpc":"2.0","id":0,"method":"resources/read","params":{"uri":"docs://nowhere"}}`,
		`{"jsonrpc":"2.0","id":0,"method":"prompts/get","params":{"name":"greet_alpha","arguments":{"who":"Ada"}}}`,
		`{"jsonrpc":"2.0","id":0,"method":"prompts/get","params":{"name":"no_such_prompt"}}`,
		`{"jsonrpc":"2.0","id":0,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"greet_alpha"},"argument":{"name":"who","value":"al"}}}`,
		`{"jsonrpc":"2.0","id":0,"method":"completion/complete","params":{"ref":{"type":"ref/nothing"},"argument":{"name":"who","value":"al"}}}`,
		`{"jsonrpc":"2.0","id":0,"method":"no/such/method","params":{}}`,
		`{"jsonrpc":"2.0","id":0,"method":"resources/read","params":{"uri":7}}`,
	} {
		var want faceReply
		for i, f := range faces {
			got := f.call(t, msg)
			if i == 0 {
				want = got
				mustf(t, got.Error != nil || len(got.Result) > 0, "%s on %s: no answer", msg, f.name)
				continue
			}
			mustf(t, sameReply(got, want), "%s on %s: %s, on %s: %s", msg, f.name, replyText(got), faces[0].name, replyText(want))
		}
	}
}

// sameReply reports whether two answers hold the same result (as JSON,
// member order aside) or the same error.
func sameReply(a, b faceReply) bool {
	if (a.Error == nil) != (b.Error == nil) {
		return false
	}
	if a.Error != nil {
		return a.Error.Code == b.Error.Code && a.Error.Message == b.Error.Message && string(a.Error.Data) == string(b.Error.Data)
	}
	var x, y any
	return json.Unmarshal(a.Result, &x) == nil && json.Unmarshal(b.Result, &y) == nil && reflect.DeepEqual(x, y)
}

func replyText(r faceReply) string {
	if r.Error != nil {
		return fmt.Sprintf("error %d %q", r.Error.Code, r.Error.Message)
	}
	return string(r.Result)
}
