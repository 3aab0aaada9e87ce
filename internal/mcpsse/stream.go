package mcpsse

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/jsonrpc"
)

// Why a stream ended, besides Close (errClosed) and a failed write.
var (
	errClientGone = errors.New("mcpsse: the client went away")
	errSlowClient = errors.New("mcpsse: the client does not read its stream")
)

// stream is one GET stream and its session. The GET request's goroutine
// writes it (run); the stream owns the goroutines that dispatch its
// messages, and serve waits for them before it returns.
type stream struct {
	h       *Handler
	session *session
	w       http.ResponseWriter
	rc      *http.ResponseController
	log     zerolog.Logger // the GET's, with the session id

	// ctx ends with the stream, whoever ends it; dispatch contexts are
	// cancelled with it.
	ctx    context.Context
	cancel context.CancelCauseFunc

	out    chan []byte   // answers for the writer
	queued atomic.Int64  // bytes in out
	notes  chan note     // client notifications, dispatched in order
	slots  chan struct{} // semaphore of requests in flight

	mu    sync.Mutex
	ended bool           // no more work may start
	wg    sync.WaitGroup // dispatching goroutines
}

// note is a client notification waiting to be dispatched: its body and
// the values of the POST that brought it.
type note struct {
	values context.Context
	raw    []byte
}

func newStream(h *Handler, w http.ResponseWriter) *stream {
	ctx, cancel := context.WithCancelCause(h.ctx)
	return &stream{
		h:       h,
		session: newSession(newSessionID()),
		w:       w,
		rc:      http.NewResponseController(w),
		ctx:     ctx,
		cancel:  cancel,
		out:     make(chan []byte, h.queueSize),
		notes:   make(chan note, noteQueueSize),
		slots:   make(chan struct{}, maxInFlight),
	}
}

// serve writes the stream, its first event naming endpoint, until it
// ends; then it lets no more work start, unregisters the session and
// waits for the work in flight, which sees its context cancelled.
func (s *stream) serve(r *http.Request, endpoint string) {
	s.log = zerolog.Ctx(r.Context()).With().Str("session", s.session.id).Logger()
	stopGone := context.AfterFunc(r.Context(), func() { s.cancel(errClientGone) })
	// Ending the stream from elsewhere (Close, a client too slow) must not
	// wait for a write stuck on a client that stopped reading: a deadline
	// in the past makes it fail at once.
	kicked := make(chan struct{})
	stopKick := context.AfterFunc(s.ctx, func() {
		defer close(kicked)
		_ = s.rc.SetWriteDeadline(time.Now())
	})
	s.wg.Go(s.dispatchNotes)

	s.cancel(s.run(endpoint))
	stopGone()
	if !stopKick() {
		<-kicked // nothing touches the connection after serve returns
	}
	// The connection may serve another request: no deadline of this one
	// may stay on it.
	_ = s.rc.SetWriteDeadline(time.Time{})

	switch cause := context.Cause(s.ctx); {
	case errors.Is(cause, errSlowClient):
		s.log.Warn().Err(cause).Msg("mcpsse: stream ended: its client does not read it")
	case errors.Is(cause, http.ErrNotSupported):
		s.log.Error().Err(cause).Msg("mcpsse: stream ended: the response writer cannot flush (a wrapper without Unwrap?)")
	case errors.Is(cause, errClientGone), errors.Is(cause, errClosed):
	default:
		s.log.Debug().Err(cause).Msg("mcpsse: stream ended")
	}
	s.mu.Lock()
	s.ended = true
	s.mu.Unlock()
	s.h.srv.UnregisterSession(context.WithoutCancel(r.Context()), s.session.id)
	s.wg.Wait()
}

// run writes the stream until it ends, and returns why.
func (s *stream) run(endpoint string) error {
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: pass events on as they come
	s.w.WriteHeader(http.StatusOK)
	if err := s.write("endpoint", []byte(endpoint)); err != nil {
		return err
	}

	var idle <-chan time.Time
	var timer *time.Timer
	if s.h.keepAlive > 0 {
		timer = time.NewTimer(s.h.keepAlive)
		defer timer.Stop()
		idle = timer.C
	}
	notifications := s.session.notifications
	for {
		if len(notifications) == cap(notifications) {
			// mcp-go drops what does not fit: better no stream than one
			// that silently misses a list_changed.
			return fmt.Errorf("%w: %d server notifications waiting", errSlowClient, len(notifications))
		}
		var err error
		select {
		case <-s.ctx.Done():
			return context.Cause(s.ctx)
		case n := <-notifications:
			err = s.writeNotification(n)
		case data := <-s.out:
			s.queued.Add(-int64(len(data)))
			// A notification sent before the answer was (a request's
			// progress) goes before it, as it would on mcp-go's stdio.
			for range len(notifications) {
				if err = s.writeNotification(<-notifications); err != nil {
					break
				}
			}
			if err == nil {
				err = s.write("message", data)
			}
		case <-idle:
			err = s.writeRaw([]byte(": ping\n\n"))
		}
		if err != nil {
			return err
		}
		if timer != nil {
			timer.Reset(s.h.keepAlive)
		}
	}
}

// writeNotification writes a server notification as a message event.
func (s *stream) writeNotification(n mcp.JSONRPCNotification) error {
	data, err := json.Marshal(n)
	if err != nil {
		s.log.Warn().Err(err).Str("method", n.Method).Msg("mcpsse: encode a notification")
		return nil
	}
	return s.write("message", data)
}

// write writes one event. data is one JSON message; its lines, should it
// have several, become data lines (the client joins them again), so a
// newline, even one at the end, cannot cut the event short.
func (s *stream) write(event string, data []byte) error {
	data = bytes.TrimRight(data, "\r\n")
	buf := make([]byte, 0, len(event)+len(data)+24)
	buf = append(append(append(buf, "event: "...), event...), '\n')
	if bytes.IndexByte(data, '\n') < 0 && bytes.IndexByte(data, '\r') < 0 {
		buf = append(append(append(buf, "data: "...), data...), '\n') // one line, as a JSON encoder writes
	} else {
		for _, line := range bytes.FieldsFunc(data, func(r rune) bool { return r == '\n' || r == '\r' }) {
			buf = append(append(append(buf, "data: "...), line...), '\n')
		}
	}
	return s.writeRaw(append(buf, '\n'))
}

// writeRaw writes b and flushes it, unless the stream has ended. The
// deadline is set before ctx is looked at, so an end that comes later
// (whose deadline in the past comes later too) still stops the write.
func (s *stream) writeRaw(b []byte) error {
	_ = s.rc.SetWriteDeadline(time.Now().Add(writeTimeout))
	if s.ctx.Err() != nil {
		return context.Cause(s.ctx)
	}
	if _, err := s.w.Write(b); err != nil {
		return fmt.Errorf("write to the client: %w", err)
	}
	if err := s.rc.Flush(); err != nil {
		return fmt.Errorf("flush to the client: %w", err)
	}
	return nil
}

// send queues an answer for the writer. A queue over its bound ends the
// stream: the client is not reading, and holding answers for it without
// limit would let one client exhaust the hub's memory.
func (s *stream) send(data []byte) {
	if data == nil || s.ctx.Err() != nil {
		return
	}
	n := int64(len(data))
	if q := s.queued.Add(n); q != n && q > s.h.queueBytes {
		s.queued.Add(-n)
		s.cancel(fmt.Errorf("%w: %d bytes of answers waiting", errSlowClient, q-n))
		return
	}
	select {
	case s.out <- data:
	default:
		s.queued.Add(-n)
		s.cancel(fmt.Errorf("%w: %d answers waiting", errSlowClient, len(s.out)))
	}
}

// enter lets one piece of work start on the stream, unless it has ended;
// leave ends it.
func (s *stream) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended || s.ctx.Err() != nil {
		return false
	}
	s.wg.Add(1)
	return true
}

func (s *stream) leave() { s.wg.Done() }

// accept takes one message POSTed for the stream and reports false when
// the stream has ended (the session is gone). Requests run concurrently,
// at most maxInFlight at once; notifications are dispatched one at a
// time in the order they came, except a cancellation, which must not wait
// behind them; answers are dropped, as this transport asks nothing of
// its clients.
func (s *stream) accept(r *http.Request, msg *jsonrpc.Message, raw []byte) bool {
	values := context.WithoutCancel(r.Context())
	switch msg.Kind() {
	case jsonrpc.KindResponse:
		zerolog.Ctx(r.Context()).Debug().Str("session", s.session.id).Msg("mcpsse: dropping a response: this transport sends no requests")
		return s.ctx.Err() == nil
	case jsonrpc.KindRequest:
		if !s.enter() {
			return false
		}
		select {
		case s.slots <- struct{}{}:
		default:
			s.leave()
			s.send(jsonrpc.ErrorReply(msg.ID, &jsonrpc.Error{Code: jsonrpc.CodeServerBusy,
				Message: fmt.Sprintf("too many concurrent requests on this session (limit %d)", maxInFlight)}))
			return true
		}
		go func() {
			defer s.leave()
			defer func() { <-s.slots }()
			s.send(s.handle(values, msg.ID, raw))
		}()
		return true
	}
	if msg.Method == string(mcp.MethodNotificationCancelled) {
		if !s.enter() {
			return false
		}
		defer s.leave()
		s.send(s.handle(values, nil, raw))
		return true
	}
	select {
	case s.notes <- note{values: values, raw: raw}:
		return true
	case <-s.ctx.Done():
		return false
	case <-r.Context().Done():
		return true // the client gave up on this POST; nobody reads the answer
	}
}

// dispatchNotes dispatches client notifications in order until the
// stream ends.
func (s *stream) dispatchNotes() {
	for {
		select {
		case <-s.ctx.Done():
			return
		case n := <-s.notes:
			s.send(s.handle(n.values, nil, n.raw))
		}
	}
}

// handle dispatches one message under a context with values' values and
// the session, cancelled when the stream ends, and returns the answer. A
// panic in dispatch is answered with an internal error (a request's)
// instead of taking the hub down.
func (s *stream) handle(values context.Context, id json.RawMessage, raw []byte) (reply []byte) {
	ctx, cancel := context.WithCancel(values)
	stop := context.AfterFunc(s.ctx, cancel)
	defer func() {
		stop()
		cancel()
	}()
	defer func() {
		if p := recover(); p != nil {
			zerolog.Ctx(values).Error().Interface("panic", p).Str("session", s.session.id).Msg("mcpsse: dispatch panicked")
			reply = nil
			if id != nil {
				reply = jsonrpc.ErrorReply(id, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"})
			}
		}
	}()
	return s.h.dispatch(s.h.srv.WithContext(ctx, s.session), raw)
}
