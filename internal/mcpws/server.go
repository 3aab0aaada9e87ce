package mcpws

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/gorilla/websocket"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"
)

const (
	// maxInFlight bounds the requests one connection may have running at
	// once, so one client cannot start unbounded work. Requests over the
	// limit are answered with errBusy rather than queued: the read loop must
	// keep reading, or answers to the server's own requests (sampling) and
	// cancellations could never arrive to free a slot.
	maxInFlight = 64

	// errBusy is the JSON-RPC error code for a request refused because the
	// connection is at maxInFlight; it is in the implementation-defined
	// server error range.
	errBusy = -32000

	// serverNotificationQueueSize bounds client notifications waiting for
	// the server; see notificationQueueSize for why they are not handled on
	// the read loop.
	serverNotificationQueueSize = 64
)

// HandlerOption configures NewHandler; options keep its signature stable
// as the hub needs more knobs.
type HandlerOption func(*handler)

// WithContextFunc sets a function that derives each connection's context
// from the upgrade request, typically to attach the caller's identity so that
// tool handlers and session hooks can see it. The returned context must be
// derived from ctx; cancelling it closes the connection.
func WithContextFunc(fn func(ctx context.Context, r *http.Request) context.Context) HandlerOption {
	return func(h *handler) { h.contextFunc = fn }
}

// WithDispatch hands every request and notification a client sends to
// dispatch, in place of the MCP server's own HandleMessage: data is the
// whole message, ctx carries the connection's session (server.
// ClientSessionFromContext) whose id is session, and the returned bytes
// are the whole answer to send (nil for none). The hub's dispatcher
// (internal/dispatch) serves its own methods this way and hands the
// others to the MCP server. Answers to the session's own requests never
// reach dispatch.
func WithDispatch(dispatch func(ctx context.Context, data []byte, session string) []byte) HandlerOption {
	return func(h *handler) { h.dispatch = dispatch }
}

// WithCheckOrigin replaces the Origin check made before upgrading, which by
// default accepts only requests without Origin (non-browser clients) and
// browser pages of the same origin (host and port) as the request. This is
// the defence against other web sites driving the hub from a user's
// browser; a server that admits more origins (an allow-list) passes its
// own check here, the same one its other endpoints use.
func WithCheckOrigin(fn func(*http.Request) bool) HandlerOption {
	return func(h *handler) { h.upgrader.CheckOrigin = fn }
}

// WithReadLimit sets the largest message, in bytes, a client may send;
// larger messages end the connection (close code 1009), which bounds the
// memory one client can make the hub hold. The default is 4 MiB;
// non-positive values keep it, since an unbounded limit is never wanted.
func WithReadLimit(limit int64) HandlerOption {
	return func(h *handler) {
		if limit > 0 {
			h.readLimit = limit
		}
	}
}

// withKeepalive overrides the ping schedule; tests use it to exercise
// keepalive in milliseconds.
func withKeepalive(ka keepalive) HandlerOption {
	return func(h *handler) { h.keepalive = ka }
}

// handler serves MCP over WebSocket; see NewHandler.
type handler struct {
	srv         *server.MCPServer
	upgrader    websocket.Upgrader
	contextFunc func(ctx context.Context, r *http.Request) context.Context
	readLimit   int64
	keepalive   keepalive
	dispatch    func(ctx context.Context, data []byte, session string) []byte
}

// NewHandler returns an http.Handler that upgrades requests to WebSocket and
// serves srv over each connection as one MCP session, so downstream clients
// that speak MCP over WebSocket can use the hub.
//
// Each connection is registered with srv as a session (so notifications such
// as tools/list_changed reach it, and tools can make sampling, roots and
// elicitation requests to it) and unregistered when it closes. Requests are
// handled concurrently, at most 64 at a time per connection, and their
// contexts are cancelled when the connection closes. A connection ends when
// the client closes it, when it stops answering pings, or when the context
// from the request (see WithContextFunc) is cancelled, for instance through
// http.Server.BaseContext at shutdown; http.Server.Shutdown alone does not
// close upgraded connections. Logging goes to the zerolog logger in the
// request's context, if any.
func NewHandler(srv *server.MCPServer, opts ...HandlerOption) http.Handler {
	h := &handler{
		srv:       srv,
		readLimit: defaultServerReadLimit,
		keepalive: defaultKeepalive(),
		upgrader: websocket.Upgrader{
			Subprotocols: []string{subprotocol},
			CheckOrigin:  defaultCheckOrigin,
		},
	}
	for _, opt := range opts {
		opt(h)
	}
	return h
}

// defaultCheckOrigin accepts requests without Origin, and Origins whose
// host and port are the request's Host. A page on another loopback port
// (http://localhost:3000) is refused like any other site: being local says
// nothing about who wrote it, and a DNS-rebound page looks the same.
func defaultCheckOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false // includes the opaque origin "null"
	}
	return strings.EqualFold(withDefaultPort(u.Host, u.Scheme), withDefaultPort(r.Host, u.Scheme))
}

// withDefaultPort returns hostport with the scheme's default port when it
// names none, so "hub.example" and "hub.example:443" compare equal for an
// https page.
func withDefaultPort(hostport, scheme string) string {
	if _, _, err := net.SplitHostPort(hostport); err == nil {
		return hostport
	}
	port := "80"
	if scheme == "https" || scheme == "wss" {
		port = "443"
	}
	return net.JoinHostPort(strings.Trim(hostport, "[]"), port)
}

// ServeHTTP upgrades the request and serves the connection until it ends.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	log := zerolog.Ctx(r.Context())
	ctx := r.Context()
	if h.contextFunc != nil {
		ctx = h.contextFunc(ctx, r)
	}
	ws, err := h.upgrader.Upgrade(w, r, answerHeader(w))
	if err != nil {
		// Upgrade has already answered with an HTTP error.
		log.Debug().Err(err).Str("remote", r.RemoteAddr).Msg("mcpws: websocket upgrade refused")
		return
	}
	c := &serverConn{
		srv:           h.srv,
		handleFn:      h.dispatch,
		conn:          newWSConn(ws, h.readLimit, h.keepalive),
		log:           log,
		slots:         make(chan struct{}, maxInFlight),
		notifications: make(chan json.RawMessage, serverNotificationQueueSize),
	}
	c.serve(ctx)
}

// answerHeader is what middleware set on w's header, for the handshake's
// answer: gorilla writes that answer itself and reads only the header it
// is given, so without this a header every other answer carries would be
// missing from the 101.
func answerHeader(w http.ResponseWriter) http.Header {
	h := w.Header()
	if len(h) == 0 {
		return nil
	}
	out := h.Clone()
	out.Del("Sec-Websocket-Extensions") // gorilla negotiates these itself
	return out
}

// serverConn is one downstream connection and its MCP session.
type serverConn struct {
	srv      *server.MCPServer
	handleFn func(ctx context.Context, data []byte, session string) []byte // WithDispatch
	conn     *wsConn
	session  *session
	log      *zerolog.Logger

	slots         chan struct{}        // semaphore of in-flight requests
	notifications chan json.RawMessage // client notifications for handleNotifications
	wg            sync.WaitGroup       // every goroutine serving this connection
}

// serve runs the connection: it registers the session, reads messages until
// the connection ends, then cancels in-flight work, unregisters the session
// and waits for its goroutines.
func (c *serverConn) serve(parent context.Context) {
	// Work on the connection gets the parent's values but is cancelled only
	// by serve, after the socket is closed: cancelling handlers first would
	// let them race error responses onto the wire ahead of the close frame,
	// and clients should see a shutdown as the connection going away.
	ctx, cancel := context.WithCancel(context.WithoutCancel(parent))
	defer cancel()

	c.session = newSession(c.conn)
	if err := c.srv.RegisterSession(ctx, c.session); err != nil {
		c.log.Error().Err(err).Msg("mcpws: register session")
		c.conn.end(fmt.Errorf("register session: %w", err), websocket.CloseInternalServerErr, "session registration failed")
		c.conn.wait()
		return
	}
	log := c.log.With().Str("session", c.session.id).Logger()
	c.log = &log
	ctx = c.srv.WithContext(ctx, c.session)

	// The parent ending (server shutdown) closes the socket, which ends the
	// read loop below.
	shutdownDone := make(chan struct{})
	stopShutdown := context.AfterFunc(parent, func() {
		defer close(shutdownDone)
		c.conn.end(fmt.Errorf("%w: connection context ended: %w", ErrConnectionLost, context.Cause(parent)),
			websocket.CloseGoingAway, "server shutting down")
	})

	c.wg.Go(func() { c.forwardNotifications(ctx) })
	c.wg.Go(func() { c.handleNotifications(ctx) })

	err := c.readLoop(ctx)
	if !stopShutdown() {
		<-shutdownDone // let the shutdown callback finish; nothing outlives serve
	}
	c.conn.end(lostError(err), websocket.CloseAbnormalClosure, "")
	if parent.Err() == nil && !isNormalClose(err) {
		c.log.Debug().Err(c.conn.endErr()).Msg("mcpws: connection ended")
	}

	cancel()
	c.srv.UnregisterSession(context.WithoutCancel(ctx), c.session.id)
	c.wg.Wait()
	c.conn.wait()
}

// isNormalClose reports whether err is the client closing the connection
// the ordinary way, which is not worth logging.
func isNormalClose(err error) bool {
	return websocket.IsCloseError(err, websocket.CloseNormalClosure, websocket.CloseGoingAway)
}

// readLoop reads and dispatches messages until the connection ends.
func (c *serverConn) readLoop(ctx context.Context) error {
	for {
		data, err := c.conn.readMessage()
		if err != nil {
			return err
		}
		if err := c.dispatch(ctx, data); err != nil {
			return err
		}
	}
}

// dispatch routes one message: answers to the session's own requests go to
// the waiting call, requests run on their own goroutine, and notifications
// are queued for handleNotifications. It returns an error only when the
// connection is ending.
func (c *serverConn) dispatch(ctx context.Context, data []byte) error {
	env, err := jsonrpc.Parse(data)
	if err != nil {
		// Keep the connection: one bad message from a client is answered,
		// not punished.
		var rpcErr *jsonrpc.Error
		code, msg := mcp.PARSE_ERROR, "Parse error"
		if errors.As(err, &rpcErr) {
			code, msg = rpcErr.Code, rpcErr.Message
		}
		c.reply(ctx, mcp.NewJSONRPCError(mcp.NewRequestId(nil), code, msg, nil))
		return nil
	}

	switch env.Kind() {
	case jsonrpc.KindResponse:
		if !c.session.deliver(env) {
			c.log.Debug().RawJSON("message", data).Msg("mcpws: dropping response nobody waits for")
		}
	case jsonrpc.KindRequest:
		select {
		case c.slots <- struct{}{}:
		default:
			var id any
			_ = json.Unmarshal(env.ID, &id)
			c.reply(ctx, mcp.NewJSONRPCError(mcp.NewRequestId(id), errBusy,
				fmt.Sprintf("too many concurrent requests on this connection (limit %d)", maxInFlight), nil))
			return nil
		}
		c.wg.Go(func() {
			defer func() { <-c.slots }()
			c.handle(ctx, env.ID, data)
		})
	case jsonrpc.KindNotification:
		if env.Method == string(mcp.MethodNotificationCancelled) {
			// Cancellation must not wait behind other notifications, and
			// mcp-go handles it without blocking.
			c.handle(ctx, nil, data)
			return nil
		}
		select {
		case c.notifications <- data:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// handle passes one message to the MCP server and writes the response, if
// any. A panic in a handler is answered with an internal error instead of
// taking the whole hub down.
func (c *serverConn) handle(ctx context.Context, rawID json.RawMessage, data []byte) {
	resp := func() (resp mcp.JSONRPCMessage) {
		defer func() {
			if r := recover(); r != nil {
				c.log.Error().Interface("panic", r).Msg("mcpws: MCP handler panicked")
				if rawID != nil {
					var id any
					_ = json.Unmarshal(rawID, &id)
					resp = mcp.NewJSONRPCError(mcp.NewRequestId(id), mcp.INTERNAL_ERROR, "internal error", nil)
				}
			}
		}()
		if c.handleFn != nil {
			if out := c.handleFn(ctx, data, c.session.id); out != nil {
				return json.RawMessage(out)
			}
			return nil
		}
		return c.srv.HandleMessage(ctx, data)
	}()
	if resp != nil {
		c.reply(ctx, resp)
	}
}

// reply writes msg, logging failures: by then the only remedy, ending the
// connection, has already happened inside the writer.
func (c *serverConn) reply(ctx context.Context, msg any) {
	if err := c.conn.send(ctx, msg); err != nil && ctx.Err() == nil {
		c.log.Debug().Err(err).Msg("mcpws: write response")
	}
}

// handleNotifications feeds queued client notifications to the MCP server
// in arrival order, off the read loop, so a notification handler may itself
// make requests to the client (e.g. roots/list after roots/list_changed).
func (c *serverConn) handleNotifications(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case data := <-c.notifications:
			c.handle(ctx, nil, data)
		}
	}
}

// forwardNotifications writes the session's server notifications to the
// socket until the connection ends.
func (c *serverConn) forwardNotifications(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case n := <-c.session.notifications:
			if err := c.conn.send(ctx, n); err != nil {
				return // the connection has ended or is ending
			}
		}
	}
}
