package jsonrpc

import (
	"encoding/json"
	"errors"
	"net/http"
)

// The one encoder of the JSON-RPC answers the hub writes itself: the /mcp
// fast path, the gate's refusals, the edge guards (internal/edge), an
// unknown session, a caller refused by auth. The faces that mcp-go writes
// put this encoding in place of mcp-go's (internal/server's replyMarks), so
// a call ends with the same answer, code and data included, whatever the
// face. It lives here, below every face and the edge, so that none of them
// needs a second one.

// Reply is the answer to the request id: result, or err as a JSON-RPC
// error.
func Reply(id, result json.RawMessage, err error) []byte {
	if err != nil {
		return ErrorReply(id, AsError(err))
	}
	return answer(id, "result", result)
}

// ErrorReply is the one encoding of a JSON-RPC error answer; id is the
// request's (null when nil).
func ErrorReply(id json.RawMessage, e *Error) []byte {
	b, _ := json.Marshal(e)
	return answer(id, "error", b)
}

// ErrorReplyTo is the JSON-RPC error answering the request raw, with the
// request's own id when it has one.
func ErrorReplyTo(raw []byte, err error) []byte {
	return ErrorReply(IDOf(raw), AsError(err))
}

// answer is a JSON-RPC answer with its member ("result" or "error") and a
// newline.
func answer(id json.RawMessage, member string, body []byte) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	out := make([]byte, 0, len(body)+len(id)+40)
	out = append(out, answerStart...)
	out = append(out, id...)
	out = append(out, `,"`...)
	out = append(out, member...)
	out = append(out, `":`...)
	out = append(out, body...)
	return append(out, answerEnd...)
}

// What every answer begins and ends with.
const (
	answerStart = `{"jsonrpc":"2.0","id":`
	answerEnd   = AnswerEnd
)

// AnswerEnd is the end of every answer, ResultParts' tail: a writer that
// keeps a large result may keep it after the result, and send the two in
// one write (a last write of its own costs a syscall and a segment).
const AnswerEnd = "}\n"

// ResultParts is Reply(id, result) cut around the result, for a writer
// that sends a large result it keeps as it is, never copied into an
// answer: head is the answer up to the result, then open (what the result
// begins with when the writer sends it from further on), and tail ends the
// answer (the same for every id). Both share one small allocation.
func ResultParts(id, open json.RawMessage) (head, tail []byte) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	const member = `,"result":`
	buf := make([]byte, 0, len(answerStart)+len(id)+len(member)+len(open)+len(answerEnd))
	buf = append(buf, answerStart...)
	buf = append(buf, id...)
	buf = append(buf, member...)
	head = append(buf, open...)
	return head, append(head[len(head):], answerEnd...)
}

// AsError makes err a JSON-RPC error object: err itself when it is one,
// an internal error with err's text otherwise.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: CodeInternalError, Message: err.Error()}
}

// WriteReply answers an HTTP request with one JSON-RPC message.
func WriteReply(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// Refuse answers a request turned away before it was read (the guards,
// auth, a session cap): a JSON-RPC error (what MCP clients read) with a
// message that says what to change; id is the request's JSON-RPC id, nil
// when it was not read.
func Refuse(w http.ResponseWriter, status, code int, id json.RawMessage, msg string) {
	WriteReply(w, status, ErrorReply(id, &Error{Code: code, Message: msg}))
}
