// Package transports makes the mcp-go transport of a session with one
// upstream, for each transport the hub speaks (config.Transport):
// streamable HTTP, legacy SSE, WebSocket and stdio. Each takes what the
// hub holds of every upstream in the way that transport allows: the
// hub's credentials as headers (package credentials), a log redacted of
// them, the bound of every message it reads (package streambound), and,
// on a WebSocket, whose handshake is its one HTTP request, the dial
// policy and the loop check that HTTP transports get from their client.
//
// A package of its own so that the upstream's client asks for "a
// transport for this session" and the differences between transports
// stay here.
package transports

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/gorilla/websocket"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/mcpws"
	"github.com/purko-io/mcp-hub/internal/netpolicy"
	"github.com/purko-io/mcp-hub/internal/upstream/credentials"
	"github.com/purko-io/mcp-hub/internal/upstream/httpbound"
	"github.com/purko-io/mcp-hub/internal/upstream/liblog"
	"github.com/purko-io/mcp-hub/internal/upstream/loopcheck"
	"github.com/purko-io/mcp-hub/internal/upstream/stdiochild"
	"github.com/purko-io/mcp-hub/internal/upstream/streambound"
)

// Config is what the transports of one upstream are made with.
type Config struct {
	Spec config.ServerSpec
	// HTTPClient carries every HTTP request of the streamable HTTP and
	// SSE transports, with whatever it applies (the answer limit, the
	// redirect policy, the hub's OAuth token, the loop check).
	HTTPClient *http.Client
	// MaxMessageBytes bounds every message a transport reads; one over it
	// ends the connection (package streambound).
	MaxMessageBytes int64
	// Credentials are the hub's for the upstream: the headers of every
	// request, the redactor of the transport's log.
	Credentials *credentials.Set
	// Log is the upstream's log; the transports write to it at debug
	// level, redacted (package liblog).
	Log zerolog.Logger
	// Dial is the dial policy of a WebSocket upstream, whose handshake is
	// dialled within ConnectTimeout; nil: no policy.
	Dial           *netpolicy.Policy
	ConnectTimeout time.Duration
	// Loops checks a WebSocket's handshake answer for a loop back to the
	// hub; nil: no check.
	Loops *loopcheck.Watch
}

// New makes the transport of one session; legacy asks a streamable HTTP
// transport for the standalone GET stream a 2025-11-25 session gets
// list_changed on. Every message it reads is bounded by MaxMessageBytes
// (streambound): one over it ends the connection through end, with the
// *streambound.TooLargeError as the cause the connection's status shows.
func (cfg *Config) New(legacy bool, end context.CancelCauseFunc) (transport.Interface, error) {
	spec, cred := &cfg.Spec, cfg.Credentials
	bound := &streambound.Bound{Server: spec.Name, Limit: cfg.MaxMessageBytes,
		Over: func(e *streambound.TooLargeError) { end(e) }}
	switch spec.Transport {
	case config.TransportStreamableHTTP:
		opts := []transport.StreamableHTTPCOption{
			transport.WithHTTPHeaders(cred.Headers()),
			transport.WithHTTPLogger(cred.TransportLog(cfg.Log)),
			transport.WithHTTPBasicClient(httpbound.Streams(cfg.HTTPClient, bound, "GET event stream")),
		}
		if legacy {
			opts = append(opts, transport.WithContinuousListening())
		}
		tr, err := transport.NewStreamableHTTP(spec.URL, opts...)
		if err != nil {
			return nil, fmt.Errorf("streamable HTTP transport: %w", err)
		}
		return tr, nil
	case config.TransportSSE:
		opts := []transport.ClientOption{transport.WithHeaders(cred.Headers()), transport.WithSSELogger(cred.TransportLog(cfg.Log)),
			transport.WithHTTPClient(httpbound.Streams(cfg.HTTPClient, bound, "SSE stream"))}
		tr, err := transport.NewSSE(spec.URL, opts...)
		if err != nil {
			return nil, fmt.Errorf("SSE transport: %w", err)
		}
		return tr, nil
	case config.TransportWebSocket:
		h := http.Header{}
		for k, v := range cred.Headers() {
			h.Set(k, v)
		}
		if oauth := cred.OAuth(); oauth != nil {
			// The handshake is the one HTTP request of a WebSocket: the
			// token goes in its headers, fetched (or reused) at dial time.
			tok, err := oauth.Token()
			if err != nil {
				return nil, err
			}
			h.Set("Authorization", "Bearer "+tok.AccessToken)
		}
		opts := append(cfg.wsOptions(), mcpws.WithMessageLimit(bound.Limit))
		return wsBounded{mcpws.NewClientTransport(spec.URL, h, opts...), bound}, nil
	case config.TransportStdio:
		env := make([]string, 0, len(spec.Env))
		for k, v := range spec.Env {
			env = append(env, k+"="+v)
		}
		tr, err := stdiochild.NewTransport(spec.Command, env, spec.Args,
			func(stdout io.Reader) io.Reader { return bound.Lines(stdout, "stdout") },
			liblog.Stderr(cfg.Log, cred.Text), cred.Text, cred.TransportLog(cfg.Log))
		if err != nil {
			return nil, fmt.Errorf("stdio transport: %w", err)
		}
		return tr, nil
	}
	return nil, fmt.Errorf("transport %q is not supported", spec.Transport)
}

// wsOptions apply the dial policy and the loop check to a WebSocket
// upstream: its handshake is its one HTTP answer.
func (cfg *Config) wsOptions() []mcpws.ClientOption {
	var opts []mcpws.ClientOption
	if p := cfg.Dial; p != nil {
		opts = append(opts,
			mcpws.WithDialContext(p.Dialer(&net.Dialer{Timeout: cfg.ConnectTimeout}).DialContext),
			mcpws.WithProxy(p.Proxy(http.ProxyFromEnvironment)))
	}
	if cfg.Loops != nil {
		opts = append(opts, mcpws.WithAnswerCheck(cfg.Loops.Check))
	}
	return opts
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
