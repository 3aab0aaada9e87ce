package server

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/registry"
)

// The revisions of the matrix, oldest first: every one mcp-go speaks.
const (
	rev20241105 = mcp.ProtocolVersion20241105
	rev20250326 = mcp.ProtocolVersion20250326
	rev20250618 = mcp.ProtocolVersion20250618
	rev20251125 = mcp.ProtocolVersion20251125
	rev20260728 = mcp.ProtocolVersion20260728
)

// matrixRevisions are the columns and rows of the matrix. The hub claims
// every one of the 25 combinations (README "Protocol revisions"): callers
// on /sse (2024-11-05), /mcp sessions (2025-03-26 to 2025-11-25) and
// stateless /mcp (2026-07-28); upstreams over HTTP+SSE (2024-11-05),
// Streamable HTTP sessions and 2026-07-28. So no cell is left out; what a
// revision lacks is left out of the cell's checks instead (see checks).
var matrixRevisions = []string{rev20241105, rev20250326, rev20250618, rev20251125, rev20260728}

// matrixWant is what each cell must have checked, caller (row) by
// upstream (column), in matrixRevisions' order; the letters are
// TestRevisionMatrix's. README "Protocol revisions" shows the same table.
var matrixWant = [][]string{
	{"ilcrpgox", "ilcrpgoMx", "ilcrpgoMx", "ilcrpgoMx", "ilcrpgoMx"},
	{"ilcrpgox", "ilcrpgomx", "ilcrpgomx", "ilcrpgomx", "ilcrpgomx"},
	{"ilcrpgox", "ilcrpgomx", "ilcsrpgomex", "ilcsrpgomex", "ilcsrpgomex"},
	{"ilcrpgox", "ilcrpgomx", "ilcsrpgomex", "ilcsrpgomex", "ilcsrpgomex"},
	{"ilcrpgox", "ilcrpgomx", "ilcsrpgomex", "ilcsrpgomex", "ilcsrpgomex"},
}

// matrixUpstream is a rich upstream that speaks exactly one revision: an
// mcp-go HTTP+SSE server for 2024-11-05 (that revision's HTTP transport),
// else a Streamable HTTP server that advertises only its revision, and the
// hub's entry pins it (servers[].protocolVersion).
type matrixUpstream struct {
	*richUpstream
	rev  string
	spec config.ServerSpec

	mu    sync.Mutex
	holds map[string]*hold // by the id a hold_ call carries
}

// hold is what the upstream saw of one hold_ call.
type hold struct {
	started  chan struct{} // closed when the call reached the tool
	canceled chan struct{} // closed when the call's context ended
}

func (u *matrixUpstream) hold(id string) *hold {
	u.mu.Lock()
	defer u.mu.Unlock()
	h, ok := u.holds[id]
	if !ok {
		h = &hold{started: make(chan struct{}), canceled: make(chan struct{})}
		u.holds[id] = h
	}
	return h
}

func newMatrixUpstream(t *testing.T, rev string) *matrixUpstream {
	t.Helper()
	name := "r" + strings.ReplaceAll(rev, "-", "")
	rich, s := newRichServer(name)
	u := &matrixUpstream{richUpstream: rich, rev: rev, holds: map[string]*hold{}}
	// revision_ answers with the revision the upstream speaks on the
	// request: the one of its session, or of the request's _meta.
	s.AddTool(mcp.NewTool("revision_"+name), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(mcpserver.RequestProtocolVersion(ctx)), nil
	})
	// steps_ reports progress (to a caller that gave a token) and logs at
	// three levels, then works a while before its result: mcp-go's
	// Streamable HTTP server can drop a notification sent just before the
	// result, and a loaded machine widens that race.
	s.AddTool(mcp.NewTool("steps_"+name), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if r.Params.Meta != nil && r.Params.Meta.ProgressToken != nil {
			for i := 1; i <= 3; i++ {
				_ = s.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress), map[string]any{
					"progressToken": r.Params.Meta.ProgressToken, "progress": i, "total": 3,
				})
			}
		}
		for _, lvl := range []mcp.LoggingLevel{mcp.LoggingLevelDebug, mcp.LoggingLevelInfo, mcp.LoggingLevelError} {
			_ = s.SendNotificationToClient(ctx, string(mcp.MethodNotificationMessage), map[string]any{"level": lvl, "logger": name, "data": lvl})
		}
		time.Sleep(100 * time.Millisecond)
		return mcp.NewToolResultText("stepped"), nil
	})
	s.AddTool(mcp.NewTool("struct_"+name), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultStructured(map[string]any{"server": name, "n": 7}, "structured of "+name), nil
	})
	s.AddTool(mcp.NewTool("hold_"+name, mcp.WithString("id")), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		h := u.hold(r.GetString("id", ""))
		close(h.started)
		select {
		case <-ctx.Done():
			close(h.canceled)
			return nil, ctx.Err()
		case <-time.After(20 * time.Second):
			return mcp.NewToolResultText("never canceled"), nil
		}
	})
	var handler http.Handler
	tr := config.TransportStreamableHTTP
	path := "/mcp"
	if rev == rev20241105 {
		handler, tr, path = mcpserver.NewSSEServer(s), config.TransportSSE, "/sse"
	} else {
		handler = mcpserver.NewStreamableHTTPServer(s, mcpserver.WithStreamableHTTPProtocolVersions(rev))
	}
	u.url = serveOn(t, handler) + path
	u.spec = config.ServerSpec{Name: name, URL: u.url, Transport: tr, Source: "test", ProtocolVersion: rev}
	return u
}

// matrixCaller is a session of the hub pinned to one revision, its log
// level set to info.
func (h *testHub) matrixCaller(rev string) *session {
	h.t.Helper()
	var s *session
	if rev == rev20241105 {
		s = h.dialSSE(true)
	} else {
		s = h.dialSession(rev, true)
	}
	s.name = "caller-" + rev
	lv := mcp.SetLevelRequest{}
	lv.Params.Level = mcp.LoggingLevelInfo
	mustf(h.t, s.c.SetLevel(ctx10(h.t), lv) == nil, "logging/setLevel at %s", rev)
	return s
}

// TestRevisionMatrix puts one upstream of every revision behind one hub
// and, from a caller of every revision, checks in each of the 25 cells
// what both revisions of the cell support. The matrix is printed with the
// checks each cell ran:
//
//	i  initialize: the caller's negotiated revision, and the upstream's
//	l  tools/list    c  tools/call    s  structured content (both >= 2025-06-18)
//	r  resources/read    p  prompts/get    g  progress    o  logging
//	m  sampling answered by the caller (a 2026-07-28 caller's as a round
//	   of its call, package rounds); M refused with the reason (a
//	   2024-11-05 caller on /sse, which takes no server requests); none
//	   from the 2024-11-05 upstream: mcp-go's HTTP+SSE server sends no
//	   server requests
//	e  elicitation (form), where both revisions have it and it can be bridged
//	x  cancellation reaches the upstream
func TestRevisionMatrix(t *testing.T) {
	ups := make([]*matrixUpstream, len(matrixRevisions))
	specs := make([]config.ServerSpec, len(matrixRevisions))
	names := make([]string, len(matrixRevisions))
	for i, rev := range matrixRevisions {
		ups[i] = newMatrixUpstream(t, rev)
		specs[i], names[i] = ups[i].spec, ups[i].name
	}
	h := newTestHub(t, specs, func(o *registry.Options) { o.Upstream.Timeout = matrixUpstreamTimeout })
	h.waitConnected(names...)

	start := time.Now()
	ran := map[[2]string]string{}
	for _, callerRev := range matrixRevisions {
		s := h.matrixCaller(callerRev)
		for _, up := range ups {
			var done []string
			ok := t.Run("caller="+callerRev+"/upstream="+up.rev, func(t *testing.T) {
				matrixCell(t, s, callerRev, up, func(check string) { done = append(done, check) })
			})
			result := strings.Join(done, "")
			if !ok {
				result = "FAIL after " + result
			}
			ran[[2]string{callerRev, up.rev}] = result
		}
	}

	reportMatrix(t, "revision matrix", time.Since(start), ran, matrixWant)
}

// reportMatrix prints a matrix of the checks each cell ran (ran, by
// caller and upstream revision) and fails t where they are not want's.
func reportMatrix(t *testing.T, title string, took time.Duration, ran map[[2]string]string, want [][]string) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "%s (caller down, upstream across) in %v:\n%-12s", title, took.Round(time.Millisecond), "")
	for _, rev := range matrixRevisions {
		fmt.Fprintf(&b, " %-12s", rev)
	}
	for _, callerRev := range matrixRevisions {
		fmt.Fprintf(&b, "\n%-12s", callerRev)
		for _, upRev := range matrixRevisions {
			fmt.Fprintf(&b, " %-12s", ran[[2]string{callerRev, upRev}])
		}
	}
	t.Log(b.String())
	for i, callerRev := range matrixRevisions {
		for j, upRev := range matrixRevisions {
			if got := ran[[2]string{callerRev, upRev}]; got != want[i][j] {
				t.Errorf("caller %s, upstream %s checked %q, want %q", callerRev, upRev, got, want[i][j])
			}
		}
	}
}

// atLeast reports whether revision a is rev or newer (revisions are dates).
func atLeast(a, rev string) bool { return a >= rev }

// matrixCell runs one cell's checks, calling done with each check's letter
// once it passed.
func matrixCell(t *testing.T, s *session, callerRev string, up *matrixUpstream, done func(string)) {
	ctx := ctx10(t)
	name := up.name

	mustf(t, s.c.ProtocolVersion() == callerRev, "the caller negotiated %q, want %q", s.c.ProtocolVersion(), callerRev)
	got, isErr := call(t, s.c, "revision_"+name, nil)
	mustf(t, !isErr && got == up.rev, "the upstream speaks %q on the call, want %q", got, up.rev)
	done("i")

	tools := toolNames(t, s.c)
	for _, tool := range []string{"revision_", "struct_", "hold_", "ask_", "steps_"} {
		mustf(t, contains(tools, tool+name), "tools/list lacks %s%s: %v", tool, name, tools)
	}
	done("l")

	req := mcp.CallToolRequest{}
	req.Params.Name = "struct_" + name
	res, err := s.c.CallTool(ctx, req)
	mustf(t, err == nil && !res.IsError && resultText(res) == "structured of "+name, "tools/call struct_%s: %v %+v", name, err, res)
	done("c")
	if atLeast(callerRev, rev20250618) && atLeast(up.rev, rev20250618) {
		want := map[string]any{"server": name, "n": float64(7)}
		mustf(t, reflect.DeepEqual(res.StructuredContent, want), "structuredContent %#v, want %#v", res.StructuredContent, want)
		done("s")
	}

	rr := mcp.ReadResourceRequest{}
	rr.Params.URI = "docs://" + name + "/readme"
	read, err := s.c.ReadResource(ctx, rr)
	mustf(t, err == nil && len(read.Contents) == 1, "resources/read: %v", err)
	text, _ := read.Contents[0].(mcp.TextResourceContents)
	mustf(t, text.Text == "readme of "+name && text.URI == rr.Params.URI, "resources/read = %+v", read.Contents[0])
	done("r")

	gp := mcp.GetPromptRequest{}
	gp.Params.Name = "greet_" + name
	gp.Params.Arguments = map[string]string{"who": "eve"}
	prompt, err := s.c.GetPrompt(ctx, gp)
	mustf(t, err == nil && len(prompt.Messages) == 1, "prompts/get: %v", err)
	ptext, _ := prompt.Messages[0].Content.(mcp.TextContent)
	mustf(t, ptext.Text == "Hello eve from "+name, "prompts/get text %q", ptext.Text)
	done("p")

	logsFrom := func() (n int, debug bool) {
		for _, note := range s.notifications(string(mcp.MethodNotificationMessage)) {
			if note.Params.AdditionalFields["logger"] == name {
				n++
				debug = debug || note.Params.AdditionalFields["level"] == string(mcp.LoggingLevelDebug)
			}
		}
		return n, debug
	}
	before, _ := logsFrom()
	token := "p-" + callerRev + "-" + name
	preq := mcp.CallToolRequest{}
	preq.Params.Name = "steps_" + name
	preq.Params.Meta = &mcp.Meta{ProgressToken: token}
	res, err = s.c.CallTool(ctx, preq)
	mustf(t, err == nil && !res.IsError && resultText(res) == "stepped", "steps call: %v %+v", err, res)
	waitFor(t, "3 progress notifications with the caller's token", func() bool {
		n := 0
		for _, note := range s.notifications(string(mcp.MethodNotificationProgress)) {
			if note.Params.AdditionalFields["progressToken"] == token {
				n++
			}
		}
		return n == 3
	})
	done("g")
	waitFor(t, "the call's 2 log messages at info and above", func() bool {
		n, _ := logsFrom()
		return n == before+2
	})
	_, debug := logsFrom()
	mustf(t, !debug, "a debug message passed the caller's info level")
	done("o")

	if up.rev != rev20241105 {
		sampled := s.sampled.Load()
		areq := mcp.CallToolRequest{}
		areq.Params.Name = "ask_" + name
		ares, err := s.c.CallTool(ctx, areq)
		bridged := callerRev != rev20241105
		if bridged {
			mustf(t, err == nil && !ares.IsError && resultText(ares) == "the model said: answer to question from "+name, "ask_%s = %+v, %v", name, ares, err)
			mustf(t, s.sampled.Load() == sampled+1, "the caller answered %d sampling requests, want 1", s.sampled.Load()-sampled)
			done("m")
		} else {
			why := fmt.Sprint(err)
			if err == nil {
				why = resultText(ares)
			}
			mustf(t, (err != nil || ares.IsError) && strings.Contains(why, "pass sampling/createMessage"), "ask_%s without a way to sample = %q", name, why)
			done("M")
		}
		if bridged && atLeast(callerRev, rev20250618) && atLeast(up.rev, rev20250618) {
			text, isErr := call(t, s.c, "confirm_"+name, nil)
			mustf(t, !isErr && text == `accept {"color":"red"}`, "confirm_%s = %q", name, text)
			done("e")
		}
	}

	id := callerRev + "-" + name
	held := up.hold(id)
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	var herr error
	var hres *transport.JSONRPCResponse
	if callerRev == rev20241105 {
		// mcp-go's HTTP+SSE client leaves cancellation to HTTP and sends no
		// notifications/cancelled, but on this transport the POST was
		// answered at once: a 2024-11-05 client cancels with the
		// notification, so the test sends the request and it itself.
		tr := s.c.GetTransport()
		reqID := mcp.NewRequestId("hold-" + id)
		wg.Go(func() {
			hres, herr = tr.SendRequest(hctx, transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: reqID, Method: string(mcp.MethodToolsCall),
				Params: map[string]any{"name": "hold_" + name, "arguments": map[string]any{"id": id}}})
		})
		waitRecv(t, held.started, "the held call at the upstream")
		mustf(t, tr.SendNotification(ctx, mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{
			Method: string(mcp.MethodNotificationCancelled),
			Params: mcp.NotificationParams{AdditionalFields: map[string]any{"requestId": reqID, "reason": "the test"}},
		}}) == nil, "send notifications/cancelled")
	} else {
		wg.Go(func() {
			hreq := mcp.CallToolRequest{}
			hreq.Params.Name = "hold_" + name
			hreq.Params.Arguments = map[string]any{"id": id}
			_, herr = s.c.CallTool(hctx, hreq)
		})
		waitRecv(t, held.started, "the held call at the upstream")
		cancel()
	}
	// The hub's own timeout (matrixUpstreamTimeout) is far off: only the
	// caller's cancellation ends the call before it.
	waitRecv(t, held.canceled, "the upstream seeing the cancellation")
	cancel()
	wg.Wait()
	// mcp-go's /sse face may answer a cancelled request (with an error);
	// what must not come back is the tool's own result.
	mustf(t, herr != nil || hres.Error != nil || !strings.Contains(string(hres.Result), "never canceled"), "the held call returned %+v", hres)
	done("x")
}

// matrixUpstreamTimeout is the hub's per-call timeout in the matrix, longer
// than any wait of the test, so that a held call's end at the upstream is
// the caller's cancellation and never the hub's timeout.
const matrixUpstreamTimeout = 60 * time.Second

// waitRecv waits for ch to deliver or be closed, failing t after 10 s.
func waitRecv(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}
