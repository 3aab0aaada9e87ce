package upstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/mcpws"
	"github.com/purko-io/mcp-hub/internal/upstream/streambound"
)

// An upstream that floods one of its streams (issue 34: a 100 MB
// notification took the hub from 30 MB to 1.1 GB while it stayed listed
// as connected) is cut at the bound of one message, shown in error with
// the bound named, and connected again once it behaves.

const (
	// floodBound is upstream.maxResponseBytes in these tests: what the hub
	// may hold of one message, a few times over while a transport reads it.
	floodBound = 4 << 20
	// heapGrowthLimit is how far the hub's heap may grow over a flood, and
	// heapKeptLimit how much of that may stay once it is connected again
	// (a new connection, nothing of the flood).
	heapGrowthLimit = 64 << 20
	heapKeptLimit   = floodBound
	// floodNotification is the size of one hostile notification, and
	// endlessEvent more than any test reads of an event without end (it
	// ends with the connection).
	floodNotification = 100 << 20
	endlessEvent      = 4 << 30
	// floodLine is the line a stdio child writes.
	floodLine = 1 << 30
)

// floodStdioEnv makes the test binary a stdio server that writes one line
// of floodLine bytes at the hub's first health check, the first time it
// runs: its value is a file that marks that it did. After that it serves
// testServer.
const floodStdioEnv = "MCPHUB_UPSTREAM_TEST_FLOOD_STDIO"

// The start and end of a notification whose data is a flood of 'x'.
const (
	floodStart = `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","logger":"flood","data":"`
	floodEnd   = `"}}`
)

// writeFlood writes prefix, n bytes of 'x' and suffix, a small buffer at a
// time, flushing as it goes: a message of any size that the test process
// never holds.
func writeFlood(w io.Writer, prefix string, n int64, suffix string) error {
	flush := func() {}
	if f, ok := w.(http.Flusher); ok {
		flush = f.Flush
	}
	if _, err := io.WriteString(w, prefix); err != nil {
		return err
	}
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	for ; n > 0; n -= int64(len(chunk)) {
		if _, err := w.Write(chunk[:min(n, int64(len(chunk)))]); err != nil {
			return err
		}
		flush()
	}
	_, err := io.WriteString(w, suffix)
	flush()
	return err
}

// floodAnswer is a server offering no tools: it returns the answer to one
// message of the hub (nil for a notification), or flood for the hub's
// health check, the moment to flood. Anything else is a method it lacks
// (server/discover: the hub then uses the initialize handshake).
func floodAnswer(msg []byte) (answer []byte, flood bool) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"params"`
	}
	if json.Unmarshal(msg, &m) != nil || len(m.ID) == 0 {
		return nil, false
	}
	out := map[string]any{"jsonrpc": "2.0", "id": m.ID}
	switch m.Method {
	case "ping":
		return nil, true
	case "initialize":
		out["result"] = map[string]any{"protocolVersion": m.Params.ProtocolVersion,
			"capabilities": map[string]any{"tools": map[string]any{}}, "serverInfo": map[string]any{"name": "flood", "version": "1"}}
	case "tools/list":
		out["result"] = map[string]any{"tools": []any{}}
	default:
		out["error"] = map[string]any{"code": mcp.METHOD_NOT_FOUND, "message": "no " + m.Method}
	}
	answer, _ = json.Marshal(out)
	return answer, false
}

// serveFloodStdio is the stdio server of floodStdioEnv.
func serveFloodStdio(mark string) error {
	if _, err := os.Stat(mark); err == nil {
		return mcpserver.ServeStdio(testServer("child", nil))
	}
	if err := os.WriteFile(mark, nil, 0o600); err != nil {
		return err
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		answer, flood := floodAnswer(in.Bytes())
		if flood {
			return writeFlood(os.Stdout, floodStart, floodLine, floodEnd+"\n")
		}
		if answer != nil {
			if _, err := os.Stdout.Write(append(answer, '\n')); err != nil {
				return err
			}
		}
	}
	return in.Err()
}

// floodStdio is a stdio child that writes a 1 GB line once connected.
func floodStdio(t *testing.T, _ <-chan struct{}) config.ServerSpec {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return config.ServerSpec{Name: "flood", Transport: config.TransportStdio, Command: self,
		Env: map[string]string{floodStdioEnv: filepath.Join(t.TempDir(), "flooded")}}
}

// floodGETStream serves testServer over streamable HTTP; its first GET
// stream sends notifications of floodNotification bytes once armed.
func floodGETStream(t *testing.T, armed <-chan struct{}) config.ServerSpec {
	real := mcpserver.NewStreamableHTTPServer(testServer("flood", nil))
	var gets atomic.Int32
	ts := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && gets.Add(1) == 1 {
			floodEvents(w, r, armed)
			return
		}
		real.ServeHTTP(w, r)
	}))
	return config.ServerSpec{Name: "flood", URL: ts.URL, Transport: config.TransportStreamableHTTP}
}

// floodListenStream serves testServer over streamable HTTP at 2026-07-28;
// its first subscriptions/listen stream sends notifications of
// floodNotification bytes once armed.
func floodListenStream(t *testing.T, armed <-chan struct{}) config.ServerSpec {
	real := mcpserver.NewStreamableHTTPServer(testServer("flood", nil))
	var listens atomic.Int32
	ts := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && peekMethod(r) == string(mcp.MethodSubscriptionsListen) && listens.Add(1) == 1 {
			floodEvents(w, r, armed)
			return
		}
		real.ServeHTTP(w, r)
	}))
	return config.ServerSpec{Name: "flood", URL: ts.URL, Transport: config.TransportStreamableHTTP, ProtocolVersion: mcp.ProtocolVersion20260728}
}

// floodEvents answers r with an event stream of notifications of
// floodNotification bytes, once armed, until the hub hangs up.
func floodEvents(w http.ResponseWriter, r *http.Request, armed <-chan struct{}) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	select {
	case <-armed:
	case <-r.Context().Done():
		return
	}
	for i := 0; i < 10; i++ {
		if writeFlood(w, "event: message\ndata: "+floodStart, floodNotification, floodEnd+"\n\n") != nil {
			return
		}
	}
}

// peekMethod is the method of the JSON-RPC message r posts, its body left
// to read.
func peekMethod(r *http.Request) string {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	r.Body = io.NopCloser(bytes.NewReader(body))
	var m struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal(body, &m)
	return m.Method
}

// floodSSE serves testServer over legacy SSE; once armed, its first event
// stream writes, in place of its next event, one event without end.
func floodSSE(t *testing.T, armed <-chan struct{}) config.ServerSpec {
	real := mcpserver.NewSSEServer(testServer("flood", nil))
	var gets atomic.Int32
	ts := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && gets.Add(1) == 1 {
			w = &floodOnNextWrite{ResponseWriter: w, armed: armed}
		}
		real.ServeHTTP(w, r)
	}))
	return config.ServerSpec{Name: "flood", URL: ts.URL + "/sse", Transport: config.TransportSSE}
}

// floodOnNextWrite writes an event without end in place of the first
// write after armed.
type floodOnNextWrite struct {
	http.ResponseWriter
	armed <-chan struct{}
}

func (w *floodOnNextWrite) Write(p []byte) (int, error) {
	select {
	case <-w.armed:
		if err := writeFlood(w.ResponseWriter, "event: message\ndata: "+floodStart, endlessEvent, ""); err != nil {
			return 0, err
		}
		return 0, errors.New("flood over")
	default:
		return w.ResponseWriter.Write(p)
	}
}

func (w *floodOnNextWrite) Flush() { w.ResponseWriter.(http.Flusher).Flush() }

// floodWebSocket is a WebSocket server whose first connection answers as
// floodAnswer and sends a message of floodNotification bytes at the hub's
// first health check; the next ones serve testServer.
func floodWebSocket(t *testing.T, _ <-chan struct{}) config.ServerSpec {
	real := mcpws.NewHandler(testServer("flood", nil))
	up := websocket.Upgrader{Subprotocols: []string{"mcp"}}
	var conns atomic.Int32
	ts := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if conns.Add(1) > 1 {
			real.ServeHTTP(w, r)
			return
		}
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		for {
			_, msg, err := ws.ReadMessage()
			if err != nil {
				return
			}
			answer, flood := floodAnswer(msg)
			if flood {
				mw, err := ws.NextWriter(websocket.TextMessage)
				if err == nil && writeFlood(mw, floodStart, floodNotification, floodEnd) == nil {
					_ = mw.Close()
				}
				return
			}
			if answer != nil && ws.WriteMessage(websocket.TextMessage, answer) != nil {
				return
			}
		}
	}))
	return config.ServerSpec{Name: "flood", URL: "ws" + strings.TrimPrefix(ts.URL, "http"), Transport: config.TransportWebSocket}
}

// heapInUse is the heap in use (runtime.MemStats.HeapInuse), read
// without stopping the world.
func heapInUse() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64() + s[1].Value.Uint64()
}

// settledHeap is the heap in use after a collection.
func settledHeap() uint64 {
	runtime.GC()
	return heapInUse()
}

// heapPeak samples the heap in use every millisecond until Stop.
type heapPeak struct {
	peak atomic.Uint64
	stop chan struct{}
	done chan struct{}
}

func watchHeap() *heapPeak {
	h := &heapPeak{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(h.done)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			if n := heapInUse(); n > h.peak.Load() {
				h.peak.Store(n)
			}
			select {
			case <-h.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return h
}

// Stop ends the sampling and returns the peak.
func (h *heapPeak) Stop() uint64 {
	close(h.stop)
	<-h.done
	return h.peak.Load()
}

// statusLog keeps every status a client went through.
type statusLog struct {
	mu   sync.Mutex
	seen []Status
}

func (l *statusLog) add(st Status) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = append(l.seen, st)
}

// after returns the first status after the one that matched (from i on)
// that matches want, and its index; -1 when none did yet.
func (l *statusLog) find(from int, want func(Status) bool) (Status, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := from; i < len(l.seen); i++ {
		if want(l.seen[i]) {
			return l.seen[i], i
		}
	}
	return Status{}, -1
}

// waitFor waits for a status from index from on that matches want.
func (l *statusLog) waitFor(t *testing.T, from int, what string, want func(Status) bool) (Status, int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if st, i := l.find(from, want); i >= 0 {
			return st, i
		}
		if time.Now().After(deadline) {
			l.mu.Lock()
			defer l.mu.Unlock()
			t.Fatalf("no status %s; seen %+v", what, l.seen)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestFloodedStreamsAreBounded: on every stream an upstream may flood
// (streamable HTTP's GET stream and a 2026-07-28 subscriptions/listen
// stream with 100 MB notifications, legacy SSE with an event without
// end, a WebSocket message of 100 MB, a stdio line of 1 GB), the hub's
// heap grows by less than heapGrowthLimit, the upstream is disconnected
// with a status that names the bound and the stream, and connected again
// when it behaves, its tools callable.
func TestFloodedStreamsAreBounded(t *testing.T) {
	cases := []struct {
		name   string
		start  func(t *testing.T, armed <-chan struct{}) config.ServerSpec
		stream string
		// atConnect arms the HTTP servers before the hub connects, not
		// once it is connected.
		atConnect bool
	}{
		{"streamable HTTP GET stream, 100 MB notifications", floodGETStream, "GET event stream", false},
		{"streamable HTTP GET stream, flooded from its start", floodGETStream, "GET event stream", true},
		{"subscriptions/listen stream, 100 MB notifications", floodListenStream, "subscriptions/listen stream", false},
		{"legacy SSE, an event without end", floodSSE, "SSE stream", false},
		{"legacy SSE, an event without end in place of the endpoint", floodSSE, "SSE stream", true},
		{"WebSocket, a 100 MB message", floodWebSocket, "WebSocket connection", false},
		{"stdio, a 1 GB line", floodStdio, "stdout", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			armed := make(chan struct{})
			var arm sync.Once
			if tc.atConnect {
				arm.Do(func() { close(armed) })
			}
			spec := tc.start(t, armed)
			before := settledHeap()
			watch := watchHeap()
			var log statusLog
			var c *Client
			c = New(spec, Options{MaxResponseBytes: floodBound, ConnectTimeout: 10 * time.Second, Timeout: 10 * time.Second,
				PingInterval: 50 * time.Millisecond, BackoffMin: 10 * time.Millisecond, BackoffMax: 50 * time.Millisecond},
				zerolog.Nop(), func() {
					st := c.Status()
					log.add(st)
					if st.State == StateConnected {
						arm.Do(func() { close(armed) })
					}
				})
			c.Start(context.Background())
			t.Cleanup(c.Stop)

			over, i := log.waitFor(t, 0, "naming the bound", func(st Status) bool { return st.State == StateError })
			log.waitFor(t, i, "connected again", func(st Status) bool { return st.State == StateConnected })
			peak := watch.Stop()
			after := settledHeap()
			for deadline := time.Now().Add(5 * time.Second); after > before+heapKeptLimit && time.Now().Before(deadline); after = settledHeap() {
				time.Sleep(50 * time.Millisecond) // the old connection's last goroutines ending
			}
			t.Logf("status %q; heap in use: %.1f MiB before, %.1f MiB at the peak, %.1f MiB after", over.Error, mib(before), mib(peak), mib(after))

			want := fmt.Sprintf("upstream flood sent a message larger than %s (upstream.maxResponseBytes) on its %s", streambound.Size(floodBound), tc.stream)
			if !strings.Contains(over.Error, want) {
				t.Errorf("status error %q; want it to say %q", over.Error, want)
			}
			if peak > before+heapGrowthLimit {
				t.Errorf("heap in use grew from %.1f MiB to %.1f MiB; want less than %d MiB more", mib(before), mib(peak), heapGrowthLimit>>20)
			}
			if after > before+heapKeptLimit {
				t.Errorf("heap in use %.1f MiB after reconnecting, %.1f MiB before; the flood is kept", mib(after), mib(before))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if got, err := callTool(ctx, c, "echo", "hi"); err != nil || !strings.HasSuffix(got, ":hi") {
				t.Errorf("echo after reconnecting: %q, %v", got, err)
			}
		})
	}
}

func mib(n uint64) float64 { return float64(n) / (1 << 20) }
