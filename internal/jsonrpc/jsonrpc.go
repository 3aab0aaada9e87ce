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
	"slices"
	"strings"
	"sync"
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

// A Reader reads messages as the package's functions do, keeping its
// decoders for the next message: a decoder's state (its buffer, the member
// names it tracks to refuse duplicates) is most of what reading a message
// allocates. A face or a connection that reads many messages keeps one;
// the zero value is ready, and it is safe for concurrent use.
type Reader struct{ decoders sync.Pool }

// decoder is one reusable decoder, the reader it reads from, and the
// members of the object it read last (scan).
type decoder struct {
	src     bytes.Reader
	dec     jsontext.Decoder
	members []Member
}

func (r *Reader) decoder(raw []byte) *decoder {
	d, _ := r.decoders.Get().(*decoder)
	if d == nil {
		d = &decoder{}
	}
	d.src.Reset(raw)
	d.dec.Reset(&d.src)
	return d
}

func (r *Reader) done(d *decoder) {
	d.src.Reset(nil)
	clear(d.members) // they point into the message
	d.members = d.members[:0]
	r.decoders.Put(d)
}

// scan reads raw as Object does. The members are d's until r.done(d),
// which the caller owes whatever the error: a message is read without a
// new slice for each object in it.
func (r *Reader) scan(raw []byte) (d *decoder, members []Member, err error) {
	d = r.decoder(raw)
	d.members, err = readMembers(&d.dec, raw, d.members[:0])
	return d, d.members, err
}

// Parse reads one message strictly. Its error is an *Error with the code a
// caller should be answered with: parse error for bytes that are not one
// JSON object, invalid request for a bad envelope.
func Parse(raw []byte) (*Message, error) { return new(Reader).Parse(raw) }

// Parse is the package's Parse with r's decoders.
func (r *Reader) Parse(raw []byte) (*Message, error) {
	m, err := r.envelope(raw)
	if err != nil {
		return nil, err
	}
	if err := r.checkParams(m); err != nil {
		return nil, err
	}
	return m, nil
}

// ParseRequest is Parse, and for a tools/call request its call as
// ParseToolCall reads it (nil for any other message). ParseToolCall checks
// all that Parse checks of params, so they are read once.
func (r *Reader) ParseRequest(raw []byte) (*Message, *ToolCall, error) {
	m, err := r.envelope(raw)
	if err != nil {
		return nil, nil, err
	}
	if m.Method != "tools/call" || m.Kind() != KindRequest {
		if err := r.checkParams(m); err != nil {
			return nil, nil, err
		}
		return m, nil, nil
	}
	call, err := r.ParseToolCall(m.Params)
	if err != nil {
		return m, nil, err
	}
	return m, &call, nil
}

// envelope reads a message's members.
func (r *Reader) envelope(raw []byte) (*Message, error) {
	d, members, err := r.scan(raw)
	defer r.done(d)
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
			if string(mb.Value) == `"`+Version+`"` {
				m.JSONRPC = Version
			} else if err := json.Unmarshal(mb.Value, &m.JSONRPC); err != nil {
				return nil, &Error{Code: CodeInvalidRequest, Message: "invalid request: jsonrpc must be the string \"2.0\""}
			}
		case "id":
			if c := mb.Value[0]; c != '"' && c != 'n' && c != '-' && (c < '0' || c > '9') {
				return nil, &Error{Code: CodeInvalidRequest, Message: "invalid request: id must be a string or a number"}
			}
			m.ID = mb.Value
		case "method":
			if mb.Value[0] == '"' {
				m.Method = text(mb.Value)
			} else if err := json.Unmarshal(mb.Value, &m.Method); err != nil {
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
	return m, nil
}

// checkParams checks the params of a request or notification: an object
// (or array), no member named twice, _meta's members the hub reads spelt
// as it reads them.
func (r *Reader) checkParams(m *Message) error {
	if m.Method != "" && len(m.Params) > 0 && string(m.Params) != "null" {
		// Every member of params is read by someone; none may be named twice.
		if c := m.Params[0]; c == '{' {
			d, params, err := r.scan(m.Params)
			defer r.done(d)
			if err != nil {
				return &Error{Code: CodeInvalidParams, Message: "invalid params: " + err.Error()}
			}
			for _, p := range params {
				if known, bad := misCased(p, []string{"_meta"}); bad {
					return invalidParams("params member %q must be spelt %q; a server may read either", p.Key, known)
				}
				if p.Key == "_meta" && p.Value[0] == '{' {
					if err := r.checkMetaObject(p.Value); err != nil {
						return err
					}
				}
			}
		} else if c != '[' {
			return &Error{Code: CodeInvalidParams, Message: "invalid params: params must be an object"}
		}
	}
	return nil
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
// refused request is answered with its own id; nil when there is none or
// it is no string or number (true, {}, [1]): JSON-RPC 2.0 answers an id
// that could not be read with null, and echoing one would send a value no
// client can match.
func IDOf(raw []byte) json.RawMessage {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(raw, &m) != nil || len(m.ID) == 0 {
		return nil
	}
	if c := m.ID[0]; c != '"' && c != '-' && (c < '0' || c > '9') {
		return nil
	}
	return m.ID
}

// Member is one member of a JSON object.
type Member struct {
	Key   string
	Value json.RawMessage
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
func Object(raw []byte) ([]Member, error) { return new(Reader).Object(raw) }

// Object is the package's Object with r's decoders.
func (r *Reader) Object(raw []byte) ([]Member, error) {
	d, members, err := r.scan(raw)
	defer r.done(d)
	if err != nil {
		return nil, err
	}
	return slices.Clone(members), nil
}

// readMembers reads an object from dec (reading raw) and appends its
// members to out, values as slices of raw. The decoder refuses a member
// named twice exactly in any object at any depth; names of this object
// that differ only in letter case are duplicates too.
func readMembers(dec *jsontext.Decoder, raw []byte, out []Member) ([]Member, error) {
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, syntaxError(err)
	}
	if tok.Kind() != '{' {
		return nil, errNotObject
	}
	var index map[string]string // folded name -> name, for large objects
	for dec.PeekKind() == '"' {
		name, err := dec.ReadValue()
		if err != nil {
			return nil, syntaxError(err)
		}
		key := text(name)
		if first, dup := duplicateOf(out, index, key); dup {
			return nil, &DuplicateError{First: first, Second: key}
		}
		if len(out) >= smallObject {
			if index == nil {
				index = make(map[string]string, 2*smallObject)
				for _, m := range out {
					index[fold(m.Key)] = m.Key
				}
			}
			index[fold(key)] = key
		}
		v, err := dec.ReadValue()
		if err != nil {
			return nil, syntaxError(err)
		}
		end := int(dec.InputOffset())
		out = append(out, Member{Key: key, Value: raw[end-len(v) : end : end]})
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, syntaxError(err)
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, errors.New("not JSON: data after the object")
	}
	return out, nil
}

// text is the string a valid JSON string v stands for. The names the hub
// reads on every message (members, methods) come back as constants: a
// message is read without a new string for each of them.
func text(v []byte) string {
	if len(v) < 2 || v[0] != '"' {
		return ""
	}
	raw := v[1 : len(v)-1]
	if bytes.IndexByte(raw, '\\') >= 0 {
		b, err := jsontext.AppendUnquote(nil, v)
		if err != nil {
			return ""
		}
		return string(b)
	}
	switch string(raw) {
	case "jsonrpc":
		return "jsonrpc"
	case "id":
		return "id"
	case "method":
		return "method"
	case "params":
		return "params"
	case "result":
		return "result"
	case "error":
		return "error"
	case "name":
		return "name"
	case "arguments":
		return "arguments"
	case "_meta":
		return "_meta"
	case "tools/call":
		return "tools/call"
	case "tools/list":
		return "tools/list"
	}
	return string(raw)
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
		if k != m.Key && strings.EqualFold(k, m.Key) {
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

// checkMetaObject reads a _meta object and checks it (checkMeta); its
// error is the invalid params to answer with.
func (r *Reader) checkMetaObject(raw []byte) error {
	d, meta, err := r.scan(raw)
	defer r.done(d)
	if err != nil {
		return &Error{Code: CodeInvalidParams, Message: "invalid params: _meta: " + err.Error()}
	}
	return checkMeta(meta)
}

// errNotObject is valid JSON that is not an object.
var errNotObject = errors.New("not a JSON object: one JSON-RPC message object expected (batches are not supported)")

// smallObject is how many members are searched one by one before an
// object's names go in a map.
const smallObject = 16

// duplicateOf returns the member of seen whose name a case-insensitive
// decoder would take for key: found in index (folded name to name) once an
// object is large, compared one by one before.
func duplicateOf(seen []Member, index map[string]string, key string) (string, bool) {
	if index != nil {
		first, ok := index[fold(key)]
		return first, ok
	}
	for _, m := range seen {
		if strings.EqualFold(m.Key, key) {
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

// Member returns the value of the member of the object raw named exactly
// name, nil when raw is not an object or has no such member. It reads the
// names of the object and skips over their values: the pipeline reads a
// result's isError so, without decoding the content it passes through.
func (r *Reader) Member(raw []byte, name string) json.RawMessage {
	d := r.decoder(raw)
	defer r.done(d)
	dec := &d.dec
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil
	}
	for dec.PeekKind() == '"' {
		key, err := dec.ReadValue() // a name: its bytes, not a new string
		if err != nil {
			return nil
		}
		match := len(key) == len(name)+2 && string(key[1:len(key)-1]) == name
		if !match {
			if dec.SkipValue() != nil {
				return nil
			}
			continue
		}
		v, err := dec.ReadValue()
		if err != nil {
			return nil
		}
		end := int(dec.InputOffset())
		return raw[end-len(v) : end : end]
	}
	return nil
}
