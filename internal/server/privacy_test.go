package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/purko-io/mcp-hub/internal/apitools"
	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/registry"
	"github.com/purko-io/mcp-hub/internal/toolspec"
)

// getAs is a GET of the hub's path as the caller of token ("" none).
func (h *testHub) getAs(t *testing.T, path, token string, v any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, h.url(path), nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", path, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

// Issue 20, item 8: a configured URL that reaches an internal page (an
// admin login that answers 401, a broken one that answers 500, each with
// a password in its HTML). The open listings say what failed (stage,
// HTTP status) and nothing of the page; an admin caller also gets the
// start of the page, redacted of the token the hub sent.
func TestListingsShowNoUpstreamBody(t *testing.T) {
	const token = "hub-held-T0KEN-for-internal-7"
	page := func(code int) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.WriteHeader(code)
			fmt.Fprintf(w, "<html><body><h1>Admin</h1><p>password=hunter2</p><p>you sent %s</p></body></html>", r.Header.Get("Authorization"))
		})
	}
	var specs []config.ServerSpec
	for name, code := range map[string]int{"login": http.StatusUnauthorized, "broken": http.StatusInternalServerError} {
		specs = append(specs, config.ServerSpec{Name: name, URL: serveOn(t, page(code)) + "/admin", Transport: config.TransportStreamableHTTP,
			BearerToken: config.Secret(token), Source: "test"})
	}
	auth := authFor(
		callers.TokenCaller{Name: "ops", Token: "tok-admin", Ceiling: autonomy.Full, Admin: true},
		callers.TokenCaller{Name: "reader", Token: "tok-reader", Ceiling: autonomy.Full},
	)
	h := newTestHubAuth(t, specs, auth)
	waitFor(t, "both servers failed", func() bool {
		return h.status("login").State == registry.StateError && h.status("broken").State == registry.StateError
	})
	want := map[string]string{
		"login":  "initialize: the upstream refused the hub's request: HTTP 401 Unauthorized (text/html)",
		"broken": "initialize: HTTP 500 Internal Server Error (text/html)",
	}
	// The listings as a client reads them (not the hub's own types).
	type status struct{ Error, Detail string }
	read := func(caller string) map[string]status {
		var tools struct {
			Servers []struct{ Name, Error, ErrorDetail string }
		}
		h.getAs(t, "/api/mcp/tools", caller, &tools)
		var servers struct {
			Servers []struct {
				Metadata struct{ Name string }
				Status   struct{ Message, Detail string }
			}
		}
		h.getAs(t, "/api/mcp/servers", caller, &servers)
		out := map[string]status{}
		for _, sv := range tools.Servers {
			out["/api/mcp/tools "+sv.Name] = status{sv.Error, sv.ErrorDetail}
		}
		for _, sv := range servers.Servers {
			out["/api/mcp/servers "+sv.Metadata.Name] = status{sv.Status.Message, sv.Status.Detail}
		}
		return out
	}
	for _, caller := range []string{"", "tok-reader", "tok-admin"} {
		admin := caller == "tok-admin"
		got := read(caller)
		if len(got) != 4 {
			t.Fatalf("caller %q: listings %v, want both servers in both", caller, got)
		}
		for where, st := range got {
			name := where[strings.LastIndex(where, " ")+1:]
			if st.Error != want[name] {
				t.Errorf("caller %q, %s: error %q, want %q", caller, where, st.Error, want[name])
			}
			switch {
			case strings.Contains(st.Detail, token):
				t.Errorf("caller %q, %s: the detail leaks the token: %s", caller, where, st.Detail)
			case !admin && st.Detail != "":
				t.Errorf("caller %q (no admin), %s: detail %q, want none", caller, where, st.Detail)
			case admin && (!strings.Contains(st.Detail, "password=hunter2") || !strings.Contains(st.Detail, "you sent Bearer [redacted]")):
				t.Errorf("admin, %s: detail %q, want the start of the page, redacted", where, st.Detail)
			}
		}
	}
}

// echoUpstream is an MCP server whose tool, resource and prompt answer
// with the credentials the request came with, as a server that reflects
// its request for debugging does.
func echoUpstream(t *testing.T) string {
	t.Helper()
	said := func(h http.Header) string {
		return "you sent Authorization: " + h.Get("Authorization") + "; X-Api-Key: " + h.Get("X-Api-Key")
	}
	s := mcpserver.NewMCPServer("echoer", "1.0.0", mcpserver.WithToolCapabilities(true), mcpserver.WithResourceCapabilities(false, false),
		mcpserver.WithPromptCapabilities(false))
	s.AddTool(mcp.NewTool("echo_request", mcp.WithReadOnlyHintAnnotation(true)), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultStructured(map[string]string{"authorization": r.Header.Get("Authorization"), "key": r.Header.Get("X-Api-Key")}, said(r.Header)), nil
	})
	s.AddResource(mcp.NewResource("echo://request", "request"), func(ctx context.Context, r mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: "echo://request", MIMEType: "text/plain", Text: said(r.Header)}}, nil
	})
	s.AddPrompt(mcp.NewPrompt("echo_prompt"), func(ctx context.Context, r mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return mcp.NewGetPromptResult("echo", []mcp.PromptMessage{mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent(said(r.Header)))}), nil
	})
	return serveOn(t, mcpserver.NewStreamableHTTPServer(s)) + "/mcp"
}

// Issue 20, item 9: an upstream that writes the request's Authorization
// and static header into its answers, and an api tool whose endpoint
// echoes its credential. Every face hands the caller the marker, never
// the hub's credential: the /mcp fast path, REST run, and mcp-go's path
// (SSE) for tools, resources and prompts.
func TestResultsCarryNoHubCredential(t *testing.T) {
	const (
		token  = "hub-held-T0KEN-0123456789"
		key    = "static-h3ader-k3y-42"
		apiKey = "api-t00l-credential-5150"
	)
	creds := []string{token, key, apiKey}
	apiEcho := serveOn(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"you_sent":%q}`, r.Header.Get("Authorization"))
	}))
	def, run, err := apitools.New(toolspec.EndpointSpec{Name: "api_echo", URL: apiEcho + "/echo", Method: "GET", AuthScheme: toolspec.AuthBearer,
		Credential: toolspec.CredentialRef{Env: "API_ECHO_TOKEN"}}, apiKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec := config.ServerSpec{Name: "echoer", URL: echoUpstream(t), Transport: config.TransportStreamableHTTP,
		BearerToken: config.Secret(token), Headers: map[string]string{"X-Api-Key": key}, Source: "test"}
	h := newTestHub(t, []config.ServerSpec{spec}, func(o *registry.Options) {
		o.Local = []registry.LocalTool{{Def: def, Kind: autonomy.API, Method: "GET", Run: run}}
	})
	h.waitConnected("echoer")

	check := func(face, answer string, markers int) {
		t.Helper()
		for _, c := range creds {
			if strings.Contains(answer, c) {
				t.Errorf("%s: the answer holds the hub's credential %q: %s", face, c, answer)
			}
		}
		if n := strings.Count(answer, "[redacted]"); n < markers {
			t.Errorf("%s: %d markers, want %d: %s", face, n, markers, answer)
		}
	}

	// The /mcp fast path: a plain tools/call in a session.
	sid := h.initializeSession(t)
	for _, tool := range []string{"echo_request", "api_echo"} {
		_, body := h.send(t, http.MethodPost, "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"`+tool+`","arguments":{}}}`),
			"Mcp-Session-Id", sid)
		if !strings.Contains(body, `"result"`) {
			t.Fatalf("fast path %s: %s", tool, body)
		}
		check("/mcp "+tool, body, map[string]int{"echo_request": 4, "api_echo": 1}[tool])
	}

	// REST run.
	for _, tool := range []string{"echo_request", "api_echo"} {
		res := h.run(t, runReq{tool: tool, body: `{}`})
		if res.status != http.StatusOK {
			t.Fatalf("REST run %s: %d %s", tool, res.status, res.raw)
		}
		check("REST "+tool, res.raw, map[string]int{"echo_request": 4, "api_echo": 1}[tool])
	}

	// mcp-go's path: the legacy SSE face, tools, a resource and a prompt.
	s := h.dialSSE(false)
	ctx := ctx10(t)
	for _, tool := range []string{"echo_request", "api_echo"} {
		req := mcp.CallToolRequest{}
		req.Params.Name = tool
		res, err := s.c.CallTool(ctx, req)
		if err != nil {
			t.Fatalf("SSE %s: %v", tool, err)
		}
		raw, _ := json.Marshal(res)
		check("SSE "+tool, string(raw), map[string]int{"echo_request": 4, "api_echo": 1}[tool])
	}
	rr := mcp.ReadResourceRequest{}
	rr.Params.URI = "echo://request"
	read, err := s.c.ReadResource(ctx, rr)
	if err != nil {
		t.Fatalf("SSE resources/read: %v", err)
	}
	raw, _ := json.Marshal(read)
	check("SSE resources/read", string(raw), 2)
	pr := mcp.GetPromptRequest{}
	pr.Params.Name = "echo_prompt"
	prompt, err := s.c.GetPrompt(ctx, pr)
	if err != nil {
		t.Fatalf("SSE prompts/get: %v", err)
	}
	raw, _ = json.Marshal(prompt)
	check("SSE prompts/get", string(raw), 2)
}
