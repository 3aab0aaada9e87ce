package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/purko-io/mcp-hub/internal/hubtest"
	"github.com/purko-io/mcp-hub/internal/mcpws"
)

// TestURLElicitation: the reference server's trigger-url-elicitation behind
// the hub, called by two SDK clients at once (over /mcp and /ws) that
// declare URL-mode elicitation. Each client gets exactly its own elicitation/create (mode
// url, its URL and elicitationId intact), its answer goes back to the
// upstream request that asked (the tool's result names the client's own
// elicitation), and the -32042 URL-elicitation-required error of the error
// path reaches the caller with its data (the elicitations) intact.
func TestURLElicitation(t *testing.T) {
	e := newEnv(t)
	e.addHTTP(t, "ev-http")
	e.startHub(t)
	e.waitConnected(t, "ev-http")
	const tool = "trigger-url-elicitation" // one server: no prefix
	// The server offers the tool only to clients that declare URL mode:
	// listed, it proves the hub declared it upstream.
	e.waitListing(t, changeTimeout, tool+" listed", func(l *hubtest.Listing) bool {
		sv, _ := l.Server("ev-http")
		names, _ := sv.ToolNames()
		return slices.Contains(names, tool)
	})

	t.Run("two callers at once", func(t *testing.T) {
		kinds := []string{"http", "ws"} // one caller on each face that takes server requests
		callers := len(kinds)
		outs := make([]clientOut, callers)
		runs := make([]*clientRun, callers)
		for i := range callers {
			tr := hubTransports[slices.IndexFunc(hubTransports, func(tr hubTransport) bool { return tr.kind == kinds[i] })]
			runs[i] = startClient(t, tr.kind, tr.url(e.base), opCallElicit(tool, map[string]any{
				"url":           fmt.Sprintf("https://example.com/consent/%d", i),
				"elicitationId": fmt.Sprintf("elicitation-of-caller-%d", i),
				"message":       fmt.Sprintf("caller %d, please consent", i),
			}))
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		var errs []string
		for i := range callers {
			wg.Go(func() {
				// wait calls t.Fatalf, which must run on the test's
				// goroutine: wait for the process here, decode below.
				<-runs[i].p.Done()
				if err := runs[i].p.Err(); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Sprintf("caller %d: %v\n%s", i, err, runs[i].p.Output()))
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(errs) > 0 {
			t.Fatal(strings.Join(errs, "\n"))
		}
		for i := range callers {
			outs[i] = runs[i].wait(t)
		}
		for i, out := range outs {
			r := out.call(t, 0)
			if r.failed() {
				t.Fatalf("caller %d: call failed: %s", i, r)
			}
			url, id := fmt.Sprintf("https://example.com/consent/%d", i), fmt.Sprintf("elicitation-of-caller-%d", i)
			if len(r.Elicitations) != 1 {
				t.Fatalf("caller %d got %d elicitations, want its own one: %s", i, len(r.Elicitations), r)
			}
			got := r.Elicitations[0]
			if got.Mode != "url" || got.URL != url || got.ElicitationID != id || got.Message != fmt.Sprintf("caller %d, please consent", i) {
				t.Errorf("caller %d got elicitation %+v; want mode url, url %s, elicitationId %s and its message", i, got, url, id)
			}
			// The server's result names the elicitation it got an answer
			// for: the answer went back to this caller's request.
			text := r.text()
			if !strings.Contains(text, "User completed the URL elicitation flow") || !strings.Contains(text, id) || !strings.Contains(text, url) {
				t.Errorf("caller %d: result %q; want the accepted elicitation %s of %s", i, text, id, url)
			}
		}
	})

	t.Run("a 2026-07-28 caller, by rounds", func(t *testing.T) {
		args := map[string]any{"url": "https://example.com/consent/modern", "elicitationId": "of-the-modern-caller", "message": "please consent"}
		first := modernCall(t, e.base, tool, args, nil, "")
		var round struct {
			ResultType    string `json:"resultType"`
			RequestState  string `json:"requestState"`
			InputRequests map[string]struct {
				Method string          `json:"method"`
				Params json.RawMessage `json:"params"`
			} `json:"inputRequests"`
		}
		if err := json.Unmarshal(first, &round); err != nil || round.ResultType != "input_required" || len(round.InputRequests) != 1 ||
			!strings.HasPrefix(round.RequestState, "mhr1.") {
			t.Fatalf("first round = %s; want input_required with one input request and the hub's requestState", first)
		}
		var key string
		var el elicitParams
		for k, req := range round.InputRequests {
			key = k
			if req.Method != "elicitation/create" || json.Unmarshal(req.Params, &el) != nil {
				t.Fatalf("input request %s = %+v; want an elicitation", k, req)
			}
		}
		if el.Mode != "url" || el.URL != args["url"] || el.Message != args["message"] || el.ElicitationID != "" {
			t.Errorf("the elicitation = %+v; want mode url, the server's url and message, no elicitationId (2026-07-28 has none)", el)
		}
		final := modernCall(t, e.base, tool, args, map[string]any{key: map[string]any{"action": "accept"}}, round.RequestState)
		if text := string(final); !strings.Contains(text, "User completed the URL elicitation flow") || !strings.Contains(text, "of-the-modern-caller") ||
			strings.Contains(text, "input_required") {
			t.Errorf("second round = %s; want the server's result for the accepted elicitation", text)
		}
	})

	t.Run("-32042 error path", func(t *testing.T) {
		out := runClient(t, "http", e.base+"/mcp", opCallElicit(tool, map[string]any{
			"url": "https://example.com/needs-auth", "errorPath": true, "elicitationId": "error-path",
		}))
		r := out.call(t, 0)
		if r.Error == nil || r.Error.Code != -32042 {
			t.Fatalf("result %s; want JSON-RPC error -32042", r)
		}
		var data struct {
			Elicitations []elicitParams `json:"elicitations"`
		}
		if err := json.Unmarshal(r.Error.Data, &data); err != nil || len(data.Elicitations) != 1 {
			t.Fatalf("error data %s (%v); want one elicitation", r.Error.Data, err)
		}
		if el := data.Elicitations[0]; el.Mode != "url" || el.URL != "https://modelcontextprotocol.io" || el.ElicitationID == "" {
			t.Errorf("error data elicitation %+v; want the server's prerequisite (mode url, https://modelcontextprotocol.io, an id)", el)
		}
		if len(r.Elicitations) != 0 {
			t.Errorf("the error path sent %d elicitation requests; want none", len(r.Elicitations))
		}
	})
}

// modernCall calls tool on the hub at base as a 2026-07-28 caller that
// declares URL and form elicitation, answering a round (answers and its
// requestState) when state is set, and returns the call's result.
func modernCall(t *testing.T, base, tool string, args, answers map[string]any, state string) json.RawMessage {
	t.Helper()
	params := map[string]any{"name": tool, "arguments": args, "_meta": map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "modern-caller", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"elicitation": map[string]any{"form": map[string]any{}, "url": map[string]any{}}},
	}}
	if state != "" {
		params["inputResponses"], params["requestState"] = answers, state
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
	req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", tool)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var reply struct {
		Result json.RawMessage
		Error  json.RawMessage
	}
	if err := json.NewDecoder(resp.Body).Decode(&reply); err != nil || reply.Error != nil {
		t.Fatalf("tools/call %s as a 2026-07-28 caller: %v %s", tool, err, reply.Error)
	}
	return reply.Result
}

// elicitParams are the members of a URL-mode elicitation the test checks.
type elicitParams struct {
	Mode          string `json:"mode"`
	Message       string `json:"message"`
	URL           string `json:"url"`
	ElicitationID string `json:"elicitationId"`
}

func opCallElicit(tool string, args map[string]any) []string {
	op := opCall(tool, args)
	op[0] = "call-elicit"
	return op
}

// consentUpstream is an MCP server (mcp-go over the hub's WebSocket
// handler, in this process) whose tool consent fails with -32042 (URL
// elicitation required) naming the elicitation of its "id" argument, and
// that sends notifications/elicitation/complete for an id when the test
// says so, after the call has ended, as a server does when the user's
// out-of-band flow is over.
type consentUpstream struct {
	url     string
	srv     *server.MCPServer
	mu      sync.Mutex
	session server.ClientSession // the hub's one session
}

func startConsentUpstream(t *testing.T) *consentUpstream {
	t.Helper()
	u := &consentUpstream{srv: server.NewMCPServer("consent", "1", server.WithElicitation())}
	u.srv.AddTool(mcp.NewTool("consent", mcp.WithString("id")), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		u.mu.Lock()
		u.session = server.ClientSessionFromContext(ctx)
		u.mu.Unlock()
		id := r.GetString("id", "")
		return nil, mcp.URLElicitationRequiredError{Elicitations: []mcp.ElicitationParams{{
			Mode: mcp.ElicitationModeURL, ElicitationID: id, URL: "https://example.com/consent/" + id, Message: "consent first",
		}}}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: mcpws.NewHandler(u.srv)}
	var wg sync.WaitGroup
	wg.Go(func() { _ = hs.Serve(ln) })
	t.Cleanup(func() { _ = hs.Close(); wg.Wait() })
	u.url = "ws://" + ln.Addr().String() + "/ws"
	return u
}

// complete sends notifications/elicitation/complete of id to the hub.
func (u *consentUpstream) complete(t *testing.T, id string) {
	t.Helper()
	u.mu.Lock()
	session := u.session
	u.mu.Unlock()
	if err := u.srv.SendElicitationComplete(context.Background(), session, id); err != nil {
		t.Fatalf("complete %s: %v", id, err)
	}
}

// TestURLElicitationComplete: two SDK clients (over /mcp and /ws) each
// get a -32042 naming an elicitation of their own; when the server later
// sends notifications/elicitation/complete for them, with no call in
// flight (so nothing but the elicitationId can tell where it goes), each
// client gets the completion of its own elicitation and none of the
// other's.
func TestURLElicitationComplete(t *testing.T) {
	e := newEnv(t)
	up := startConsentUpstream(t)
	// Pinned to 2025-11-25, where -32042 is a JSON-RPC error.
	e.servers = append(e.servers, serverCfg{Name: "consent", Transport: "websocket", URL: up.url, ProtocolVersion: "2025-11-25"})
	e.startHub(t)
	e.waitConnected(t, "consent")

	kinds := []string{"http", "ws"}
	runs := make([]*clientRun, len(kinds))
	ids := make([]string, len(kinds))
	for i, kind := range kinds {
		tr := hubTransports[slices.IndexFunc(hubTransports, func(tr hubTransport) bool { return tr.kind == kind })]
		ids[i] = fmt.Sprintf("consent-of-caller-%d", i)
		runs[i] = startClient(t, tr.kind, tr.url(e.base),
			opCallElicit("consent", map[string]any{"id": ids[i]}),
			[]string{"wait-complete", ids[i]})
	}
	for _, run := range runs {
		run.waitWaiting(t)
	}
	for i := len(ids) - 1; i >= 0; i-- {
		up.complete(t, ids[i])
	}
	for i, run := range runs {
		out := run.wait(t)
		r := out.call(t, 0)
		if r.Error == nil || r.Error.Code != -32042 || !strings.Contains(string(r.Error.Data), ids[i]) {
			t.Errorf("caller %d: result %s; want -32042 naming %s", i, r, ids[i])
		}
		var done struct {
			Completes []string `json:"completes"`
		}
		if err := json.Unmarshal(out.Results[1], &done); err != nil || !slices.Equal(done.Completes, []string{ids[i]}) {
			t.Errorf("caller %d got completions %s (%v); want only %s", i, out.Results[1], err, ids[i])
		}
	}
}

// waitWaiting waits until the client printed {"waiting":...}: its calls
// have answered and wait-complete listens.
func (r *clientRun) waitWaiting(t *testing.T) {
	t.Helper()
	if _, err := r.p.WaitLine(context.Background(), func(l string) bool { return strings.HasPrefix(l, `{"waiting":`) }); err != nil {
		t.Fatalf("%s ended before it waited: %v\noutput: %s", r.desc, err, r.p.Output())
	}
}
