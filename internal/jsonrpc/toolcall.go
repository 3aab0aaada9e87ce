package jsonrpc

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// ToolCall is the params of one tools/call, read once. What the hub decides
// on (Name) and what it sends on (Arguments, Meta, and the 2026-07-28
// multi-round-trip members) are the same values: a backend builds its
// request from these fields, never from the caller's bytes.
type ToolCall struct {
	Name string
	// Arguments is the raw arguments object, nil when absent.
	Arguments json.RawMessage
	// Meta is the caller's _meta by member, nil when absent.
	Meta map[string]json.RawMessage
	// Task is a task-augmented call's task member, nil when absent.
	Task json.RawMessage
	// InputResponses and RequestState carry a 2026-07-28 caller's answers
	// to an upstream's input requests; nil when absent.
	InputResponses json.RawMessage
	RequestState   json.RawMessage
}

// Meta keys the hub reads from a tools/call.
const (
	MetaProgressToken = "progressToken"
	// MetaLogLevel is a 2026-07-28 caller asking for log messages.
	MetaLogLevel = "io.modelcontextprotocol/logLevel"
	// MetaClientCapabilities is a 2026-07-28 caller's capabilities.
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	// MetaTraceparent and MetaTracestate carry a W3C trace context in a
	// request's _meta, for transports without headers (stdio, WebSocket).
	MetaTraceparent = "traceparent"
	MetaTracestate  = "tracestate"
)

// toolCallMembers are the members of tools/call params the hub reads.
var toolCallMembers = []string{"name", "arguments", "_meta", "task", "inputResponses", "requestState"}

// ProgressToken returns the caller's progress token, nil when none.
func (c *ToolCall) ProgressToken() json.RawMessage {
	if v, ok := c.Meta[MetaProgressToken]; ok && string(v) != "null" {
		return v
	}
	return nil
}

// Traceparent returns the W3C trace context the caller put in the call's
// _meta (stdio, WebSocket, SSE, or any caller that puts it there), "" when
// none.
func (c *ToolCall) Traceparent() string {
	var tp string
	if raw, ok := c.Meta[MetaTraceparent]; ok && json.Unmarshal(raw, &tp) == nil {
		return tp
	}
	return ""
}

// TakesInput reports whether the call comes from a 2026-07-28 caller that
// takes an upstream's input requests (it declares sampling, elicitation or
// roots in the call's _meta) or answers them (inputResponses,
// requestState): such a call must reach a 2026-07-28 server. Any other
// call does not care which revision carries it.
func (c *ToolCall) TakesInput() bool {
	if c.InputResponses != nil || c.RequestState != nil {
		return true
	}
	raw, ok := c.Meta[MetaClientCapabilities]
	if !ok || bytes.Equal(bytes.TrimSpace(raw), []byte("{}")) {
		return false
	}
	var caps struct {
		Sampling, Elicitation, Roots json.RawMessage
	}
	if json.Unmarshal(raw, &caps) != nil {
		return false
	}
	set := func(v json.RawMessage) bool { return len(v) > 0 && string(v) != "null" }
	return set(caps.Sampling) || set(caps.Elicitation) || set(caps.Roots)
}

// ParseToolCall reads tools/call params strictly: an object with a
// non-empty string name, an object (or absent) arguments and _meta, no
// member named twice in any letter case (in params, _meta or at the top of
// arguments). Members the MCP revisions do not define are dropped: nothing
// the hub did not read travels on. Its error is an *Error with code
// CodeInvalidParams.
func ParseToolCall(params json.RawMessage) (ToolCall, error) {
	return new(Reader).ParseToolCall(params)
}

// ParseToolCall is the package's ParseToolCall with r's decoders.
func (r *Reader) ParseToolCall(params json.RawMessage) (ToolCall, error) {
	var c ToolCall
	if len(params) == 0 || string(params) == "null" {
		return c, invalidParams("params: a tools/call needs params with a name")
	}
	d, members, err := r.scan(params)
	defer r.done(d)
	if err != nil {
		return c, invalidParams("params: %v", err)
	}
	hasName := false
	for _, m := range members {
		if known, bad := misCased(m, toolCallMembers); bad {
			return c, invalidParams("params member %q must be spelt %q; a server may read either", m.Key, known)
		}
		switch m.Key {
		case "name":
			if m.Value[0] == '"' {
				c.Name = text(m.Value)
			} else if err := json.Unmarshal(m.Value, &c.Name); err != nil {
				return c, invalidParams("params.name must be a string")
			}
			hasName = true
		case "arguments":
			if isNull(m.Value) {
				continue
			}
			if m.Value[0] != '{' {
				return c, invalidParams("params.arguments must be an object")
			}
			// The decoder has refused a member named twice exactly in
			// arguments; names differing in case are the tool's business (a
			// schema may define "id" beside "ID").
			c.Arguments = m.Value
		case "_meta":
			if isNull(m.Value) {
				continue
			}
			if c.Meta, err = r.meta(m.Value); err != nil {
				return c, err
			}
		case "task":
			if !isNull(m.Value) {
				c.Task = m.Value
			}
		case "inputResponses":
			if !isNull(m.Value) {
				c.InputResponses = m.Value
			}
		case "requestState":
			if !isNull(m.Value) {
				c.RequestState = m.Value
			}
		}
	}
	if !hasName || c.Name == "" {
		return c, invalidParams("params.name: a tools/call needs the name of a tool")
	}
	return c, nil
}

func isNull(v json.RawMessage) bool { return len(v) == 0 || string(v) == "null" }

func invalidParams(format string, args ...any) *Error {
	return &Error{Code: CodeInvalidParams, Message: "invalid params: " + fmt.Sprintf(format, args...)}
}

// meta reads a tools/call's _meta object (checkMeta) into a map.
func (r *Reader) meta(raw []byte) (map[string]json.RawMessage, error) {
	d, meta, err := r.scan(raw)
	defer r.done(d)
	if err != nil {
		return nil, invalidParams("params._meta: %v", err)
	}
	if err := checkMeta(meta); err != nil {
		return nil, err
	}
	out := make(map[string]json.RawMessage, len(meta))
	for _, mm := range meta {
		out[mm.Key] = mm.Value
	}
	return out, nil
}
