// Package httpbound bounds what the hub reads of an upstream's answers to
// its POSTs, while they are read. A tool may answer more than the hub
// should hold (a log dump, a whole repository listing), and an upstream
// decides how large its list pages are: decoding a page costs some 30
// times its bytes (50,000 small tools, 7.5 MB, take 220 MB to decode). So
// every answer is read through a limit, past which it fails with an error
// that says what happened instead of a JSON parse error of a cut body or
// the memory of the hub; and the answer to a list page is cut, before it
// is decoded, at the bytes and items left of its list's bounds (Page).
//
// It wraps an http.Client and knows nothing of MCP sessions: the errors a
// cut answer fails with are the caller's (Page.TooLarge, Page.TooMany),
// except TooLargeError, the limit of every answer.
//
// An answer that is a stream of messages without end, a GET event stream
// or the reply to a POST that opens one (WithStream), is no answer to
// bound in total: Streams bounds it per message (package streambound).
package httpbound

import (
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync/atomic"

	"github.com/purko-io/mcp-hub/internal/upstream/streambound"
)

// TooLargeError is an upstream answer larger than the hub reads.
type TooLargeError struct {
	Server string
	Limit  int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("upstream %s answered more than %d bytes (%s, upstream.maxResponseBytes): ask the tool for less", e.Server, e.Limit, streambound.Size(e.Limit))
}

// Limit returns a copy of hc whose answers to POST requests fail with
// *TooLargeError past limit bytes, and are cut at the Page in the
// request's context, if any. Streams (an SSE GET) carry many messages and
// are the transport's to bound per message.
func Limit(hc *http.Client, server string, limit int64) *http.Client {
	return wrap(hc, func(next http.RoundTripper) http.RoundTripper {
		return limitedTransport{next: next, err: &TooLargeError{Server: server, Limit: limit}}
	})
}

// wrap returns a copy of hc (a zero client when nil) whose transport is
// the one with made of hc's (Go's default when nil).
func wrap(hc *http.Client, with func(next http.RoundTripper) http.RoundTripper) *http.Client {
	var c http.Client
	if hc != nil {
		c = *hc
	}
	next := c.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	c.Transport = with(next)
	return &c
}

type limitedTransport struct {
	next http.RoundTripper
	err  *TooLargeError
}

func (t limitedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || req.Method != http.MethodPost || opensStream(req, resp) {
		return resp, err
	}
	body := &limitedBody{ReadCloser: resp.Body, left: t.err.Limit, err: t.err}
	boundPage(req.Context(), resp.Header, body)
	resp.Body = body
	return resp, nil
}

// limitedBody reads up to left bytes, then fails with err if there are
// more.
type limitedBody struct {
	io.ReadCloser
	left int64
	err  error
	// page, on the answer to a list request, applies the list's bounds.
	page *pageReader
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, b.err
	}
	// One byte past the limit tells a body of exactly the limit from a
	// larger one.
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		b.page.cutBy(b.err)
		return n - 1, b.err
	}
	if perr := b.page.read(p[:n]); perr != nil {
		b.left, b.err = -1, perr
		return n, perr
	}
	return n, err
}

// Page, in the context of a list page's request (WithPage), bounds its
// answer while it is read, before the client decodes it: a page over a
// bound is better never decoded.
type Page struct {
	// Bytes bounds the answer (when below the client's Limit); past it
	// the answer fails with TooLarge.
	Bytes int64
	// Items bounds the items of the page: the elements of arrays two
	// levels inside a JSON-RPC message (result.tools[i]), in a JSON body
	// or in the data lines of an event stream. Past it the answer fails
	// with TooMany. < 0: not counted.
	Items             int
	TooLarge, TooMany error
	// cut is the bound that cut the answer (cutLarge, cutMany): a
	// transport may report the cut in words of its own, or not at all (a
	// stream's reader).
	cut atomic.Int32
	// read counts the bytes of the answer read.
	read atomic.Int64
}

const (
	cutLarge = 1 + iota
	cutMany
)

// Cut is the error of the bound that cut the answer (TooLarge or
// TooMany), nil when none did.
func (pb *Page) Cut() error {
	switch pb.cut.Load() {
	case cutLarge:
		return pb.TooLarge
	case cutMany:
		return pb.TooMany
	}
	return nil
}

// Read is how many bytes of the answer were read.
func (pb *Page) Read() int64 { return pb.read.Load() }

type pageKey struct{}

// WithPage returns ctx carrying pb, for the request of one list page.
func WithPage(ctx context.Context, pb *Page) context.Context {
	return context.WithValue(ctx, pageKey{}, pb)
}

// pageReader applies the Page of a request to its answer.
type pageReader struct {
	bounds *Page
	count  *itemCounter
}

// boundPage applies the Page in ctx, if any, to body, the answer to a
// POST with header h.
func boundPage(ctx context.Context, h http.Header, body *limitedBody) {
	pb, ok := ctx.Value(pageKey{}).(*Page)
	if !ok {
		return
	}
	if pb.Bytes < body.left {
		body.left, body.err = pb.Bytes, pb.TooLarge
	}
	body.page = &pageReader{bounds: pb}
	if pb.Items >= 0 {
		mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
		body.page.count = &itemCounter{max: pb.Items, events: mt == "text/event-stream"}
	}
}

// read counts the items of p, the next bytes of the answer; an error cuts
// the answer.
func (r *pageReader) read(p []byte) error {
	if r == nil {
		return nil
	}
	r.bounds.read.Add(int64(len(p)))
	if r.count == nil || r.count.write(p) {
		return nil
	}
	r.bounds.cut.Store(cutMany)
	return r.bounds.TooMany
}

// cutBy records that err, the byte bound, cut the answer, when it is the
// list's.
func (r *pageReader) cutBy(err error) {
	if r != nil && err == r.bounds.TooLarge {
		r.bounds.cut.Store(cutLarge)
	}
}

// itemCounter counts the items of a list page in its answer as it is read:
// the elements of arrays two levels inside a JSON-RPC message
// (result.tools[i]), in a JSON body or in the data lines of an event
// stream, read as mcp-go reads them. Decoding fails on JSON this reading
// gets wrong, so on every page that would be decoded the count is at least
// the page's items; arrays of the same depth elsewhere (a notification's,
// a hostile server's own) count too, against the server that sent them.
type itemCounter struct {
	max, n int
	// JSON: depth of the innermost container, whether each of the first
	// three is an array, whether a string (and an escape) is open, and
	// whether the next value is an item.
	depth                    int
	array                    [4]bool
	inString, escaped, first bool
	// events: the answer is an event stream, read line by line; field
	// collects a line's start until it is known to be "data:", data says
	// the rest of the line is data, and notBlank that the line has more
	// than carriage returns.
	events    bool
	field     []byte
	data      bool
	skipSpace bool
	notBlank  bool
}

// write counts the items in p and reports whether they are within max.
func (c *itemCounter) write(p []byte) bool {
	for _, b := range p {
		if !c.events {
			c.json(b)
			continue
		}
		switch {
		case b == '\n':
			if !c.notBlank {
				c.depth, c.inString, c.escaped, c.first = 0, false, false, false // a blank line ends the event
			} else if c.data {
				c.json('\n') // data lines of one event are joined by a newline
			}
			c.field, c.data, c.notBlank = c.field[:0], false, false
			continue
		case b != '\r':
			c.notBlank = true
		}
		switch {
		case c.data:
			if c.skipSpace {
				c.skipSpace = false
				if b == ' ' {
					continue
				}
			}
			c.json(b)
		case len(c.field) < len("data:"):
			c.field = append(c.field, b)
			if string(c.field) == "data:" {
				c.data, c.skipSpace = true, true
			}
		}
		if c.n > c.max {
			return false
		}
	}
	return c.n <= c.max
}

// json reads one byte of a JSON text.
func (c *itemCounter) json(b byte) {
	if c.inString {
		switch {
		case c.escaped:
			c.escaped = false
		case b == '\\':
			c.escaped = true
		case b == '"':
			c.inString = false
		}
		return
	}
	inList := c.depth == 3 && c.array[2]
	switch b {
	case ' ', '\t', '\n', '\r':
		return
	case ',':
		c.first = inList
		return
	case '}', ']':
		if c.depth > 0 {
			c.depth--
		}
		c.first = false
		return
	}
	if inList && c.first {
		c.n++ // whatever it is: a null decodes into a tool too
		c.first = false
	}
	switch b {
	case '"':
		c.inString = true
	case '{', '[':
		if c.depth < len(c.array) {
			c.array[c.depth] = b == '['
		}
		c.depth++
		c.first = c.depth == 3 && b == '['
	}
}
