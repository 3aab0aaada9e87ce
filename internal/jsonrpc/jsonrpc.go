// Package jsonrpc reads JSON-RPC 2.0 messages once, strictly, for every face
// of the hub and for its upstream connections. Strict means: a message is
// one JSON object; no member of the envelope, of params or of a tools/call's
// _meta appears twice, not even in another letter case. Go's encoding/json
// (and many other decoders) match member names case-insensitively and let
// the last one win, so a message that names a member twice means one thing
// to the hub and another to the server behind it. Refusing such messages is
// the only reading both sides agree on.
//
// The package imports nothing of the hub's: the server faces, the upstream
// clients and the WebSocket transport all classify messages with it.
package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// Version is the only JSON-RPC version there is.
const Version = "2.0"

// The standard JSON-RPC error codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
)

// CodeServerBusy is the hub's code (in the implementation-defined server
// error range) of a request refused over a limit: a rate or concurrency
// limit of tool calls, a session cap. The error's data says when to retry.
const CodeServerBusy = -32000

// Error is a JSON-RPC error object. It is also a Go error, so a backend's
// JSON-RPC error can travel to the caller unchanged.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("%s (JSON-RPC error %d)", e.Message, e.Code) }

// Kind says what a message is.
type Kind int

// The kinds of message.
const (
	// KindNotification has a method and no id.
	KindNotification Kind = iota
	// KindRequest has an id and a method (or nothing else: it is answered
	// with an error rather than dropped).
	KindRequest
	// KindResponse has an id, no method, and a result or an error.
	KindResponse
)

// Message is one JSON-RPC message as read. Raw members stay bytes.
type Message struct {
	JSONRPC string
	// ID is the raw id, nil when absent.
	ID     json.RawMessage
	Method string
	Params json.RawMessage
	Result json.RawMessage
	Error  json.RawMessage
}

// HasID reports whether the message carries a non-null id.
func (m *Message) HasID() bool { return len(m.ID) > 0 && string(m.ID) != "null" }

// Kind classifies the message.
func (m *Message) Kind() Kind {
	switch {
	case m.Method == "" && (m.Result != nil || m.Error != nil):
		return KindResponse
	case m.HasID():
		return KindRequest
	default:
		return KindNotification
	}
}

// Parse reads one message strictly. Its error is an *Error with the code a
// caller should be answered with: parse error for bytes that are not one
// JSON object, invalid request for a bad envelope.
func Parse(raw []byte) (*Message, error) {
	members, err := Object(raw)
	if err != nil {
		var dup *DuplicateError
		if errors.As(err, &dup) {
			if strings.HasPrefix(dup.First, "params/") {
				return nil, &Error{Code: CodeInvalidParams, Message: "invalid params: " + err.Error()}
			}
			return nil, &Error{Code: CodeInvalidRequest, Message: "invalid request: " + err.Error()}
		}
		if errors.Is(err, errNotObject) && json.Valid(raw) {
			return nil, &Error{Code: CodeInvalidRequest, Message: "invalid request: " + err.Error()}
		}
		return nil, &Error{Code: CodeParseError, Message: "parse error: " + err.Error()}
	}
	m := &Message{}
	for _, mb := range members {
		if known, bad := misCased(mb, envelopeMembers); bad {
			return nil, &Error{Code: CodeInvalidRequest, Message: fmt.Sprintf("invalid request: member %q must be spelt %q; a server may read either", mb.Key, known)}
		}
		switch mb.Key {
		case "jsonrpc":
			if err := json.Unmarshal(mb.Value, &m.JSONRPC); err != nil {
				return nil, &Error{Code: CodeInvalidRequest, Message: "invalid request: jsonrpc must be the string \"2.0\""}
			}
		case "id":
			if c := mb.Value[0]; c != '"' && c != 'n' && c != '-' && (c < '0' || c > '9') {
				return nil, &Error{Code: CodeInvalidRequest, Message: "invalid request: id must be a string or a number"}
			}
			m.ID = mb.Value
		case "method":
			if err := json.Unmarshal(mb.Value, &m.Method); err != nil {
				return nil, &Error{Code: CodeInvalidRequest, Message: "invalid request: method must be a string"}
			}
		case "params":
			m.Params = mb.Value
		case "result":
			m.Result = mb.Value
		case "error":
			m.Error = mb.Value
		}
	}
	if m.JSONRPC != Version {
		return nil, &Error{Code: CodeInvalidRequest, Message: `invalid request: jsonrpc must be "2.0"`}
	}
	if m.Method != "" && len(m.Params) > 0 && string(m.Params) != "null" {
		// Every member of params is read by someone; none may be named twice.
		if c := m.Params[0]; c == '{' {
			params, err := Object(m.Params)
			if err != nil {
				return nil, &Error{Code: CodeInvalidParams, Message: "invalid params: " + err.Error()}
			}
			for _, p := range params {
				if known, bad := misCased(p, []string{"_meta"}); bad {
					return nil, invalidParams("params member %q must be spelt %q; a server may read either", p.Key, known)
				}
				if p.Key == "_meta" && p.Value[0] == '{' {
					meta, err := Object(p.Value)
					if err != nil {
						return nil, &Error{Code: CodeInvalidParams, Message: "invalid params: _meta: " + err.Error()}
					}
					if err := checkMeta(meta); err != nil {
						return nil, err
					}
				}
			}
		} else if c != '[' {
			return nil, &Error{Code: CodeInvalidParams, Message: "invalid params: params must be an object"}
		}
	}
	return m, nil
}

// Meta returns the members of params._meta, nil when there are none. Parse
// has checked them.
func (m *Message) Meta() map[string]json.RawMessage {
	if len(m.Params) == 0 || m.Params[0] != '{' {
		return nil
	}
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(m.Params, &p) != nil {
		return nil
	}
	return p.Meta
}

// IDOf returns the raw id of a message that may be malformed, so even a
// refused request is answered with its own id; nil when there is none.
func IDOf(raw []byte) json.RawMessage {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return m.ID
}

// Member is one member of a JSON object.
type Member struct {
	Key   string
	Value json.RawMessage
	// folded is Key as a case-insensitive decoder matches it.
	folded string
}

// DuplicateError names a member that appears twice, in the same or another
// letter case.
type DuplicateError struct{ First, Second string }

func (e *DuplicateError) Error() string {
	if e.First == e.Second {
		return fmt.Sprintf("member %q appears twice", e.First)
	}
	return fmt.Sprintf("members %q and %q differ only in letter case; a server may read either", e.First, e.Second)
}

// Object reads raw as one JSON object and returns its members in order. A
// member named twice, in any letter case, is a *DuplicateError; trailing
// data after the object is an error.
func Object(raw []byte) ([]Member, error) { return members(raw, true) }

// members reads an object and returns its members, values as slices of
// raw. The decoder refuses a member named twice exactly in any object at
// any depth; foldCase also makes names of this object that differ only in
// letter case duplicates.
func members(raw []byte, foldCase bool) ([]Member, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, syntaxError(err)
	}
	if tok.Kind() != '{' {
		return nil, errNotObject
	}
	out := make([]Member, 0, 8)
	var index map[string]string // folded name -> name, for large objects
	for dec.PeekKind() == '"' {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, syntaxError(err)
		}
		key := tok.String()
		folded := key
		if foldCase {
			folded = fold(key)
			if first, dup := duplicateOf(out, index, folded); dup {
				return nil, &DuplicateError{First: first, Second: key}
			}
			if len(out) >= smallObject {
				if index == nil {
					index = make(map[string]string, 2*smallObject)
					for _, m := range out {
						index[m.folded] = m.Key
					}
				}
				index[folded] = key
			}
		}
		v, err := dec.ReadValue()
		if err != nil {
			return nil, syntaxError(err)
		}
		end := int(dec.InputOffset())
		out = append(out, Member{Key: key, Value: raw[end-len(v) : end : end], folded: folded})
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, syntaxError(err)
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, errors.New("not JSON: data after the object")
	}
	return out, nil
}

// envelopeMembers are the members of a JSON-RPC message.
var envelopeMembers = []string{"jsonrpc", "id", "method", "params", "result", "error"}

// metaMembers are the _meta members the hub reads itself.
var metaMembers = []string{MetaProgressToken, MetaTraceparent, MetaTracestate}

// misCased reports whether m is one of known spelt in another letter case:
// the hub reads the exact name, while a case-insensitive decoder behind it
// would read m as the known member, so the two would act on different
// values. It returns the spelling the hub reads.
func misCased(m Member, known []string) (string, bool) {
	for _, k := range known {
		if k != m.Key && fold(k) == m.folded {
			return k, true
		}
	}
	return "", false
}

// checkMeta refuses a _meta member that is a hub-read key in another
// letter case.
func checkMeta(meta []Member) error {
	for _, mm := range meta {
		if known, bad := misCased(mm, metaMembers); bad {
			return invalidParams("params._meta member %q must be spelt %q; a server may read either", mm.Key, known)
		}
	}
	return nil
}

// errNotObject is valid JSON that is not an object.
var errNotObject = errors.New("not a JSON object: one JSON-RPC message object expected (batches are not supported)")

// smallObject is how many members are searched one by one before an
// object's names go in a map.
const smallObject = 16

func duplicateOf(seen []Member, index map[string]string, folded string) (string, bool) {
	if index != nil {
		first, ok := index[folded]
		return first, ok
	}
	for _, m := range seen {
		if m.folded == folded {
			return m.Key, true
		}
	}
	return "", false
}

// syntaxError words a decoder error; a name the decoder saw twice is a
// *DuplicateError.
func syntaxError(err error) error {
	if errors.Is(err, jsontext.ErrDuplicateName) {
		var se *jsontext.SyntacticError
		name := ""
		if errors.As(err, &se) {
			name = strings.TrimPrefix(string(se.JSONPointer), "/")
		}
		return &DuplicateError{First: name, Second: name}
	}
	return fmt.Errorf("not JSON: %w", err)
}

// fold maps a member name to the form under which a case-insensitive
// decoder would match it. encoding/json folds with Unicode simple folding;
// strings.EqualFold agrees, so two names collide exactly when EqualFold
// says they are equal. ToLower(ToUpper(s)) is the canonical form of that
// relation for the names JSON members use.
func fold(s string) string {
	if isASCIILower(s) {
		return s
	}
	return strings.ToLower(strings.ToUpper(s))
}

func isASCIILower(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf || (c >= 'A' && c <= 'Z') {
			return false
		}
		// 'k' and 's' have non-ASCII case partners (the Kelvin sign and the
		// long s) that encoding/json folds onto them.
		if c == 'k' || c == 's' {
			return false
		}
	}
	return true
}
