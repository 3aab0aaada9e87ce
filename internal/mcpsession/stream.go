package mcpsession

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// streamID names a session's GET stream in the event store; mcp-go's reply
// streams have ids of their own (UUIDs).
const streamID = "get"

// writeTimeout bounds one write to a stream's client, a resuming client's
// replay included: a client that stops reading loses its stream, not the
// session's other messages (as mcp-go bounds a replay).
const writeTimeout = 30 * time.Second

// An idle GET stream is most of what an idle IDE session costs. Served by
// net/http, it holds the request's goroutine with the stack it grew to
// (16 KiB through the hub's handlers), net/http's background reader and
// the connection's buffers (10 KiB). On an HTTP/1.x connection the hub
// takes the connection over once the request is read (http.Hijacker):
// the handler returns, and the stream is two goroutines of a few frames
// (one writes the session's messages, one notices the client going) and
// no buffer. Where the connection cannot be taken over (HTTP/2, or a
// writer that cannot), the request's goroutine writes the stream.

// ServeStream serves r, a GET of session id's stream (the standalone SSE
// stream of Streamable HTTP), until the client goes, a newer GET of the
// session supersedes it, the session ends or the sessions stop (Run); it
// calls ended then, on whichever goroutine. It reports false, having
// written nothing and without calling ended, when the stream is mcp-go's
// to serve: mcp-go registered a session of its own under id, or r resumes
// (Last-Event-ID) a stream other than the session's GET stream, a reply
// stream say. A session not registered here (initialized on another
// replica, or forgotten since) is registered first, as mcp-go would. The
// caller checked that r may use id.
func (ss *Sessions) ServeStream(w http.ResponseWriter, r *http.Request, id string, ended func()) bool {
	last := r.Header.Get("Last-Event-ID")
	if last != "" {
		if stream, ok := ss.opts.Events.StreamOf(id, last); !ok || stream != streamID {
			return false
		}
	}
	s, err := ss.Open(r.Context(), id)
	if err != nil {
		return false
	}
	if ss.serveTakenOver(w, r, s, last, ended) {
		return true
	}
	defer ended()
	out := &responseStream{w: w, rc: http.NewResponseController(w)}
	if att, ok := s.attach(out, last); ok {
		ss.serve(r.Context(), out, s, att)
	}
	return true
}

// serveTakenOver serves the stream on r's connection, taken over from
// net/http, and reports false when it cannot be taken over.
func (ss *Sessions) serveTakenOver(w http.ResponseWriter, r *http.Request, s *Session, last string, ended func()) bool {
	if r.ProtoMajor != 1 {
		return false
	}
	ss.runMu.Lock()
	defer ss.runMu.Unlock()
	if ss.running == nil {
		return false // not running (Run): nobody would end the stream
	}
	head := w.Header().Clone()
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return false
	}
	// The stream ends with ctx, whoever ends it: the client (its reader
	// sees the connection close), the session (its writer returns), or
	// Run. Closing the connection ends a write to a client that stopped
	// reading, too.
	ctx, cancel := context.WithCancel(ss.running)
	context.AfterFunc(ctx, func() { _ = conn.Close() })
	out := &connStream{conn: conn, head: head}
	ss.streams.Add(2)
	go func() {
		defer ss.streams.Done()
		defer ended()
		defer cancel()
		if att, ok := s.attach(out, last); ok {
			ss.serve(ctx, out, s, att)
		}
	}()
	go func() {
		defer ss.streams.Done()
		defer cancel()
		awaitClose(conn)
	}()
	return true
}

// awaitClose returns when the client closes conn (or sends on it, which a
// client of an event stream has no business doing), or the stream closes
// it.
func awaitClose(conn net.Conn) {
	var b [1]byte
	_, _ = conn.Read(b[:])
}

// eventStream is where a session's stream writes.
type eventStream interface {
	// writeHead writes the response's status and headers.
	writeHead() error
	// writeEvent writes one SSE event, with an id when eid is not empty,
	// and flushes it.
	writeEvent(eid string, data []byte) error
}

// responseStream writes through net/http.
type responseStream struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func (o *responseStream) writeHead() error {
	setEventStreamHeaders(o.w.Header())
	o.w.WriteHeader(http.StatusOK)
	return o.rc.Flush()
}

func (o *responseStream) writeEvent(eid string, data []byte) error {
	_ = o.rc.SetWriteDeadline(time.Now().Add(writeTimeout))
	if err := writeSSE(o.w, eid, data); err != nil {
		return err
	}
	return o.rc.Flush()
}

// connStream writes on a connection taken over from net/http: the
// response's head (head: what the handlers set before, with the event
// stream's own headers) and then the events as they come, until the
// connection closes (HTTP/1.1 without a length or chunks).
type connStream struct {
	conn net.Conn
	head http.Header
}

func (o *connStream) writeHead() error {
	setEventStreamHeaders(o.head)
	_ = o.conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	resp := &http.Response{StatusCode: http.StatusOK, ProtoMajor: 1, ProtoMinor: 1, Header: o.head, ContentLength: -1, Close: true}
	err := resp.Write(o.conn)
	o.head = nil
	return err
}

func (o *connStream) writeEvent(eid string, data []byte) error {
	_ = o.conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	// One write, one packet: the event is small, and rare.
	var b []byte
	if eid != "" {
		b = append(append(append(b, "id: "...), eid...), '\n')
	}
	b = append(append(append(b, "event: message\ndata: "...), data...), "\n\n"...)
	_, err := o.conn.Write(b)
	return err
}

func setEventStreamHeaders(h http.Header) {
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
}

// writeSSE writes one SSE event (mcp-go's framing: event "message").
func writeSSE(w io.Writer, eid string, data []byte) error {
	if eid != "" {
		if _, err := io.WriteString(w, "id: "+eid+"\n"); err != nil {
			return err
		}
	}
	if _, err := io.WriteString(w, "event: message\ndata: "); err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n\n")
	return err
}

// attach makes out the session's stream: it supersedes the one before,
// writes the response's head and, when the client resumes after event
// last, what it missed. It runs under mu, so that no message is recorded
// meanwhile: one recorded before is replayed, one recorded after is
// written live. It reports false when the session ended, or the client is
// gone.
func (s *Session) attach(out eventStream, last string) (*attachment, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return nil, false
	}
	if s.stream != nil {
		close(s.stream.gone)
		s.stream = nil
	}
	if out.writeHead() != nil {
		return nil, false
	}
	if last != "" {
		var sent []string
		_, err := s.owner.opts.Events.ReplayEventsAfter(context.Background(), s.id, last, func(eid string, msg json.RawMessage) error {
			sent = append(sent, eid)
			return out.writeEvent(eid, msg)
		})
		if err != nil {
			return nil, false
		}
		// What was waiting and is replayed now is not written twice.
		s.backlog = slices.DeleteFunc(s.backlog, func(e event) bool { return slices.Contains(sent, e.id) })
	}
	att := &attachment{gone: make(chan struct{}), wake: make(chan struct{}, 1)}
	s.stream = att
	s.wakeLocked()
	return att, true
}

// detach lets go of att if it is still the session's stream.
func (s *Session) detach(att *attachment) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stream == att {
		s.stream = nil
	}
}

// serve writes the session's messages to its attached stream att until
// ctx ends (the client went), att is superseded or the session ends. Pings
// every Heartbeat are not recorded (a client's Last-Event-ID does not move
// for them).
func (ss *Sessions) serve(ctx context.Context, out eventStream, s *Session, att *attachment) {
	defer s.detach(att)
	var tick <-chan time.Time
	if ss.opts.Heartbeat > 0 {
		t := time.NewTicker(ss.opts.Heartbeat)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case n := <-s.notes:
			if !ss.writeNote(ctx, out, s, att, n) {
				return
			}
		case <-att.wake:
			for _, ev := range s.takeBacklog(att) {
				if out.writeEvent(ev.id, ev.data) != nil {
					return
				}
			}
		case <-tick:
			if out.writeEvent("", ss.ping()) != nil {
				return
			}
		case <-att.gone:
			return
		case <-ctx.Done():
			return
		}
	}
}

// writeNote records a notification and writes it, and reports whether the
// stream goes on.
func (ss *Sessions) writeNote(ctx context.Context, out eventStream, s *Session, att *attachment, n mcp.JSONRPCNotification) bool {
	data, err := json.Marshal(n)
	if err != nil {
		ss.opts.Log.Warn().Err(err).Str("method", n.Method).Msg("encode a notification")
		return true
	}
	eid, live := s.recordNote(ctx, att, data)
	return live && out.writeEvent(eid, data) == nil
}

// ping is a ping request of the heartbeat; the client's answer is
// mcp-go's (it takes any answer to a ping).
func (ss *Sessions) ping() []byte {
	return []byte(`{"jsonrpc":"2.0","id":"` + ss.idPrefix + strconv.FormatInt(ss.requestIDs.Add(1), 10) + `","method":"` + string(mcp.MethodPing) + `"}`)
}

// recordNote records a notification taken off the channel by att's loop,
// and reports whether att is still the session's stream to write it; if
// not, it waits in the backlog for the stream that superseded att.
func (s *Session) recordNote(ctx context.Context, att *attachment, data []byte) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	eid := s.owner.record(ctx, s.id, data)
	if s.stream == att {
		return eid, true
	}
	if !s.ended {
		s.backlog = append(s.backlog, event{id: eid, data: data})
		s.wakeLocked()
	}
	return eid, false
}

// takeBacklog returns the messages waiting for att to write them.
func (s *Session) takeBacklog(att *attachment) []event {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stream != att {
		return nil
	}
	evs := s.backlog
	s.backlog = nil
	return evs
}
