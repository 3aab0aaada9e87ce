package upstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
)

// A tools/call to a streamable HTTP upstream is one HTTP POST. The hub sends
// it itself instead of through mcp-go's client, which re-encodes a request
// several times on its way out and decodes the whole result on its way back:
// the caller's arguments and the upstream's result pass through as bytes.
// The session (id, negotiated revision, list_changed stream) stays with the
// mcp-go client; this path only borrows it.

// direct is what a connection needs to send tools/call itself.
type direct struct {
	url       string
	header    http.Header // static headers, auth, protocol version, session id
	modern    bool        // 2026-07-28: per-request _meta and Mcp-Method/Mcp-Name
	meta      map[string]json.RawMessage
	paramTool map[string]*mcp.Tool // tools whose arguments are mirrored into headers
}

func (c *Client) newDirect(cn *conn, tools []mcp.Tool) *direct {
	if c.spec.Transport != config.TransportStreamableHTTP {
		return nil
	}
	d := &direct{url: c.spec.URL, header: http.Header{}, modern: mcp.IsModernProtocol(cn.protocol), paramTool: paramHeaderTools(tools)}
	for k, v := range c.headers() {
		d.header.Set(k, v)
	}
	d.header.Set("Content-Type", "application/json")
	d.header.Set("Accept", "application/json, text/event-stream")
	d.header.Set(mcp.HeaderProtocolVersion, cn.protocol)
	if sid := cn.mc.GetSessionId(); sid != "" {
		d.header.Set("Mcp-Session-Id", sid)
	}
	if d.modern {
		info, _ := json.Marshal(c.opts.ClientInfo)
		d.meta = map[string]json.RawMessage{
			mcp.MetaKeyProtocolVersion:    mustJSON(cn.protocol),
			mcp.MetaKeyClientInfo:         info,
			mcp.MetaKeyClientCapabilities: json.RawMessage(`{}`),
		}
	}
	return d
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// paramHeaderTools finds the tools whose arguments a 2026-07-28 client must
// mirror into Mcp-Param-* headers. It runs when tools are listed, so the call
// path only looks the name up.
func paramHeaderTools(tools []mcp.Tool) map[string]*mcp.Tool {
	var m map[string]*mcp.Tool
	for i := range tools {
		if len(mcp.ExtractParamHeaderBindings(&tools[i])) > 0 {
			if m == nil {
				m = map[string]*mcp.Tool{}
			}
			t := tools[i]
			m[t.Name] = &t
		}
	}
	return m
}

// params builds the upstream's tools/call params from the decided call
// alone: its name, its arguments as bytes, the caller's _meta minus the
// downstream hop's protocol members (with the hub's own on a 2026-07-28
// connection), and a 2026-07-28 caller's answers to input requests. No
// member of the caller's params that the hub did not read is sent.
func (d *direct) params(call jsonrpc.ToolCall) json.RawMessage {
	meta := forwardedMeta(call.Meta)
	if d.modern {
		if meta == nil {
			meta = make(map[string]json.RawMessage, len(d.meta))
		}
		for k, v := range d.meta {
			meta[k] = v
		}
		// A 2026-07-28 caller's capabilities tell a 2026-07-28 upstream
		// whether it may answer with input requests (sampling, elicitation,
		// roots), which then pass through to the caller as they are.
		if caps, ok := call.Meta[mcp.MetaKeyClientCapabilities]; ok {
			meta[mcp.MetaKeyClientCapabilities] = caps
		}
	}
	out := make([]byte, 0, len(call.Arguments)+len(call.Name)+256)
	out = append(out, `{"name":`...)
	out = append(out, mustJSON(call.Name)...)
	if call.Arguments != nil {
		out = append(out, `,"arguments":`...)
		out = append(out, call.Arguments...)
	}
	if len(meta) > 0 {
		out = append(out, `,"_meta":`...)
		out = append(out, mustJSON(meta)...)
	}
	if call.InputResponses != nil {
		out = append(out, `,"inputResponses":`...)
		out = append(out, call.InputResponses...)
	}
	if call.RequestState != nil {
		out = append(out, `,"requestState":`...)
		out = append(out, call.RequestState...)
	}
	return append(out, '}')
}

// post sends one tools/call and returns the raw result. Transport failures
// come back wrapped in transport.Error, so breaker and health checks treat
// them like mcp-go's own.
func (c *Client) post(ctx context.Context, cn *conn, call jsonrpc.ToolCall) (json.RawMessage, error) {
	d := cn.direct.Load()
	p := d.params(call)
	var paramHeaders map[string]string
	if tool := d.paramTool[call.Name]; d.modern && tool != nil {
		paramHeaders = mcp.GenerateParamHeaders(tool, p)
	}
	return c.request(ctx, cn, mcp.MethodToolsCall, p, paramHeaders)
}

// request sends one JSON-RPC request with params (final, _meta included)
// on the connection's session and returns the raw result.
func (c *Client) request(ctx context.Context, cn *conn, method mcp.MCPMethod, p json.RawMessage, extra map[string]string) (json.RawMessage, error) {
	d := cn.direct.Load()
	id := "hub-" + strconv.FormatUint(cn.nextID.Add(1), 10)
	body := make([]byte, 0, len(p)+64)
	body = append(body, `{"jsonrpc":"2.0","id":"`...)
	body = append(body, id...)
	body = append(body, `","method":`...)
	body = append(body, mustJSON(method)...)
	body = append(body, `,"params":`...)
	body = append(body, p...)
	body = append(body, '}')

	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.url, bytes.NewReader(body))
	if err != nil {
		return nil, transport.NewError(err)
	}
	req.Header = d.header.Clone()
	if d.modern {
		for k, v := range mcp.StandardHeaders(cn.protocol, method, p) {
			req.Header.Set(k, v)
		}
		for k, v := range extra {
			req.Header.Set(k, v)
		}
	}
	resp, err := c.opts.HTTPClient.Do(req)
	if err != nil {
		return nil, transport.NewError(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, transport.NewError(fmt.Errorf("HTTP %s: %s", resp.Status, c.readExcerpt(resp.Body, 256)))
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if ct == "text/event-stream" {
		return readSSEResponse(resp.Body, id, c.opts.maxResponseBytes(), func(reqID json.RawMessage, method string) {
			c.refuseRequest(ctx, cn, reqID, method)
		})
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, readError(err)
	}
	return parseResponse(raw, id)
}

// Tool schemas pass through as the upstream wrote them. mcp-go's Tool type
// keeps only some keywords of a schema (type, properties, required, $defs,
// additionalProperties), so a tool relisted from it loses $schema, oneOf,
// descriptions and the rest. On a streamable HTTP connection the hub lists
// the tools once more over its own POST and keeps each schema's bytes.

// toolSchemas are one tool's schemas as the upstream sent them.
type toolSchemas struct {
	Name         string          `json:"name"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema"`
}

// rawSchemas lists the upstream's tools over the direct path and returns
// their schemas by tool name, within the bounds of a listing (lists.go).
func (c *Client) rawSchemas(ctx context.Context, cn *conn) (map[string]toolSchemas, error) {
	d := cn.direct.Load()
	if d == nil {
		return nil, nil
	}
	l := c.newListing()
	all, err := collect(ctx, l, string(mcp.MethodToolsList), l.bounds.tools, "tools", "upstream.maxTools",
		func(ctx context.Context, cursor mcp.Cursor) (page[toolSchemas], error) {
			params := map[string]any{}
			if cursor != "" {
				params["cursor"] = cursor
			}
			if d.modern {
				params["_meta"] = d.meta
			}
			p, _ := json.Marshal(params)
			raw, err := c.request(ctx, cn, mcp.MethodToolsList, p, nil)
			if err != nil {
				return page[toolSchemas]{}, err
			}
			var res struct {
				Tools      []toolSchemas `json:"tools"`
				NextCursor mcp.Cursor    `json:"nextCursor"`
			}
			if err := json.Unmarshal(raw, &res); err != nil {
				return page[toolSchemas]{}, fmt.Errorf("tools/list: %w", err)
			}
			return page[toolSchemas]{res.Tools, res.NextCursor, func() int64 { return int64(len(raw)) }}, nil
		})
	if err != nil {
		return nil, err
	}
	out := make(map[string]toolSchemas, len(all))
	for _, t := range all {
		out[t.Name] = t
	}
	return out, nil
}

// withRawSchemas returns tools with the schemas the upstream sent in place
// of mcp-go's reading of them.
func withRawSchemas(tools []mcp.Tool, schemas map[string]toolSchemas) []mcp.Tool {
	if len(schemas) == 0 {
		return tools
	}
	out := make([]mcp.Tool, len(tools))
	for i, t := range tools {
		if s, ok := schemas[t.Name]; ok {
			if len(s.InputSchema) > 0 && string(s.InputSchema) != "null" {
				t.RawInputSchema, t.InputSchema = s.InputSchema, mcp.ToolInputSchema{}
			}
			if len(s.OutputSchema) > 0 && string(s.OutputSchema) != "null" {
				t.RawOutputSchema, t.OutputSchema = s.OutputSchema, mcp.ToolOutputSchema{}
			}
		}
		out[i] = t
	}
	return out
}

// listedTools is tools with their schemas as the upstream wrote them, when
// the connection can ask; otherwise tools as mcp-go read them.
func (c *Client) listedTools(ctx context.Context, cn *conn, tools []mcp.Tool) []mcp.Tool {
	schemas, err := c.rawSchemas(ctx, cn)
	if err != nil {
		c.log.Debug().Err(c.redact(err)).Msg("list raw tool schemas; keeping mcp-go's reading")
		return tools
	}
	return withRawSchemas(tools, schemas)
}

// refuseRequest answers a request the upstream sent on the stream of a call
// that came without a way back to its caller (the fast path serves callers
// that cannot take server requests): an error, so the upstream's tool fails
// at once with the reason instead of waiting for an answer that never comes.
func (c *Client) refuseRequest(ctx context.Context, cn *conn, reqID json.RawMessage, method string) {
	d := cn.direct.Load()
	msg, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      reqID,
		"error": map[string]any{
			"code":    mcp.METHOD_NOT_FOUND,
			"message": fmt.Sprintf("mcp-hub: this caller cannot receive %s (it did not declare the capability, or its protocol revision has no server requests)", method),
		},
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.url, bytes.NewReader(msg))
	if err != nil {
		return
	}
	req.Header = d.header.Clone()
	resp, err := c.opts.HTTPClient.Do(req)
	if err != nil {
		c.log.Debug().Err(c.redact(err)).Str("method", method).Msg("refusing an upstream request")
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// readError is the error of a failed read of an answer: an answer over
// the limit is the tool's doing and says so (the upstream is fine, and its
// breaker must not count it); anything else is a transport failure.
func readError(err error) error {
	var tooLarge *TooLargeError
	if errors.As(err, &tooLarge) {
		return tooLarge
	}
	return transport.NewError(err)
}

// parseResponse extracts the result of the response with our id.
func parseResponse(raw []byte, id string) (json.RawMessage, error) {
	m, err := jsonrpc.Parse(raw)
	if err != nil {
		return nil, transport.NewError(fmt.Errorf("unreadable response: %w", err))
	}
	if m.Kind() != jsonrpc.KindResponse || !sameID(m.ID, id) {
		return nil, transport.NewError(fmt.Errorf("response for id %s, want %q", m.ID, id))
	}
	if m.Error != nil {
		var rpcErr RPCError
		if err := json.Unmarshal(m.Error, &rpcErr); err != nil {
			return nil, transport.NewError(fmt.Errorf("unreadable error response: %w", err))
		}
		return nil, &rpcErr
	}
	if len(m.Result) == 0 {
		return nil, transport.NewError(fmt.Errorf("response without result"))
	}
	return m.Result, nil
}

func sameID(raw json.RawMessage, id string) bool {
	return len(raw) == len(id)+2 && raw[0] == '"' && string(raw[1:len(raw)-1]) == id
}

// readSSEResponse reads an SSE reply until the event that answers id.
// Notifications before it (log messages) are not the caller's business on
// this path: it serves only requests without a progress token from callers
// that take no server requests. A server request is passed to refuse.
func readSSEResponse(r io.Reader, id string, limit int64, refuse func(id json.RawMessage, method string)) (json.RawMessage, error) {
	sc := bufio.NewScanner(r)
	// The body's own limit (limitAnswers) speaks first.
	sc.Buffer(make([]byte, 64<<10), int(limit)+2)
	var data []byte
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0:
			if len(data) > 0 {
				if m, err := jsonrpc.Parse(data); err == nil {
					switch {
					case m.Kind() == jsonrpc.KindResponse && sameID(m.ID, id):
						return parseResponse(data, id)
					case m.Kind() == jsonrpc.KindRequest:
						refuse(m.ID, m.Method)
					}
				}
				data = data[:0]
			}
		case bytes.HasPrefix(line, []byte("data:")):
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))...)
		}
	}
	if len(data) > 0 {
		return parseResponse(data, id)
	}
	if err := sc.Err(); err != nil {
		return nil, readError(err)
	}
	return nil, transport.NewError(fmt.Errorf("stream ended without a response"))
}
