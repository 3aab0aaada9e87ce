package mcpsse

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/jsonrpc"
)

// testTimeout bounds every wait, so that a bug fails a test rather than
// hanging it.
const testTimeout = 5 * time.Second

// callerKey carries the caller the test middleware reads from X-Caller,
// as the hub's auth puts the caller in a request's context.
type callerKey struct{}

// fixture is an MCPServer with an echo tool served by a Handler on a
// loopback httptest server at /sse and /messages.
type fixture struct {
	srv *server.MCPServer
	h   *Handler
	ts  *httptest.Server
	hc  *http.Client

	logMu sync.Mutex
	logs  bytes.Buffer // what the handler logged

	unregistered chan string // ids of sessions unregistered from srv
}

func newFixture(t *testing.T, opts ...Option) *fixture {
	t.Helper()
	f := &fixture{unregistered: make(chan string, 16)}
	hooks := &server.Hooks{}
	hooks.AddOnUnregisterSession(func(_ context.Context, s server.ClientSession) {
		select {
		case f.unregistered <- s.SessionID():
		default: // nobody waits for it
		}
	})
	f.srv = server.NewMCPServer("test", "1.0", server.WithToolCapabilities(true), server.WithLogging(), server.WithHooks(hooks))
	f.srv.AddTool(mcp.NewTool("echo", mcp.WithString("text")), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(req.GetString("text", "")), nil
	})
	f.h = NewHandler(f.srv, opts...)
	mux := http.NewServeMux()
	mux.Handle("/sse", f.h.SSE())
	mux.Handle("/messages", f.h.Messages())
	log := zerolog.New(logWriter{f}).Level(zerolog.DebugLevel)
	f.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := log.WithContext(context.WithValue(r.Context(), callerKey{}, r.Header.Get("X-Caller")))
		mux.ServeHTTP(w, r.WithContext(ctx))
	}))
	f.hc = &http.Client{Transport: &http.Transport{}}
	t.Cleanup(func() {
		f.h.Close()
		f.hc.CloseIdleConnections()
		f.ts.Close()
	})
	return f
}

type logWriter struct{ f *fixture }

func (w logWriter) Write(p []byte) (int, error) {
	w.f.logMu.Lock()
	defer w.f.logMu.Unlock()
	return w.f.logs.Write(p)
}

func (f *fixture) logged() string {
	f.logMu.Lock()
	defer f.logMu.Unlock()
	return f.logs.String()
}

// event is one SSE event as a client reads it; a comment line comes as
// an event named ":".
type event struct{ name, data string }

// rawStream is a GET stream read by hand: its events arrive on events,
// which closes when the stream ends.
type rawStream struct {
	body     io.ReadCloser
	events   chan event
	endpoint string // the endpoint event's data
	id       string // the session id in it
}

// open opens a stream with the given X-Caller, reads its endpoint event
// and goes on reading in the background.
func (f *fixture) open(t *testing.T, caller string) *rawStream {
	t.Helper()
	s, br := f.openStopped(t, caller)
	go s.read(br)
	return s
}

// openStopped opens a stream and reads its endpoint event, and nothing
// after it: the client stops reading there.
func (f *fixture) openStopped(t *testing.T, caller string) (*rawStream, *bufio.Reader) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, f.ts.URL+"/sse", nil)
	req.Header.Set("X-Caller", caller)
	resp, err := f.hc.Do(req)
	if err != nil {
		t.Fatalf("GET /sse: %v", err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		resp.Body.Close()
		t.Fatalf("GET /sse: %s, Content-Type %q", resp.Status, resp.Header.Get("Content-Type"))
	}
	s := &rawStream{body: resp.Body, events: make(chan event, 1024)}
	t.Cleanup(func() { s.body.Close() })
	br := bufio.NewReaderSize(resp.Body, 8<<20)
	ev, ok := readEvent(br)
	if !ok || ev.name != "endpoint" {
		t.Fatalf("first event is %q %q, want the endpoint", ev.name, ev.data)
	}
	s.endpoint = ev.data
	_, s.id, _ = strings.Cut(ev.data, "sessionId=")
	return s, br
}

func (s *rawStream) read(br *bufio.Reader) {
	defer close(s.events)
	for {
		ev, ok := readEvent(br)
		if !ok {
			return
		}
		s.events <- ev
	}
}

// readEvent reads the next event, or comment line, from br.
func readEvent(br *bufio.Reader) (event, bool) {
	var ev event
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return ev, false
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if ev.name != "" {
				return ev, true
			}
		case strings.HasPrefix(line, ":"):
			return event{name: ":", data: strings.TrimSpace(line[1:])}, true
		case strings.HasPrefix(line, "event: "):
			ev.name = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			if ev.data != "" {
				ev.data += "\n"
			}
			ev.data += line[len("data: "):]
		}
	}
}

// next is the stream's next event other than a keepalive comment.
func (s *rawStream) next(t *testing.T) event {
	t.Helper()
	timeout := time.After(testTimeout)
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				t.Fatal("the stream ended")
			}
			if ev.name != ":" {
				return ev
			}
		case <-timeout:
			t.Fatal("no event within the timeout")
		}
	}
}

// post POSTs body to the message URL path (the endpoint event's data or
// any other) as caller, and returns the status and the body of the answer.
func (f *fixture) post(t *testing.T, path, caller, body string) (int, string) {
	t.Helper()
	return f.do(t, http.MethodPost, path, caller, body)
}

func (f *fixture) do(t *testing.T, method, path, caller, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, f.ts.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Caller", caller)
	resp, err := f.hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// client starts mcp-go's own SSE client on the fixture; the test closes
// it.
func (f *fixture) client(t *testing.T, ctx context.Context) *client.Client {
	t.Helper()
	c, err := client.NewSSEMCPClient(f.ts.URL + "/sse")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatalf("start mcp-go's client: %v", err)
	}
	return c
}

// waitUnregistered waits until srv unregistered session id.
func (f *fixture) waitUnregistered(t *testing.T, id string) {
	t.Helper()
	timeout := time.After(testTimeout)
	for {
		select {
		case got := <-f.unregistered:
			if got == id {
				return
			}
		case <-timeout:
			t.Fatalf("session %s was not unregistered", id)
		}
	}
}

// mcp-go's own SSE client works against the handler: initialize,
// tools/list, tools/call, and a notification to all clients reach it;
// what initialize told mcp-go is on the session.
func TestMCPGoClient(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()

	c := f.client(t, ctx)
	defer c.Close()
	notes := make(chan mcp.JSONRPCNotification, 1)
	c.OnNotification(func(n mcp.JSONRPCNotification) { notes <- n })
	var init mcp.InitializeRequest
	init.Params.ProtocolVersion = "2024-11-05"
	init.Params.ClientInfo = mcp.Implementation{Name: "sse-test", Version: "0.1"}
	if res, err := c.Initialize(ctx, init); err != nil || res.ServerInfo.Name != "test" {
		t.Fatalf("initialize: %+v, %v", res, err)
	}

	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	if len(tools.Tools) != 1 || tools.Tools[0].Name != "echo" {
		t.Errorf("tools/list: %+v, want the echo tool", tools.Tools)
	}

	call := mcp.CallToolRequest{}
	call.Params.Name = "echo"
	call.Params.Arguments = map[string]any{"text": "hello over sse"}
	out, err := c.CallTool(ctx, call)
	if err != nil {
		t.Fatalf("tools/call: %v", err)
	}
	if text := out.Content[0].(mcp.TextContent).Text; text != "hello over sse" {
		t.Errorf("tools/call answered %q", text)
	}

	var st *stream
	f.h.mu.Lock()
	for _, s := range f.h.streams {
		st = s
	}
	f.h.mu.Unlock()
	if st == nil || !st.session.Initialized() {
		t.Fatal("no initialized session")
	}
	if info := st.session.GetClientInfo(); info.Name != "sse-test" {
		t.Errorf("client info %+v on the session", info)
	}
	if v := st.session.ProtocolVersion(); v != "2024-11-05" {
		t.Errorf("protocol version %q on the session", v)
	}

	f.srv.SendNotificationToAllClients("notifications/hub/test", map[string]any{"n": 1})
	select {
	case n := <-notes:
		if n.Method != "notifications/hub/test" || n.Params.AdditionalFields["n"] != float64(1) {
			t.Errorf("notification %+v", n)
		}
	case <-time.After(testTimeout):
		t.Fatal("the notification did not reach the client")
	}
}

// A custom dispatch sees every request with the session and the POST's
// values in its context, and what it answers (here with a trailing
// newline, as the hub's encoder writes) is the message on the stream; a
// panic in it is an internal error for that request.
func TestWithDispatch(t *testing.T) {
	var f *fixture
	f = newFixture(t, WithDispatch(func(ctx context.Context, raw []byte) []byte {
		msg, err := jsonrpc.Parse(raw)
		if err != nil {
			t.Errorf("dispatch got %s: %v", raw, err)
			return nil
		}
		switch msg.Method {
		case "hub/whoami":
			session := server.ClientSessionFromContext(ctx)
			caller, _ := ctx.Value(callerKey{}).(string)
			result, _ := json.Marshal(map[string]string{"session": session.SessionID(), "caller": caller})
			return jsonrpc.Reply(msg.ID, result, nil)
		case "hub/panic":
			panic("dispatch broke")
		}
		return f.h.handleMessage(ctx, raw)
	}))
	s := f.open(t, "alice")

	for _, tc := range []struct {
		name, body, want string
	}{
		{"answered by dispatch", `{"jsonrpc":"2.0","id":1,"method":"hub/whoami"}`,
			`{"jsonrpc":"2.0","id":1,"result":{"caller":"alice","session":"` + s.id + `"}}`},
		{"passed on to mcp-go", `{"jsonrpc":"2.0","id":"two","method":"ping"}`,
			`{"jsonrpc":"2.0","id":"two","result":{}}`},
		{"panic", `{"jsonrpc":"2.0","id":3,"method":"hub/panic"}`,
			`{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"internal error"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if status, body := f.post(t, s.endpoint, "alice", tc.body); status != http.StatusAccepted {
				t.Fatalf("POST: %d %s", status, body)
			}
			ev := s.next(t)
			if ev.name != "message" || ev.data != tc.want {
				t.Errorf("stream has %q %s, want message %s", ev.name, ev.data, tc.want)
			}
		})
	}
}

// What a POST is answered with on the POST itself: refusals before any
// dispatch, 404 for a session that is unknown or not the caller's, and
// 202 for a message accepted.
func TestMessages(t *testing.T) {
	f := newFixture(t,
		WithReadLimit(256),
		WithMessageCheck(func(raw []byte) []byte {
			if bytes.Contains(raw, []byte("forbidden")) {
				return []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32003,"message":"BLOCKED: refused by the check"}}`)
			}
			return nil
		}),
		WithSessionCheck(func(r *http.Request, _ string) bool { return r.Header.Get("X-Caller") == "owner" }),
	)
	s := f.open(t, "owner")
	ping := `{"jsonrpc":"2.0","id":7,"method":"ping"}`
	notFound := func(id string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32001,"message":"session not found"}}`
	}
	for _, tc := range []struct {
		name, method, path, caller, body string
		status                           int
		want                             string // the answer's body; "" for none, "~re" to match
	}{
		{name: "accepted", path: s.endpoint, caller: "owner", body: ping, status: http.StatusAccepted},
		{name: "missing sessionId", path: "/messages", caller: "owner", body: ping, status: http.StatusBadRequest,
			want: `~"code":-32600,"message":"invalid request: missing sessionId"`},
		{name: "unknown session", path: "/messages?sessionId=0123456789abcdef0123456789abcdef", caller: "owner", body: ping,
			status: http.StatusNotFound, want: notFound("7")},
		{name: "unknown session, notification", path: "/messages?sessionId=nope", caller: "owner",
			body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, status: http.StatusNotFound, want: notFound("null")},
		{name: "another caller's session", path: s.endpoint, caller: "mallory", body: ping,
			status: http.StatusNotFound, want: notFound("7")},
		{name: "check refuses", path: s.endpoint, caller: "owner", body: `{"jsonrpc":"2.0","id":8,"method":"forbidden"}`,
			status: http.StatusBadRequest, want: `{"jsonrpc":"2.0","id":null,"error":{"code":-32003,"message":"BLOCKED: refused by the check"}}`},
		{name: "too large", path: s.endpoint, caller: "owner", body: `{"jsonrpc":"2.0","id":9,"method":"ping","params":{"pad":"` + strings.Repeat("x", 300) + `"}}`,
			status: http.StatusRequestEntityTooLarge, want: `~"code":-32600,"message":"request body is larger than the limit of 256 bytes"`},
		{name: "not JSON", path: s.endpoint, caller: "owner", body: `{"jsonrpc":`, status: http.StatusBadRequest, want: `~"code":-32700`},
		{name: "GET", method: http.MethodGet, path: s.endpoint, caller: "owner", status: http.StatusMethodNotAllowed, want: `~"code":-32600`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = http.MethodPost
			}
			status, got := f.do(t, method, tc.path, tc.caller, tc.body)
			if status != tc.status {
				t.Errorf("status %d, want %d (body %s)", status, tc.status, got)
			}
			switch {
			case strings.HasPrefix(tc.want, "~"):
				if !strings.Contains(got, tc.want[1:]) {
					t.Errorf("body %s, want it to contain %s", got, tc.want[1:])
				}
			case got != tc.want:
				t.Errorf("body %s, want %s", got, tc.want)
			}
		})
	}
	// Only the accepted ping was answered on the stream.
	if ev := s.next(t); ev.data != `{"jsonrpc":"2.0","id":7,"result":{}}` {
		t.Errorf("stream has %s, want the ping's answer", ev.data)
	}
	select {
	case ev := <-s.events:
		if ev.name != ":" {
			t.Errorf("stream has %q %s after the ping's answer", ev.name, ev.data)
		}
	case <-time.After(50 * time.Millisecond):
	}
}

// The endpoint event names the message URL under the base path, with a
// fresh unguessable session id (128 random bits, hex) for every stream.
func TestEndpointEvent(t *testing.T) {
	hexID := regexp.MustCompile(`^[0-9a-f]{32}$`)
	for _, tc := range []struct {
		name   string
		opts   []Option
		prefix string
	}{
		{name: "default", prefix: "/messages?sessionId="},
		{name: "base path", opts: []Option{WithBasePath(func(r *http.Request) string { return "/servers/" + r.Header.Get("X-Caller") })},
			prefix: "/servers/alice/messages?sessionId="},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.opts...)
			seen := map[string]bool{}
			for range 3 {
				s := f.open(t, "alice")
				id, ok := strings.CutPrefix(s.endpoint, tc.prefix)
				if !ok || !hexID.MatchString(id) {
					t.Fatalf("endpoint %q, want %s<32 hex digits>", s.endpoint, tc.prefix)
				}
				if seen[id] {
					t.Fatalf("session id %s given twice", id)
				}
				seen[id] = true
			}
		})
	}
}

// Requests run at once, up to 64 per session; one more is refused on the
// stream with a busy error while its POST is still accepted, and the
// requests in flight are all answered when they finish.
func TestRequestsRunConcurrentlyUpToTheBound(t *testing.T) {
	release := make(chan struct{})
	var running atomic.Int32
	f := newFixture(t, WithDispatch(func(ctx context.Context, raw []byte) []byte {
		running.Add(1)
		<-release
		return jsonrpc.Reply(jsonrpc.IDOf(raw), json.RawMessage(`{}`), nil)
	}))
	s := f.open(t, "alice")
	for i := range maxInFlight {
		if status, body := f.post(t, s.endpoint, "alice", fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"slow"}`, i)); status != http.StatusAccepted {
			t.Fatalf("POST %d: %d %s", i, status, body)
		}
	}
	deadline := time.Now().Add(testTimeout)
	for running.Load() < maxInFlight {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests running, want %d at once", running.Load(), maxInFlight)
		}
		time.Sleep(time.Millisecond)
	}
	if status, body := f.post(t, s.endpoint, "alice", `{"jsonrpc":"2.0","id":"over","method":"slow"}`); status != http.StatusAccepted {
		t.Fatalf("POST over the bound: %d %s", status, body)
	}
	if ev := s.next(t); !strings.Contains(ev.data, `"id":"over","error":{"code":-32000,"message":"too many concurrent requests`) {
		t.Fatalf("stream has %s, want the busy error", ev.data)
	}
	close(release)
	for range maxInFlight {
		if ev := s.next(t); !strings.Contains(ev.data, `"result":{}`) {
			t.Fatalf("stream has %s, want an answer", ev.data)
		}
	}
	if n := running.Load(); n != maxInFlight {
		t.Errorf("%d requests dispatched, want %d (the one over the bound is not)", n, maxInFlight)
	}
}

// Notifications are dispatched one after the other in the order they
// were posted, and answers a client posts are not dispatched at all.
func TestNotificationsInOrder(t *testing.T) {
	var mu sync.Mutex
	var got []string
	done := make(chan struct{})
	const n = 50
	f := newFixture(t, WithDispatch(func(ctx context.Context, raw []byte) []byte {
		msg, _ := jsonrpc.Parse(raw)
		mu.Lock()
		defer mu.Unlock()
		got = append(got, msg.Method)
		if len(got) == n {
			close(done)
		}
		return nil
	}))
	s := f.open(t, "alice")
	if status, body := f.post(t, s.endpoint, "alice", `{"jsonrpc":"2.0","id":1,"result":{}}`); status != http.StatusAccepted {
		t.Fatalf("POST of a response: %d %s", status, body)
	}
	var want []string
	for i := range n {
		method := fmt.Sprintf("notifications/n%d", i)
		want = append(want, method)
		if status, body := f.post(t, s.endpoint, "alice", `{"jsonrpc":"2.0","method":"`+method+`"}`); status != http.StatusAccepted {
			t.Fatalf("POST %d: %d %s", i, status, body)
		}
	}
	select {
	case <-done:
	case <-time.After(testTimeout):
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("dispatched %v, want %v (and no response)", got, want)
	}
}

// Notifications a request sends while it runs (progress, log messages)
// reach the stream before its answer.
func TestNotificationsBeforeTheAnswer(t *testing.T) {
	const n = 50
	var f *fixture
	f = newFixture(t, WithDispatch(func(ctx context.Context, raw []byte) []byte {
		msg, _ := jsonrpc.Parse(raw)
		if msg.Method != "chatty" {
			return f.h.handleMessage(ctx, raw)
		}
		for i := range n {
			if err := f.srv.SendNotificationToClient(ctx, "notifications/progress", map[string]any{"progress": i}); err != nil {
				t.Errorf("notification %d: %v", i, err)
			}
		}
		return jsonrpc.Reply(msg.ID, json.RawMessage(`{}`), nil)
	}))
	s := f.open(t, "alice")
	f.post(t, s.endpoint, "alice", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if ev := s.next(t); !strings.Contains(ev.data, `"serverInfo"`) {
		t.Fatalf("initialize answered %s", ev.data)
	}
	for round := range 5 {
		f.post(t, s.endpoint, "alice", fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"chatty"}`, round+1))
		for i := range n + 1 {
			ev := s.next(t)
			if isAnswer := strings.Contains(ev.data, `"result"`); isAnswer != (i == n) {
				t.Fatalf("round %d: event %d is %s; want %d notifications, then the answer", round, i, ev.data, n)
			}
		}
	}
}

// bigAnswer is a dispatch that answers every request with 64 KiB.
func bigAnswer(ctx context.Context, raw []byte) []byte {
	return jsonrpc.Reply(jsonrpc.IDOf(raw), json.RawMessage(`"`+strings.Repeat("x", 64<<10)+`"`), nil)
}

// postUntilStuck posts requests for big answers to a stream whose client
// does not read, each once the writer has taken the one before, until the
// writer stays stuck on the client (its socket buffers full). The queue
// is not what ends the stream meanwhile: it holds one answer at most.
func (f *fixture) postUntilStuck(t *testing.T, s *rawStream) {
	t.Helper()
	st := f.h.lookup(s.id)
	for i := 0; ; i++ {
		if i == 2000 { // 128 MB: far more than the socket buffers
			t.Fatal("the stream's writer never got stuck")
		}
		if status, body := f.post(t, s.endpoint, "alice", fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"big"}`, i)); status != http.StatusAccepted {
			t.Fatalf("POST %d: %d %s", i, status, body)
		}
		for deadline := time.Now().Add(100 * time.Millisecond); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if st.queued.Load() == 0 {
				break
			}
		}
		if st.queued.Load() > 0 {
			return
		}
	}
}

// A client that stops reading its stream loses it once the answers
// waiting for it pass the bound, though the writer is stuck writing to
// it: the stream ends with a log line, the session is unregistered and
// further POSTs are not found, instead of the hub holding answers for it
// without limit.
func TestSlowClientLosesItsStream(t *testing.T) {
	const queueSize = 16
	f := newFixture(t, WithDispatch(bigAnswer), func(h *Handler) { h.queueSize = queueSize })
	s, _ := f.openStopped(t, "alice") // and never read again
	f.postUntilStuck(t, s)

	posted := 0
	for status := http.StatusAccepted; status == http.StatusAccepted; posted++ {
		if posted > queueSize+maxInFlight {
			t.Fatalf("the stream still takes messages after %d answers waiting", posted)
		}
		var body string
		status, body = f.post(t, s.endpoint, "alice", `{"jsonrpc":"2.0","id":"more","method":"big"}`)
		if status != http.StatusAccepted && status != http.StatusNotFound {
			t.Fatalf("POST: %d %s", status, body)
		}
		time.Sleep(time.Millisecond) // let the answer join the queue
	}
	f.waitUnregistered(t, s.id)
	if !strings.Contains(f.logged(), "does not read") {
		t.Errorf("no log line says why the stream ended; logged:\n%s", f.logged())
	}
}

// A stream ends when its client goes: the session is unregistered and
// its id is not found any more.
func TestClientGoneEndsStream(t *testing.T) {
	f := newFixture(t)
	s := f.open(t, "alice")
	s.body.Close()
	f.waitUnregistered(t, s.id)
	if status, body := f.post(t, s.endpoint, "alice", `{"jsonrpc":"2.0","id":1,"method":"ping"}`); status != http.StatusNotFound {
		t.Errorf("POST after the stream ended: %d %s, want 404", status, body)
	}
}

// An idle stream carries a keepalive comment.
func TestKeepAlive(t *testing.T) {
	f := newFixture(t, WithKeepAlive(20*time.Millisecond))
	s := f.open(t, "alice")
	select {
	case ev := <-s.events:
		if ev.name != ":" || ev.data != "ping" {
			t.Errorf("idle stream has %q %q, want a ping comment", ev.name, ev.data)
		}
	case <-time.After(testTimeout):
		t.Fatal("no keepalive on an idle stream")
	}
}

// Close ends every open stream, one whose writer is stuck on a client
// that stopped reading included, cancels the requests in flight and waits
// for them, refuses new streams, and leaves no goroutine behind.
func TestCloseEndsStreams(t *testing.T) {
	before := runtime.NumGoroutine()
	entered := make(chan struct{})
	var cancelled atomic.Bool
	f := newFixture(t, WithDispatch(func(ctx context.Context, raw []byte) []byte {
		if msg, _ := jsonrpc.Parse(raw); msg.Method == "big" {
			return bigAnswer(ctx, raw)
		}
		close(entered)
		<-ctx.Done()
		time.Sleep(20 * time.Millisecond) // Close must wait for this
		cancelled.Store(true)
		return nil
	}))
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	c := f.client(t, ctx)
	lost := make(chan error, 1)
	c.OnConnectionLost(func(err error) { lost <- err })
	streams := []*rawStream{f.open(t, "alice"), f.open(t, "bob")}
	if status, body := f.post(t, streams[0].endpoint, "alice", `{"jsonrpc":"2.0","id":1,"method":"slow"}`); status != http.StatusAccepted {
		t.Fatalf("POST: %d %s", status, body)
	}
	<-entered
	stuck, _ := f.openStopped(t, "carol") // a client that stopped reading
	f.postUntilStuck(t, stuck)

	closed := make(chan struct{})
	go func() {
		defer close(closed)
		f.h.Close()
	}()
	select {
	case <-closed:
	case <-time.After(testTimeout):
		t.Fatal("Close does not return")
	}
	if !cancelled.Load() {
		t.Error("Close returned before the request in flight ended")
	}
	for i, s := range streams {
		select {
		case _, ok := <-s.events:
			for ok {
				_, ok = <-s.events
			}
		case <-time.After(testTimeout):
			t.Fatalf("stream %d still open after Close", i)
		}
	}
	select {
	case <-lost:
	case <-time.After(testTimeout):
		t.Fatal("mcp-go's client did not see its stream end")
	}
	if resp, err := f.hc.Get(f.ts.URL + "/sse"); err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("GET /sse after Close: %v %v, want 503", resp.Status, err)
	} else {
		resp.Body.Close()
	}

	c.Close()
	stuck.body.Close() // the client's own goroutines wait for it
	f.hc.CloseIdleConnections()
	f.ts.Close()
	deadline := time.Now().Add(testTimeout)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}
