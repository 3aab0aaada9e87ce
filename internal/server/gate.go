package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

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
// faces read every message strictly first (so the caller hears -32602
// rather than mcp-go's -32600); this is the backstop for any way into
// mcp-go that does not.
func (s *Server) gateHook(_ context.Context, _ any, message any) error {
	raw, ok := message.(json.RawMessage)
	if !ok {
		return errors.New("mcp-hub: unreadable request")
	}
	if _, _, err := admit(raw); err != nil {
		var rpcErr *jsonrpc.Error
		if errors.As(err, &rpcErr) {
			return errors.New(rpcErr.Message) // mcp-go adds its own code
		}
		return err
	}
	return nil
}

// stdioInFlight bounds the hub requests one stdio client may have running
// at once, as the WebSocket face bounds a connection's.
const stdioInFlight = 64

// gateStdio reads the lines of in, each one message: a request of a hub
// method is served by the dispatcher (on its own goroutine, at most
// stdioInFlight at once) and answered on out; a line the gate refuses is
// answered with why; every other line (the session layer's requests,
// notifications, answers to the server's requests) is passed to the
// returned reader, which mcp-go's stdio server reads. The returned writer
// must be the one mcp-go writes to: it keeps whole lines together, so no
// answer splits another. maxLine bounds one message; session is the stdio
// session, known once mcp-go registered it (ready closed). The reading
// ends when in ends or ctx does; the requests it started end with ctx,
// and served waits for them.
func (s *Server) gateStdio(ctx context.Context, in io.Reader, out io.Writer, maxLine int, session func() (context.Context, string), ready <-chan struct{}, served *sync.WaitGroup) (io.Reader, io.Writer) {
	pr, pw := io.Pipe()
	lw := &lineWriter{w: out}
	slots := make(chan struct{}, stdioInFlight)
	go func() {
		defer pw.Close()
		br := bufio.NewReaderSize(in, 64<<10)
		for ctx.Err() == nil {
			line, err := readLine(br, maxLine)
			if line = bytes.TrimSpace(line); len(line) > 0 {
				select {
				case <-ready:
				case <-ctx.Done():
					return
				}
				sctx, id := session()
				req, refusal := s.calls.Read(line, id)
				switch {
				case refusal != nil:
					_, _ = lw.Write(refusal)
				case req != nil:
					select {
					case slots <- struct{}{}:
						served.Go(func() {
							defer func() { <-slots }()
							_, _ = lw.Write(s.calls.Serve(sctx, req))
						})
					default:
						_, _ = lw.Write(jsonrpc.ErrorReply(req.Msg.ID, &jsonrpc.Error{Code: jsonrpc.CodeServerBusy,
							Message: fmt.Sprintf("too many concurrent requests on stdio (limit %d)", stdioInFlight)}))
					}
				default:
					if _, werr := pw.Write(append(line, '\n')); werr != nil {
						return
					}
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

// lineWriter writes whole lines only, one Write each, under one lock.
type lineWriter struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	if i := bytes.LastIndexByte(l.buf, '\n'); i >= 0 {
		if _, err := l.w.Write(l.buf[:i+1]); err != nil {
			return 0, err
		}
		l.buf = append(l.buf[:0], l.buf[i+1:]...)
	}
	return len(p), nil
}
