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

// forwardable returns the request the upstream should see: the tool's
// original name, the caller's arguments byte for byte, and the caller's
// _meta (progress token included) minus the downstream hop's protocol fields
// and HTTP headers.
func forwardable(req mcp.CallToolRequest, original string) mcp.CallToolRequest {
	out := mcp.CallToolRequest{}
	out.Params.Name = original
	out.Params.Arguments = req.Params.Arguments
	if len(req.Params.RawArguments) > 0 {
		out.Params.Arguments = json.RawMessage(req.Params.RawArguments)
	}
	if m := req.Params.Meta; m != nil {
		meta := &mcp.Meta{ProgressToken: m.ProgressToken}
		for k, v := range m.AdditionalFields {
			if !isProtocolMeta(k) {
				if meta.AdditionalFields == nil {
					meta.AdditionalFields = make(map[string]any, len(m.AdditionalFields))
				}
				meta.AdditionalFields[k] = v
			}
		}
		if meta.ProgressToken != nil || meta.AdditionalFields != nil {
			out.Params.Meta = meta
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
