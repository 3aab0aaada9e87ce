package mcpsession

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/edge"
	"github.com/purko-io/mcp-hub/internal/eventstore"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
)

// fixture is Sessions behind an HTTP server whose GET serves a session's
// stream (the session is the request's Mcp-Session-Id).
type fixture struct {
	t       *testing.T
	ss      *Sessions
	mcp     *server.MCPServer
	srv     *httptest.Server
	open    atomic.Int64 // streams being served
	forgot  chan string
	stopRun func()
}

// newFixture starts Sessions; with takeOver, Run runs (streams are taken
// over from net/http), else the request's goroutine writes them.
func newFixture(t *testing.T, takeOver bool, opts Options) *fixture {
	t.Helper()
	f := &fixture{t: t, forgot: make(chan string, 16)}
	opts.Events, opts.Log = eventstore.New(), zerolog.Nop()
	if opts.Forget == nil {
		opts.Forget = func(id string) {
			f.mcp.UnregisterSession(context.Background(), id)
			f.forgot <- id
		}
	}
	hooks := &server.Hooks{}
	hooks.AddOnUnregisterSession(func(ctx context.Context, cs server.ClientSession) { f.ss.Unregistered(ctx, cs) })
	f.mcp = server.NewMCPServer("t", "1", server.WithHooks(hooks))
	opts.MCP = f.mcp
	f.ss = New(opts)
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.open.Add(1)
		if !f.ss.ServeStream(w, r, r.Header.Get("Mcp-Session-Id"), func() { f.open.Add(-1) }) {
			f.open.Add(-1)
			http.Error(w, "not ours", http.StatusTeapot)
		}
	}))
	t.Cleanup(f.srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	if takeOver {
		go func() { defer close(done); f.ss.Run(ctx) }()
	} else {
		close(done)
	}
	f.stopRun = func() { cancel(); <-done }
	t.Cleanup(f.stopRun)
	return f
}

// sse is a client's open stream.
type sse struct {
	resp   *http.Response
	events chan [2]string // id, data
}

// do sends a GET of session id's stream, resuming after lastEventID if not
// empty.
func (f *fixture) do(id, lastEventID string) *http.Response {
	f.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, f.srv.URL, nil)
	req.Header.Set("Mcp-Session-Id", id)
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	return resp
}

func (f *fixture) get(id, lastEventID string) *sse {
	f.t.Helper()
	resp := f.do(id, lastEventID)
	f.t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		f.t.Fatalf("GET: %s %q", resp.Status, resp.Header.Get("Content-Type"))
	}
	s := &sse{resp: resp, events: make(chan [2]string, 64)}
	go func() {
		defer close(s.events)
		sc := bufio.NewScanner(resp.Body)
		var eid string
		for sc.Scan() {
			line := sc.Text()
			if v, ok := strings.CutPrefix(line, "id: "); ok {
				eid = v
			} else if v, ok := strings.CutPrefix(line, "data: "); ok {
				s.events <- [2]string{eid, v}
				eid = ""
			}
		}
	}()
	return s
}

// leftToMCPGo reports whether a GET of session id's stream (resuming after
// lastEventID, if not empty) was left to mcp-go.
func (f *fixture) leftToMCPGo(id, lastEventID string) bool {
	f.t.Helper()
	resp := f.do(id, lastEventID)
	resp.Body.Close()
	return resp.StatusCode == http.StatusTeapot
}

// next is the stream's next event, skipping pings.
func (s *sse) next(t *testing.T) (id, data string) {
	t.Helper()
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				t.Fatal("the stream ended")
			}
			if strings.Contains(ev[1], `"method":"ping"`) {
				continue
			}
			return ev[0], ev[1]
		case <-time.After(5 * time.Second):
			t.Fatal("no event")
		}
	}
}

// ended waits for the stream to end.
func (s *sse) ended(t *testing.T) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case _, ok := <-s.events:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("the stream did not end")
		}
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// attached waits until session id has a stream.
func (f *fixture) attached(id string) {
	f.t.Helper()
	waitFor(f.t, "stream attached", func() bool { return f.ss.streaming(id) })
}

func notify(f *fixture, id, what string) {
	_ = f.mcp.SendNotificationToSpecificClient(id, "notifications/test", map[string]any{"what": what})
}

func bothWays(t *testing.T, run func(t *testing.T, takeOver bool)) {
	for _, takeOver := range []bool{true, false} {
		name := "net/http"
		if takeOver {
			name = "taken over"
		}
		t.Run(name, func(t *testing.T) { run(t, takeOver) })
	}
}

// A session's notifications reach its stream, those sent before the
// stream opened included; another session's do not.
func TestNotificationsReachTheStream(t *testing.T) {
	bothWays(t, func(t *testing.T, takeOver bool) {
		f := newFixture(t, takeOver, Options{})
		ctx := context.Background()
		for _, id := range []string{"a", "b"} {
			if _, err := f.ss.Open(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
		notify(f, "a", "early")
		s := f.get("a", "")
		_, data := s.next(t)
		mustContain(t, data, `"what":"early"`)
		notify(f, "b", "other")
		notify(f, "a", "late")
		eid, data := s.next(t)
		mustContain(t, data, `"what":"late"`)
		if eid == "" {
			t.Error("a notification without an event id")
		}
	})
}

// A client that resumes with Last-Event-ID gets what it missed, then what
// comes; a Last-Event-ID of no stream of the hub's is left to mcp-go.
func TestResume(t *testing.T) {
	bothWays(t, func(t *testing.T, takeOver bool) {
		f := newFixture(t, takeOver, Options{})
		if _, err := f.ss.Open(context.Background(), "a"); err != nil {
			t.Fatal(err)
		}
		s := f.get("a", "")
		notify(f, "a", "one")
		first, _ := s.next(t)
		s.resp.Body.Close()
		waitFor(t, "stream closed", func() bool { return f.open.Load() == 0 })
		notify(f, "a", "two") // while no stream is open: queued
		s = f.get("a", "")
		_, data := s.next(t)
		mustContain(t, data, `"what":"two"`)
		notify(f, "a", "three")
		s.next(t)
		s.resp.Body.Close()
		waitFor(t, "stream closed", func() bool { return f.open.Load() == 0 })

		s = f.get("a", first)
		for _, want := range []string{"two", "three"} {
			_, data := s.next(t)
			mustContain(t, data, `"what":"`+want+`"`)
		}
		notify(f, "a", "four")
		_, data = s.next(t)
		mustContain(t, data, `"what":"four"`)

		if !f.leftToMCPGo("a", "no-such-event") {
			t.Error("a stream of an unknown Last-Event-ID was served")
		}
	})
}

// A newer GET supersedes the stream before it, which ends.
func TestNewerStreamSupersedes(t *testing.T) {
	bothWays(t, func(t *testing.T, takeOver bool) {
		f := newFixture(t, takeOver, Options{})
		old := f.get("a", "")
		f.attached("a")
		cur := f.get("a", "")
		old.ended(t)
		notify(f, "a", "x")
		_, data := cur.next(t)
		mustContain(t, data, `"what":"x"`)
	})
}

// Server requests go on the stream, and the client's answer, POSTed to
// the hub (Deliver), reaches the call; a session that ends fails the calls
// still waiting and closes its stream.
func TestServerRequests(t *testing.T) {
	bothWays(t, func(t *testing.T, takeOver bool) {
		f := newFixture(t, takeOver, Options{})
		s, err := f.ss.Open(context.Background(), "a")
		if err != nil {
			t.Fatal(err)
		}
		stream := f.get("a", "")
		type outcome struct {
			res *mcp.ListRootsResult
			err error
		}
		got := make(chan outcome, 1)
		go func() {
			res, err := s.ListRoots(context.Background(), mcp.ListRootsRequest{})
			got <- outcome{res, err}
		}()
		_, data := stream.next(t)
		msg, err := jsonrpc.Parse([]byte(data))
		if err != nil || msg.Method != string(mcp.MethodListRoots) {
			t.Fatalf("not a roots/list request: %s (%v)", data, err)
		}
		answer, _ := jsonrpc.Parse([]byte(`{"jsonrpc":"2.0","id":` + string(msg.ID) + `,"result":{"roots":[{"uri":"file:///w"}]}}`))
		if f.ss.Deliver("b", answer) {
			t.Error("another session's id took the answer")
		}
		if !f.ss.Deliver("a", answer) {
			t.Fatal("the answer was not taken")
		}
		if o := <-got; o.err != nil || len(o.res.Roots) != 1 || o.res.Roots[0].URI != "file:///w" {
			t.Fatalf("roots/list = %+v, %v", o.res, o.err)
		}
		if f.ss.Deliver("a", answer) {
			t.Error("an answer was taken twice")
		}

		go func() {
			_, err := s.ListRoots(context.Background(), mcp.ListRootsRequest{})
			got <- outcome{nil, err}
		}()
		stream.next(t)
		f.mcp.UnregisterSession(context.Background(), "a")
		if o := <-got; !errors.Is(o.err, ErrEnded) {
			t.Errorf("a call on a session that ended: %v", o.err)
		}
		stream.ended(t)
		if f.ss.Get("a") != nil {
			t.Error("an ended session is still registered")
		}
	})
}

// Open registers a session once; a session mcp-go registered itself is
// mcp-go's, and so is its stream.
func TestOpen(t *testing.T) {
	f := newFixture(t, true, Options{})
	ctx := context.Background()
	a, err := f.ss.Open(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if again, err := f.ss.Open(ctx, "a"); err != nil || again != a {
		t.Errorf("Open again = %p, %v; want %p", again, err, a)
	}
	if err := f.mcp.RegisterSession(ctx, otherSession("m")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ss.Open(ctx, "m"); !errors.Is(err, server.ErrSessionExists) {
		t.Errorf("Open of mcp-go's session: %v", err)
	}
	if !f.leftToMCPGo("m", "") {
		t.Error("the stream of mcp-go's session was served")
	}
}

// A session whose notifications no stream drains declines more, rather
// than have mcp-go report each to its error hooks.
func TestFullSessionDeclines(t *testing.T) {
	f := newFixture(t, true, Options{})
	s, _ := f.ss.Open(context.Background(), "a")
	for range notificationBuffer {
		if !s.Initialized() {
			t.Fatal("declined before its channel was full")
		}
		notify(f, "a", "x")
	}
	if s.Initialized() {
		t.Error("a full session takes notifications")
	}
	if err := f.mcp.SendNotificationToSpecificClient("a", "notifications/test", nil); !errors.Is(err, server.ErrSessionNotInitialized) {
		t.Errorf("sending to a full session: %v", err)
	}
}

// The sweep forgets a session nothing happened on for the idle TTL, but
// not one with a stream open or touched since.
func TestSweep(t *testing.T) {
	var busy sync.Map
	f := newFixture(t, true, Options{IdleTTL: time.Minute, Busy: func(id string) bool { _, ok := busy.Load(id); return ok }})
	for _, id := range []string{"idle", "touched", "streaming", "busy"} {
		if _, err := f.ss.Open(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
	f.ss.Track("served") // an id mcp-go served a request of, not registered
	f.get("streaming", "")
	f.attached("streaming")
	busy.Store("busy", true)
	long := time.Now().Add(-2 * time.Minute).UnixNano()
	for _, id := range []string{"idle", "touched", "streaming", "busy", "served"} {
		v, _ := f.ss.active.Load(id)
		v.(*atomic.Int64).Store(long)
	}
	f.ss.Touch("touched")
	f.ss.Touch("never-tracked")
	f.ss.sweep(time.Now())
	var forgot []string
	for len(f.forgot) > 0 {
		forgot = append(forgot, <-f.forgot)
	}
	want := map[string]bool{"idle": true, "served": true}
	if len(forgot) != len(want) || !want[forgot[0]] || !want[forgot[1]] {
		t.Errorf("forgot %v, want idle and served", forgot)
	}
	if _, tracked := f.ss.active.Load("never-tracked"); tracked {
		t.Error("Touch tracked an id")
	}
}

// Run's end closes the streams taken over and waits for them.
func TestRunEndClosesStreams(t *testing.T) {
	f := newFixture(t, true, Options{Heartbeat: time.Hour})
	s := f.get("a", "")
	f.attached("a")
	f.stopRun()
	if n := f.open.Load(); n != 0 {
		t.Errorf("%d streams open after Run returned", n)
	}
	s.ended(t)
}

// Pings keep an open stream busy, without event ids.
func TestHeartbeat(t *testing.T) {
	bothWays(t, func(t *testing.T, takeOver bool) {
		f := newFixture(t, takeOver, Options{Heartbeat: 20 * time.Millisecond})
		s := f.get("a", "")
		for range 2 {
			select {
			case ev := <-s.events:
				mustContain(t, ev[1], `"method":"ping"`)
				if ev[0] != "" {
					t.Errorf("a ping with event id %q", ev[0])
				}
			case <-time.After(5 * time.Second):
				t.Fatal("no ping")
			}
		}
	})
}

func mustContain(t *testing.T, s, sub string) {
	t.Helper()
	if !strings.Contains(s, sub) {
		t.Fatalf("%s does not contain %s", s, sub)
	}
}

// otherSession is a session mcp-go registered itself.
type otherSession string

func (o otherSession) SessionID() string                                   { return string(o) }
func (o otherSession) NotificationChannel() chan<- mcp.JSONRPCNotification { return nil }
func (o otherSession) Initialize()                                         {}
func (o otherSession) Initialized() bool                                   { return true }

// The hooks register the hub's session when an initialize of a Streamable
// HTTP session succeeds, and only then: other transports' sessions are
// mcp-go's.
func TestInstallHooks(t *testing.T) {
	hooks := &server.Hooks{}
	mcpServer := server.NewMCPServer("t", "1", server.WithHooks(hooks))
	ss := New(Options{MCP: mcpServer, Events: eventstore.New(), Log: zerolog.Nop()})
	ss.InstallHooks(hooks)
	req := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	streamableID := edge.SessionIDs{}.ResolveSessionIdManager(req).Generate()
	for _, tc := range []struct {
		id   string
		kept bool
	}{{streamableID, true}, {"ws-abc", false}, {"stdio", false}} {
		ctx := mcpServer.WithContext(context.Background(), otherSession(tc.id))
		resp := mcpServer.HandleMessage(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
		if _, ok := resp.(mcp.JSONRPCResponse); !ok {
			t.Fatalf("initialize: %+v", resp)
		}
		if kept := ss.Get(tc.id) != nil; kept != tc.kept {
			t.Errorf("session %q kept by the hub: %v, want %v", tc.id, kept, tc.kept)
		}
		if _, tracked := ss.active.Load(tc.id); tracked != tc.kept {
			t.Errorf("session %q tracked: %v, want %v", tc.id, tracked, tc.kept)
		}
	}
	mcpServer.UnregisterSession(context.Background(), streamableID)
	if ss.Get(streamableID) != nil {
		t.Error("an unregistered session is kept")
	}
}
