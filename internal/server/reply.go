package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/pipeline"
)

// The MCP faces answer with the one JSON-RPC encoder (jsonrpc.Reply,
// jsonrpc.ErrorReply, jsonrpc.Refuse). Where mcp-go writes the answer
// (Streamable HTTP calls it serves, legacy SSE, WebSocket, stdio), it would
// answer every error of the router's handler with -32603 and the error's
// text; the handler marks the pipeline's error instead (replyMarks.mark),
// and each of those faces puts the hub's encoding of it in place of
// mcp-go's as the answer goes out (replyMarks.fix, fixMessage). So a call
// ends with the same answer, code and data included, whatever the face.
// The REST face has its own encoder (runReply in rest.go): HTTP status and
// JSON.

// callReply is the answer to the request id of a call that ended in out:
// its result, or its JSON-RPC error.
func callReply(id json.RawMessage, out pipeline.Result) []byte {
	if out.Error != nil {
		return jsonrpc.ErrorReply(id, out.Error)
	}
	return jsonrpc.Reply(id, out.Result, nil)
}

// codeAuthRequired is the JSON-RPC code of a request without a valid
// caller (auth.go): its own, not -32001, which says "session not found"
// (docs/errors.md holds every code the hub answers, one meaning each).
const codeAuthRequired = -32004

// maxMarks bounds the marked errors waiting for their answer to go out
// (the oldest go first): an answer whose client went away is never
// written.
const maxMarks = 4096

// markOpen opens the mark a marked error's text ends with; the token and
// markClose follow.
const (
	markOpen  = " [mcp-hub answer "
	markClose = "]"
)

// replyMarks are the pipeline's errors on their way through mcp-go, by
// token. The token is random and lives until its answer is written, so
// no other text (an upstream's, a caller's) can name one.
type replyMarks struct {
	pending atomic.Int64 // zero: nothing to look for, answers pass untouched
	errs    *lru.Cache[string, *jsonrpc.Error]
}

func newReplyMarks() *replyMarks {
	m := &replyMarks{}
	m.errs, _ = lru.NewWithEvict(maxMarks, func(string, *jsonrpc.Error) { m.pending.Add(-1) })
	return m
}

// mark returns the error for mcp-go to answer in place of e: e's text (what
// a face that writes mcp-go's answer as it is shows) and a mark by which
// the face finds e again.
func (m *replyMarks) mark(e *jsonrpc.Error) error {
	var b [12]byte
	_, _ = rand.Read(b[:])
	token := hex.EncodeToString(b[:])
	m.pending.Add(1)
	m.errs.Add(token, e)
	return errors.New(e.Message + markOpen + token + markClose)
}

// take returns the error marked in msg, once.
func (m *replyMarks) take(msg string) (*jsonrpc.Error, bool) {
	rest, ok := strings.CutSuffix(msg, markClose)
	i := strings.LastIndex(rest, markOpen)
	if !ok || i < 0 {
		return nil, false
	}
	e, ok := m.errs.Peek(rest[i+len(markOpen):])
	if ok {
		m.errs.Remove(rest[i+len(markOpen):]) // the evict callback counts it off
	}
	return e, ok
}

// fixMessage is fix for a face that hands over messages (WebSocket).
func (m *replyMarks) fixMessage(resp mcp.JSONRPCMessage) mcp.JSONRPCMessage {
	reply, ok := resp.(mcp.JSONRPCError)
	if !ok || m.pending.Load() == 0 {
		return resp
	}
	e, ok := m.take(reply.Error.Message)
	if !ok {
		return resp
	}
	reply.Error.Code, reply.Error.Message, reply.Error.Data = e.Code, e.Message, nil
	if len(e.Data) > 0 {
		reply.Error.Data = e.Data
	}
	return reply
}

// scope is the WebSocket face's request scope (mcpws.WithRequestScope).
func (m *replyMarks) scope(ctx context.Context) (context.Context, func(mcp.JSONRPCMessage) mcp.JSONRPCMessage) {
	return ctx, m.fixMessage
}

// fix returns out, a piece of a face's output as mcp-go writes it (whole
// lines: JSON-RPC messages, or the lines of SSE events), with every error
// answer that carries a mark replaced by the hub's encoding of the marked
// error.
func (m *replyMarks) fix(out []byte) []byte {
	if m.pending.Load() == 0 || !bytes.Contains(out, []byte(markOpen)) {
		return out
	}
	fixed := make([]byte, 0, len(out))
	for line := range bytes.Lines(out) {
		body := bytes.TrimRight(line, "\r\n")
		eol := line[len(body):]
		var prefix []byte // an SSE event's "data: "
		if rest, ok := bytes.CutPrefix(body, []byte("data: ")); ok {
			prefix, body = line[:len(line)-len(eol)-len(rest)], rest
		}
		if e, id, ok := m.marked(body); ok {
			fixed = append(fixed, prefix...)
			fixed = append(fixed, bytes.TrimSuffix(jsonrpc.ErrorReply(id, e), []byte("\n"))...)
			fixed = append(fixed, eol...)
			continue
		}
		fixed = append(fixed, line...)
	}
	return fixed
}

// marked reads msg, one JSON-RPC message, and returns the error marked in
// it and its id, if it is an error answer that carries a mark.
func (m *replyMarks) marked(msg []byte) (*jsonrpc.Error, json.RawMessage, bool) {
	if !bytes.Contains(msg, []byte(markOpen)) {
		return nil, nil, false
	}
	var reply struct {
		ID    json.RawMessage `json:"id"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(msg, &reply) != nil || reply.Error == nil {
		return nil, nil, false
	}
	e, ok := m.take(reply.Error.Message)
	return e, reply.ID, ok
}

// writer is w with its answers fixed; it keeps w's http.Flusher, if any,
// which is how mcp-go decides whether an answer may be a stream.
func (m *replyMarks) writer(w http.ResponseWriter) http.ResponseWriter {
	fw := fixingWriter{ResponseWriter: w, m: m}
	if _, ok := w.(http.Flusher); ok {
		return fixingFlusher{fw}
	}
	return fw
}

// handler serves next with its answers fixed.
func (m *replyMarks) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { next.ServeHTTP(m.writer(w), r) })
}

// fixingWriter fixes what mcp-go writes: one message, or one SSE event,
// per Write.
type fixingWriter struct {
	http.ResponseWriter
	m *replyMarks
}

func (w fixingWriter) Write(p []byte) (int, error) {
	if _, err := w.ResponseWriter.Write(w.m.fix(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (w fixingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

type fixingFlusher struct{ fixingWriter }

func (w fixingFlusher) Flush() { w.ResponseWriter.(http.Flusher).Flush() }
