package soak

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The soak's own upstreams run as children: the test binary started again
// with SOAK_UPSTREAM set (TestMain), so that the flapping one can be
// stopped and started again by its PID, as a crashed or redeployed server
// is. Each writes a line to its journal (an append-only file that outlives
// its process) for every tools/call it receives, before it answers: the
// journal says which calls reached an upstream, and how often.
const (
	envRole    = "SOAK_UPSTREAM" // flaky or hostile
	envAddr    = "SOAK_ADDR"     // 127.0.0.1:PORT
	envJournal = "SOAK_JOURNAL"  // the journal's path
)

// The tools. flaky: get_echo (read-only by its verb) answers "echo ID:
// TEXT"; write_note (a write) answers "wrote ID". hostile: each tool is one
// way an upstream misbehaves, all read-only by their verb.
const (
	toolEcho      = "get_echo"
	toolNote      = "write_note"
	toolSlow      = "get_slow"      // answers after 1-3 s
	toolHuge      = "get_huge"      // answers hugeChars of text, far over the hub's result cap
	toolFlood     = "get_flood"     // sends floodCount log notifications of 1 KiB, then answers
	toolMalformed = "get_malformed" // answers with a body that is not JSON
	toolBroken    = "get_broken"    // answers a JSON-RPC error
	toolFails     = "get_failure"   // answers a tool error result (isError)
)

const (
	hugeChars  = 400_000
	floodCount = 200
)

// runUpstream serves the role named by SOAK_UPSTREAM until SIGTERM, then
// finishes the requests in flight (at most 3 s) and exits.
func runUpstream(role string) error {
	j, err := os.OpenFile(os.Getenv(envJournal), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer j.Close()
	var mu sync.Mutex
	record := func(tool string, args map[string]any) {
		mu.Lock()
		defer mu.Unlock()
		if _, err := fmt.Fprintf(j, "%s %v %q\n", tool, args["id"], fmt.Sprint(args["text"])); err != nil {
			fmt.Fprintln(os.Stderr, "soak upstream: journal:", err)
		}
	}
	s := server.NewMCPServer("soak-"+role, "1", server.WithToolCapabilities(false), server.WithLogging())
	add := func(name string, h func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error)) {
		s.AddTool(mcp.NewTool(name, mcp.WithString("id"), mcp.WithString("text")), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			record(name, r.GetArguments())
			return h(ctx, r)
		})
	}
	var handler http.Handler
	switch role {
	case "flaky":
		add(toolEcho, func(_ context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(fmt.Sprintf("echo %s: %s", r.GetString("id", ""), r.GetString("text", ""))), nil
		})
		add(toolNote, func(_ context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("wrote " + r.GetString("id", "")), nil
		})
		handler = server.NewStreamableHTTPServer(s)
	case "hostile":
		add(toolSlow, func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			d := time.Second + time.Duration(len(r.GetString("id", ""))%3)*time.Second
			select {
			case <-time.After(d):
				return mcp.NewToolResultText("slow " + r.GetString("id", "")), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})
		add(toolHuge, func(_ context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("huge " + r.GetString("id", "") + " " + strings.Repeat("0123456789abcdef", hugeChars/16)), nil
		})
		add(toolFlood, func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			line := strings.Repeat("x", 1024)
			for i := range floodCount {
				_ = s.SendLogMessageToClient(ctx, mcp.NewLoggingMessageNotification(mcp.LoggingLevelInfo, "flood", fmt.Sprintf("%d %s", i, line)))
			}
			return mcp.NewToolResultText("flooded " + r.GetString("id", "")), nil
		})
		add(toolMalformed, func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("never sent: the answer is replaced"), nil
		})
		add(toolBroken, func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, errors.New("soak: the upstream's own failure")
		})
		add(toolFails, func(_ context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultError("soak: bad input " + r.GetString("id", "")), nil
		})
		handler = malformer{server.NewStreamableHTTPServer(s)}
	default:
		return fmt.Errorf("unknown upstream role %q", role)
	}
	ln, err := net.Listen("tcp", os.Getenv(envAddr))
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	stopped := make(chan struct{})
	go func() { // ends once the server has stopped
		defer close(stopped)
		<-stop
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
		_ = hs.Close()
	}()
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	// Serve returns as soon as Shutdown begins: the calls in flight still
	// run (and write the journal) until it ends.
	<-stopped
	return nil
}

// malformer answers a tools/call of get_malformed with a body that is not
// JSON once the tool has run (so its journal has it).
type malformer struct{ next http.Handler }

func (m malformer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		m.next.ServeHTTP(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	if !bytes.Contains(body, []byte(`"`+toolMalformed+`"`)) || !bytes.Contains(body, []byte(`"tools/call"`)) {
		m.next.ServeHTTP(w, r)
		return
	}
	rec := &discard{header: http.Header{}}
	m.next.ServeHTTP(rec, r)
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+"\x00\x01 this is not JSON {{{")
}

// discard is a ResponseWriter that keeps nothing.
type discard struct{ header http.Header }

func (d *discard) Header() http.Header         { return d.header }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(int)             {}
func (d *discard) Flush()                      {}

// upstreamCommand is the test binary as the upstream role on port,
// journaling into journal.
func upstreamCommand(role, journal string) func(port int) *exec.Cmd {
	return func(port int) *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envRole+"="+role, fmt.Sprintf("%s=127.0.0.1:%d", envAddr, port), envJournal+"="+journal)
		return cmd
	}
}

// journalEntry is one line of a journal.
type journalEntry struct{ tool, id, text string }

// readJournal reads a journal's lines.
func readJournal(path string) ([]journalEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []journalEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		tool, rest, _ := strings.Cut(sc.Text(), " ")
		id, text, _ := strings.Cut(rest, " ")
		out = append(out, journalEntry{tool: tool, id: id, text: text})
	}
	return out, sc.Err()
}
