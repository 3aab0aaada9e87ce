package hubtest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperEnv makes the test binary, re-executed, act as one of the
// processes below instead of running tests.
const helperEnv = "HUBTEST_HELPER"

func TestMain(m *testing.M) {
	if role := os.Getenv(helperEnv); role != "" {
		helper(role)
		return
	}
	os.Exit(m.Run())
}

// helper is a child process of the tests: each role behaves in one way the
// harness must handle.
func helper(role string) {
	switch role {
	case "lines": // prints two lines, then runs until stopped
		fmt.Println("first")
		fmt.Fprintln(os.Stderr, "to stderr")
		fmt.Println("second")
		select {}
	case "exit3": // says so on stderr and exits with status 3
		fmt.Fprintln(os.Stderr, "bye")
		os.Exit(3)
	case "stubborn": // ignores SIGTERM
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ready")
		select {}
	case "parent": // starts a child in its own group, prints its PID, exits 0 on SIGTERM leaving it
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGTERM)
		child := exec.Command(os.Args[0])
		child.Env = append(os.Environ(), helperEnv+"=stubborn")
		out, err := child.StdoutPipe()
		if err != nil {
			os.Exit(1)
		}
		if err := child.Start(); err != nil {
			os.Exit(1)
		}
		// Once it says ready, the child ignores SIGTERM.
		if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
			os.Exit(1)
		}
		fmt.Println(child.Process.Pid)
		<-c
		os.Exit(0)
	case "listen": // serves HTTP on 127.0.0.1:$PORT
		ln, err := net.Listen("tcp", "127.0.0.1:"+os.Getenv("PORT"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		_ = http.Serve(ln, http.NotFoundHandler())
	case "deaf": // runs, never listens
		select {}
	case "chatty-hub": // a "hub" whose first line is not the listening line
		fmt.Println("starting up")
		fmt.Println("mcp-hub dev listening on http://127.0.0.1:1/mcp")
		select {}
	default:
		fmt.Fprintln(os.Stderr, "unknown role", role)
		os.Exit(2)
	}
}

// helperCmd is the test binary in role.
func helperCmd(t *testing.T, role string, env ...string) *exec.Cmd {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(append(os.Environ(), helperEnv+"="+role), env...)
	return cmd
}

func TestWaitLineAndOutput(t *testing.T) {
	p := StartProcess(t, "lines", helperCmd(t, "lines"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Both lines may be in before the first call: earlier lines count.
	for _, want := range []string{"second", "first"} {
		got, err := p.WaitLine(ctx, func(l string) bool { return l == want })
		if err != nil || got != want {
			t.Fatalf("WaitLine(%q) = %q, %v", want, got, err)
		}
	}
	Eventually(t, 10*time.Second, 10*time.Millisecond, "stderr in the output", func() error {
		if !strings.Contains(p.Output(), "to stderr") {
			return fmt.Errorf("output %q", p.Output())
		}
		return nil
	})
	if strings.Contains(p.Stdout(), "to stderr") || !strings.Contains(p.Stdout(), "first\nsecond\n") {
		t.Errorf("Stdout() = %q; want the two stdout lines only", p.Stdout())
	}
	short, cancelShort := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancelShort()
	if _, err := p.WaitLine(short, func(l string) bool { return l == "never" }); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitLine of a line never printed = %v; want the deadline", err)
	}
}

func TestWaitLineFailsWhenTheProcessExits(t *testing.T) {
	p := StartProcess(t, "exit3", helperCmd(t, "exit3"))
	_, err := p.WaitLine(context.Background(), func(l string) bool { return l == "never" })
	if err == nil || !strings.Contains(err.Error(), "exited") {
		t.Fatalf("WaitLine = %v; want an error saying the process exited", err)
	}
	if code := p.ExitCode(); code != 3 {
		t.Errorf("ExitCode() = %d; want 3", code)
	}
	// Stop after the exit only reports it, and never signals the reaped PID.
	if err := p.Stop(time.Second); err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("Stop after exit = %v; want exit status 3", err)
	}
}

func TestStopKillsWhatIsLeftInTheGroup(t *testing.T) {
	p := StartProcess(t, "parent", helperCmd(t, "parent"))
	line, err := p.WaitLine(context.Background(), func(string) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(line)
	if err != nil {
		t.Fatalf("first line %q is not a PID", line)
	}
	if err := p.Stop(10 * time.Second); err != nil {
		t.Fatalf("Stop = %v; want nil (the parent exits 0 on SIGTERM)", err)
	}
	// The child ignores SIGTERM; only the group SIGKILL after its parent
	// exited ends it. Until its zombie is reaped by init, /proc shows it as Z.
	Eventually(t, 10*time.Second, 10*time.Millisecond, "the child to be killed", func() error {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", child))
		if err != nil {
			return nil // gone
		}
		if f := strings.Fields(string(data)); len(f) > 2 && f[2] == "Z" {
			return nil
		}
		return fmt.Errorf("child %d still running: %s", child, data)
	})
}

func TestStopKillsAfterGrace(t *testing.T) {
	p := StartProcess(t, "stubborn", helperCmd(t, "stubborn"))
	if _, err := p.WaitLine(context.Background(), func(l string) bool { return l == "ready" }); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err := p.Stop(300 * time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("Stop = %v; want an error saying it was killed", err)
	}
	if !p.Exited() {
		t.Fatal("still running after Stop")
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("killed after %v, before the grace of 300ms", d)
	}
}

func TestBufferKeepsTheTail(t *testing.T) {
	for _, tc := range []struct {
		name   string
		writes []string
		// String, and linesFrom(0): the lines shown and the offset after them
		want  string
		lines []string
		next  int64
	}{
		{"under the bound", []string{"ab\n", "cd\n"}, "ab\ncd\n", []string{"ab", "cd"}, 6},
		// 10 bytes kept at most, cut at a line's end: only line3 is left.
		{"cut at a line's end", []string{"line1\nline2\n", "line3\n"}, "…line3\n", []string{"line3"}, 18},
		{"cut at a line's start", []string{"line1\n", "line2\n", "abc\n"}, "…line2\nabc\n", []string{"line2", "abc"}, 16},
		{"cut within a line with no end in the kept bytes", []string{"0123456789abcdef"}, "…6789abcdef", nil, 6},
		{"a partial line is shown, not listed", []string{"line1\nline2\nli"}, "…line2\nli", []string{"line2"}, 12},
		{"many writes", []string{"line1\n", "line2\n", "line3\n", "line4\n", "x\n"}, "…line4\nx\n", []string{"line4", "x"}, 26},
	} {
		// Chunks smaller than the bound are cut from the front as the
		// bytes come; the default holds everything here.
		for _, chunk := range []int{3, 4, 7, chunkSize} {
			t.Run(fmt.Sprintf("%s/chunk %d", tc.name, chunk), func(t *testing.T) {
				b := newChunkedBuffer(10, chunk)
				for _, w := range tc.writes {
					b.write([]byte(w))
				}
				if got := b.String(); got != tc.want {
					t.Errorf("String() = %q; want %q", got, tc.want)
				}
				lines, next, _ := b.linesFrom(0)
				if next != tc.next || strings.Join(lines, "|") != strings.Join(tc.lines, "|") {
					t.Errorf("linesFrom(0) = %q, %d; want %q, %d", lines, next, tc.lines, tc.next)
				}
				if lines, _, _ := b.linesFrom(next); len(lines) != 0 {
					t.Errorf("linesFrom(end) = %q; want none", lines)
				}
			})
		}
	}
}

// The buffer shows what a buffer holding every byte would show of its
// last keep bytes, whatever the writes and the chunk size.
func TestBufferShowsTheLastBytes(t *testing.T) {
	const keep = 100
	rng := rand.New(rand.NewPCG(1, 2))
	for _, chunk := range []int{1, 5, 64, 99, 100, 101, 256} {
		b, all := newChunkedBuffer(keep, chunk), []byte(nil)
		for range 300 {
			w := make([]byte, rng.IntN(40))
			for i := range w {
				w[i] = "abc\n"[rng.IntN(4)]
			}
			b.write(w)
			all = append(all, w...)
			off := 0 // what the last keep bytes start at, at a line's start
			if over := len(all) - keep; over > 0 {
				off = over
				if i := bytes.IndexByte(all[over:], '\n'); all[over-1] != '\n' && i >= 0 {
					off += i + 1
				}
			}
			want := string(all[off:])
			if off > 0 {
				want = "…" + want
			}
			if got := b.String(); got != want {
				t.Fatalf("chunk %d, after %d bytes: String() = %q; want %q", chunk, len(all), got, want)
			}
			lines, next, _ := b.linesFrom(0)
			end := off + bytes.LastIndexByte(all[off:], '\n') + 1
			if bytes.LastIndexByte(all[off:], '\n') < 0 {
				end = off
			}
			wantLines := strings.Split(string(all[off:end]), "\n")
			wantLines = wantLines[:len(wantLines)-1]
			if next != int64(end) || strings.Join(lines, "\n") != strings.Join(wantLines, "\n") || len(lines) != len(wantLines) {
				t.Fatalf("chunk %d, after %d bytes: linesFrom(0) = %q, %d; want %q, %d", chunk, len(all), lines, next, wantLines, end)
			}
		}
	}
}

// A process that logs a line per request (the hub in a benchmark) keeps
// writing once its buffer is full: each write must not copy the whole
// buffer. 768 KiB in lines of 256 bytes past a bound of 256 KiB allocated
// 768 MiB when every write cut the front into a new slice.
func TestBufferWritesPastTheBoundCheaply(t *testing.T) {
	const keep, line, written = 256 << 10, 256, 1 << 20
	b := newBuffer(keep)
	p := []byte(strings.Repeat("x", line-1) + "\n")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range written / line {
		b.write(p)
	}
	runtime.ReadMemStats(&after)
	// The chunks of keep bytes and one more, and a channel per write.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4*keep {
		t.Errorf("writing %d KiB, %d KiB past the bound, allocated %d KiB; want at most %d", written>>10, (written-keep)>>10, alloc>>10, 4*keep>>10)
	}
	if got := b.String(); len(got) != len("…")+keep {
		t.Errorf("String() is %d bytes; want the last %d", len(got), keep)
	}
}

func TestLaunchServerRetriesAnEarlyExit(t *testing.T) {
	var calls []int
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, port, err := LaunchServer(ctx, "flaky", 0, func(port int) *exec.Cmd {
		calls = append(calls, port)
		if len(calls) == 1 {
			return helperCmd(t, "exit3") // as when the port was taken meanwhile
		}
		return helperCmd(t, "listen", "PORT="+strconv.Itoa(port))
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(StopGrace)
	if len(calls) != 2 || calls[1] != port {
		t.Fatalf("commands made for ports %v, server on %d; want two starts, the second on its port", calls, port)
	}
	c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}

func TestLaunchServerGivesUpOnADeafServer(t *testing.T) {
	starts := 0
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, _, err := LaunchServer(ctx, "deaf", 0, func(int) *exec.Cmd {
		starts++
		return helperCmd(t, "deaf")
	})
	if err == nil || !strings.Contains(err.Error(), "not listening") || starts != 1 {
		t.Fatalf("LaunchServer = %v after %d starts; want one start and \"not listening\"", err, starts)
	}
}

func TestPollSaysWhatItSawLast(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	n := 0
	err := Poll(ctx, 5*time.Millisecond, func() error { n++; return fmt.Errorf("try %d", n) })
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), fmt.Sprintf("last: try %d", n)) || n < 2 {
		t.Fatalf("Poll = %v after %d tries; want the deadline and the last try", err, n)
	}
	if err := Poll(context.Background(), time.Hour, func() error { return nil }); err != nil {
		t.Fatalf("Poll of a true condition = %v", err)
	}
}

func TestLaunchHubChecksTheFirstLine(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	_, err = LaunchHub(context.Background(), HubOptions{Bin: self, Env: []string{helperEnv + "=chatty-hub"}, Timeout: 30 * time.Second})
	if err == nil || !strings.Contains(err.Error(), `first stdout line "starting up" does not say where it listens`) {
		t.Fatalf("LaunchHub = %v; want the first line named", err)
	}
	_, err = LaunchHub(context.Background(), HubOptions{Bin: self, Env: []string{helperEnv + "=exit3"}, Timeout: 30 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "exited") || !strings.Contains(err.Error(), "bye") {
		t.Fatalf("LaunchHub = %v; want the exit and the output", err)
	}
}

// TestBuildReusesAndRebuilds: an unchanged build keeps the binary (same
// inode: not relinked), a changed source gives a new one.
func TestBuildReusesAndRebuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	mod := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(mod, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/prog\n\ngo 1.26\n")
	write("main.go", "package main\n\nfunc main() { println(\"one\") }\n")
	bin := filepath.Join(t.TempDir(), "prog")
	run := func() (string, uint64) {
		t.Helper()
		if err := goBuild(context.Background(), mod, ".", bin); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(bin).CombinedOutput()
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(bin)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out)), fi.Sys().(*syscall.Stat_t).Ino
	}
	out1, ino1 := run()
	out2, ino2 := run()
	write("main.go", "package main\n\nfunc main() { println(\"two\") }\n")
	out3, _ := run()
	if out1 != "one" || out2 != "one" || out3 != "two" {
		t.Fatalf("outputs %q, %q, %q; want one, one, two (a stale binary was reused)", out1, out2, out3)
	}
	if ino1 != ino2 {
		t.Errorf("an unchanged build relinked the binary (inode %d -> %d)", ino1, ino2)
	}
}

// TestStartHub runs the real hub on its embedded default config: it comes
// up connected, the listing is read, and MCP_SERVERS of this process does
// not reach it.
func TestStartHub(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the hub")
	}
	t.Setenv("MCP_SERVERS", `[{"name":"from-my-shell","url":"http://127.0.0.1:1/mcp"}]`)
	h := StartHub(t, HubOptions{Bin: HubBinary(t), Wait: Connected})
	if !strings.HasPrefix(h.Base, "http://127.0.0.1:") || h.MCPURL() != h.Base+"/mcp" {
		t.Fatalf("Base %q, MCPURL %q", h.Base, h.MCPURL())
	}
	l, err := h.Listing("?format=names")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := l.Server("from-my-shell"); ok || !l.Connected("hub") {
		t.Fatalf("listing %s; want the hub's own server only, connected", l.Summary())
	}
	if err := h.ready(); err != nil {
		t.Fatalf("connected but not ready: %v", err)
	}
	if err := h.Stop(StopGrace); err != nil {
		t.Fatalf("hub after SIGTERM: %v", err)
	}
}

func TestUpstreamRecordsAuthorization(t *testing.T) {
	u := StartUpstream(t, "up")
	if !strings.HasPrefix(u.URL, "http://127.0.0.1:") || u.Authorization() != "" {
		t.Fatalf("URL %q, Authorization %q before any request", u.URL, u.Authorization())
	}
	req, err := http.NewRequest(http.MethodPost, u.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer tok-1")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := u.Authorization(); got != "Bearer tok-1" {
		t.Fatalf("Authorization() = %q; want the header of the last request", got)
	}
}
