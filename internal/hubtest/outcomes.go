package hubtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/purko-io/mcp-hub/internal/mcpws"
)

// An OutcomeUpstream is an MCP server with one tool for each way a call to
// an upstream can end, served over one of the transports the hub speaks
// to upstreams. Tests that must see the same outcome for the same upstream
// behaviour, whatever the path (the hub's faces, its ways out, the
// upstream's transport), call its tools and compare.
//
// Its tools, each named with the server's name as prefix ("<name>_ok"):
//   - ok answers "ok from <name>";
//   - tool_error answers an error result (isError) "bad input";
//   - rpc_error answers the JSON-RPC error RPCErrorCode with a message and
//     data that both hold Secret (which a hub must redact when Secret is
//     the server's credential);
//   - drop drops the connection the call came on (streamable HTTP: the
//     POST; SSE: the event stream; WebSocket: the socket; stdio: the
//     process exits);
//   - sleep answers after a minute, or when the call is cancelled.
type OutcomeUpstream struct {
	// Name prefixes its tools.
	Name string
	// URL is its endpoint ("" for stdio); Transport is the hub's name of
	// its transport: streamable-http, sse or websocket.
	URL, Transport string

	lists atomic.Int64
	drop  func()

	mu      sync.Mutex
	cancels []context.CancelFunc // of the SSE streams and sockets open
}

// The tools of an OutcomeUpstream, without the server's prefix.
const (
	ToolOK       = "ok"
	ToolError    = "tool_error"
	ToolRPCError = "rpc_error"
	ToolDrop     = "drop"
	ToolSleep    = "sleep"
)

// RPCErrorCode is the code of rpc_error's JSON-RPC error; Secret is in its
// message and its data.
const (
	RPCErrorCode = -32050
	Secret       = "sk-outcome-3f9c2a7d41"
)

// RPCErrorMessage is rpc_error's message, and RPCErrorData its data.
const (
	RPCErrorMessage = "quota exceeded for key " + Secret
	RPCErrorData    = `{"key":"` + Secret + `","retryAfterMs":1500}`
)

// rpcMarker is what rpc_error's handler fails with; the transport's writer
// replaces mcp-go's -32603 error with it by the JSON-RPC error above (an
// mcp-go tool handler cannot answer with a code or data of its own).
const rpcMarker = "hubtest-rpc-error-marker"

var (
	markerError = []byte(`"code":-32603,"message":"` + rpcMarker + `"`)
	rpcError    = []byte(`"code":` + strconv.Itoa(RPCErrorCode) + `,"message":"` + RPCErrorMessage + `","data":` + RPCErrorData)
)

// ToolsLists is how many tools/list requests the server has answered.
func (u *OutcomeUpstream) ToolsLists() int64 { return u.lists.Load() }

// Tool is the published name of one of its tools (ToolOK…).
func (u *OutcomeUpstream) Tool(kind string) string { return u.Name + "_" + kind }

func newOutcomeUpstream(name string) *OutcomeUpstream {
	return &OutcomeUpstream{Name: name}
}

// server is the MCP server behind every transport.
func (u *OutcomeUpstream) server() *server.MCPServer {
	hooks := &server.Hooks{}
	hooks.AddBeforeListTools(func(context.Context, any, *mcp.ListToolsRequest) { u.lists.Add(1) })
	s := server.NewMCPServer(u.Name, "1", server.WithToolCapabilities(true), server.WithHooks(hooks))
	tool := func(kind string, h server.ToolHandlerFunc) {
		s.AddTool(mcp.NewTool(u.Tool(kind), mcp.WithString("text")), h)
	}
	tool(ToolOK, func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok from " + u.Name), nil
	})
	tool(ToolError, func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultError("bad input"), nil
	})
	tool(ToolRPCError, func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, errors.New(rpcMarker)
	})
	tool(ToolDrop, func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		u.drop()
		<-ctx.Done()
		return nil, ctx.Err()
	})
	tool(ToolSleep, func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		select {
		case <-time.After(time.Minute):
			return mcp.NewToolResultText("slept"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	return s
}

// dropAll ends every SSE stream and socket open (see track).
func (u *OutcomeUpstream) dropAll() {
	u.mu.Lock()
	cancels := u.cancels
	u.cancels = nil
	u.mu.Unlock()
	for _, cancel := range cancels {
		cancel()
	}
}

// track returns ctx, ended by the next drop.
func (u *OutcomeUpstream) track(ctx context.Context) context.Context {
	ctx, cancel := context.WithCancel(ctx)
	u.mu.Lock()
	u.cancels = append(u.cancels, cancel)
	u.mu.Unlock()
	return ctx
}

// serveOutcomes serves h on a fresh 127.0.0.1 port until t's cleanup.
func serveOutcomes(t testing.TB, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("hubtest: %v", err)
	}
	hs := &http.Server{Handler: h}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	return "http://" + ln.Addr().String()
}

// StartOutcomeStreamable serves the tools over streamable HTTP.
func StartOutcomeStreamable(t testing.TB, name string) *OutcomeUpstream {
	t.Helper()
	u := newOutcomeUpstream(name)
	u.drop = func() {} // the POST is dropped before the tool runs
	u.serveHTTP(t, "streamable-http", "/mcp", server.NewStreamableHTTPServer(u.server()), func(r *http.Request) *http.Request {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			if bytes.Contains(body, []byte(`"`+u.Tool(ToolDrop)+`"`)) {
				panic(http.ErrAbortHandler) // the connection drops mid-call
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		return r
	})
	return u
}

// StartOutcomeSSE serves the tools over the legacy HTTP+SSE transport.
func StartOutcomeSSE(t testing.TB, name string) *OutcomeUpstream {
	t.Helper()
	u := newOutcomeUpstream(name)
	u.drop = u.dropAll
	u.serveHTTP(t, "sse", "/sse", server.NewSSEServer(u.server()), func(r *http.Request) *http.Request {
		if r.Method == http.MethodGet {
			return r.WithContext(u.track(r.Context()))
		}
		return r
	})
	return u
}

// serveHTTP serves inner at path over transport, each request passed
// through prepare first, each answer through a rewriter.
func (u *OutcomeUpstream) serveHTTP(t testing.TB, transport, path string, inner http.Handler, prepare func(*http.Request) *http.Request) {
	t.Helper()
	u.Transport = transport
	u.URL = serveOutcomes(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inner.ServeHTTP(rewriter{w}, prepare(r))
	})) + path
}

// StartOutcomeWebSocket serves the tools over WebSocket.
func StartOutcomeWebSocket(t testing.TB, name string) *OutcomeUpstream {
	t.Helper()
	u := newOutcomeUpstream(name)
	u.drop = u.dropAll
	srv := u.server()
	h := mcpws.NewHandler(srv,
		mcpws.WithContextFunc(func(ctx context.Context, _ *http.Request) context.Context { return u.track(ctx) }),
		mcpws.WithDispatch(func(ctx context.Context, data []byte, _ string) []byte {
			m := srv.HandleMessage(ctx, data)
			if e, ok := m.(mcp.JSONRPCError); ok && e.Error.Message == rpcMarker {
				e.Error.Code, e.Error.Message, e.Error.Data = RPCErrorCode, RPCErrorMessage, json.RawMessage(RPCErrorData)
				m = e
			}
			if m == nil {
				return nil
			}
			out, _ := json.Marshal(m)
			return out
		}))
	u.URL = "ws" + strings.TrimPrefix(serveOutcomes(t, h), "http")
	u.Transport = "websocket"
	return u
}

// ServeOutcomeStdio serves the tools on stdin and stdout until stdin ends;
// drop exits the process. A test binary runs it as its own stdio child.
func ServeOutcomeStdio(name string) error {
	u := newOutcomeUpstream(name)
	u.drop = func() { os.Exit(3) }
	return server.NewStdioServer(u.server()).Listen(context.Background(), os.Stdin, rewriter{w: writerOnly{os.Stdout}})
}

// rewriter writes rpc_error's JSON-RPC error in place of mcp-go's: every
// transport writes a message with one Write.
type rewriter struct {
	w interface{ Write([]byte) (int, error) }
}

func (r rewriter) Write(p []byte) (int, error) {
	if bytes.Contains(p, markerError) {
		if _, err := r.w.Write(bytes.ReplaceAll(p, markerError, rpcError)); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return r.w.Write(p)
}

// Header, WriteHeader and Flush make a rewriter of an http.ResponseWriter
// one itself.
func (r rewriter) Header() http.Header { return r.w.(http.ResponseWriter).Header() }

func (r rewriter) WriteHeader(code int) { r.w.(http.ResponseWriter).WriteHeader(code) }

func (r rewriter) Flush() {
	if f, ok := r.w.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the writer's own methods.
func (r rewriter) Unwrap() http.ResponseWriter { return r.w.(http.ResponseWriter) }

// writerOnly hides every method of w but Write.
type writerOnly struct{ io.Writer }
