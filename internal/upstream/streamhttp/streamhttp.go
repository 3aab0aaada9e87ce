// Package streamhttp is the hub's own POST of one JSON-RPC request on a
// Streamable HTTP session, and the reading of its answer (JSON, or an
// event stream read up to the response). mcp-go's client re-encodes a
// request several times on its way out and decodes the whole result on
// its way back; this passes params and result through as bytes, which is
// what makes a plain tools/call to a streamable HTTP upstream fast. The
// session (its id, the negotiated revision) stays with mcp-go's client:
// a Post borrows it as headers.
//
// A Post answers as every way out of the hub does: the result's bytes as
// the upstream wrote them; the upstream's JSON-RPC error as
// *jsonrpc.Error, code, message and data kept; an answer over the limit
// as *httpbound.TooLargeError; anything else as a transport.Error.
package streamhttp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/upstream/httpbound"
)

// Post sends requests as POSTs on one Streamable HTTP session.
type Post struct {
	// Client sends the POSTs; its answers are limited (httpbound.Limit).
	Client *http.Client
	URL    *url.URL
	// Header is sent with every request: static headers, auth, protocol
	// version, session id.
	Header http.Header
	// IDs numbers the requests, shared with the session's other requests.
	IDs *atomic.Uint64
	// MaxResponseBytes is the limit Client reads of one answer; an event
	// stream's lines are read up to it.
	MaxResponseBytes int64
	// Excerpt reads at most n bytes of an error body for the error's
	// text, redacted of the upstream's credentials.
	Excerpt func(r io.Reader, n int) string
	// RefuseFailed is told of a server request that could not be refused
	// (see Request); nil: nobody is.
	RefuseFailed func(err error, method string)

	// reader reads the answers, keeping its decoders between them.
	reader jsonrpc.Reader
	// redirected is set once the upstream answered a POST with a
	// redirect: from then on every POST goes through Client.Do.
	redirected atomic.Bool
}

// Request sends one JSON-RPC request (params final) with the extra
// headers and returns the raw result. A request the upstream sends on
// the answer's stream is refused at once with an error: a Post serves
// callers that take no server requests, so the upstream's tool fails with
// the reason instead of waiting for an answer that never comes.
func (p *Post) Request(ctx context.Context, method mcp.MCPMethod, params json.RawMessage, extra map[string]string) (json.RawMessage, error) {
	body := make([]byte, 0, len(params)+len(method)+64)
	body = append(body, `{"jsonrpc":"2.0","id":"hub-`...)
	body = strconv.AppendUint(body, p.IDs.Add(1), 10)
	id := string(body[len(`{"jsonrpc":"2.0","id":"`):])
	body = append(body, `","method":`...)
	body = strconv.AppendQuote(body, string(method))
	body = append(body, `,"params":`...)
	body = append(body, params...)
	body = append(body, '}')

	// The session's headers as they are: no RoundTripper of the hub's
	// changes a request it is given (they clone it to add theirs).
	header := p.Header
	if len(extra) > 0 {
		header = p.Header.Clone()
		for k, v := range extra {
			header.Set(k, v)
		}
	}
	resp, err := p.send(ctx, header, body)
	if err != nil {
		return nil, transport.NewError(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxRefusalBytes))
		if err := versionRefusal(&p.reader, raw, id); err != nil {
			return nil, err
		}
		return nil, transport.NewError(fmt.Errorf("HTTP %s: %s", resp.Status, p.Excerpt(bytes.NewReader(raw), 256)))
	}
	if mediaType(resp.Header.Get("Content-Type")) == "text/event-stream" {
		return readSSEResponse(&p.reader, resp.Body, id, p.MaxResponseBytes, func(reqID json.RawMessage, method string) {
			p.refuse(ctx, reqID, method)
		})
	}
	raw, err := readAll(resp, p.MaxResponseBytes)
	if err != nil {
		return nil, ReadError(err)
	}
	return parseResponse(&p.reader, raw, id)
}

// readAll reads an answer's body: at once into a buffer of its length when
// it has one within limit (most answers), else as it comes.
func readAll(resp *http.Response, limit int64) ([]byte, error) {
	n := resp.ContentLength
	if n < 0 || n > limit {
		return io.ReadAll(resp.Body)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(resp.Body, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// send POSTs body. A request goes straight to the client's transport:
// http.Client.Do copies its headers for a redirect that may follow, on
// every request, and an upstream's answers are rarely redirects. An answer
// that is one is followed by sending the request again through Client.Do
// (whose CheckRedirect strips credentials), and so is every request after
// it; a client with a cookie jar or a timeout of its own always uses Do.
// Transport errors read as Do words them.
func (p *Post) send(ctx context.Context, header http.Header, body []byte) (*http.Response, error) {
	c := p.Client
	if c.Jar != nil || c.Timeout != 0 || p.redirected.Load() {
		return c.Do(p.post(ctx, header, body))
	}
	rt := c.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	resp, err := rt.RoundTrip(p.post(ctx, header, body))
	if err != nil {
		return nil, &url.Error{Op: "Post", URL: p.URL.Redacted(), Err: err}
	}
	switch resp.StatusCode {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		if resp.Header.Get("Location") == "" {
			return resp, nil // no redirect to follow: Do would return it too
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxRefusalBytes))
		resp.Body.Close()
		p.redirected.Store(true)
		return c.Do(p.post(ctx, header, body))
	}
	return resp, nil
}

// post is the POST of body to the session's URL, as
// http.NewRequestWithContext makes it (rewindable for a redirect or a
// retry on a fresh connection), without parsing the URL each time.
func (p *Post) post(ctx context.Context, header http.Header, body []byte) *http.Request {
	req := &http.Request{Method: http.MethodPost, URL: p.URL, Host: p.URL.Host, Header: header,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, ContentLength: int64(len(body))}
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	req.Body, _ = req.GetBody()
	return req.WithContext(ctx)
}

// refuse answers a request the upstream sent on the stream of a call that
// came without a way back to its caller (the POST serves callers that take
// no server requests): an error, so the upstream's tool fails at once with
// the reason instead of waiting for an answer that never comes.
func (p *Post) refuse(ctx context.Context, reqID json.RawMessage, method string) {
	msg, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      reqID,
		"error": map[string]any{
			"code":    mcp.METHOD_NOT_FOUND,
			"message": fmt.Sprintf("mcp-hub: this caller cannot receive %s (it did not declare the capability, or its protocol revision has no server requests)", method),
		},
	})
	resp, err := p.Client.Do(p.post(ctx, p.Header, msg))
	if err != nil {
		if p.RefuseFailed != nil {
			p.RefuseFailed(err, method)
		}
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// ReadError is the error of a failed read of an answer: an answer over
// the limit is the tool's doing and says so (the upstream is fine, and its
// breaker must not count it); anything else is a transport failure.
func ReadError(err error) error {
	var tooLarge *httpbound.TooLargeError
	if errors.As(err, &tooLarge) {
		return tooLarge
	}
	return transport.NewError(err)
}

// maxRefusalBytes bounds what is read of an HTTP error's body.
const maxRefusalBytes = 16 << 10

// versionRefusal is the error mcp-go's transport makes of an HTTP error
// whose body refuses the request's protocol revision (-32022, with the
// revisions the server takes), nil for any other body: a server that does
// not take 2026-07-28 answers the first request so, and the upstream's
// connect falls back to the initialize handshake on that error alone.
func versionRefusal(rd *jsonrpc.Reader, raw []byte, id string) error {
	_, err := parseResponse(rd, raw, id)
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != mcp.UNSUPPORTED_PROTOCOL_VERSION {
		return nil
	}
	return MCPError(rpcErr)
}

// MCPError is the error mcp-go's client makes of a JSON-RPC error: typed
// for the codes mcp-go knows (a refused revision, a header mismatch), so
// code that reacts to them reads them as it would from mcp-go.
func MCPError(e *jsonrpc.Error) error {
	d := &mcp.JSONRPCErrorDetails{Code: e.Code, Message: e.Message}
	if len(e.Data) > 0 {
		_ = json.Unmarshal(e.Data, &d.Data)
	}
	return d.AsError()
}

// parseResponse extracts the result of the response with our id.
func parseResponse(rd *jsonrpc.Reader, raw []byte, id string) (json.RawMessage, error) {
	m, err := rd.Parse(raw)
	if err != nil {
		return nil, transport.NewError(fmt.Errorf("unreadable response: %w", err))
	}
	if m.Kind() != jsonrpc.KindResponse || !sameID(m.ID, id) {
		return nil, transport.NewError(fmt.Errorf("response for id %s, want %q", m.ID, id))
	}
	if m.Error != nil {
		var rpcErr jsonrpc.Error
		if err := json.Unmarshal(m.Error, &rpcErr); err != nil {
			return nil, transport.NewError(fmt.Errorf("unreadable error response: %w", err))
		}
		return nil, &rpcErr
	}
	if len(m.Result) == 0 {
		return nil, transport.NewError(fmt.Errorf("response without result"))
	}
	return m.Result, nil
}

func sameID(raw json.RawMessage, id string) bool {
	return len(raw) == len(id)+2 && raw[0] == '"' && string(raw[1:len(raw)-1]) == id
}

// readSSEResponse reads an SSE reply until the event that answers id.
// Notifications before it (log messages) are not the caller's business on
// this path: it serves only requests without a progress token from callers
// that take no server requests. A server request is passed to refuse.
func readSSEResponse(rd *jsonrpc.Reader, r io.Reader, id string, limit int64, refuse func(id json.RawMessage, method string)) (json.RawMessage, error) {
	sc := bufio.NewScanner(r)
	// The body's own limit (httpbound.Limit) speaks first.
	sc.Buffer(make([]byte, 64<<10), int(limit)+2)
	var data []byte
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0:
			if len(data) > 0 {
				if m, err := rd.Parse(data); err == nil {
					switch {
					case m.Kind() == jsonrpc.KindResponse && sameID(m.ID, id):
						return parseResponse(rd, data, id)
					case m.Kind() == jsonrpc.KindRequest:
						refuse(m.ID, m.Method)
					}
				}
				data = data[:0]
			}
		case bytes.HasPrefix(line, []byte("data:")):
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))...)
		}
	}
	if len(data) > 0 {
		return parseResponse(rd, data, id)
	}
	if err := sc.Err(); err != nil {
		return nil, ReadError(err)
	}
	return nil, transport.NewError(fmt.Errorf("stream ended without a response"))
}

// mediaType is the media type of a Content-Type value, lower case, without
// its parameters: what mime.ParseMediaType returns for a valid one, without
// reading (and allocating) the parameters nobody here uses.
func mediaType(v string) string {
	if i := strings.IndexByte(v, ';'); i >= 0 {
		v = v[:i]
	}
	v = strings.TrimSpace(v)
	for i := 0; i < len(v); i++ {
		if c := v[i]; c >= 'A' && c <= 'Z' {
			return strings.ToLower(v)
		}
	}
	return v
}
