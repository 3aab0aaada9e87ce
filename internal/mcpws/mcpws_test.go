package mcpws

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// testTimeout bounds every wait in these tests so a bug shows up as a
// failure rather than a hung test binary.
const testTimeout = 5 * time.Second

// userKey carries the caller identity WithContextFunc attaches in tests.
type userKey struct{}

// fixture is an MCP server served by NewHandler on a loopback httptest
// server, with tools that let tests observe what happened server side.
type fixture struct {
	srv      *server.MCPServer
	ts       *httptest.Server
	url      string
	shutdown context.CancelFunc // cancels every connection's context

	mu    sync.Mutex
	conns []net.Conn // raw server-side TCP connections, to cut them

	slowStarted   chan struct{} // one value per slow call that began
	slowCancelled chan struct{} // one value per slow call whose ctx ended
	unregistered  chan string   // ids of unregistered sessions
}

// trackingListener records accepted connections so tests can cut them the
// way a crash or a network failure would.
type trackingListener struct {
	net.Listener
	f *fixture
}

func (l trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.f.mu.Lock()
		l.f.conns = append(l.f.conns, c)
		l.f.mu.Unlock()
	}
	return c, err
}

// cutConnections closes every server-side TCP connection without a
// WebSocket close frame.
func (f *fixture) cutConnections() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.conns {
		_ = c.Close()
	}
}

func newFixture(t *testing.T, opts ...HandlerOption) *fixture {
	t.Helper()
	f := &fixture{
		slowStarted:   make(chan struct{}, 100),
		slowCancelled: make(chan struct{}, 100),
		unregistered:  make(chan string, 100),
	}

	hooks := &server.Hooks{}
	hooks.AddOnUnregisterSession(func(_ context.Context, s server.ClientSession) {
		f.unregistered <- s.SessionID()
	})
	f.srv = server.NewMCPServer("test-server", "1.0.0",
		server.WithToolCapabilities(true),
		server.WithLogging(),
		server.WithHooks(hooks),
	)

	f.srv.AddTool(mcp.NewTool("echo", mcp.WithString("msg", mcp.Required())),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(req.GetString("msg", "")), nil
		})

	f.srv.AddTool(mcp.NewTool("slow"),
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			f.slowStarted <- struct{}{}
			select {
			case <-ctx.Done():
				f.slowCancelled <- struct{}{}
				return nil, ctx.Err()
			case <-time.After(testTimeout):
				return mcp.NewToolResultText("slow done"), nil
			}
		})

	f.srv.AddTool(mcp.NewTool("whoami"),
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			user, _ := ctx.Value(userKey{}).(string)
			return mcp.NewToolResultText(user), nil
		})

	f.srv.AddTool(mcp.NewTool("log"),
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			err := f.srv.SendLogMessageToClient(ctx,
				mcp.NewLoggingMessageNotification(mcp.LoggingLevelInfo, "test", "hello from the tool"))
			if err != nil {
				return nil, fmt.Errorf("send log message: %w", err)
			}
			return mcp.NewToolResultText("logged"), nil
		})

	// sample asks for an LLM completion the way 2026-07-28 wants it; mcp-go
	// turns that into a sampling/createMessage request for legacy clients.
	f.srv.AddTool(mcp.NewTool("sample"),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if res := server.SamplingResponse(req.Params.InputResponses, "llm"); res != nil {
				// On the 2026-07-28 path mcp-go leaves the content as a
				// generic map; its legacy bridge has already parsed it.
				content, err := mcp.ParseSamplingContent(res.Content)
				if err != nil {
					return nil, fmt.Errorf("parse sampling content: %w", err)
				}
				return mcp.NewToolResultText("sampled: " + textOf(content)), nil
			}
			return server.NewInputRequestBuilder("").Sample("llm", samplingParams()).ToolResult(), nil
		})

	// sample_direct makes a server-to-client request itself, which only
	// legacy clients can receive.
	f.srv.AddTool(mcp.NewTool("sample_direct"),
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := f.srv.RequestSampling(ctx, mcp.CreateMessageRequest{CreateMessageParams: samplingParams()})
			if err != nil {
				return nil, fmt.Errorf("request sampling: %w", err)
			}
			return mcp.NewToolResultText("sampled: " + textOf(res.Content)), nil
		})

	shutdownCtx, shutdown := context.WithCancel(context.Background())
	f.shutdown = shutdown
	opts = append([]HandlerOption{WithContextFunc(func(ctx context.Context, r *http.Request) context.Context {
		return context.WithValue(ctx, userKey{}, r.Header.Get("X-User"))
	})}, opts...)

	f.ts = httptest.NewUnstartedServer(NewHandler(f.srv, opts...))
	f.ts.Listener = trackingListener{Listener: f.ts.Listener, f: f}
	f.ts.Config.BaseContext = func(net.Listener) context.Context { return shutdownCtx }
	f.ts.Start()
	f.url = "ws" + strings.TrimPrefix(f.ts.URL, "http")
	t.Cleanup(func() {
		shutdown()
		f.cutConnections()
		f.ts.Close()
	})
	return f
}

func samplingParams() mcp.CreateMessageParams {
	return mcp.CreateMessageParams{
		Messages:  []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent("say hi")}},
		MaxTokens: 10,
	}
}

func textOf(content any) string {
	switch c := content.(type) {
	case mcp.TextContent:
		return c.Text
	case *mcp.TextContent:
		return c.Text
	}
	return fmt.Sprintf("<%T>", content)
}

// fakeLLM answers sampling requests and counts them.
type fakeLLM struct{ calls atomic.Int32 }

func (l *fakeLLM) CreateMessage(_ context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	l.calls.Add(1)
	return &mcp.CreateMessageResult{
		SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.NewTextContent("hi")},
		Model:           "fake",
	}, nil
}

// era selects which protocol generation the mcp-go client negotiates: the
// initialize handshake, or the handshake-less 2026-07-28 revision that
// mcp-go prefers by default.
type era struct {
	name string
	opts []client.ClientOption
}

var eras = []era{
	{name: "legacy", opts: []client.ClientOption{client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION)}},
	{name: "2026-07-28"},
}

// testClient is a started and initialized mcp-go client over
// ClientTransport, with its notifications collected.
type testClient struct {
	*client.Client
	tr            *ClientTransport
	notifications chan mcp.JSONRPCNotification
	lost          chan error
}

func newTestClient(t *testing.T, f *fixture, header http.Header, opts ...client.ClientOption) *testClient {
	t.Helper()
	tr := NewClientTransport(f.url, header)
	c := &testClient{
		Client:        client.NewClient(tr, opts...),
		tr:            tr,
		notifications: make(chan mcp.JSONRPCNotification, 100),
		lost:          make(chan error, 10),
	}
	t.Cleanup(func() { _ = c.Close() })

	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatalf("start client: %v", err)
	}
	c.OnNotification(func(n mcp.JSONRPCNotification) { c.notifications <- n })
	c.OnConnectionLost(func(err error) { c.lost <- err })

	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "test-client", Version: "1.0.0"}
	res, err := c.Initialize(ctx, init)
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if res.ServerInfo.Name != "test-server" {
		t.Fatalf("server name = %q, want test-server", res.ServerInfo.Name)
	}
	return c
}

// waitNotification returns the first notification with the given method.
func (c *testClient) waitNotification(t *testing.T, method string) mcp.JSONRPCNotification {
	t.Helper()
	timeout := time.After(testTimeout)
	for {
		select {
		case n := <-c.notifications:
			if n.Method == method {
				return n
			}
		case <-timeout:
			t.Fatalf("no %s notification within %s", method, testTimeout)
		}
	}
}

func callTool(ctx context.Context, c *client.Client, name string, args map[string]any) (string, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return "", err
	}
	if res.IsError || len(res.Content) == 0 {
		return "", fmt.Errorf("tool %s failed: %+v", name, res.Content)
	}
	return textOf(res.Content[0]), nil
}

func mustCall(t *testing.T, c *client.Client, name string, args map[string]any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	out, err := callTool(ctx, c, name, args)
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return out
}

func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(testTimeout):
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}

func TestClientServerRoundTrip(t *testing.T) {
	for _, e := range eras {
		t.Run(e.name, func(t *testing.T) {
			f := newFixture(t)
			llm := &fakeLLM{}
			c := newTestClient(t, f, http.Header{"X-User": {"alice"}},
				append([]client.ClientOption{client.WithSamplingHandler(llm)}, e.opts...)...)

			t.Run("list tools", func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
				defer cancel()
				res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
				if err != nil {
					t.Fatalf("list tools: %v", err)
				}
				names := map[string]bool{}
				for _, tool := range res.Tools {
					names[tool.Name] = true
				}
				for _, want := range []string{"echo", "slow", "whoami"} {
					if !names[want] {
						t.Errorf("tool %q missing from %v", want, names)
					}
				}
			})

			t.Run("echo", func(t *testing.T) {
				if got := mustCall(t, c.Client, "echo", map[string]any{"msg": "hello"}); got != "hello" {
					t.Errorf("echo = %q, want hello", got)
				}
			})

			t.Run("context func", func(t *testing.T) {
				if got := mustCall(t, c.Client, "whoami", nil); got != "alice" {
					t.Errorf("whoami = %q, want alice (from the upgrade request)", got)
				}
			})

			t.Run("concurrent calls", func(t *testing.T) {
				const n = 20
				ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
				defer cancel()
				var wg sync.WaitGroup
				errs := make(chan error, n)
				for i := range n {
					wg.Go(func() {
						msg := fmt.Sprintf("msg-%d", i)
						got, err := callTool(ctx, c.Client, "echo", map[string]any{"msg": msg})
						if err != nil {
							errs <- err
						} else if got != msg {
							errs <- fmt.Errorf("echo %q answered %q: responses crossed", msg, got)
						}
					})
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Error(err)
				}
			})

			t.Run("tools list_changed notification", func(t *testing.T) {
				f.srv.AddTool(mcp.NewTool("late"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return mcp.NewToolResultText("late"), nil
				})
				c.waitNotification(t, string(mcp.MethodNotificationToolsListChanged))
			})

			t.Run("log notification", func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
				defer cancel()
				req := mcp.SetLevelRequest{}
				req.Params.Level = mcp.LoggingLevelInfo
				if err := c.SetLevel(ctx, req); err != nil {
					t.Fatalf("set level: %v", err)
				}
				mustCall(t, c.Client, "log", nil)
				n := c.waitNotification(t, "notifications/message")
				if got := n.Params.AdditionalFields["data"]; got != "hello from the tool" {
					t.Errorf("log data = %v", got)
				}
			})

			t.Run("sampling through input requests", func(t *testing.T) {
				if got := mustCall(t, c.Client, "sample", nil); got != "sampled: hi" {
					t.Errorf("sample = %q, want %q", got, "sampled: hi")
				}
				if llm.calls.Load() == 0 {
					t.Error("sampling handler was not called")
				}
			})
		})
	}
}

// TestServerToClientRequest checks a tool that calls RequestSampling itself:
// over a legacy session this is a sampling/createMessage request sent down
// the socket and answered by the client transport's request handler.
func TestServerToClientRequest(t *testing.T) {
	f := newFixture(t)
	llm := &fakeLLM{}
	c := newTestClient(t, f, nil, append([]client.ClientOption{client.WithSamplingHandler(llm)}, eras[0].opts...)...)

	if got := mustCall(t, c.Client, "sample_direct", nil); got != "sampled: hi" {
		t.Errorf("sample_direct = %q, want %q", got, "sampled: hi")
	}
	if got := llm.calls.Load(); got != 1 {
		t.Errorf("sampling handler calls = %d, want 1", got)
	}
}

func TestConnectionLossFailsPendingCalls(t *testing.T) {
	tests := []struct {
		name string
		kill func(*fixture)
	}{
		{"server shutdown closes the socket", func(f *fixture) { f.shutdown() }},
		{"tcp connection cut", func(f *fixture) { f.cutConnections() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			c := newTestClient(t, f, nil, eras[0].opts...)

			errc := make(chan error, 1)
			go func() {
				_, err := callTool(context.Background(), c.Client, "slow", nil)
				errc <- err
			}()
			waitFor(t, f.slowStarted, "slow tool to start")

			tt.kill(f)
			start := time.Now()
			select {
			case err := <-errc:
				if err == nil {
					t.Fatal("call succeeded after the connection was lost")
				}
				if !errors.Is(err, ErrConnectionLost) {
					t.Errorf("error %v does not wrap ErrConnectionLost", err)
				}
				if elapsed := time.Since(start); elapsed > 2*time.Second {
					t.Errorf("call returned after %s, want < 2s", elapsed)
				}
			case <-time.After(2 * time.Second):
				t.Fatal("call still pending 2s after the connection was lost")
			}

			lostErr := waitFor(t, c.lost, "connection lost handler")
			if !errors.Is(lostErr, ErrConnectionLost) {
				t.Errorf("lost handler got %v, want ErrConnectionLost", lostErr)
			}
			waitFor(t, f.slowCancelled, "server to cancel the in-flight tool")
			waitFor(t, f.unregistered, "session to be unregistered")

			if _, err := callTool(context.Background(), c.Client, "echo", map[string]any{"msg": "x"}); !errors.Is(err, ErrConnectionLost) {
				t.Errorf("call after loss: %v, want ErrConnectionLost", err)
			}
			if err := c.Close(); err != nil {
				t.Errorf("close after loss: %v", err)
			}
			select {
			case err := <-c.lost:
				t.Errorf("lost handler called twice; second with %v", err)
			default:
			}
		})
	}
}

// TestCallerCancellation checks that a cancelled call returns promptly, that
// the cancellation reaches the tool on the server, and that the connection
// survives it.
func TestCallerCancellation(t *testing.T) {
	for _, e := range eras {
		t.Run(e.name, func(t *testing.T) {
			f := newFixture(t)
			c := newTestClient(t, f, nil, e.opts...)

			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err := callTool(ctx, c.Client, "slow", nil)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("call error = %v, want context.DeadlineExceeded", err)
			}
			if elapsed := time.Since(start); elapsed > time.Second {
				t.Errorf("call returned after %s, want promptly after its 100ms deadline", elapsed)
			}
			waitFor(t, f.slowCancelled, "notifications/cancelled to reach the tool")

			if got := mustCall(t, c.Client, "echo", map[string]any{"msg": "still here"}); got != "still here" {
				t.Errorf("echo after cancellation = %q", got)
			}
		})
	}
}

// rawConn dials the handler with a bare WebSocket client, to send what the
// mcp-go client never would.
func rawConn(t *testing.T, url string, header http.Header) (*websocket.Conn, *http.Response) {
	t.Helper()
	d := websocket.Dialer{Subprotocols: []string{"mcp"}, HandshakeTimeout: testTimeout}
	ws, resp, err := d.Dial(url, header)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	t.Cleanup(func() { _ = ws.Close() })
	return ws, resp
}

// rpcMessage is a JSON-RPC message as seen on the wire by rawConn users.
type rpcMessage struct {
	ID     json.RawMessage          `json:"id"`
	Result json.RawMessage          `json:"result"`
	Error  *mcp.JSONRPCErrorDetails `json:"error"`
}

func readRPC(t *testing.T, ws *websocket.Conn) rpcMessage {
	t.Helper()
	_ = ws.SetReadDeadline(time.Now().Add(testTimeout))
	var msg rpcMessage
	if err := ws.ReadJSON(&msg); err != nil {
		t.Fatalf("read message: %v", err)
	}
	return msg
}

func TestMalformedMessages(t *testing.T) {
	f := newFixture(t)
	ws, resp := rawConn(t, f.url, nil)
	if got := resp.Header.Get("Sec-WebSocket-Protocol"); got != "mcp" {
		t.Errorf("negotiated subprotocol = %q, want mcp", got)
	}

	tests := []struct {
		name     string
		frame    string
		wantCode int
	}{
		{"not json", `{"jsonrpc":"2.0","id":1,"method":`, mcp.PARSE_ERROR},
		{"garbage", `hello`, mcp.PARSE_ERROR},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, mcp.INVALID_REQUEST},
		{"wrong jsonrpc version", `{"jsonrpc":"1.0","id":7,"method":"ping"}`, mcp.INVALID_REQUEST},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := ws.WriteMessage(websocket.TextMessage, []byte(tt.frame)); err != nil {
				t.Fatalf("write: %v", err)
			}
			msg := readRPC(t, ws)
			if msg.Error == nil || msg.Error.Code != tt.wantCode {
				t.Fatalf("reply to %q = %+v, want error code %d", tt.frame, msg, tt.wantCode)
			}
		})
	}

	// The connection must still serve MCP after all that.
	init := `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`
	if err := ws.WriteMessage(websocket.TextMessage, []byte(init)); err != nil {
		t.Fatalf("write initialize: %v", err)
	}
	msg := readRPC(t, ws)
	if string(msg.ID) != `"init"` || msg.Error != nil || len(msg.Result) == 0 {
		t.Fatalf("initialize after malformed messages: %+v", msg)
	}
}

// TestInFlightLimit checks that a connection cannot run more than
// maxInFlight requests at once, and that the excess is refused, not queued.
func TestInFlightLimit(t *testing.T) {
	f := newFixture(t)
	ws, _ := rawConn(t, f.url, nil)

	for i := range maxInFlight + 1 {
		call := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"slow"}}`, i)
		if err := ws.WriteMessage(websocket.TextMessage, []byte(call)); err != nil {
			t.Fatalf("write call %d: %v", i, err)
		}
	}
	msg := readRPC(t, ws)
	if msg.Error == nil || msg.Error.Code != errBusy || string(msg.ID) != fmt.Sprint(maxInFlight) {
		t.Fatalf("reply = id %s %+v, want busy error for id %d", msg.ID, msg.Error, maxInFlight)
	}
	for range maxInFlight {
		waitFor(t, f.slowStarted, "slow calls to start")
	}

	// Closing the connection cancels all of them.
	_ = ws.Close()
	for range maxInFlight {
		waitFor(t, f.slowCancelled, "slow calls to be cancelled")
	}
	waitFor(t, f.unregistered, "session to be unregistered")
}

func TestCloseIsIdempotent(t *testing.T) {
	f := newFixture(t)

	t.Run("before start", func(t *testing.T) {
		tr := NewClientTransport(f.url, nil)
		for range 2 {
			if err := tr.Close(); err != nil {
				t.Fatalf("close: %v", err)
			}
		}
		if err := tr.Start(context.Background()); !errors.Is(err, transport.ErrTransportClosed) {
			t.Errorf("start after close = %v, want ErrTransportClosed", err)
		}
	})

	t.Run("after start", func(t *testing.T) {
		tr := NewClientTransport(f.url, nil)
		lost := make(chan error, 1)
		tr.SetConnectionLostHandler(func(err error) { lost <- err })
		if err := tr.Start(context.Background()); err != nil {
			t.Fatalf("start: %v", err)
		}
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				if err := tr.Close(); err != nil {
					t.Errorf("close: %v", err)
				}
			})
		}
		wg.Wait()
		if err := tr.Close(); err != nil {
			t.Errorf("close again: %v", err)
		}

		req := transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(int64(1)), Method: "ping"}
		if _, err := tr.SendRequest(context.Background(), req); !errors.Is(err, transport.ErrTransportClosed) {
			t.Errorf("send after close = %v, want ErrTransportClosed", err)
		}
		if err := tr.SendNotification(context.Background(), mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION}); !errors.Is(err, transport.ErrTransportClosed) {
			t.Errorf("notify after close = %v, want ErrTransportClosed", err)
		}
		waitFor(t, f.unregistered, "server to notice the close")
		select {
		case err := <-lost:
			t.Errorf("connection lost handler called on Close: %v", err)
		default:
		}
	})
}

// TestStartHonoursContext checks that Start gives up when its context is
// cancelled even if the server accepted TCP but never answers the
// handshake, which gorilla alone only bounds by deadlines.
func TestStartHonoursContext(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	defer ln.Close()
	var mu sync.Mutex
	var accepted []net.Conn
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range accepted {
			_ = c.Close()
		}
	}()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			accepted = append(accepted, c) // never answered
			mu.Unlock()
		}
	}()

	tr := NewClientTransport("ws://"+ln.Addr().String()+"/ws", nil)
	defer tr.Close()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	err = tr.Start(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("start = %v, want context.Canceled", err)
	}
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("start returned after %s", elapsed)
	}
}

// TestKeepalive checks both sides of the keepalive: an idle but healthy
// connection survives many ping intervals, and a peer that stops reading is
// detected, failing the pending request.
func TestKeepalive(t *testing.T) {
	fast := keepalive{interval: 20 * time.Millisecond, wait: 150 * time.Millisecond}

	t.Run("idle connection survives", func(t *testing.T) {
		f := newFixture(t, withKeepalive(fast))
		tr := NewClientTransport(f.url, nil)
		tr.keepalive = fast
		c := client.NewClient(tr)
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		if err := c.Start(ctx); err != nil {
			t.Fatalf("start: %v", err)
		}
		if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
			t.Fatalf("initialize: %v", err)
		}
		time.Sleep(5 * fast.wait) // several times longer than the silence allowed
		if got := mustCall(t, c, "echo", map[string]any{"msg": "awake"}); got != "awake" {
			t.Errorf("echo = %q", got)
		}
	})

	t.Run("unresponsive server is detected", func(t *testing.T) {
		release := make(chan struct{})
		defer close(release)
		upgrader := websocket.Upgrader{}
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ws, err := upgrader.Upgrade(w, r, nil)
			if err != nil {
				return
			}
			defer ws.Close()
			<-release // never reads, so never answers pings
		}))
		defer ts.Close()

		tr := NewClientTransport("ws"+strings.TrimPrefix(ts.URL, "http"), nil)
		tr.keepalive = fast
		defer tr.Close()
		if err := tr.Start(context.Background()); err != nil {
			t.Fatalf("start: %v", err)
		}
		req := transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(int64(1)), Method: "ping"}
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		_, err := tr.SendRequest(ctx, req)
		if !errors.Is(err, ErrConnectionLost) {
			t.Fatalf("send = %v, want ErrConnectionLost from keepalive", err)
		}
	})
}

func TestDefaultCheckOrigin(t *testing.T) {
	f := newFixture(t)
	host := strings.TrimPrefix(f.ts.URL, "http://")

	tests := []struct {
		name   string
		origin string
		host   string // Host header; the dialled address when empty
		ok     bool
	}{
		{name: "no origin", ok: true},
		{name: "same host", origin: "http://" + host, ok: true},
		{name: "same host by name", origin: "https://hub.example:8443", host: "hub.example:8443", ok: true},
		{name: "same name other port", origin: "https://hub.example:9999", host: "hub.example:8443", ok: false},
		{name: "https default port", origin: "https://hub.example", host: "hub.example:443", ok: true},
		{name: "http default port", origin: "http://hub.example:80", host: "hub.example", ok: true},
		// A page on another local port is another site: refused.
		{name: "localhost page", origin: "http://localhost:3000", host: "hub.example", ok: false},
		{name: "localhost page, hub on loopback", origin: "http://localhost:3000", host: "localhost:8080", ok: false},
		{name: "loopback v4 page", origin: "http://127.0.0.1:8080", host: "hub.example", ok: false},
		{name: "loopback v6 page", origin: "http://[::1]:8080", host: "hub.example", ok: false},
		{name: "other loopback name, same port", origin: "http://localhost:8080", host: "127.0.0.1:8080", ok: false},
		{name: "foreign site", origin: "https://evil.example", ok: false},
		{name: "loopback-looking name", origin: "http://127.0.0.1.evil.example", ok: false},
		{name: "opaque origin", origin: "null", ok: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			header := http.Header{}
			if tt.origin != "" {
				header.Set("Origin", tt.origin)
			}
			if tt.host != "" {
				header.Set("Host", tt.host)
			}
			ws, resp, err := websocket.DefaultDialer.Dial(f.url, header)
			if ws != nil {
				_ = ws.Close()
			}
			if tt.ok && err != nil {
				t.Errorf("origin %q refused: %v", tt.origin, err)
			}
			if !tt.ok && (err == nil || resp == nil || resp.StatusCode != http.StatusForbidden) {
				t.Errorf("origin %q: err=%v, want 403", tt.origin, err)
			}
		})
	}

	t.Run("WithCheckOrigin overrides", func(t *testing.T) {
		g := newFixture(t, WithCheckOrigin(func(*http.Request) bool { return true }))
		ws, _, err := websocket.DefaultDialer.Dial(g.url, http.Header{"Origin": {"https://evil.example"}})
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		_ = ws.Close()
	})
}

func TestReadLimit(t *testing.T) {
	f := newFixture(t, WithReadLimit(1024))
	ws, _ := rawConn(t, f.url, nil)
	big := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":%q}}`, strings.Repeat("x", 2048))
	if err := ws.WriteMessage(websocket.TextMessage, []byte(big)); err != nil {
		t.Fatalf("write: %v", err)
	}
	_ = ws.SetReadDeadline(time.Now().Add(testTimeout))
	_, _, err := ws.ReadMessage()
	if !websocket.IsCloseError(err, websocket.CloseMessageTooBig) {
		t.Fatalf("read after oversized message = %v, want close 1009", err)
	}
	waitFor(t, f.unregistered, "session to be unregistered")
}

// TestClientMessageLimit: a server's message within WithMessageLimit
// arrives; a larger one ends the connection with an error wrapping
// websocket.ErrReadLimit; a non-positive limit keeps the default.
func TestClientMessageLimit(t *testing.T) {
	note := fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/message","params":{"pad":%q}}`, strings.Repeat("x", 2048))
	up := websocket.Upgrader{Subprotocols: []string{subprotocol}}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		_ = ws.WriteMessage(websocket.TextMessage, []byte(note))
		_, _, _ = ws.ReadMessage() // until the client goes
	}))
	defer ts.Close()
	url := "ws" + strings.TrimPrefix(ts.URL, "http")
	cases := []struct {
		name     string
		limit    int64
		wantLost bool
	}{
		{"within", int64(len(note)), false},
		{"over", int64(len(note)) - 1, true},
		{"non-positive keeps the default", -1, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewClientTransport(url, nil, WithMessageLimit(tc.limit))
			got := make(chan string, 1)
			lost := make(chan error, 1)
			tr.SetNotificationHandler(func(n mcp.JSONRPCNotification) { got <- n.Method })
			tr.SetConnectionLostHandler(func(err error) { lost <- err })
			if err := tr.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			select {
			case m := <-got:
				if tc.wantLost {
					t.Fatalf("got %s; want the connection lost", m)
				}
			case err := <-lost:
				if !tc.wantLost || !errors.Is(err, websocket.ErrReadLimit) {
					t.Fatalf("connection lost: %v", err)
				}
			case <-time.After(testTimeout):
				t.Fatal("neither the message nor the loss arrived")
			}
		})
	}
}
