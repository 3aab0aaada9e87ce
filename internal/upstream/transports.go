package upstream

import (
	"fmt"
	"net/http"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/mcpws"
	"github.com/purko-io/mcp-hub/internal/upstream/liblog"
	"github.com/purko-io/mcp-hub/internal/upstream/stdiochild"
)

func (c *Client) newTransport(legacy bool) (transport.Interface, error) {
	switch c.spec.Transport {
	case config.TransportStreamableHTTP:
		opts := []transport.StreamableHTTPCOption{
			transport.WithHTTPHeaders(c.cred.headers()),
			transport.WithHTTPLogger(c.cred.transportLog(c.log)),
		}
		if c.opts.HTTPClient != nil {
			opts = append(opts, transport.WithHTTPBasicClient(c.opts.HTTPClient))
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
		opts := []transport.ClientOption{transport.WithHeaders(c.cred.headers()), transport.WithSSELogger(c.cred.transportLog(c.log))}
		if c.opts.HTTPClient != nil {
			opts = append(opts, transport.WithHTTPClient(c.opts.HTTPClient))
		}
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
		return mcpws.NewClientTransport(c.spec.URL, h, wsOptions(&c.opts, c.loops)...), nil
	case config.TransportStdio:
		env := make([]string, 0, len(c.spec.Env))
		for k, v := range c.spec.Env {
			env = append(env, k+"="+v)
		}
		return transport.NewStdioWithOptions(c.spec.Command, env, c.spec.Args,
			transport.WithCommandFunc(stdiochild.Command),
			transport.WithCommandStderrWriter(liblog.Stderr(c.log, c.cred.text)),
			transport.WithCommandLogger(c.cred.transportLog(c.log)),
		), nil
	}
	return nil, fmt.Errorf("transport %q is not supported", c.spec.Transport)
}
