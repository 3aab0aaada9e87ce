// Package streambound bounds each message an upstream sends on a stream,
// while it is read and before a transport buffers it. A stream carries
// many messages: the standalone GET stream of Streamable HTTP, a
// 2026-07-28 subscriptions/listen reply, the one event stream of legacy
// SSE, a stdio child's stdout. mcp-go reads each with a bufio.Reader's
// ReadString, which holds a whole line, however long, and then the
// event's data, however many lines it has: one upstream that sends a
// 100 MB notification, or one event that never ends, takes the hub's
// memory with it.
//
// So a stream is read through a Bound, which counts the bytes of the
// message being read (a line of stdio, an event of SSE) and fails the
// read past the limit with *TooLargeError. A stream has no way past a
// message but reading it, so the connection is over: Bound.Over is told,
// and ends it. The transports report the failed read in words of their
// own, or not at all (mcp-go's streamable HTTP client retries its GET
// stream, its stdio client only stops reading), so Over, not their
// error, is how the connection learns why.
//
// The limit is upstream.maxResponseBytes, the bound of an answer to a
// POST (package httpbound), not a setting of its own: answers to requests
// come on these streams too (legacy SSE, stdio, WebSocket), so no message
// of a stream may be smaller than an answer, and a notification or a
// server request of that size is already more than any server sends.
package streambound

import (
	"bytes"
	"fmt"
	"io"
)

// TooLargeError is a message on one of an upstream's streams larger than
// the hub reads. The connection it came on is ended for it.
type TooLargeError struct {
	Server string
	Limit  int64
	// Stream names the stream it came on ("GET event stream", "stdout").
	Stream string
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("upstream %s sent a message larger than %s (upstream.maxResponseBytes) on its %s", e.Server, Size(e.Limit), e.Stream)
}

// Size says n bytes in MiB, or KiB when it is no whole number of MiB, for
// messages that name a bound.
func Size(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d KiB", n>>10)
}

// Bound is the bound of the messages of one connection's streams.
type Bound struct {
	Server string
	// Limit is the most bytes of one message.
	Limit int64
	// Over, when set, is told of each message over Limit before the read
	// fails with it: it ends the connection, which may have several
	// streams (a reopened GET stream), so it may be told more than once.
	Over func(*TooLargeError)
}

// Lines returns r read through b: a line (the bytes before a '\n', as a
// stdio transport reads it) of more than b.Limit bytes fails the read with
// *TooLargeError naming stream.
func (b *Bound) Lines(r io.Reader, stream string) io.Reader {
	return &reader{r: r, bound: b, stream: stream}
}

// Events returns body read through b as an event stream: an event (the
// bytes since the blank line that ended the one before, its line ends
// included) of more than b.Limit bytes fails the read with *TooLargeError
// naming stream. Counting the whole event bounds both what a reader
// holds of its longest line and what it joins of its data lines; a line
// is ended by '\n' alone, as mcp-go reads it.
func (b *Bound) Events(body io.ReadCloser, stream string) io.ReadCloser {
	return eventBody{&reader{r: body, bound: b, stream: stream, events: true, blank: true}, body}
}

type eventBody struct {
	io.Reader
	io.Closer
}

// reader counts the bytes of the message being read and fails past the
// bound.
type reader struct {
	r      io.Reader
	bound  *Bound
	stream string
	// events: a message ends at a blank line, else at every '\n'.
	events bool
	// n is how many bytes of the message were read; blank says the line
	// being read holds nothing but its crs bytes of '\r' so far.
	n, crs int64
	blank  bool
	err    *TooLargeError
}

func (m *reader) Read(p []byte) (int, error) {
	if m.err != nil {
		return 0, m.err
	}
	n, err := m.r.Read(p)
	if within := m.count(p[:n]); within < n {
		m.err = &TooLargeError{Server: m.bound.Server, Limit: m.bound.Limit, Stream: m.stream}
		if m.bound.Over != nil {
			m.bound.Over(m.err)
		}
		return within, m.err
	}
	return n, err
}

// count adds p, the next bytes read, to the message and returns len(p), or
// how many of them are within the bound when they take a message past it.
func (m *reader) count(p []byte) int {
	limit := m.bound.Limit
	for off := 0; off < len(p); {
		line := p[off:]
		end := bytes.IndexByte(line, '\n')
		if end >= 0 {
			line = line[:end]
		}
		if m.blank && len(bytes.TrimLeft(line, "\r")) == 0 {
			// Perhaps the blank line that ends the event: its bytes are
			// not the event's, but bounded all the same.
			if m.crs += int64(len(line)); m.crs > limit {
				return max(off+len(line)-int(m.crs-limit), 0)
			}
		} else {
			m.n += m.crs + int64(len(line))
			m.blank, m.crs = false, 0
			if m.n > limit {
				return max(off+len(line)-int(m.n-limit), 0)
			}
		}
		if end < 0 {
			break
		}
		off += end + 1
		if !m.events || m.blank {
			m.n = 0 // the line, or the event, is over
		} else if m.n++; m.n > limit {
			return off - 1
		}
		m.blank, m.crs = m.events, 0
	}
	return len(p)
}
