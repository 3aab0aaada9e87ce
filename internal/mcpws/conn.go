// Package mcpws carries MCP JSON-RPC messages over WebSocket, for both ends
// of the hub: ClientTransport lets an mcp-go client talk to an upstream MCP
// server that speaks WebSocket, and NewHandler serves an mcp-go MCPServer to
// downstream WebSocket clients.
//
// The framing follows the convention of existing MCP WebSocket servers: each
// WebSocket text message holds exactly one JSON-RPC message, and the "mcp"
// subprotocol is offered by the client and accepted by the server when the
// peer asks for it. Both ends send WebSocket pings so that a peer that
// vanished without closing the TCP connection is noticed and its pending
// requests fail instead of waiting forever.
package mcpws

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

const (
	// subprotocol is the WebSocket subprotocol MCP WebSocket servers
	// conventionally negotiate.
	subprotocol = "mcp"

	// defaultServerReadLimit bounds one incoming message on the server side,
	// so a downstream client cannot make the hub buffer arbitrarily much.
	defaultServerReadLimit = 4 << 20

	// clientReadLimit bounds one incoming message on the client side. It is
	// larger than the server's because upstream results (embedded resources,
	// images) are legitimately bigger than requests, yet a misbehaving
	// upstream must still not exhaust memory.
	clientReadLimit = 16 << 20

	// writeTimeout bounds writing one message. A peer that does not drain a
	// message in this time is treated as gone: the connection is ended so
	// that its requests fail rather than queue behind a stuck write.
	writeTimeout = 30 * time.Second

	// closeGrace bounds sending the close frame when a connection is ended
	// on purpose; the close is best effort and must not delay shutdown.
	closeGrace = time.Second

	// defaultPingInterval and defaultPongWait drive the keepalive: a ping is
	// sent every interval, and a connection on which nothing (message or
	// pong) arrived for pongWait is considered dead. pongWait spans a few
	// intervals so one slow pong on a busy link does not end the connection.
	defaultPingInterval = 30 * time.Second
	defaultPongWait     = 90 * time.Second
)

// ErrConnectionLost is wrapped by the errors of requests that were in flight,
// or attempted, after the WebSocket connection ended without Close being
// called: the peer closed it, the network failed, or keepalive timed out.
// Callers test for it with errors.Is to decide whether to reconnect.
var ErrConnectionLost = errors.New("mcpws: websocket connection lost")

// keepalive configures WebSocket pings. The zero value disables them.
type keepalive struct {
	interval time.Duration // how often to ping
	wait     time.Duration // how long the connection may stay silent
}

// defaultKeepalive returns the keepalive both ends use unless a test
// overrides it.
func defaultKeepalive() keepalive {
	return keepalive{interval: defaultPingInterval, wait: defaultPongWait}
}

// outgoing is one message handed to a wsConn's writer goroutine.
type outgoing struct {
	data   []byte
	result chan error // buffered; receives the write's outcome
}

// wsConn wraps a *websocket.Conn with the discipline both ends need: gorilla
// allows one concurrent writer, so all data messages go through a single
// writer goroutine, which also lets senders give up on their context while a
// write is stuck; pings keep the connection honest; and the connection ends
// exactly once, recording why.
//
// The owner must call readMessage from one goroutine only, call end when it
// is done with the connection, and then wait for the helper goroutines.
type wsConn struct {
	ws        *websocket.Conn
	keepalive keepalive

	outbox chan outgoing
	done   chan struct{} // closed by end

	endOnce sync.Once
	errMu   sync.Mutex
	err     error // why the connection ended; set before done is closed

	wg sync.WaitGroup // writer and pinger
}

// newWSConn takes ownership of ws and starts its writer and pinger
// goroutines; they stop when the connection ends.
func newWSConn(ws *websocket.Conn, readLimit int64, ka keepalive) *wsConn {
	c := &wsConn{
		ws:        ws,
		keepalive: ka,
		outbox:    make(chan outgoing),
		done:      make(chan struct{}),
	}
	ws.SetReadLimit(readLimit)
	if ka.interval > 0 {
		c.extendReadDeadline()
		ws.SetPongHandler(func(string) error {
			c.extendReadDeadline()
			return nil
		})
		c.wg.Go(c.pingLoop)
	}
	c.wg.Go(c.writeLoop)
	return c
}

// extendReadDeadline pushes the read deadline out by the keepalive wait.
// It is only called from the reading goroutine (directly or through the pong
// handler, which gorilla runs inside ReadMessage).
func (c *wsConn) extendReadDeadline() {
	if c.keepalive.interval > 0 {
		_ = c.ws.SetReadDeadline(time.Now().Add(c.keepalive.wait))
	}
}

// readMessage returns the next data message. Text and binary messages are
// both accepted: the payload is JSON either way, and rejecting binary frames
// would only make the transport less interoperable.
func (c *wsConn) readMessage() ([]byte, error) {
	_, data, err := c.ws.ReadMessage()
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, fmt.Errorf("no message or pong from peer within %s: %w", c.keepalive.wait, err)
		}
		return nil, err
	}
	c.extendReadDeadline()
	return data, nil
}

// send marshals v and writes it as one text message. It returns when the
// message was written, ctx is done, or the connection ended, whichever comes
// first; if ctx ends first the message may still be written later.
func (c *wsConn) send(ctx context.Context, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("marshal message: %w", err)
	}
	return c.sendRaw(ctx, data)
}

// sendRaw is send for an already encoded message.
func (c *wsConn) sendRaw(ctx context.Context, data []byte) error {
	msg := outgoing{data: data, result: make(chan error, 1)}
	select {
	case c.outbox <- msg:
	case <-ctx.Done():
		return ctx.Err()
	case <-c.done:
		return c.endErr()
	}
	select {
	case err := <-msg.result:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-c.done:
		// The writer may have finished this message just before the end.
		select {
		case err := <-msg.result:
			return err
		default:
			return c.endErr()
		}
	}
}

// writeLoop is the connection's only writer of data messages.
func (c *wsConn) writeLoop() {
	for {
		select {
		case <-c.done:
			return
		case msg := <-c.outbox:
			_ = c.ws.SetWriteDeadline(time.Now().Add(writeTimeout))
			err := c.ws.WriteMessage(websocket.TextMessage, msg.data)
			msg.result <- err
			if err != nil {
				// gorilla leaves the connection unusable after a failed
				// write, so end it and let every waiter learn why.
				c.end(fmt.Errorf("%w: write: %w", ErrConnectionLost, err), websocket.CloseAbnormalClosure, "")
				return
			}
		}
	}
}

// pingLoop sends keepalive pings until the connection ends. WriteControl may
// run concurrently with the writer goroutine, so pings are not delayed by a
// large message in progress.
func (c *wsConn) pingLoop() {
	ticker := time.NewTicker(c.keepalive.interval)
	defer ticker.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-ticker.C:
			if err := c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeTimeout)); err != nil {
				c.end(fmt.Errorf("%w: keepalive ping: %w", ErrConnectionLost, err), websocket.CloseAbnormalClosure, "")
				return
			}
		}
	}
}

// end ends the connection once: it records cause, wakes every waiter, sends
// a close frame with code and text unless code is CloseAbnormalClosure (which
// must never be sent on the wire), and closes the socket, which also unblocks
// the reader and the writer. Later calls do nothing.
func (c *wsConn) end(cause error, code int, text string) {
	c.endOnce.Do(func() {
		c.errMu.Lock()
		c.err = cause
		c.errMu.Unlock()
		close(c.done)
		if code != websocket.CloseAbnormalClosure {
			_ = c.ws.WriteControl(websocket.CloseMessage,
				websocket.FormatCloseMessage(code, text), time.Now().Add(closeGrace))
		}
		_ = c.ws.Close()
	})
}

// endErr reports why the connection ended, or nil while it is open.
func (c *wsConn) endErr() error {
	c.errMu.Lock()
	defer c.errMu.Unlock()
	return c.err
}

// wait blocks until the writer and pinger goroutines have stopped. Call it
// after end.
func (c *wsConn) wait() {
	c.wg.Wait()
}

// lostError describes a read failure as the loss of the connection.
func lostError(err error) error {
	return fmt.Errorf("%w: %w", ErrConnectionLost, err)
}
