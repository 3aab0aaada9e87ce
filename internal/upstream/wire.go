package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/upstream/carried"
	"github.com/purko-io/mcp-hub/internal/upstream/listbound"
	"github.com/purko-io/mcp-hub/internal/upstream/relay"
	"github.com/purko-io/mcp-hub/internal/upstream/streamhttp"
)

// Every request the hub builds itself (tools/call for every face, and
// tools/list) leaves through one wire, and every wire answers alike: the
// result's bytes as the upstream wrote them; the upstream's JSON-RPC error
// as *RPCError, code, message and data kept; anything else (no answer, a
// broken stream, an unreadable reply) as a transport.Error, or a
// *httpbound.TooLargeError (package streamhttp reads it). So a caller gets the same outcome for the same upstream
// behaviour whatever face it came by and whatever the upstream speaks.
//
// There are two wires. On a streamable HTTP upstream, a call whose caller
// takes nothing back is one HTTP POST the hub writes itself: mcp-go's
// client re-encodes a request several times on its way out and decodes the
// whole result on its way back, this passes arguments and result through
// as bytes. Everything else goes through the session's own mcp-go
// transport (transport.Interface), which delivers what the upstream sends
// during the call (progress, log messages, server requests) to the
// session's handlers. mcp-go's client is not in the way: it keeps only the
// message of a JSON-RPC error. The session (id, negotiated revision,
// list_changed stream) stays with the mcp-go client; the wires borrow it.

// A wire sends one JSON-RPC request on a connection's session. params are
// final (the hub's own _meta included); header holds the HTTP headers of a
// 2026-07-28 request, which transports without headers ignore.
type wire interface {
	Request(ctx context.Context, method mcp.MCPMethod, params json.RawMessage, header map[string]string) (json.RawMessage, error)
}

// out is what a connection needs to send the requests the hub builds. It
// is replaced when the tool list changes (paramTool).
type out struct {
	modern    bool // 2026-07-28: per-request _meta and Mcp-Method/Mcp-Name
	protocol  string
	meta      map[string]json.RawMessage
	carried   *carried.Set         // what of a caller's extensions may pass
	paramTool map[string]*mcp.Tool // tools whose arguments are mirrored into headers
	post      *streamhttp.Post     // streamable HTTP's own POST; nil on other transports
	session   sessionWire
}

// wire is the way out of a request: the session's transport when the
// caller takes what the upstream sends during the call (relayed), else the
// shortest there is.
func (o *out) wire(relayed bool) wire {
	if o.post != nil && !relayed {
		return o.post
	}
	return o.session
}

func (cn *conn) newOut(tools []mcp.Tool) *out {
	c := cn.c
	o := &out{modern: mcp.IsModernProtocol(cn.protocol), protocol: cn.protocol, paramTool: paramHeaderTools(tools), carried: c.opts.Carried}
	// Only Streamable HTTP ends a request with its stream: an HTTP+SSE
	// POST is answered 202 at once and the result comes on the shared
	// stream, so, as on stdio and WebSocket, notifications/cancelled is the
	// only way to cancel there.
	o.session = sessionWire{tr: cn.mc.GetTransport(), ids: &cn.nextID, http: c.spec.Transport == config.TransportStreamableHTTP}
	if o.modern {
		o.meta = modernMeta(c.opts.ClientInfo, cn.protocol, c.opts.Carried)
	}
	if c.spec.Transport != config.TransportStreamableHTTP {
		return o
	}
	target, err := url.Parse(c.spec.URL)
	if err != nil {
		return o // the transport, which parsed it too, has refused it
	}
	p := &streamhttp.Post{Client: c.opts.HTTPClient, URL: target, Header: http.Header{}, IDs: &cn.nextID,
		MaxResponseBytes: c.opts.maxResponseBytes(), Excerpt: c.cred.ReadExcerpt,
		RefuseFailed: func(err error, method string) {
			c.log.Debug().Err(c.cred.Redact(err)).Str("method", method).Msg("refusing an upstream request")
		}}
	for k, v := range c.cred.Headers() {
		p.Header.Set(k, v)
	}
	p.Header.Set("Content-Type", "application/json")
	p.Header.Set("Accept", "application/json, text/event-stream")
	p.Header.Set(mcp.HeaderProtocolVersion, cn.protocol)
	if sid := cn.mc.GetSessionId(); sid != "" {
		p.Header.Set("Mcp-Session-Id", sid)
	}
	o.post = p
	return o
}

// modernMeta is the _meta every 2026-07-28 request of the hub carries.
// It declares the extensions carried for callers and no other capability.
func modernMeta(client mcp.Implementation, protocol string, ext *carried.Set) map[string]json.RawMessage {
	info, _ := json.Marshal(client)
	return map[string]json.RawMessage{
		mcp.MetaKeyProtocolVersion:    mustJSON(protocol),
		mcp.MetaKeyClientInfo:         info,
		mcp.MetaKeyClientCapabilities: ext.Capabilities(),
	}
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

// hubCapabilities are what the hub declares on a 2026-07-28 request whose
// caller's relay takes the upstream's input requests: the hub fulfils them
// through the relay (package relay).
var hubCapabilities = json.RawMessage(`{"elicitation":{"form":{},"url":{}},"roots":{"listChanged":true},"sampling":{}}`)

// params builds the upstream's tools/call params from the decided call
// alone: its name, its arguments as bytes, the caller's _meta minus the
// downstream hop's protocol members (with the hub's own on a 2026-07-28
// connection, own's last), and a 2026-07-28 caller's answers to input
// requests, and a task-augmented call's task (the upstream answers with
// the task it made, which the hub hands back as a handle). No member of
// the caller's params that the hub did not read is sent.
func (o *out) params(call jsonrpc.ToolCall, own map[string]json.RawMessage) json.RawMessage {
	meta := forwardedMeta(call.Meta)
	if o.modern {
		if meta == nil {
			meta = make(map[string]json.RawMessage, len(o.meta)+len(own))
		}
		for k, v := range o.meta {
			meta[k] = v
		}
		// A 2026-07-28 caller's capabilities tell a 2026-07-28 upstream
		// whether it may answer with input requests (sampling, elicitation,
		// roots), which then pass through to the caller as they are, and
		// which of the carried extensions it uses (no other passes).
		if caps, ok := call.Meta[mcp.MetaKeyClientCapabilities]; ok {
			meta[mcp.MetaKeyClientCapabilities] = o.carried.Filter(caps)
		}
		for k, v := range own {
			meta[k] = v
		}
	}
	b := make([]byte, 0, len(call.Arguments)+len(call.Name)+256)
	b = append(b, `{"name":`...)
	b, _ = jsontext.AppendQuote(b, call.Name)
	if call.Arguments != nil {
		b = append(b, `,"arguments":`...)
		b = append(b, call.Arguments...)
	}
	if len(meta) > 0 {
		b = append(b, `,"_meta":`...)
		b = append(b, mustJSON(meta)...)
	}
	if call.Task != nil {
		b = append(b, `,"task":`...)
		b = append(b, call.Task...)
	}
	if call.InputResponses != nil {
		b = append(b, `,"inputResponses":`...)
		b = append(b, call.InputResponses...)
	}
	if call.RequestState != nil {
		b = append(b, `,"requestState":`...)
		b = append(b, call.RequestState...)
	}
	return append(b, '}')
}

// taskRequest is the params and headers of a request of a caller's task
// (tasks/*, params naming its taskId): on 2026-07-28, with the revision's
// _meta declaring the Tasks extension, and Mcp-Name naming the task.
func (o *out) taskRequest(method string, params json.RawMessage) (json.RawMessage, map[string]string) {
	var p map[string]json.RawMessage
	if !o.modern || json.Unmarshal(params, &p) != nil || p == nil {
		return params, nil
	}
	meta := maps.Clone(o.meta)
	meta[mcp.MetaKeyClientCapabilities] = carried.Declare(meta[mcp.MetaKeyClientCapabilities], config.ExtensionTasks)
	p["_meta"] = mustJSON(meta)
	params = mustJSON(p)
	h := o.headers(mcp.MCPMethod(method), "", params)
	var id string
	if json.Unmarshal(p["taskId"], &id) == nil && id != "" {
		if h == nil {
			h = map[string]string{}
		}
		h[mcp.HeaderName] = id
	}
	return params, h
}

// headers are the HTTP headers of a 2026-07-28 request with params: the
// standard ones, and a tools/call's Mcp-Param-* headers. nil on older
// revisions.
func (o *out) headers(method mcp.MCPMethod, tool string, params json.RawMessage) map[string]string {
	if !o.modern {
		return nil
	}
	h := mcp.StandardHeaders(o.protocol, method, params)
	if t := o.paramTool[tool]; t != nil && method == mcp.MethodToolsCall {
		if h == nil {
			h = map[string]string{}
		}
		for k, v := range mcp.GenerateParamHeaders(t, params) {
			h[k] = v
		}
	}
	return h
}

// maxInputRounds bounds how often one relayed call is sent again with the
// caller's answers to an upstream's input requests (mcp-go's default).
const maxInputRounds = 10

// send is the one way a tools/call leaves the hub, whatever the face it
// came by. With a Relay in ctx the caller's progress token is swapped for
// a hub-wide one, and a 2026-07-28 upstream's input requests are put to
// the caller through the relay and the call sent again with the answers;
// without one, the result passes through as bytes, input requests and all.
func (cn *conn) send(ctx context.Context, call jsonrpc.ToolCall) (json.RawMessage, error) {
	o := cn.out.Load()
	if relay.From(ctx) != nil || call.TakesInput() {
		if side := cn.side.out(ctx, cn, o); side != o {
			res, err := cn.sendOver(ctx, side, call)
			if !refusedRevision(err) {
				return res, err
			}
			// Refused before it ran: the server listed 2026-07-28 but
			// takes it for nothing (go-sdk v1.8.0 does). The session
			// serves it, and this server's relayed calls from now on.
			cn.side.refused(cn, err)
		}
	}
	return cn.sendOver(ctx, o, call)
}

// sendOver sends call over o (send).
func (cn *conn) sendOver(ctx context.Context, o *out, call jsonrpc.ToolCall) (json.RawMessage, error) {
	c := cn.c
	r := relay.From(ctx)
	var own map[string]json.RawMessage
	if r != nil {
		if tok, ok := call.Meta[jsonrpc.MetaProgressToken]; ok {
			var token any
			if json.Unmarshal(tok, &token) == nil && token != nil {
				hubToken, done := c.relays.MapProgress(c.spec.Name, r, token)
				defer done()
				call.Meta = maps.Clone(call.Meta)
				call.Meta[jsonrpc.MetaProgressToken] = mustJSON(hubToken)
			}
		}
		if o.modern {
			// The hub takes the upstream's input requests for the relay,
			// and log messages at the level asked of the server. A call
			// without a relay declares the caller's own capabilities
			// (params) and asks for no log messages: none would reach
			// the caller. A caller that takes input requests answers them
			// itself (TakesInput), also when the relay carries its
			// progress or log messages: its own capabilities stand, and
			// the input requests pass through to it as they are.
			own = map[string]json.RawMessage{}
			if !call.TakesInput() {
				own[mcp.MetaKeyClientCapabilities] = c.opts.Carried.With(hubCapabilities)
			}
			if lvl := cn.level.Load(); lvl != nil {
				own[mcp.MetaKeyLogLevel] = mustJSON(*lvl)
			}
		}
	}
	if call.Task != nil && o.modern {
		// 2026-07-28 has no task member: a caller's task is the Tasks
		// extension's, declared on the request, and the server decides.
		if own == nil {
			own = map[string]json.RawMessage{}
		}
		caps, ok := own[mcp.MetaKeyClientCapabilities]
		if !ok {
			caps = o.meta[mcp.MetaKeyClientCapabilities]
			if c, ok := call.Meta[mcp.MetaKeyClientCapabilities]; ok {
				caps = o.carried.Filter(c)
			}
		}
		own[mcp.MetaKeyClientCapabilities] = carried.Declare(caps, config.ExtensionTasks)
		call.Task = nil
	}
	w := o.wire(r != nil)
	// The caller's own answers, not the hub's of an earlier round.
	rounds, takes := relay.Rounds{Handlers: relay.Handlers{Server: c.spec.Name, Tracker: &c.relays}}, call.TakesInput()
	defer rounds.Done(ctx)
	for round := 1; ; round++ {
		p := o.params(call, own)
		res, err := w.Request(ctx, mcp.MethodToolsCall, p, o.headers(mcp.MethodToolsCall, call.Name, p))
		if err != nil || r == nil || !o.modern || takes {
			return res, err
		}
		var more struct {
			ResultType    mcp.ResultType    `json:"resultType"`
			InputRequests mcp.InputRequests `json:"inputRequests"`
			RequestState  string            `json:"requestState"`
		}
		if json.Unmarshal(res, &more) != nil || more.ResultType != mcp.ResultTypeInputRequired {
			return res, nil
		}
		if round >= maxInputRounds {
			return nil, fmt.Errorf("%s asked for input %d times in one call", c.spec.Name, round)
		}
		answers, err := rounds.Fulfil(ctx, more.InputRequests)
		if err != nil {
			return nil, err
		}
		call.InputResponses, call.RequestState = mustJSON(answers), nil
		if more.RequestState != "" {
			call.RequestState = mustJSON(more.RequestState)
		}
	}
}

// sessionWire sends a request through the session's mcp-go transport.
type sessionWire struct {
	tr   transport.Interface
	ids  *atomic.Uint64
	http bool // the transport is HTTP: ending a request's stream cancels it
}

// cancelNotificationTimeout bounds the notifications/cancelled sent for a
// request whose caller went away.
const cancelNotificationTimeout = 5 * time.Second

func (w sessionWire) Request(ctx context.Context, method mcp.MCPMethod, params json.RawMessage, header map[string]string) (json.RawMessage, error) {
	id := mcp.NewRequestId("hub-" + strconv.FormatUint(w.ids.Add(1), 10))
	req := transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: id, Method: string(method), Params: params}
	if len(header) > 0 {
		req.Header = make(http.Header, len(header))
		for k, v := range header {
			req.Header.Set(k, v)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, transport.NewError(err)
	}
	resp, err := w.tr.SendRequest(ctx, req)
	if err != nil {
		if ctx.Err() != nil && !w.http {
			w.cancel(ctx, id)
		}
		return nil, streamhttp.ReadError(err)
	}
	if resp.Error != nil {
		e := &RPCError{Code: resp.Error.Code, Message: resp.Error.Message}
		if resp.Error.Data != nil {
			e.Data = mustJSON(resp.Error.Data)
		}
		return nil, e
	}
	if len(resp.Result) == 0 {
		return nil, transport.NewError(fmt.Errorf("response without result"))
	}
	return resp.Result, nil
}

// cancel tells the upstream to stop working on a request whose caller went
// away, on a transport where that is the only way (stdio, WebSocket, SSE's
// shared stream). Best effort, off the caller's path.
func (w sessionWire) cancel(ctx context.Context, id mcp.RequestId) {
	n := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{
		Method: string(mcp.MethodNotificationCancelled),
		Params: mcp.NotificationParams{AdditionalFields: map[string]any{"requestId": id, "reason": ctx.Err().Error()}},
	}}
	ctx = context.WithoutCancel(ctx)
	go func() {
		ctx, cancel := context.WithTimeout(ctx, cancelNotificationTimeout)
		defer cancel()
		_ = w.tr.SendNotification(ctx, n)
	}()
}

// Tool schemas pass through as the upstream wrote them. mcp-go's Tool type
// keeps only some keywords of a schema (type, properties, required, $defs,
// additionalProperties), so a tool relisted from it would lose $schema,
// oneOf, descriptions and the rest. The hub lists tools over its own wire,
// once per listing, and on a streamable HTTP connection keeps each
// schema's bytes beside mcp-go's reading. Other transports keep mcp-go's
// reading, as they always have: a tool's pin (package pinning) is a digest
// of its schema, and pins taken of that reading must still match.

// toolSchemas are one tool's schemas as the upstream sent them.
type toolSchemas struct {
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema"`
}

// listTools lists the upstream's tools within the bounds of l (package
// listbound).
// A JSON-RPC error is what mcp-go's client would have made of it, so the
// handshake's fallbacks (connectOnce) read it as before.
func (cn *conn) listTools(ctx context.Context, l *listbound.Listing) ([]mcp.Tool, error) {
	c := cn.c
	o := cn.out.Load()
	w := o.wire(false)
	tools, err := listbound.Collect(ctx, l, string(mcp.MethodToolsList),
		func(ctx context.Context, cursor mcp.Cursor) (listbound.Page[mcp.Tool], error) {
			params := map[string]any{}
			if cursor != "" {
				params["cursor"] = cursor
			}
			if o.modern {
				params["_meta"] = o.meta
			}
			p, _ := json.Marshal(params)
			raw, err := w.Request(ctx, mcp.MethodToolsList, p, o.headers(mcp.MethodToolsList, "", p))
			var rpcErr *RPCError
			if errors.As(err, &rpcErr) {
				return listbound.Page[mcp.Tool]{}, streamhttp.MCPError(rpcErr)
			}
			if err != nil {
				return listbound.Page[mcp.Tool]{}, err
			}
			var res struct {
				Tools      []json.RawMessage `json:"tools"`
				NextCursor mcp.Cursor        `json:"nextCursor"`
			}
			if err := json.Unmarshal(raw, &res); err != nil {
				return listbound.Page[mcp.Tool]{}, fmt.Errorf("tools/list: %w", err)
			}
			tools := make([]mcp.Tool, 0, len(res.Tools))
			for _, b := range res.Tools {
				t, err := readTool(b, o.post != nil)
				if err != nil {
					return listbound.Page[mcp.Tool]{}, fmt.Errorf("tools/list: %w", err)
				}
				tools = append(tools, t)
			}
			return listbound.Page[mcp.Tool]{Items: tools, Next: res.NextCursor, Size: func() int64 { return int64(len(raw)) }}, nil
		})
	if err != nil {
		return nil, err
	}
	if o.modern && headerTransport(c.spec.Transport) {
		tools = cn.withoutInvalidHeaderTools(tools)
	}
	return tools, nil
}

// readTool decodes one listed tool, with raw its schemas as the upstream
// wrote them.
func readTool(b json.RawMessage, raw bool) (mcp.Tool, error) {
	var t mcp.Tool
	if err := json.Unmarshal(b, &t); err != nil || !raw {
		return t, err
	}
	var s toolSchemas
	if err := json.Unmarshal(b, &s); err != nil {
		return t, err
	}
	if len(s.InputSchema) > 0 && string(s.InputSchema) != "null" {
		t.RawInputSchema, t.InputSchema = s.InputSchema, mcp.ToolInputSchema{}
	}
	if len(s.OutputSchema) > 0 && string(s.OutputSchema) != "null" {
		t.RawOutputSchema, t.OutputSchema = s.OutputSchema, mcp.ToolOutputSchema{}
	}
	return t, nil
}

// withoutInvalidHeaderTools drops the tools whose x-mcp-header annotations
// break SEP-2243: a 2026-07-28 client over HTTP must not offer them, so that
// one bad definition does not stop the others.
func (cn *conn) withoutInvalidHeaderTools(tools []mcp.Tool) []mcp.Tool {
	c := cn.c
	valid := tools[:0:0]
	for i := range tools {
		if err := mcp.ValidateParamHeaderAnnotations(&tools[i]); err != nil {
			c.log.Warn().Str("tool", tools[i].Name).Err(c.cred.Redact(err)).Msg("excluding a tool with invalid x-mcp-header annotations")
			continue
		}
		valid = append(valid, tools[i])
	}
	return valid
}
