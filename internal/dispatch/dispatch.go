// Package dispatch is the hub's MCP dispatcher: the one place that knows
// every method of every protocol revision the hub speaks, and who serves
// it. Every face (/mcp, /sse + /messages, /ws, stdio, the same under
// /servers/NAME) hands each JSON-RPC request to a Dispatcher.
//
// A method is served in one of two ways:
//
//   - by the hub (Handle): tools, resources, prompts, completions,
//     subscriptions. Each handler ends in the one pipeline
//     (internal/pipeline) and returns its result or its JSON-RPC error,
//     which the dispatcher encodes itself (jsonrpc.Reply): nothing of the
//     answer is left to another encoder to guess or rewrite;
//   - by the session layer (the Session func the faces give): the
//     protocol's own bookkeeping, which belongs to the transport's session
//     (initialize, ping, logging/setLevel, notifications, the 2026-07-28
//     server/discover and subscriptions/listen). The hub keeps mcp-go's
//     server for it: capability negotiation, protocol versions and the
//     sessions server-to-client messages go to.
//
// A method in neither group is answered -32601 by the session layer, as
// any JSON-RPC server answers a method it does not know.
package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/jsonrpc"
)

// Request is one request a face hands over, read once by the face's gate
// (jsonrpc.Reader.ParseRequest).
type Request struct {
	Msg *jsonrpc.Message
	// Call is the params of a tools/call as the gate read them; nil for
	// any other method.
	Call *jsonrpc.ToolCall
	// Session is the id of the MCP session the request came on, "" for
	// none (a 2026-07-28 request, a REST run).
	Session string
	// Header is the HTTP request's header on an HTTP face (a 2026-07-28
	// request mirrors its arguments in Mcp-Param-* headers); nil on
	// stdio and WebSocket.
	Header http.Header
	// Cancellable: a notifications/cancelled on Session may end it (a
	// face where the client cannot end the request by going away: a
	// connection, a reply stream). A plain HTTP answer ends with its
	// request.
	Cancellable bool
}

// Meta is the request's _meta by member (the call's, already read).
func (r *Request) Meta() map[string]json.RawMessage {
	if r.Call != nil {
		return r.Call.Meta
	}
	return r.Msg.Meta()
}

// Handler serves one method: its result, or an error (a *jsonrpc.Error is
// answered as it is, any other error as -32603 with its text). It must not
// keep req after it returns: a face may reuse it.
type Handler func(ctx context.Context, req *Request) (json.RawMessage, error)

// Session serves a request of the session layer: raw is the whole message,
// the answer is the whole reply (nil for none).
type Session func(ctx context.Context, raw []byte) []byte

// Dispatcher routes each request to its handler. Build it once (New, then
// Handle for every hub method) before the faces serve; it is read-only
// afterwards and safe for concurrent use.
type Dispatcher struct {
	methods map[string]Handler
	// traced are the methods whose handler makes its request's span
	// itself (the pipeline's); trace makes the others' (Trace).
	traced map[string]bool
	trace  Tracer
	reader jsonrpc.Reader
	// serverInfo is the hub's identity, which a 2026-07-28 result names.
	serverInfo json.RawMessage

	// running are the requests being served that a client may cancel
	// (notifications/cancelled), by session and id.
	mu      sync.Mutex
	running map[running]context.CancelFunc
}

// running names one request in flight: its session and its raw id.
type running struct{ session, id string }

// New returns a dispatcher with no hub methods yet; name and version are
// the hub's, as initialize announces them.
func New(name, version string) *Dispatcher {
	info, _ := json.Marshal(mcp.Implementation{Name: name, Version: version})
	return &Dispatcher{methods: map[string]Handler{}, traced: map[string]bool{}, running: map[running]context.CancelFunc{}, serverInfo: info}
}

// Tracer starts the span of a request the dispatcher serves; end ends it
// with the handler's error.
type Tracer func(ctx context.Context, req *Request) (_ context.Context, end func(error))

// Trace makes t start the span of every request whose handler does not
// make its own (HandleTraced). Call it before the faces serve.
func (d *Dispatcher) Trace(t Tracer) { d.trace = t }

// HandleTraced is Handle for a handler that makes its request's span
// itself (one that ends in the pipeline).
func (d *Dispatcher) HandleTraced(method string, h Handler) {
	d.Handle(method, h)
	d.traced[method] = true
}

// Handle makes the hub serve method with h. A method is handled once: a
// second handler for it is a wiring mistake, and panics at start.
func (d *Dispatcher) Handle(method string, h Handler) {
	if _, dup := d.methods[method]; dup {
		panic("dispatch: two handlers for " + method)
	}
	d.methods[method] = h
}

// Owns reports whether the hub serves method itself.
func (d *Dispatcher) Owns(method string) bool {
	_, ok := d.methods[method]
	return ok
}

// Serve answers req, a request of a method the hub owns, with the whole
// JSON-RPC reply. A handler's panic is answered -32603 naming the method
// (a bad upstream or a bug must not take the face down).
func (d *Dispatcher) Serve(ctx context.Context, req *Request) (reply []byte) {
	var err error
	h, ok := d.methods[req.Msg.Method]
	if !ok {
		return jsonrpc.ErrorReply(req.Msg.ID, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
			Message: fmt.Sprintf("method %q is not served here", req.Msg.Method)})
	}
	if req.Cancellable && req.Session != "" && req.Msg.HasID() {
		// Cancellable by the client (notifications/cancelled names the
		// request's id; ids are unique within a session).
		key := running{req.Session, string(req.Msg.ID)}
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		d.mu.Lock()
		d.running[key] = cancel
		d.mu.Unlock()
		defer func() {
			d.mu.Lock()
			delete(d.running, key)
			d.mu.Unlock()
			cancel()
		}()
	}
	defer func() {
		if r := recover(); r != nil {
			reply = jsonrpc.ErrorReply(req.Msg.ID, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
				Message: fmt.Sprintf("panic recovered serving %s: %v", req.Msg.Method, r)})
		}
	}()
	info, perr := protocolInfo(req.Meta())
	if perr != nil {
		return jsonrpc.ErrorReply(req.Msg.ID, perr)
	}
	ctx = withProtocol(ctx, info)
	if d.trace != nil && !d.traced[req.Msg.Method] {
		var end func(error)
		ctx, end = d.trace(ctx, req)
		defer func() { end(err) }()
	}
	var result json.RawMessage
	result, err = h(ctx, req)
	if err == nil && info != nil {
		result, err = d.stamp(req.Msg.Method, result)
	}
	return jsonrpc.Reply(req.Msg.ID, result, err)
}

// Read reads raw, one message a client sent on session ("" for none),
// strictly: a message the gate refuses gives the refusal to answer with,
// a request of a hub method gives the request to Serve, and anything else
// (the session layer's requests, notifications) gives neither and goes to
// the session layer. A notifications/cancelled of a request being served
// here cancels it (and still goes on: the session layer may have its own).
// Answers to the server's own requests never come here: the face delivers
// them to the request that waits.
func (d *Dispatcher) Read(raw []byte, session string) (req *Request, refusal []byte) {
	msg, call, err := d.reader.ParseRequest(raw)
	if err != nil {
		return nil, jsonrpc.ErrorReplyTo(raw, err)
	}
	switch msg.Kind() {
	case jsonrpc.KindRequest:
		if d.Owns(msg.Method) {
			return &Request{Msg: msg, Call: call, Session: session, Cancellable: true}, nil
		}
	case jsonrpc.KindNotification:
		if msg.Method == methodCancelled {
			d.cancel(session, msg.Params)
		}
	}
	return nil, nil
}

// methodCancelled is the notification a client cancels a request with.
const methodCancelled = "notifications/cancelled"

// cancel ends the request named by a notifications/cancelled's params.
func (d *Dispatcher) cancel(session string, params json.RawMessage) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if session == "" || json.Unmarshal(params, &p) != nil || len(p.RequestID) == 0 {
		return
	}
	d.mu.Lock()
	cancel := d.running[running{session, string(p.RequestID)}]
	d.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// Message is the whole dispatch of a face that hands over messages one by
// one and runs each request on its own goroutine (WebSocket, legacy SSE):
// Read, then Serve a hub request or hand anything else to session. The
// answer is the whole reply, nil for none.
func (d *Dispatcher) Message(ctx context.Context, raw []byte, sessionID string, session Session) []byte {
	req, refusal := d.Read(raw, sessionID)
	switch {
	case refusal != nil:
		return refusal
	case req != nil:
		return d.Serve(ctx, req)
	}
	return session(ctx, raw)
}
