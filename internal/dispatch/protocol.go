package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/go-json-experiment/json/jsontext"

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
//
// It splices the members into the result's bytes, which it reads once
// (top-level names, the _meta object): a tool's result may be 100 KB, and
// decoding it into a map to encode it again cost 2 ms of a 10 ms call.
// Members keep their order; the added ones come last.
func (d *Dispatcher) stamp(method string, result json.RawMessage) (json.RawMessage, error) {
	top, ok := readTop(result)
	if !ok {
		return result, nil // not an object: nothing to stamp
	}
	var meta []byte // the result's own _meta, nil when it has none
	if top.metaEnd > 0 {
		meta = result[top.metaStart:top.metaEnd]
	}
	newMeta, err := d.withServerInfo(meta)
	if err != nil {
		return nil, err
	}
	var add [][2]string // name, value
	if !top.has["resultType"] {
		add = append(add, [2]string{"resultType", `"` + string(mcp.ResultTypeComplete) + `"`})
	}
	if meta == nil {
		add = append(add, [2]string{"_meta", string(newMeta)})
	}
	if cacheable[method] {
		if !top.has["ttlMs"] {
			add = append(add, [2]string{"ttlMs", "0"})
		}
		if !top.has["cacheScope"] {
			add = append(add, [2]string{"cacheScope", `"private"`})
		}
	}
	if len(add) == 0 && newMeta == nil {
		return result, nil
	}
	out := make([]byte, 0, len(result)+len(d.serverInfo)+128)
	if meta != nil && newMeta != nil {
		out = append(append(append(out, result[:top.metaStart]...), newMeta...), result[top.metaEnd:top.close]...)
	} else {
		out = append(out, result[:top.close]...)
	}
	for i, m := range add {
		if top.members > 0 || i > 0 {
			out = append(out, ',')
		}
		out = append(append(append(append(out, '"'), m[0]...), `":`...), m[1]...)
	}
	return append(out, result[top.close:]...), nil
}

// withServerInfo is the _meta object meta (its bytes; nil when the result
// has none) with the hub's identity added, nil when it names one already.
// A _meta that is no object is replaced by one.
func (d *Dispatcher) withServerInfo(meta []byte) ([]byte, error) {
	var members map[string]json.RawMessage
	if meta != nil && json.Unmarshal(meta, &members) == nil && members != nil {
		if _, ok := members[mcp.MetaKeyServerInfo]; ok {
			return nil, nil
		}
	}
	if members == nil {
		members = map[string]json.RawMessage{}
	}
	members[mcp.MetaKeyServerInfo] = d.serverInfo
	raw, err := json.Marshal(members)
	if err != nil {
		return nil, fmt.Errorf("stamp the result's _meta: %w", err)
	}
	return raw, nil
}

// top is what stamp reads of a result object: its top-level names, the
// span of its _meta value (metaEnd 0: none), the offset of its closing
// brace and how many members it has.
type top struct {
	has                       map[string]bool
	metaStart, metaEnd, close int
	members                   int
}

// readTop reads raw as one JSON object; false when it is none (or not
// JSON).
func readTop(raw []byte) (top, bool) {
	t := top{has: map[string]bool{}}
	// A bytes.Buffer is read where it is, not copied into the decoder.
	dec := jsontext.NewDecoder(bytes.NewBuffer(raw))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return t, false
	}
	for dec.PeekKind() == '"' {
		name, err := dec.ReadToken()
		if err != nil {
			return t, false
		}
		t.members++
		n := name.String()
		t.has[n] = true
		if n != "_meta" {
			if dec.SkipValue() != nil {
				return t, false
			}
			continue
		}
		v, err := dec.ReadValue()
		if err != nil {
			return t, false
		}
		t.metaEnd = int(dec.InputOffset())
		t.metaStart = t.metaEnd - len(v)
	}
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '}' {
		return t, false
	}
	t.close = int(dec.InputOffset()) - 1
	if _, err := dec.ReadToken(); !errors.Is(err, io.EOF) {
		return t, false // more after the object
	}
	return t, true
}
