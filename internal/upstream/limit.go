package upstream

import (
	"fmt"
	"io"
	"net/http"
)

// A tool may answer more than the hub should hold: a log dump, a whole
// repository listing. Every answer to a request the hub POSTs to an
// upstream (the direct tools/call, and mcp-go's streamable HTTP client) is
// read through a limit; past it the call fails with an error that says
// what happened, instead of a JSON parse error of a cut body or the memory
// of the hub. Streams (an SSE GET, the WebSocket connection, stdio) carry
// many messages and are bounded per message where the transport allows
// it (WebSocket: 16 MiB).

// DefaultMaxResponseBytes bounds an answer when Options set no limit.
const DefaultMaxResponseBytes = 32 << 20

// TooLargeError is an upstream answer larger than the hub reads.
type TooLargeError struct {
	Server string
	Limit  int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("upstream %s answered more than %d bytes (%s, upstream.maxResponseBytes): ask the tool for less", e.Server, e.Limit, mibString(e.Limit))
}

func mibString(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d KiB", n>>10)
}

// maxResponseBytes is the limit of one answer.
func (o Options) maxResponseBytes() int64 {
	if o.MaxResponseBytes > 0 {
		return o.MaxResponseBytes
	}
	return DefaultMaxResponseBytes
}

// limitAnswers returns a copy of hc whose answers to POST requests fail
// with *TooLargeError past limit bytes.
func limitAnswers(hc *http.Client, server string, limit int64) *http.Client {
	c := *hc
	next := c.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	c.Transport = limitedTransport{next: next, err: &TooLargeError{Server: server, Limit: limit}}
	return &c
}

type limitedTransport struct {
	next http.RoundTripper
	err  *TooLargeError
}

func (t limitedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || req.Method != http.MethodPost {
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
	// page, on the answer to a list request, applies the list's bounds
	// (lists.go).
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
