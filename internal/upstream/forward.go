package upstream

import (
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
)

// perRequestProtocolMeta are the _meta keys with which a 2026-07-28 client
// describes itself on every request. They belong to the downstream hop: the
// hub speaks to the upstream with its own revision and identity, and an
// upstream on an older revision would reject a request that carries them
// without the matching headers.
var perRequestProtocolMeta = []string{
	mcp.MetaKeyProtocolVersion,
	mcp.MetaKeyClientInfo,
	mcp.MetaKeyClientCapabilities,
	mcp.MetaKeyLogLevel,
	mcp.MetaKeySubscriptionID,
}

// forwardedMeta is the caller's _meta without the downstream hop's
// protocol members.
func forwardedMeta(meta map[string]json.RawMessage) map[string]json.RawMessage {
	if len(meta) == 0 {
		return nil
	}
	out := make(map[string]json.RawMessage, len(meta))
	for k, v := range meta {
		if !isProtocolMeta(k) {
			out[k] = v
		}
	}
	return out
}

func isProtocolMeta(key string) bool {
	for _, k := range perRequestProtocolMeta {
		if key == k {
			return true
		}
	}
	return false
}
