package hubtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	// StopGrace is how long a process gets between SIGTERM and SIGKILL when
	// a test's cleanup stops it: longer than the hub's own shutdown grace
	// in the tests' configs, so that it can stop its stdio children itself.
	StopGrace = 10 * time.Second
	// TailBytes is how much of a process's output a failure message shows.
	TailBytes = 8 << 10
	// keepBytes bounds the output kept of one process (the last bytes win):
	// far more than a test's logs, which assertions read whole, and a bound
	// on a benchmark's per-request log lines.
	keepBytes = 32 << 20
	// pipeDelay bounds the wait for the output pipes after a process has
	// exited: a grandchild that inherited them must not hang the test.
	pipeDelay = 5 * time.Second
	// killWait bounds the wait for a process to be reaped after SIGKILL.
	killWait = 15 * time.Second
)

// Process is a child process started in a process group of its own, with
// its stdout and stderr kept for assertions and failure messages.
type Process struct {
	name string
	cmd  *exec.Cmd
	out  *output
	done chan struct{} // closed once the process has exited and been reaped
	err  error         // Wait's result; read only after done is closed
}

// Command is exec.CommandContext for a child that runs in a process group
// of its own: when ctx ends, the whole group is killed, not only the
// child, so a wrapper (npx, sh) cannot leave its server running.
func Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = groupAttr()
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = pipeDelay
	return cmd
}

// Launch starts cmd in a process group of its own and keeps its output;
// name says which process it is in messages. Output also goes to
// cmd.Stdout and cmd.Stderr when they are set. A goroutine owned by the
// Process waits for the child and ends when it exits; Stop or Kill make
// it exit.
func Launch(name string, cmd *exec.Cmd) (*Process, error) {
	return launch(name, cmd, nil)
}

// launch is Launch with a function run once the process has exited (to
// remove files that belong to it).
func launch(name string, cmd *exec.Cmd, onExit func()) (*Process, error) {
	p := &Process{name: name, cmd: cmd, out: newOutput(), done: make(chan struct{})}
	cmd.SysProcAttr = groupAttr()
	stdout, stderr := io.Writer(stdoutWriter{p.out}), io.Writer(stderrWriter{p.out})
	if cmd.Stdout != nil {
		stdout = io.MultiWriter(cmd.Stdout, stdout)
	}
	if cmd.Stderr != nil {
		stderr = io.MultiWriter(cmd.Stderr, stderr)
	}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = pipeDelay
	}
	if cmd.Cancel != nil { // exec.CommandContext: cancel the group, not the child alone
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	}
	if err := cmd.Start(); err != nil {
		if onExit != nil {
			onExit()
		}
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		p.err = cmd.Wait()
		if onExit != nil {
			onExit()
		}
		close(p.done)
	}()
	return p, nil
}

// StartProcess is Launch for a test: it fails t when cmd does not start,
// and at t.Cleanup stops the process (SIGTERM, SIGKILL after StopGrace)
// and, when t failed, logs the end of its output.
func StartProcess(t testing.TB, name string, cmd *exec.Cmd) *Process {
	t.Helper()
	p, err := Launch(name, cmd)
	if err != nil {
		t.Fatalf("hubtest: %v", err)
	}
	p.stopAtCleanup(t)
	return p
}

// stopAtCleanup registers p's stop, and its output when t failed.
func (p *Process) stopAtCleanup(t testing.TB) {
	t.Cleanup(func() {
		_ = p.Stop(StopGrace)
		if t.Failed() {
			t.Logf("--- output of %s (pid %d), last %d bytes:\n%s", p.name, p.PID(), TailBytes, Tail(p.Output()))
		}
	})
}

// Name is the name the process was started with.
func (p *Process) Name() string { return p.name }

// PID is the child's process ID, which is also its process group's ID.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Done is closed once the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Err is how the process ended (exec.Cmd.Wait's error); nil while it runs
// and after a clean exit.
func (p *Process) Err() error {
	if !p.Exited() {
		return nil
	}
	return p.err
}

// ExitCode is the process's exit status, or -1 while it runs or when a
// signal ended it.
func (p *Process) ExitCode() int {
	if !p.Exited() {
		return -1
	}
	return p.cmd.ProcessState.ExitCode()
}

// Signal sends sig to the process's group. It does nothing once the
// process has been reaped: its PID may belong to another process by then.
func (p *Process) Signal(sig syscall.Signal) error {
	if p.Exited() {
		return errors.New(p.name + " has exited")
	}
	return syscall.Kill(-p.PID(), sig)
}

// Stop stops the process as an orchestrator would: SIGTERM to its group,
// then SIGKILL when it has not exited within grace. Whatever is left in
// the group is killed after it. Stop returns nil when the process exited
// with status 0, how it ended otherwise, and an error saying so when it
// had to be killed. Stopping a process that has exited only reports how.
func (p *Process) Stop(grace time.Duration) error {
	if p.Exited() {
		return p.err
	}
	_ = syscall.Kill(-p.PID(), syscall.SIGTERM)
	select {
	case <-p.done:
		p.killGroup()
		return p.err
	case <-time.After(grace):
	}
	p.Kill()
	return fmt.Errorf("%s (pid %d) did not exit within %v of SIGTERM; killed", p.name, p.PID(), grace)
}

// Kill sends SIGKILL to the process's group, as a crash or the OOM killer
// would, and waits until the process has been reaped.
func (p *Process) Kill() {
	if !p.Exited() {
		_ = syscall.Kill(-p.PID(), syscall.SIGKILL)
	}
	select {
	case <-p.done:
	case <-time.After(killWait):
	}
}

// killGroup kills what the process left in its group. The group outlives
// its leader while a member lives, so its ID is not reused meanwhile.
func (p *Process) killGroup() { _ = syscall.Kill(-p.PID(), syscall.SIGKILL) }

// Output is what the process wrote to stdout and stderr, interleaved as it
// arrived (at most the last 32 MiB).
func (p *Process) Output() string { return p.out.all.String() }

// Stdout is what the process wrote to stdout alone.
func (p *Process) Stdout() string { return p.out.stdout.String() }

// WaitLine waits until the process writes a line to stdout that match
// accepts, and returns it (without the newline). Lines written before the
// call count. It fails when the process exits first or ctx ends.
func (p *Process) WaitLine(ctx context.Context, match func(line string) bool) (string, error) {
	var off int64
	for {
		lines, next, changed := p.out.stdout.linesFrom(off)
		off = next
		for _, l := range lines {
			if match(l) {
				return l, nil
			}
		}
		select {
		case <-changed:
		case <-p.done:
			// Wait has copied all output: one last look.
			lines, _, _ := p.out.stdout.linesFrom(off)
			for _, l := range lines {
				if match(l) {
					return l, nil
				}
			}
			return "", fmt.Errorf("%s exited (%v) before printing the line", p.name, p.err)
		case <-ctx.Done():
			return "", fmt.Errorf("%s: %w", p.name, ctx.Err())
		}
	}
}

// pollWhileRunning is Poll that gives up as soon as the process exits.
func (p *Process) pollWhileRunning(ctx context.Context, interval time.Duration, cond func() error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { // owned by this call: ends when the process exits or the call returns
		select {
		case <-p.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	err := Poll(ctx, interval, cond)
	if err != nil && p.Exited() {
		return fmt.Errorf("%s exited (%v)", p.name, p.err)
	}
	return err
}

// Tail returns the last TailBytes of s, marked as cut when it was.
func Tail(s string) string {
	if len(s) <= TailBytes {
		return s
	}
	return "…\n" + s[len(s)-TailBytes:]
}

// output is a process's captured output: all of it, and stdout alone (in
// which WaitLine looks for lines).
type output struct {
	all, stdout *buffer
}

func newOutput() *output { return &output{all: newBuffer(keepBytes), stdout: newBuffer(keepBytes)} }

type stdoutWriter struct{ o *output }

func (w stdoutWriter) Write(b []byte) (int, error) {
	w.o.all.write(b)
	w.o.stdout.write(b)
	return len(b), nil
}

type stderrWriter struct{ o *output }

func (w stderrWriter) Write(b []byte) (int, error) {
	w.o.all.write(b)
	return len(b), nil
}

// buffer is an append-only byte buffer, safe for concurrent use, that
// keeps its last bytes and tells waiters of every write.
//
// What it shows (String, linesFrom) is the last keep bytes, from a line's
// start. It holds them in chunks of chunk bytes and drops a chunk once the
// bytes after it are more than keep, to reuse for the next, so that a
// process writing steadily past the bound costs its bytes' copy into the
// buffer and nothing else: no allocation, no copy of what is kept. Cut into
// a new slice on every write instead, a benchmark's hub, which logs an
// audit line per tools/call, made its harness copy 32 MiB per line once
// its log reached the bound: most of the client's CPU, which shares the
// machine with the hub, went there, and the hub's calls/s halved (issue
// 22).
type buffer struct {
	keep  int // bytes shown at most
	chunk int // bytes per chunk
	mu    sync.Mutex
	// chunks hold the bytes from offset dropped on (counted from the first
	// byte ever written), each of capacity chunk and all but the last
	// full, so that byte i is chunks[i/chunk][i%chunk].
	chunks  [][]byte
	size    int           // bytes in chunks
	dropped int64         // bytes cut from the front
	spare   []byte        // the chunk cut last, emptied, for the next one
	changed chan struct{} // closed (and replaced) by every write
}

// chunkSize is the size of a buffer's chunks: a process that writes
// little holds one.
const chunkSize = 64 << 10

func newBuffer(keep int) *buffer { return newChunkedBuffer(keep, chunkSize) }

func newChunkedBuffer(keep, chunk int) *buffer {
	return &buffer{keep: keep, chunk: chunk, changed: make(chan struct{})}
}

func (b *buffer) write(p []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for len(p) > 0 {
		if n := len(b.chunks); n == 0 || len(b.chunks[n-1]) == b.chunk {
			c := b.spare
			if b.spare = nil; c == nil {
				c = make([]byte, 0, b.chunk)
			}
			b.chunks = append(b.chunks, c)
		}
		last := &b.chunks[len(b.chunks)-1]
		k := min(len(p), b.chunk-len(*last))
		*last = append(*last, p[:k]...)
		p, b.size = p[k:], b.size+k
	}
	// Kept: the last keep bytes, and the one before them, which says
	// whether they start a line.
	for len(b.chunks) > 1 && b.size-b.chunk > b.keep {
		b.spare = b.chunks[0][:0]
		b.chunks[0] = nil
		b.chunks = b.chunks[1:]
		b.size -= b.chunk
		b.dropped += int64(b.chunk)
	}
	close(b.changed)
	b.changed = make(chan struct{})
}

// shownFrom is the offset (counted from the first byte ever written) of
// the bytes the buffer shows: its last keep bytes, from a line's start
// when one is in them.
func (b *buffer) shownFrom() int64 {
	over := b.size - b.keep
	if over <= 0 {
		return b.dropped
	}
	if b.chunks[(over-1)/b.chunk][(over-1)%b.chunk] != '\n' {
		for i := over; i < b.size; i += b.chunk - i%b.chunk {
			c := b.chunks[i/b.chunk][i%b.chunk:]
			if j := bytes.IndexByte(c, '\n'); j >= 0 {
				over = i + j + 1
				break
			}
		}
	}
	return b.dropped + int64(over)
}

// from returns a copy of the bytes from offset off (counted from the first
// byte ever written, and not before dropped) to the end.
func (b *buffer) from(off int64) []byte {
	i := int(off - b.dropped)
	out := make([]byte, 0, b.size-i)
	for ; i < b.size; i += b.chunk - i%b.chunk {
		out = append(out, b.chunks[i/b.chunk][i%b.chunk:]...)
	}
	return out
}

func (b *buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	off := b.shownFrom()
	if off > 0 {
		return "…" + string(b.from(off))
	}
	return string(b.from(off))
}

// linesFrom returns the complete lines from offset off (counted from the
// first byte ever written), the offset after them, and a channel closed by
// the next write.
func (b *buffer) linesFrom(off int64) (lines []string, next int64, changed <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	off = max(off, b.shownFrom())
	rest := b.from(off)
	for {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			break
		}
		lines = append(lines, string(bytes.TrimSuffix(rest[:i], []byte("\r"))))
		rest = rest[i+1:]
		off += int64(i) + 1
	}
	return lines, off, b.changed
}

// Log is the log of a hub run in the test's process (package hub's
// tests): its goroutines write it while the test reads it, and it keeps
// the last bytes as a process's output does.
type Log struct{ b *buffer }

// NewLog returns an empty log.
func NewLog() *Log { return &Log{b: newBuffer(keepBytes)} }

func (l *Log) Write(p []byte) (int, error) {
	l.b.write(p)
	return len(p), nil
}

// String is what was written, "…" first when the front was cut.
func (l *Log) String() string { return l.b.String() }
