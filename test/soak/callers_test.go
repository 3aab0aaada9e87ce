package soak

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/mcpws"
)

// The callers and the faces they come in by. Every caller kind uses every
// face.

// Caller kinds.
const (
	callerBot    = "bot"       // token, supervised, content filters, its writes wait for a person
	callerOps    = "ops"       // admin token, full, a rate limit; also the approver
	callerAnon   = "anonymous" // no credentials, restricted
	callerBudget = "budget"    // token, full, maxIterations per agent run
	callerAgent  = "agent"     // a pod's ServiceAccount token, its Agent supervised with the pii filter
)

var callerKinds = []string{callerBot, callerOps, callerAnon, callerBudget, callerAgent}

// Faces. The legacy SSE face binds a session to the replica that holds its
// stream, so its callers talk to one replica; the others go through the
// balancer.
const (
	faceSession   = "mcp-2025-11-25" // Streamable HTTP, a session
	faceExecutor  = "mcp-2025-03-26" // Streamable HTTP, Purko's executor's revision
	faceStateless = "mcp-2026-07-28" // Streamable HTTP, stateless
	faceSSE       = "sse"            // /sse + /messages, 2024-11-05
	faceWS        = "ws"             // /ws
	faceREST      = "rest"           // POST /api/mcp/tools/{name}/run
)

var faces = []string{faceSession, faceExecutor, faceStateless, faceSSE, faceWS, faceREST}

// auditFace is the "face" an audit line names for a call on each face.
// (only the REST face is named: the MCP faces' lines name none).
var auditFace = map[string]string{faceREST: "rest"}

// token is a caller kind's bearer token ("" for the anonymous caller).
func (f *fleet) token(kind string) string {
	switch kind {
	case callerBot:
		return botToken
	case callerOps:
		return opsToken
	case callerBudget:
		return budgetToken
	case callerAgent:
		return f.agentToken
	}
	return ""
}

// reply is how a call ended as its caller saw it.
type reply struct {
	isError bool
	text    string // the result's text, or the error's
	rpc     bool   // a JSON-RPC error (or, on REST, an error body)
	status  int    // REST: the HTTP status
	err     error  // no answer (transport)
}

// conn is one caller's connection on one face.
type conn interface {
	call(ctx context.Context, tool string, args map[string]any, traceparent string) reply
	close()
}

// httpClient is the HTTP client of every caller but the WebSocket ones:
// keep-alive connections, which the soak closes before it samples the
// replicas' goroutines.
var httpTransport = &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second}
var httpClient = &http.Client{Transport: httpTransport}

// dial opens kind's connection on face: base is the balancer's or, for
// SSE, one replica's base URL.
func dial(ctx context.Context, base, face, token string) (conn, error) {
	headers := map[string]string{}
	if token != "" {
		headers["Authorization"] = "Bearer " + token
	}
	var tr transport.Interface
	var err error
	protocol := ""
	switch face {
	case faceSession, faceExecutor, faceStateless:
		// The credentials go on every request: mcp-go's client sends
		// its closing DELETE without the headers given to it, which the
		// hub answers 404 (the session is another caller's), leaving the
		// session to its idle sweep.
		hc := &http.Client{Transport: withHeaders{headers, httpTransport}}
		tr, err = transport.NewStreamableHTTP(base+"/mcp", transport.WithHTTPHeaders(headers), transport.WithHTTPBasicClient(hc))
		protocol = map[string]string{faceSession: "2025-11-25", faceExecutor: "2025-03-26", faceStateless: mcp.LATEST_PROTOCOL_VERSION}[face]
	case faceSSE:
		tr, err = transport.NewSSE(base+"/sse", transport.WithHeaders(headers), transport.WithHTTPClient(httpClient))
		protocol = "2024-11-05"
	case faceWS:
		h := http.Header{}
		for k, v := range headers {
			h.Set(k, v)
		}
		tr = mcpws.NewClientTransport("ws"+strings.TrimPrefix(base, "http")+"/ws", h)
		protocol = "2025-11-25"
	case faceREST:
		return &restConn{base: base, token: token}, nil
	default:
		return nil, fmt.Errorf("unknown face %q", face)
	}
	if err != nil {
		return nil, err
	}
	c := client.NewClient(tr, client.WithProtocolVersion(protocol))
	if err := c.Start(context.Background()); err != nil {
		return nil, fmt.Errorf("start %s: %w", face, err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("initialize on %s: %w", face, err)
	}
	return &mcpConn{c: c}, nil
}

// mcpConn is a caller's MCP session (or a stateless 2026-07-28 client).
type mcpConn struct{ c *client.Client }

func (m *mcpConn) call(ctx context.Context, tool string, args map[string]any, traceparent string) reply {
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	req.Params.Meta = &mcp.Meta{AdditionalFields: map[string]any{"traceparent": traceparent}}
	res, err := m.c.CallTool(ctx, req)
	if err != nil {
		var te *transport.Error
		if errors.As(err, &te) || ctx.Err() != nil {
			return reply{err: err, text: err.Error()}
		}
		return reply{rpc: true, text: err.Error()}
	}
	return reply{isError: res.IsError, text: resultText(res.Content)}
}

func (m *mcpConn) close() { _ = m.c.Close() }

func resultText(content []mcp.Content) string {
	var b strings.Builder
	for _, c := range content {
		if tc, ok := c.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// withHeaders sets headers on every request.
type withHeaders struct {
	headers map[string]string
	rt      http.RoundTripper
}

func (w withHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range w.headers {
		r.Header.Set(k, v)
	}
	return w.rt.RoundTrip(r)
}

// restConn is the REST face: one POST per call.
type restConn struct{ base, token string }

func (r *restConn) call(ctx context.Context, tool string, args map[string]any, traceparent string) reply {
	body := []byte("{}")
	if args != nil {
		body, _ = json.Marshal(args)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, r.base+"/api/mcp/tools/"+tool+"/run", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", traceparent)
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return reply{err: err, text: err.Error()}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return reply{err: err, text: err.Error(), status: resp.StatusCode}
	}
	var res struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool   `json:"isError"`
		Error   string `json:"error"`
	}
	if jerr := json.Unmarshal(b, &res); jerr != nil {
		return reply{status: resp.StatusCode, rpc: true, text: fmt.Sprintf("HTTP %d: %.300s", resp.StatusCode, b)}
	}
	if res.Error != "" {
		return reply{status: resp.StatusCode, rpc: true, text: res.Error}
	}
	var text strings.Builder
	for _, c := range res.Content {
		text.WriteString(c.Text)
	}
	return reply{status: resp.StatusCode, isError: res.IsError, text: text.String()}
}

func (r *restConn) close() {}
