package dispatch

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/purko-io/mcp-hub/internal/jsonrpc"
)

// Protocol revision 2026-07-28 has no initialize handshake: every request
// says in its _meta which revision it speaks, who the client is, what it
// can do and which log messages it wants, and every result says it is
// complete and who answered (and, for lists and reads, how long it may be
// cached). The dispatcher reads the one and writes the other for the
// hub's methods, as mcp-go's server does for the session layer's, so a
// handler sees the same request context (server.RequestProtocolInfo)
// whoever serves the method.

// protocolInfo reads the revision members of a request's _meta. A request
// without a 2026-07-28 revision gets nil (the legacy era: its session's
// handshake fixed its revision).
func protocolInfo(meta map[string]json.RawMessage) (*server.RequestProtocolInfo, *jsonrpc.Error) {
	rawVersion, ok := meta[mcp.MetaKeyProtocolVersion]
	if !ok {
		return nil, nil
	}
	var version string
	if json.Unmarshal(rawVersion, &version) != nil || !mcp.IsModernProtocol(version) {
		return nil, nil
	}
	if !mcp.IsValidProtocolVersion(version) {
		e := mcp.UnsupportedProtocolVersionError{Version: version, Supported: mcp.ValidProtocolVersions}.JSONRPCError()
		data, _ := json.Marshal(e.Error.Data)
		return nil, &jsonrpc.Error{Code: e.Error.Code, Message: e.Error.Message, Data: data}
	}
	info := &server.RequestProtocolInfo{Modern: true, ProtocolVersion: version}
	var caps mcp.ClientCapabilities
	if raw, ok := meta[mcp.MetaKeyClientCapabilities]; !ok || json.Unmarshal(raw, &caps) != nil {
		// Required on every request of the revision (an empty object is
		// "no optional capabilities").
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "missing or invalid _meta field " + mcp.MetaKeyClientCapabilities}
	}
	info.ClientCapabilities = &caps
	if raw, ok := meta[mcp.MetaKeyClientInfo]; ok {
		var ci mcp.Implementation
		if json.Unmarshal(raw, &ci) == nil {
			info.ClientInfo = &ci
		}
	}
	if raw, ok := meta[mcp.MetaKeyLogLevel]; ok {
		_ = json.Unmarshal(raw, &info.LogLevel)
	}
	return info, nil
}

// withProtocol is ctx with the revision a request declared, for the
// handler (and what it relays) to read as mcp-go's handlers do.
func withProtocol(ctx context.Context, info *server.RequestProtocolInfo) context.Context {
	if info == nil {
		return ctx
	}
	return server.WithRequestProtocolInfo(ctx, info)
}

// cacheable are the methods whose 2026-07-28 result carries caching hints.
var cacheable = map[string]bool{
	string(mcp.MethodToolsList): true, string(mcp.MethodPromptsList): true, string(mcp.MethodResourcesList): true,
	string(mcp.MethodResourcesTemplatesList): true, string(mcp.MethodResourcesRead): true,
}

// stamp adds to a 2026-07-28 result what the revision requires that the
// handler did not set: resultType, the server's identity in _meta, and for
// lists and reads the caching hints (no caching, private: what a caller
// may see depends on who it is).
func (d *Dispatcher) stamp(method string, result json.RawMessage) (json.RawMessage, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(result, &members); err != nil || members == nil {
		return result, nil // not an object: nothing to stamp
	}
	if _, ok := members["resultType"]; !ok {
		members["resultType"] = json.RawMessage(`"` + string(mcp.ResultTypeComplete) + `"`)
	}
	var meta map[string]json.RawMessage
	if raw, ok := members["_meta"]; ok {
		_ = json.Unmarshal(raw, &meta)
	}
	if meta == nil {
		meta = map[string]json.RawMessage{}
	}
	if _, ok := meta[mcp.MetaKeyServerInfo]; !ok {
		meta[mcp.MetaKeyServerInfo] = d.serverInfo
		raw, err := json.Marshal(meta)
		if err != nil {
			return nil, fmt.Errorf("stamp the result's _meta: %w", err)
		}
		members["_meta"] = raw
	}
	if cacheable[method] {
		if _, ok := members["ttlMs"]; !ok {
			members["ttlMs"] = json.RawMessage(`0`)
		}
		if _, ok := members["cacheScope"]; !ok {
			members["cacheScope"] = json.RawMessage(`"private"`)
		}
	}
	return json.Marshal(members)
}
