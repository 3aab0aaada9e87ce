package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/gorilla/websocket"
	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/mcpws"
	"github.com/purko-io/mcp-hub/internal/upstream/httpbound"
	"github.com/purko-io/mcp-hub/internal/upstream/liblog"
	"github.com/purko-io/mcp-hub/internal/upstream/stdiochild"
	"github.com/purko-io/mcp-hub/internal/upstream/streambound"
)

// newTransport makes the transport of one connection. Every message it
// reads is bounded by the limit of an answer (streambound): one over it
// ends the connection through end, with the *streambound.TooLargeError
// as the cause the connection's status shows.
func (c *Client) newTransport(legacy bool, end context.CancelCauseFunc) (transport.Interface, error) {
	bound := &streambound.Bound{Server: c.spec.Name, Limit: c.opts.maxResponseBytes(),
		Over: func(e *streambound.TooLargeError) { end(e) }}
	switch c.spec.Transport {
	case config.TransportStreamableHTTP:
		opts := []transport.StreamableHTTPCOption{
			transport.WithHTTPHeaders(c.cred.headers()),
			transport.WithHTTPLogger(c.cred.transportLog(c.log)),
			transport.WithHTTPBasicClient(httpbound.Streams(c.opts.HTTPClient, bound, "GET event stream")),
		}
		if legacy {
			opts = append(opts, transport.WithContinuousListening())
		}
		tr, err := transport.NewStreamableHTTP(c.spec.URL, opts...)
		if err != nil {
			return nil, fmt.Errorf("streamable HTTP transport: %w", err)
		}
		return tr, nil
	case config.TransportSSE:
		opts := []transport.ClientOption{transport.WithHeaders(c.cred.headers()), transport.WithSSELogger(c.cred.transportLog(c.log)),
			transport.WithHTTPClient(httpbound.Streams(c.opts.HTTPClient, bound, "SSE stream"))}
		tr, err := transport.NewSSE(c.spec.URL, opts...)
		if err != nil {
			return nil, fmt.Errorf("SSE transport: %w", err)
		}
		return tr, nil
	case config.TransportWebSocket:
		h := http.Header{}
		for k, v := range c.cred.headers() {
			h.Set(k, v)
		}
		if c.cred.oauth != nil {
			// The handshake is the one HTTP request of a WebSocket: the
			// token goes in its headers, fetched (or reused) at dial time.
			tok, err := c.cred.oauth.Token()
			if err != nil {
				return nil, err
			}
			h.Set("Authorization", "Bearer "+tok.AccessToken)
		}
		opts := append(wsOptions(&c.opts, c.loops), mcpws.WithMessageLimit(bound.Limit))
		return wsBounded{mcpws.NewClientTransport(c.spec.URL, h, opts...), bound}, nil
	case config.TransportStdio:
		env := make([]string, 0, len(c.spec.Env))
		for k, v := range c.spec.Env {
			env = append(env, k+"="+v)
		}
		tr, err := stdiochild.NewTransport(c.spec.Command, env, c.spec.Args,
			func(stdout io.Reader) io.Reader { return bound.Lines(stdout, "stdout") },
			liblog.Stderr(c.log, c.cred.text), c.cred.transportLog(c.log))
		if err != nil {
			return nil, fmt.Errorf("stdio transport: %w", err)
		}
		return tr, nil
	}
	return nil, fmt.Errorf("transport %q is not supported", c.spec.Transport)
}

// wsBounded is a WebSocket transport whose message limit (met in its
// frames' headers, mcpws.WithMessageLimit) ends the connection with the
// bound's own error rather than the transport's words for it, told before
// a request that the end failed returns.
type wsBounded struct {
	*mcpws.ClientTransport
	bound *streambound.Bound
}

func (t wsBounded) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	resp, err := t.ClientTransport.SendRequest(ctx, req)
	t.check(err)
	return resp, err
}

func (t wsBounded) SetConnectionLostHandler(handler func(error)) {
	t.ClientTransport.SetConnectionLostHandler(func(err error) {
		t.check(err)
		handler(err)
	})
}

// check tells the bound of a connection ended by a message over it.
func (t wsBounded) check(err error) {
	if errors.Is(err, websocket.ErrReadLimit) {
		t.bound.Over(&streambound.TooLargeError{Server: t.bound.Server, Limit: t.bound.Limit, Stream: "WebSocket connection"})
	}
}
