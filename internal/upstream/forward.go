package upstream

import (
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/jsonrpc"
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

// forwardable returns the request the upstream sees through mcp-go's
// client: the decided name, the caller's arguments byte for byte, the
// caller's _meta (progress token included) minus the downstream hop's
// protocol members, and a 2026-07-28 caller's answers to input requests.
func forwardable(call jsonrpc.ToolCall) mcp.CallToolRequest {
	out := mcp.CallToolRequest{}
	out.Params.Name = call.Name
	if call.Arguments != nil {
		out.Params.Arguments = call.Arguments
		out.Params.RawArguments = call.Arguments
	}
	if meta := forwardedMeta(call.Meta); len(meta) > 0 {
		m := &mcp.Meta{}
		for k, v := range meta {
			if k == jsonrpc.MetaProgressToken {
				var token mcp.ProgressToken
				if json.Unmarshal(v, &token) == nil {
					m.ProgressToken = token
				}
				continue
			}
			var val any
			if json.Unmarshal(v, &val) == nil {
				if m.AdditionalFields == nil {
					m.AdditionalFields = make(map[string]any, len(meta))
				}
				m.AdditionalFields[k] = val
			}
		}
		out.Params.Meta = m
	}
	if call.InputResponses != nil {
		_ = json.Unmarshal(call.InputResponses, &out.Params.InputResponses)
	}
	if call.RequestState != nil {
		_ = json.Unmarshal(call.RequestState, &out.Params.RequestState)
	}
	return out
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
