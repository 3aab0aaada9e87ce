package mcpws

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/rs/zerolog"
)

// notificationQueueSize bounds how many received notifications may wait for
// the notification handler. Dispatching them off the read loop lets a handler
// call SendRequest (say, tools/list after tools/list_changed) without
// deadlocking; when the queue is full the read loop waits, which pushes back
// on the peer instead of buffering without bound.
const notificationQueueSize = 256

// ClientTransport is an mcp-go client transport (transport.Interface and
// transport.BidirectionalInterface) over one WebSocket connection, so the hub
// can use mcp-go's client against upstream MCP servers that only speak
// WebSocket.
//
// The connection is dialled by Start and lives until Close or until it is
// lost. A ClientTransport never reconnects by itself, because requests in
// flight cannot be replayed safely; to reconnect, create a new one. Errors
// caused by the loss of the connection wrap ErrConnectionLost; calls after
// Close fail with transport.ErrTransportClosed.
type ClientTransport struct {
	url       string
	header    http.Header
	readLimit int64
	keepalive keepalive
	dialOpts  clientOptions

	startMu sync.Mutex // serializes Start so concurrent callers dial once

	mu      sync.Mutex
	conn    *wsConn // set once by Start
	closed  bool    // Close was called
	pending map[string]chan *transport.JSONRPCResponse
	log     *zerolog.Logger

	notifications chan mcp.JSONRPCNotification // read loop -> dispatcher
	readDone      chan struct{}                // closed when the read loop has returned

	// handlerCtx is given to incoming-request handlers; it is cancelled when
	// the connection ends so that they stop working for a peer that is gone.
	handlerCtx     context.Context
	cancelHandlers context.CancelFunc

	cbMu           sync.RWMutex
	onNotification func(mcp.JSONRPCNotification)
	onRequest      transport.RequestHandler
	onLost         func(error)
}

// Compile-time checks that ClientTransport is usable by mcp-go's client,
// including for server-to-client requests (sampling, roots, elicitation,
// ping).
var (
	_ transport.Interface              = (*ClientTransport)(nil)
	_ transport.BidirectionalInterface = (*ClientTransport)(nil)
)

// NewClientTransport returns a transport that will connect to the ws:// or
// wss:// url when started, sending header with the upgrade request (for
// example Authorization). It offers the "mcp" subprotocol unless header
// already names subprotocols. Nothing is dialled until Start.
func NewClientTransport(url string, header http.Header, opts ...ClientOption) *ClientTransport {
	handlerCtx, cancel := context.WithCancel(context.Background())
	nop := zerolog.Nop()
	var o clientOptions
	for _, opt := range opts {
		opt(&o)
	}
	return &ClientTransport{
		url:            url,
		header:         header.Clone(),
		readLimit:      cmp.Or(max(o.readLimit, 0), clientReadLimit),
		keepalive:      defaultKeepalive(),
		dialOpts:       o,
		pending:        make(map[string]chan *transport.JSONRPCResponse),
		log:            &nop,
		notifications:  make(chan mcp.JSONRPCNotification, notificationQueueSize),
		readDone:       make(chan struct{}),
		handlerCtx:     handlerCtx,
		cancelHandlers: cancel,
	}
}

// Start dials the server. ctx bounds the dial and the WebSocket handshake
// only; the connection then lives until Close or until it is lost. A logger
// attached to ctx with zerolog's WithContext is kept for reporting dropped
// messages and recovered handler panics. Calling Start on a started
// transport does nothing (or reports the loss, if the connection is gone).
func (t *ClientTransport) Start(ctx context.Context) error {
	t.startMu.Lock()
	defer t.startMu.Unlock()

	t.mu.Lock()
	closed, conn := t.closed, t.conn
	t.mu.Unlock()
	switch {
	case closed:
		return transport.ErrTransportClosed
	case conn != nil:
		return conn.endErr()
	}

	ws, err := t.dial(ctx)
	if err != nil {
		return err
	}

	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		_ = ws.Close()
		return transport.ErrTransportClosed
	}
	t.conn = newWSConn(ws, t.readLimit, t.keepalive)
	t.log = zerolog.Ctx(ctx)
	conn = t.conn
	t.mu.Unlock()

	go t.readLoop(conn)
	go t.dispatchNotifications()
	return nil
}

// dial opens the WebSocket connection. gorilla applies ctx's deadline to the
// handshake but not its cancellation, so the socket's deadline is forced into
// the past when ctx ends mid-handshake; that keeps "ctx bounds the dial"
// true for contexts that are cancelled rather than timed out.
func (t *ClientTransport) dial(ctx context.Context) (*websocket.Conn, error) {
	dialer := *websocket.DefaultDialer // honours HTTPS_PROXY and friends
	if t.header.Get("Sec-WebSocket-Protocol") == "" {
		dialer.Subprotocols = []string{subprotocol}
	}
	if t.dialOpts.proxy != nil {
		dialer.Proxy = t.dialOpts.proxy
	}
	netDial := (&net.Dialer{}).DialContext
	if t.dialOpts.dial != nil {
		netDial = t.dialOpts.dial
	}

	// The watch is tied to the caller's ctx, not to the one gorilla passes
	// to NetDialContext: gorilla derives that one for its handshake timeout
	// and cancels it as soon as the dial returns.
	var stopWatch func() bool
	dialer.NetDialContext = func(dialCtx context.Context, network, addr string) (net.Conn, error) {
		c, err := netDial(dialCtx, network, addr)
		if err != nil {
			return nil, err
		}
		stopWatch = context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Now()) })
		return c, nil
	}

	ws, resp, err := dialer.DialContext(ctx, t.url, t.header)
	if check := t.dialOpts.checkAnswer; check != nil && resp != nil {
		// A refused handshake is checked too: what the answer says about
		// who answered matters more than its status.
		if cerr := check(resp.Header); cerr != nil {
			if ws != nil {
				_ = ws.Close()
			}
			if stopWatch != nil {
				stopWatch()
			}
			return nil, fmt.Errorf("dial %s: %w", t.url, cerr)
		}
	}
	if stopWatch != nil && !stopWatch() && err == nil {
		// ctx ended after the handshake finished but the deadline may
		// already have been poisoned; the connection is not trustworthy.
		_ = ws.Close()
		err = ctx.Err()
	}
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
			err = fmt.Errorf("%w (%w)", ctxErr, err)
		}
		if resp != nil {
			return nil, fmt.Errorf("dial %s: %w (HTTP %s)", t.url, err, resp.Status)
		}
		return nil, fmt.Errorf("dial %s: %w", t.url, err)
	}
	return ws, nil
}

// ClientOption configures a ClientTransport.
type ClientOption func(*clientOptions)

type clientOptions struct {
	dial        func(ctx context.Context, network, addr string) (net.Conn, error)
	proxy       func(*http.Request) (*url.URL, error)
	checkAnswer func(http.Header) error
	readLimit   int64
}

// WithDialContext makes the TCP connection (to the server, or to the proxy)
// with dial instead of a plain net.Dialer: the hub's dial policy.
func WithDialContext(dial func(ctx context.Context, network, addr string) (net.Conn, error)) ClientOption {
	return func(o *clientOptions) { o.dial = dial }
}

// WithProxy replaces the proxy function (http.ProxyFromEnvironment).
func WithProxy(proxy func(*http.Request) (*url.URL, error)) ClientOption {
	return func(o *clientOptions) { o.proxy = proxy }
}

// WithMessageLimit sets the largest message, in bytes, the server may
// send (16 MiB by default; non-positive values keep it). The limit is met
// at a frame's header, before its payload is read: a larger message ends
// the connection with an error wrapping websocket.ErrReadLimit, which lets
// the hub bound every upstream's messages with one setting.
func WithMessageLimit(limit int64) ClientOption {
	return func(o *clientOptions) { o.readLimit = limit }
}

// WithAnswerCheck has check look at the headers of the handshake's answer,
// successful or not; an error from it fails the dial with that error.
func WithAnswerCheck(check func(http.Header) error) ClientOption {
	return func(o *clientOptions) { o.checkAnswer = check }
}

// SendRequest sends request and waits for the response with the same id. It
// returns early with ctx's error when ctx ends, and with an error wrapping
// ErrConnectionLost when the connection ends first.
func (t *ClientTransport) SendRequest(ctx context.Context, request transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	data, err := json.Marshal(request)
	if err != nil {
		return nil, fmt.Errorf("marshal %s request: %w", request.Method, err)
	}

	key := request.ID.String()
	ch := make(chan *transport.JSONRPCResponse, 1)
	t.mu.Lock()
	conn, err := t.usableLocked()
	if err == nil {
		if _, dup := t.pending[key]; dup {
			err = fmt.Errorf("send %s request: id %v is already in flight", request.Method, request.ID.Value())
		} else {
			t.pending[key] = ch
		}
	}
	t.mu.Unlock()
	if err != nil {
		return nil, err
	}

	if err := conn.sendRaw(ctx, data); err != nil {
		t.forget(key)
		return nil, fmt.Errorf("send %s request: %w", request.Method, err)
	}

	select {
	case resp := <-ch:
		return resp, nil
	case <-ctx.Done():
		t.forget(key)
		return nil, fmt.Errorf("wait for %s response: %w", request.Method, ctx.Err())
	case <-conn.done:
		select {
		case resp := <-ch: // arrived just before the end
			return resp, nil
		default:
		}
		t.forget(key)
		return nil, fmt.Errorf("wait for %s response: %w", request.Method, conn.endErr())
	}
}

// SendNotification sends notification without waiting for anything but the
// write.
func (t *ClientTransport) SendNotification(ctx context.Context, notification mcp.JSONRPCNotification) error {
	t.mu.Lock()
	conn, err := t.usableLocked()
	t.mu.Unlock()
	if err != nil {
		return err
	}
	if err := conn.send(ctx, notification); err != nil {
		return fmt.Errorf("send %s notification: %w", notification.Method, err)
	}
	return nil
}

// usableLocked returns the connection if messages can be sent on it, or the
// reason they cannot. t.mu must be held.
func (t *ClientTransport) usableLocked() (*wsConn, error) {
	switch {
	case t.closed:
		return nil, transport.ErrTransportClosed
	case t.conn == nil:
		return nil, errors.New("mcpws: transport not started")
	}
	if err := t.conn.endErr(); err != nil {
		return nil, err
	}
	return t.conn, nil
}

// forget drops the pending entry for a request that is no longer waited for.
func (t *ClientTransport) forget(key string) {
	t.mu.Lock()
	delete(t.pending, key)
	t.mu.Unlock()
}

// SetNotificationHandler sets the function that receives server
// notifications. It is called from one goroutine, in arrival order;
// notifications arriving while no handler is set are dropped.
func (t *ClientTransport) SetNotificationHandler(handler func(notification mcp.JSONRPCNotification)) {
	t.cbMu.Lock()
	defer t.cbMu.Unlock()
	t.onNotification = handler
}

// SetRequestHandler sets the function that answers server-to-client requests
// (sampling, roots, elicitation, ping). Each request runs in its own
// goroutine with a context that is cancelled when the connection ends.
func (t *ClientTransport) SetRequestHandler(handler transport.RequestHandler) {
	t.cbMu.Lock()
	defer t.cbMu.Unlock()
	t.onRequest = handler
}

// SetConnectionLostHandler sets the function called, once, when the
// connection ends for any reason other than Close, with an error wrapping
// ErrConnectionLost. mcp-go's Client.OnConnectionLost finds it by this name,
// as it does on the SSE transport.
func (t *ClientTransport) SetConnectionLostHandler(handler func(error)) {
	t.cbMu.Lock()
	defer t.cbMu.Unlock()
	t.onLost = handler
}

// GetSessionId returns "": over WebSocket the connection is the session, so
// there is no session id header to report.
func (t *ClientTransport) GetSessionId() string {
	return ""
}

// Close ends the connection, fails pending requests with
// transport.ErrTransportClosed, and waits for the read loop to stop. It may
// be called any number of times, also before Start and from handlers.
func (t *ClientTransport) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	conn := t.conn
	t.mu.Unlock()

	t.cancelHandlers()
	if conn == nil {
		return nil
	}
	conn.end(transport.ErrTransportClosed, websocket.CloseNormalClosure, "")
	<-t.readDone
	conn.wait()
	return nil
}

// readLoop reads messages until the connection ends, then releases
// everything waiting on it and reports an unexpected loss.
func (t *ClientTransport) readLoop(conn *wsConn) {
	var readErr error
	for {
		data, err := conn.readMessage()
		if err != nil {
			readErr = err
			break
		}
		t.dispatch(conn, data)
	}

	conn.end(lostError(readErr), websocket.CloseAbnormalClosure, "")
	t.cancelHandlers()
	close(t.notifications)
	close(t.readDone)

	cause := conn.endErr()
	if errors.Is(cause, transport.ErrTransportClosed) {
		return
	}
	t.cbMu.RLock()
	onLost := t.onLost
	t.cbMu.RUnlock()
	if onLost != nil {
		onLost(cause)
	}
}

// dispatch routes one incoming message: responses to their waiting
// SendRequest, notifications to the dispatcher, requests to the request
// handler.
func (t *ClientTransport) dispatch(conn *wsConn, data []byte) {
	env, err := jsonrpc.Parse(data)
	if err != nil {
		t.log.Debug().Err(err).Str("url", t.url).Msg("mcpws: dropping malformed message from server")
		return
	}

	switch env.Kind() {
	case jsonrpc.KindResponse:
		var resp transport.JSONRPCResponse
		if err := json.Unmarshal(data, &resp); err != nil {
			t.log.Debug().Err(err).Str("url", t.url).Msg("mcpws: dropping malformed response from server")
			return
		}
		key := resp.ID.String()
		t.mu.Lock()
		ch, ok := t.pending[key]
		delete(t.pending, key)
		t.mu.Unlock()
		if !ok {
			// Late answers to abandoned requests, and errors about our
			// messages that the server could not attribute (id null).
			t.log.Debug().Str("url", t.url).RawJSON("message", data).Msg("mcpws: dropping response nobody waits for")
			return
		}
		ch <- &resp // buffered and used once, never blocks

	case jsonrpc.KindNotification:
		var n mcp.JSONRPCNotification
		if err := json.Unmarshal(data, &n); err != nil || n.Method == "" {
			t.log.Debug().Err(err).Str("url", t.url).Msg("mcpws: dropping malformed notification from server")
			return
		}
		select {
		case t.notifications <- n:
		case <-conn.done:
		}

	case jsonrpc.KindRequest:
		var req transport.JSONRPCRequest
		if err := json.Unmarshal(data, &req); err != nil {
			t.log.Debug().Err(err).Str("url", t.url).Msg("mcpws: dropping malformed request from server")
			return
		}
		go t.answer(conn, req)
	}
}

// answer runs the request handler for one server-to-client request and
// writes its answer. It always answers, so the server never waits for a
// request this side has dropped.
func (t *ClientTransport) answer(conn *wsConn, req transport.JSONRPCRequest) {
	t.cbMu.RLock()
	handler := t.onRequest
	t.cbMu.RUnlock()

	resp := func() (resp *transport.JSONRPCResponse) {
		if handler == nil {
			return transport.NewJSONRPCErrorResponse(req.ID, mcp.METHOD_NOT_FOUND, "no request handler configured", nil)
		}
		defer func() {
			if r := recover(); r != nil {
				t.log.Error().Str("url", t.url).Str("method", req.Method).Interface("panic", r).Msg("mcpws: request handler panicked")
				resp = transport.NewJSONRPCErrorResponse(req.ID, mcp.INTERNAL_ERROR, "internal error", nil)
			}
		}()
		resp, err := handler(t.handlerCtx, req)
		switch {
		case err != nil:
			return transport.NewJSONRPCErrorResponse(req.ID, mcp.INTERNAL_ERROR, err.Error(), nil)
		case resp == nil:
			return transport.NewJSONRPCErrorResponse(req.ID, mcp.INTERNAL_ERROR, "request handler returned no response", nil)
		}
		return resp
	}()

	if err := conn.send(t.handlerCtx, resp); err != nil {
		t.log.Debug().Err(err).Str("url", t.url).Str("method", req.Method).Msg("mcpws: could not answer server request")
	}
}

// dispatchNotifications hands queued notifications to the notification
// handler in order. It stops when the read loop closes the queue.
func (t *ClientTransport) dispatchNotifications() {
	for n := range t.notifications {
		t.cbMu.RLock()
		handler := t.onNotification
		t.cbMu.RUnlock()
		if handler == nil {
			continue
		}
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.log.Error().Str("url", t.url).Str("method", n.Method).Interface("panic", r).Msg("mcpws: notification handler panicked")
				}
			}()
			handler(n)
		}()
	}
}
