package upstream

// A tool may answer more than the hub should hold: a log dump, a whole
// repository listing. Every answer to a request the hub POSTs to an
// upstream (the direct tools/call, and mcp-go's streamable HTTP client) is
// read through a limit (package httpbound); past it the call fails with
// *httpbound.TooLargeError. Streams (an SSE GET, the WebSocket connection,
// stdio) carry many messages and are bounded per message where the
// transport allows it (WebSocket: 16 MiB).

// DefaultMaxResponseBytes bounds an answer when Options set no limit.
const DefaultMaxResponseBytes = 32 << 20

// maxResponseBytes is the limit of one answer.
func (o Options) maxResponseBytes() int64 {
	if o.MaxResponseBytes > 0 {
		return o.MaxResponseBytes
	}
	return DefaultMaxResponseBytes
}
