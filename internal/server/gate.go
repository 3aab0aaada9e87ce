package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
)

// The gate reads every message a caller sends, on every face, strictly and
// once, before anything acts on it. mcp-go reads messages with
// encoding/json, which matches member names in any letter case and lets
// the last one win; a message the two readings could disagree on (a member
// named twice, in any case) is refused here, so what mcp-go acts on is
// what the hub decided on.

// maxRequestBytes bounds what the hub reads of one message where no
// configured body limit applies (a peer's request, a stdio line).
const maxRequestBytes = 16 << 20

// admit reads one message strictly. For a tools/call it also reads the
// call. The error is a *jsonrpc.Error to answer with.
func admit(raw []byte) (*jsonrpc.Message, *jsonrpc.ToolCall, error) {
	return admitWith(new(jsonrpc.Reader), raw)
}

// admitWith is admit with rd's decoders (the /mcp face keeps a Reader).
func admitWith(rd *jsonrpc.Reader, raw []byte) (*jsonrpc.Message, *jsonrpc.ToolCall, error) {
	return rd.ParseRequest(raw)
}

// gateHook refuses, inside mcp-go, any request the gate would refuse. The
// faces call admit themselves first (so the caller hears -32602 rather
// than mcp-go's -32600); this is the backstop for any way into mcp-go
// that does not.
//
// It also serves resources/subscribe through the pipeline
// (features.Subscribe): the one moment mcp-go lets the hub refuse one
// (its own handler only acknowledges).
func (s *Server) gateHook(ctx context.Context, _ any, message any) error {
	raw, ok := message.(json.RawMessage)
	if !ok {
		return errors.New("mcp-hub: unreadable request")
	}
	msg, _, err := admit(raw)
	if err != nil {
		var rpcErr *jsonrpc.Error
		if errors.As(err, &rpcErr) {
			return errors.New(rpcErr.Message) // mcp-go adds its own code
		}
		return err
	}
	if msg.Method == string(mcp.MethodResourcesSubscribe) {
		var p struct {
			URI string `json:"uri"`
		}
		if json.Unmarshal(msg.Params, &p) == nil && p.URI != "" {
			if out := s.feat.Subscribe(ctx, p.URI); out.Error != nil {
				return s.marks.mark(out.Error)
			}
		}
	}
	return nil
}

// refusal is the gate for faces that pass whole messages (WebSocket): the
// answer to a message the gate refuses, nil for one it admits.
func refusal(raw []byte) []byte {
	if _, _, err := admit(raw); err != nil {
		return jsonrpc.ErrorReplyTo(raw, err)
	}
	return nil
}

// gateMessages checks a legacy SSE client's POST /messages before mcp-go
// reads it. A refused message is answered on the POST itself, as mcp-go
// answers a message it cannot parse.
//
// The session (mcp-go's id, from the GET /sse that opened it) must be one
// its caller opened: the edge records each session's owner when it
// registers. Any other id, a live one of another caller's included, is not
// found (404), before mcp-go sees the message.
func (s *Server) gateMessages(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body, ok := s.edge.ReadBody(w, r)
		if !ok {
			return
		}
		msg, _, err := admit(body)
		if err != nil {
			jsonrpc.WriteReply(w, http.StatusBadRequest, jsonrpc.ErrorReplyTo(body, err))
			return
		}
		if owner, ok := s.edge.SessionOwner(r.URL.Query().Get("sessionId")); !ok || owner != callers.From(r.Context()).Key() {
			sessionNotFound(w, msg.ID)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// gateStdio passes the lines of in that the gate admits to the returned
// reader and answers the others on out itself. maxLine bounds one message.
// The returned writer must be the one mcp-go writes to: it keeps whole lines
// together, so the gate's answers never split one of mcp-go's, and passes
// each line through fix (replyMarks.fix). The goroutine ends when in ends
// or ctx does.
func gateStdio(ctx context.Context, in io.Reader, out io.Writer, maxLine int, fix func([]byte) []byte) (io.Reader, io.Writer) {
	pr, pw := io.Pipe()
	lw := &lineWriter{w: out, fix: fix}
	go func() {
		defer pw.Close()
		br := bufio.NewReaderSize(in, 64<<10)
		for ctx.Err() == nil {
			line, err := readLine(br, maxLine)
			if len(bytes.TrimSpace(line)) > 0 {
				if _, _, aerr := admit(bytes.TrimSpace(line)); aerr != nil {
					_, _ = lw.Write(jsonrpc.ErrorReplyTo(line, aerr))
				} else if _, werr := pw.Write(append(line, '\n')); werr != nil {
					return
				}
			}
			if errors.Is(err, errLineTooLong) {
				_, _ = lw.Write(jsonrpc.ErrorReplyTo(nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
					Message: fmt.Sprintf("message larger than the limit of %d bytes", maxLine)}))
				continue
			}
			if err != nil {
				return
			}
		}
	}()
	return pr, lw
}

var errLineTooLong = errors.New("line too long")

// readLine reads one line without its newline; a line over max is
// discarded up to its end and reported as errLineTooLong.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > max+1 {
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			if err == nil {
				err = errLineTooLong
			}
			return nil, err
		}
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimSuffix(line, []byte("\n")), err
	}
}

// lineWriter writes whole lines only, one Write each, under one lock,
// each passed through fix.
type lineWriter struct {
	mu  sync.Mutex
	w   io.Writer
	fix func([]byte) []byte
	buf []byte
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	if i := bytes.LastIndexByte(l.buf, '\n'); i >= 0 {
		if _, err := l.w.Write(l.fix(l.buf[:i+1])); err != nil {
			return 0, err
		}
		l.buf = append(l.buf[:0], l.buf[i+1:]...)
	}
	return len(p), nil
}
