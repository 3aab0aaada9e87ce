package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/hubtest"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/mcpws"
	"github.com/purko-io/mcp-hub/internal/upstream/relay"
)

// stdioServerEnv makes the test binary serve testServer on stdin/stdout,
// so stdio tests run a real child process.
const stdioServerEnv = "MCPHUB_UPSTREAM_TEST_STDIO_SERVER"

// stdioTokenEnv is a credential the stdio test server gets and prints to
// its stderr.
const stdioTokenEnv = "MCPHUB_UPSTREAM_TEST_TOKEN"

func TestMain(m *testing.M) {
	if os.Getenv(outcomesServerEnv) == "1" && len(os.Args) > 1 {
		if err := hubtest.ServeOutcomeStdio(os.Args[1]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if mark := os.Getenv(floodStdioEnv); mark != "" {
		if err := serveFloodStdio(mark); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if mode := os.Getenv(stdioChildEnv); mode != "" {
		os.Exit(runStdioChild(mode))
	}
	if os.Getenv(stdioServerEnv) == "1" {
		if tok := os.Getenv(stdioTokenEnv); tok != "" {
			// A careless server printing the credential it was given.
			fmt.Fprintln(os.Stderr, "starting with token "+tok)
		}
		if err := mcpserver.ServeStdio(testServer("child", nil)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// testServer offers echo, and hang, which accepts the call and never
// answers (until release is closed, or forever when it is nil).
func testServer(name string, release <-chan struct{}) *mcpserver.MCPServer {
	s := mcpserver.NewMCPServer(name, "1", mcpserver.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("echo", mcp.WithString("text")), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(name + ":" + r.GetString("text", "")), nil
	})
	s.AddTool(mcp.NewTool("hang"), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		<-release // a server that ignores cancellation, too
		return mcp.NewToolResultText("too late"), nil
	})
	return s
}

// serve serves h on 127.0.0.1 for the test's lifetime.
func serve(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts
}

// startClient starts a client of spec and waits until it is connected.
func startClient(t *testing.T, spec config.ServerSpec, opts Options) *Client {
	t.Helper()
	if opts.ConnectTimeout == 0 {
		opts.ConnectTimeout = 5 * time.Second
	}
	if opts.BackoffMin == 0 {
		opts.BackoffMin, opts.BackoffMax = 10*time.Millisecond, 50*time.Millisecond
	}
	if opts.Timeout == 0 {
		opts.Timeout = 10 * time.Second
	}
	c := New(spec, opts, zerolog.Nop(), func() {})
	c.Start(context.Background())
	t.Cleanup(c.Stop)
	waitState(t, c, StateConnected)
	return c
}

func waitState(t *testing.T, c *Client, want State) Status {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := c.Status()
		if st.State == want {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: state %s (error %q), want %s", c.Name(), st.State, st.Error, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// callTool calls tool with {"text": text} and returns the result's text.
func callTool(ctx context.Context, c *Client, tool, text string) (string, error) {
	args, _ := json.Marshal(map[string]string{"text": text})
	raw, err := c.Call(ctx, jsonrpc.ToolCall{Name: tool, Arguments: args})
	if err != nil {
		return "", err
	}
	var res struct {
		Content []struct{ Text string } `json:"content"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return "", fmt.Errorf("result %s: %w", raw, err)
	}
	var b strings.Builder
	for _, ct := range res.Content {
		b.WriteString(ct.Text)
	}
	return b.String(), nil
}

// A hung upstream (it takes the request and never answers) fails the call
// within the per-call timeout, with an error naming the server and the
// tool, on every transport.
func TestHungUpstreamTimesOut(t *testing.T) {
	release := make(chan struct{})

	// An HTTP server that takes a tools/call request and never answers it.
	httpHang := func(inner http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost {
				body, _ := io.ReadAll(r.Body)
				if bytes.Contains(body, []byte(`"tools/call"`)) {
					select {
					case <-r.Context().Done():
					case <-release:
					}
					return
				}
				r.Body = io.NopCloser(bytes.NewReader(body))
			}
			inner.ServeHTTP(w, r)
		})
	}
	streamable := serve(t, mcpserver.NewStreamableHTTPServer(testServer("up", release))).URL + "/mcp"
	streamableHTTPHang := serve(t, httpHang(mcpserver.NewStreamableHTTPServer(testServer("up", release)))).URL + "/mcp"
	sse := serve(t, mcpserver.NewSSEServer(testServer("up", release))).URL + "/sse"
	mux := http.NewServeMux()
	mux.Handle("/ws", mcpws.NewHandler(testServer("up", release)))
	ws := "ws" + strings.TrimPrefix(serve(t, mux).URL, "http") + "/ws"
	// Registered after the servers, so it runs before their Close, which
	// waits for the hung requests.
	t.Cleanup(func() { close(release) })
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name  string
		spec  config.ServerSpec
		tool  string
		relay bool
	}{
		{"streamable direct, tool hangs", config.ServerSpec{URL: streamable, Transport: config.TransportStreamableHTTP}, "hang", false},
		{"streamable relayed, tool hangs", config.ServerSpec{URL: streamable, Transport: config.TransportStreamableHTTP}, "hang", true},
		{"streamable direct, HTTP hangs", config.ServerSpec{URL: streamableHTTPHang, Transport: config.TransportStreamableHTTP}, "echo", false},
		{"streamable relayed, HTTP hangs", config.ServerSpec{URL: streamableHTTPHang, Transport: config.TransportStreamableHTTP}, "echo", true},
		{"sse", config.ServerSpec{URL: sse, Transport: config.TransportSSE}, "hang", false},
		{"sse relayed", config.ServerSpec{URL: sse, Transport: config.TransportSSE}, "hang", true},
		{"websocket", config.ServerSpec{URL: ws, Transport: config.TransportWebSocket}, "hang", false},
		{"stdio", config.ServerSpec{Command: self, Env: map[string]string{stdioServerEnv: "1"}, Transport: config.TransportStdio}, "hang", false},
	}
	const timeout = 300 * time.Millisecond
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.spec.Name = fmt.Sprintf("slow%d", i)
			tc.spec.Timeout = config.Duration(timeout)
			c := startClient(t, tc.spec, Options{Timeout: time.Hour, BreakerFailures: 100})
			ctx := context.Background()
			if tc.relay {
				ctx = relay.With(ctx, nopRelay{"caller"})
			}
			// Several calls: a transport's own timer racing the deadline
			// must not change the answer.
			for range 3 {
				start := time.Now()
				done := make(chan error, 1)
				go func() {
					_, err := callTool(ctx, c, tc.tool, "x")
					done <- err
				}()
				select {
				case err = <-done:
				case <-time.After(timeout + 5*time.Second):
					t.Fatalf("call to a hung upstream still running after %s", time.Since(start))
				}
				took := time.Since(start)
				if err == nil {
					t.Fatal("call to a hung upstream succeeded")
				}
				if took > timeout+2*time.Second {
					t.Errorf("call failed after %s, want about the timeout %s", took, timeout)
				}
				for _, want := range []string{tc.spec.Name, tc.tool, "timed out after " + timeout.String()} {
					if !strings.Contains(err.Error(), want) {
						t.Fatalf("error %q does not say %q", err, want)
					}
				}
			}
		})
	}
}

// After the upstream comes back and the hub reconnects, calls work at once:
// the breaker opened by the outage does not outlive it.
func TestReconnectResetsBreaker(t *testing.T) {
	inner := mcpserver.NewStreamableHTTPServer(testServer("up", nil))
	const (
		up = iota
		callsFail
		down
	)
	var mode atomic.Int32
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch mode.Load() {
		case down:
			panic(http.ErrAbortHandler)
		case callsFail:
			if r.Method == http.MethodPost {
				body, _ := io.ReadAll(r.Body)
				if bytes.Contains(body, []byte(`"tools/call"`)) {
					panic(http.ErrAbortHandler) // the connection drops mid-call
				}
				r.Body = io.NopCloser(bytes.NewReader(body))
			}
		}
		inner.ServeHTTP(w, r)
	})
	url := serve(t, h).URL + "/mcp"
	for _, relayed := range []bool{false, true} {
		t.Run(fmt.Sprintf("relayed=%v", relayed), func(t *testing.T) {
			mode.Store(up)
			ctx := context.Background()
			if relayed {
				ctx = relay.With(ctx, nopRelay{"caller"})
			}
			c := startClient(t, config.ServerSpec{Name: "flaky", URL: url, Transport: config.TransportStreamableHTTP},
				Options{BreakerFailures: 2, BreakerOpenFor: time.Hour, PingInterval: 20 * time.Millisecond})
			if _, err := callTool(ctx, c, "echo", "a"); err != nil {
				t.Fatalf("call while up: %v", err)
			}
			mode.Store(callsFail)
			var err error
			for range 3 {
				_, err = callTool(ctx, c, "echo", "b")
			}
			if err == nil || !strings.Contains(err.Error(), "circuit breaker open") {
				t.Fatalf("breaker did not open: last error %v", err)
			}
			mode.Store(down)
			waitState(t, c, StateError)
			mode.Store(up)
			waitState(t, c, StateConnected)
			got, err := callTool(ctx, c, "echo", "c")
			if err != nil {
				t.Fatalf("first call after reconnecting: %v", err)
			}
			if got != "up:c" {
				t.Fatalf("first call after reconnecting = %q", got)
			}
		})
	}
}

// A down server's calls fail at once with an UnavailableError that names
// the server and says why, and Unavailable tells the same without a call.
func TestUnavailableSaysServerAndReason(t *testing.T) {
	c := startUnreachable(t, "http://127.0.0.1:1/mcp")
	_, err := c.Call(context.Background(), jsonrpc.ToolCall{Name: "x"})
	var ue *UnavailableError
	if !errors.As(err, &ue) {
		t.Fatalf("call on a down server = %v, want UnavailableError", err)
	}
	if ue.Server != "gone" || !strings.Contains(ue.Reason, "connection refused") ||
		!strings.Contains(err.Error(), "gone") || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("UnavailableError = %+v (%q), want server and reason", ue, err)
	}
	if err := c.Unavailable(); !errors.As(err, &ue) || !strings.Contains(ue.Reason, "connection refused") {
		t.Errorf("Unavailable() = %v", err)
	}
}
