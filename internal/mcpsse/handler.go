// Package mcpsse serves MCP over the legacy HTTP+SSE transport (revision
// 2024-11-05): GET opens an event stream whose first event names the URL
// to POST messages to, and every answer and server notification comes back
// on that stream.
//
// It replaces mcp-go's server.SSEServer for the hub because SSEServer
// hands each message to MCPServer.HandleMessage itself: the hub's own
// dispatcher could not stand in front of it. Here every message a client
// POSTs goes to a dispatch function (WithDispatch), under a context with
// the mcp-go session and the POST's values (the caller), and whatever it
// answers goes on the stream. The session is registered with the
// MCPServer, so initialize, logging levels and notifications to all
// clients keep working as with mcp-go's own transports.
package mcpsse

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/jsonrpc"
)

const (
	// defaultReadLimit bounds a POST's body unless WithReadLimit says
	// otherwise, as mcpws bounds a message: a client must not make the hub
	// hold arbitrarily much.
	defaultReadLimit = 4 << 20

	// defaultKeepAlive is how long a stream may stay silent before a
	// comment is sent on it: shorter than the idle timeouts of common
	// proxies and load balancers (30 s and more), which would otherwise
	// cut a stream that is merely quiet.
	defaultKeepAlive = 25 * time.Second

	// maxInFlight bounds the requests one session may have running at
	// once, as mcpws does per connection. A request over it is answered
	// at once with a busy error on the stream rather than holding its
	// POST: a client waits for the 202 before it sends the next message.
	maxInFlight = 64

	// noteQueueSize bounds the client notifications waiting to be
	// dispatched, in order, on a session; a POST of one more waits for
	// room.
	noteQueueSize = 64

	// outQueueSize and outQueueBytes bound the answers waiting for a
	// stream's writer: a client that stops reading loses its stream
	// rather than making the hub buffer for it. A single answer larger
	// than outQueueBytes still passes when nothing else waits.
	outQueueSize  = 256
	outQueueBytes = 16 << 20

	// sessionNotificationBuffer is how many server notifications may wait
	// for the stream. mcp-go drops a notification when it is full, so the
	// stream ends then (see stream.run): a client that misses a
	// list_changed would keep a stale catalog without knowing.
	sessionNotificationBuffer = 256

	// writeTimeout bounds one write to the stream's client: a client
	// that stops reading is treated as gone.
	writeTimeout = 30 * time.Second

	// codeSessionNotFound is the JSON-RPC code of an unknown session,
	// the hub's everywhere (docs/errors.md) and the MCP TypeScript SDK's.
	codeSessionNotFound = -32001
)

// Option configures NewHandler; options keep its signature stable as the
// hub needs more knobs.
type Option func(*Handler)

// WithDispatch sets the function every request and notification a client
// POSTs is handed to, so that the hub's own dispatcher, not mcp-go's,
// decides what a message does. ctx carries the mcp-go session (as
// srv.WithContext sets it) and the POST request's values (the caller's
// identity); it is cancelled when the stream ends. dispatch returns the
// whole JSON-RPC answer to send on the stream, nil for none. The default
// is srv.HandleMessage, its answer marshalled.
func WithDispatch(dispatch func(ctx context.Context, raw []byte) []byte) Option {
	return func(h *Handler) { h.dispatch = dispatch }
}

// WithMessageCheck runs check on the body of every POST before anything
// else reads it. A message check refuses is answered on the POST itself
// with HTTP 400 and the body check returns (a whole JSON-RPC message), as
// mcpws.WithMessageCheck answers it on the socket; nil lets it through.
func WithMessageCheck(check func(raw []byte) (refusal []byte)) Option {
	return func(h *Handler) { h.check = check }
}

// WithSessionCheck runs check on every POST for a session that exists;
// false answers it as if the session did not (404), so that a caller
// cannot post into another caller's stream even with its id.
func WithSessionCheck(check func(r *http.Request, sessionID string) bool) Option {
	return func(h *Handler) { h.sessionCheck = check }
}

// WithBasePath sets the path the message URL in a stream's endpoint event
// starts with (base + "/messages?sessionId=..."), for a face mounted
// below the root (/servers/NAME): its messages must reach the same
// mount. The URL is relative to the host, so a client behind a proxy
// posts back where it connected. The default is "".
func WithBasePath(base func(r *http.Request) string) Option {
	return func(h *Handler) { h.basePath = base }
}

// WithKeepAlive sets how long a stream may stay silent before a comment
// (": ping") is written on it, which keeps proxies from cutting it and
// notices a client that vanished. The default is 25 s; non-positive
// values turn it off.
func WithKeepAlive(d time.Duration) Option {
	return func(h *Handler) { h.keepAlive = d }
}

// WithReadLimit sets the largest POST body, in bytes; a larger one is
// answered 413 without being read further. The default is 4 MiB;
// non-positive values keep it, since an unbounded limit is never wanted.
func WithReadLimit(n int64) Option {
	return func(h *Handler) {
		if n > 0 {
			h.readLimit = n
		}
	}
}

// Handler serves MCP over HTTP+SSE for one MCPServer: SSE serves the
// streams, Messages the POSTs, and Close ends them all.
type Handler struct {
	srv          *server.MCPServer
	dispatch     func(ctx context.Context, raw []byte) []byte
	check        func(raw []byte) []byte
	sessionCheck func(r *http.Request, sessionID string) bool
	basePath     func(r *http.Request) string
	keepAlive    time.Duration
	readLimit    int64
	queueSize    int   // outQueueSize; tests lower it
	queueBytes   int64 // outQueueBytes; tests lower it

	reader jsonrpc.Reader

	ctx    context.Context // ended by Close; every stream's parent
	cancel context.CancelCauseFunc

	mu      sync.Mutex
	closed  bool
	streams map[string]*stream
	wg      sync.WaitGroup // one per stream being served
}

// errClosed ends the streams when the handler is closed.
var errClosed = errors.New("mcpsse: handler closed")

// NewHandler serves MCP over HTTP+SSE for srv.
func NewHandler(srv *server.MCPServer, opts ...Option) *Handler {
	h := &Handler{
		srv:        srv,
		keepAlive:  defaultKeepAlive,
		readLimit:  defaultReadLimit,
		queueSize:  outQueueSize,
		queueBytes: outQueueBytes,
		streams:    make(map[string]*stream),
	}
	h.dispatch = h.handleMessage
	h.ctx, h.cancel = context.WithCancelCause(context.Background())
	for _, opt := range opts {
		opt(h)
	}
	return h
}

// handleMessage is the default dispatch: mcp-go's.
func (h *Handler) handleMessage(ctx context.Context, raw []byte) []byte {
	resp := h.srv.HandleMessage(ctx, raw)
	if resp == nil {
		return nil
	}
	out, err := json.Marshal(resp)
	if err != nil {
		return jsonrpc.ErrorReplyTo(raw, fmt.Errorf("encode the answer: %w", err))
	}
	return out
}

// SSE serves GET: it opens a stream and registers its session with the
// MCPServer until the stream ends, when the client goes away, the
// request's context ends, the client stops reading, or Close is called.
func (h *Handler) SSE() http.Handler { return http.HandlerFunc(h.serveStream) }

// Messages serves POST ?sessionId=ID: the message is read, checked and
// accepted (202), and its answer goes on the session's stream.
func (h *Handler) Messages() http.Handler { return http.HandlerFunc(h.serveMessage) }

// Close ends every stream, as at shutdown, and returns when their
// goroutines, requests in flight included, have stopped. Streams opened
// afterwards are refused (503).
func (h *Handler) Close() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.cancel(errClosed)
	h.wg.Wait()
}

// newSessionID is a random, unguessable session id: whoever knows it can
// post into the stream (unless a session check says otherwise).
func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// open registers a new stream, or reports false once the handler is
// closed.
func (h *Handler) open(st *stream) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	h.streams[st.session.id] = st
	h.wg.Add(1)
	return true
}

// forget removes an ended stream; POSTs for it are not found from then on.
func (h *Handler) forget(st *stream) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.streams, st.session.id)
}

func (h *Handler) lookup(id string) *stream {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.streams[id]
}

// serveStream serves one GET stream until it ends.
func (h *Handler) serveStream(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "method not allowed: open the stream with GET", http.StatusMethodNotAllowed)
		return
	}
	if h.ctx.Err() != nil { // closed: spare the session hooks a session that cannot stay
		http.Error(w, "server shutting down", http.StatusServiceUnavailable)
		return
	}
	log := zerolog.Ctx(r.Context())
	st := newStream(h, w)
	defer st.cancel(nil) // serve has ended it already, unless it never ran
	if err := h.srv.RegisterSession(r.Context(), st.session); err != nil {
		log.Error().Err(err).Msg("mcpsse: register session")
		http.Error(w, "session registration failed", http.StatusInternalServerError)
		return
	}
	if !h.open(st) {
		h.srv.UnregisterSession(context.WithoutCancel(r.Context()), st.session.id)
		http.Error(w, "server shutting down", http.StatusServiceUnavailable)
		return
	}
	defer h.wg.Done()
	defer h.forget(st)
	base := ""
	if h.basePath != nil {
		base = h.basePath(r)
	}
	st.serve(r, base+"/messages?sessionId="+st.session.id)
}

// serveMessage reads, checks and accepts one POSTed message.
func (h *Handler) serveMessage(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		jsonrpc.Refuse(w, http.StatusMethodNotAllowed, jsonrpc.CodeInvalidRequest, nil, "invalid request: POST messages here")
		return
	}
	id := r.URL.Query().Get("sessionId")
	if id == "" {
		jsonrpc.Refuse(w, http.StatusBadRequest, jsonrpc.CodeInvalidRequest, nil, "invalid request: missing sessionId")
		return
	}
	raw, ok := h.readBody(w, r)
	if !ok {
		return
	}
	if h.check != nil {
		if refusal := h.check(raw); refusal != nil {
			jsonrpc.WriteReply(w, http.StatusBadRequest, refusal)
			return
		}
	}
	st := h.lookup(id)
	if st == nil || (h.sessionCheck != nil && !h.sessionCheck(r, id)) {
		jsonrpc.Refuse(w, http.StatusNotFound, codeSessionNotFound, jsonrpc.IDOf(raw), "session not found")
		return
	}
	msg, err := h.reader.Parse(raw)
	if err != nil {
		jsonrpc.WriteReply(w, http.StatusBadRequest, jsonrpc.ErrorReplyTo(raw, err))
		return
	}
	if !st.accept(r, msg, raw) {
		jsonrpc.Refuse(w, http.StatusNotFound, codeSessionNotFound, msg.ID, "session not found")
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// readBody reads a POST's body up to the read limit; over it, or when
// reading fails, the POST is answered here and ok is false.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request) (raw []byte, ok bool) {
	if r.ContentLength > h.readLimit {
		jsonrpc.Refuse(w, http.StatusRequestEntityTooLarge, jsonrpc.CodeInvalidRequest, nil, h.tooLarge())
		return nil, false
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.readLimit))
	if err != nil {
		if _, tooBig := errors.AsType[*http.MaxBytesError](err); tooBig {
			jsonrpc.Refuse(w, http.StatusRequestEntityTooLarge, jsonrpc.CodeInvalidRequest, nil, h.tooLarge())
		} else {
			jsonrpc.Refuse(w, http.StatusBadRequest, jsonrpc.CodeInvalidRequest, nil, "read request body: "+err.Error())
		}
		return nil, false
	}
	return raw, true
}

func (h *Handler) tooLarge() string {
	return fmt.Sprintf("request body is larger than the limit of %d bytes", h.readLimit)
}
