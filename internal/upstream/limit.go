package upstream

import (
	"context"
	"errors"

	"github.com/purko-io/mcp-hub/internal/upstream/streambound"
)

// A tool may answer more than the hub should hold: a log dump, a whole
// repository listing. Every answer to a request the hub POSTs to an
// upstream (the direct tools/call, and mcp-go's streamable HTTP client) is
// read through a limit (package httpbound); past it the call fails with
// *httpbound.TooLargeError, and the upstream stays connected: the answer
// was the tool's doing, and its stream ended with it.
//
// Streams carry many messages, and each is bounded by the same limit
// before a transport buffers it: the GET event stream of streamable HTTP,
// a 2026-07-28 subscriptions/listen stream, legacy SSE's event stream,
// stdio lines (package streambound), WebSocket messages (package mcpws).
// Answers come on some of these streams too, so none may be smaller. A
// message over it ends the connection with *streambound.TooLargeError:
// there is no way past it but reading it, and an upstream that sends one
// is not to be trusted with the rest of the stream. The status says so,
// and the connection is made again with the usual backoff.

// DefaultMaxResponseBytes bounds an answer when Options set no limit.
const DefaultMaxResponseBytes = 16 << 20

// maxResponseBytes is the limit of one answer, and of one message of a
// stream.
func (o Options) maxResponseBytes() int64 {
	if o.MaxResponseBytes > 0 {
		return o.MaxResponseBytes
	}
	return DefaultMaxResponseBytes
}

// streamBoundCause is the message over the stream bound that ended the
// session of ctx, nil when none did.
func streamBoundCause(ctx context.Context) *streambound.TooLargeError {
	var over *streambound.TooLargeError
	if errors.As(context.Cause(ctx), &over) {
		return over
	}
	return nil
}
