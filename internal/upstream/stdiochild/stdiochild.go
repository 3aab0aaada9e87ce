// Package stdiochild starts a stdio MCP server as a contained child of
// the hub: a process group that is stopped whole (SIGTERM, then SIGKILL),
// dies with the hub, and sees none of the hub's environment but a few
// harmless variables, because the hub's environment holds tokens. Its
// Transport is mcp-go's stdio transport over such a child, whose stdout
// the hub reads through a reader of its own (a bound of each line).
package stdiochild

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
)

// childKillDelay is how long a stdio child gets between SIGTERM and SIGKILL.
const childKillDelay = 2 * time.Second

// inheritedEnv are the only variables of the hub's environment a stdio child
// sees besides its own env: the hub's environment holds tokens.
var inheritedEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "TMPDIR", "TZ", "NODE_PATH", "NODE_OPTIONS", "npm_config_cache"}

// Command is the command of a stdio server (mcp-go's
// transport.WithCommandFunc): in its own process group, so that stopping
// it also stops what it spawned (npx starts node, uvx starts python), and
// on Linux so that it dies with the hub (Pdeathsig); with env and only the
// harmless variables of the hub's environment. How the child is contained
// and stopped is the system's (contain_*.go).
func Command(ctx context.Context, command string, env []string, args []string) (*exec.Cmd, error) {
	cmd := exec.CommandContext(ctx, command, args...)
	base := make([]string, 0, len(inheritedEnv)+len(env))
	for _, k := range inheritedEnv {
		if v, ok := os.LookupEnv(k); ok {
			base = append(base, k+"="+v)
		}
	}
	cmd.Env = append(base, env...)
	contain(cmd)
	cmd.WaitDelay = childKillDelay + time.Second
	return cmd, nil
}

// gracefulExit is how long a child gets to end on its own once its stdin
// is closed, before it is stopped (as mcp-go's stdio transport waits).
const gracefulExit = 2 * time.Second

// Transport is mcp-go's stdio transport (whose methods it has) over a
// contained child (Command), with the child's stdout read through a
// reader of the hub's: mcp-go's own stdio transport reads the stdout pipe
// it makes itself, a line at a time with no bound, and lets nobody put a
// reader between. So the transport is mcp-go's over pipes the hub makes
// (transport.NewIO), and the child is the hub's to start and stop.
type Transport struct {
	*transport.Stdio

	command   string
	env, args []string
	stderr    io.Writer
	// tail keeps the child's last lines of stderr, redacted, to tell why
	// it failed (ExitError).
	tail *tail

	mu sync.Mutex
	// The child's ends of its stdin and stdout until it starts, and the
	// hub's; the hub's stdout end is closed once the child is gone.
	childIn, childOut, stdout *os.File
	cmd                       *exec.Cmd
	stop                      context.CancelFunc
	// exited is closed when the child has ended and its stderr is read
	// (wait); nil until it starts.
	exited chan struct{}

	// endMu guards what wait learns of the child's end and what it tells;
	// apart from mu, which Close holds while it waits for the end.
	endMu sync.Mutex
	end   childEnd
	// closing: Close has begun; an end after it is the hub's doing.
	closing bool
	// lost is told of a child that ends on its own (the mcp-go client's
	// connection-lost handler): mcp-go's stdio transport tells nobody.
	lost func(error)
}

// childEnd is how a child ended, as wait saw it.
type childEnd struct {
	state *os.ProcessState
	err   error // Wait's
	// byHub: the hub had cancelled the child when it ended.
	byHub bool
}

// NewTransport returns a transport that starts command with env and args
// (Command) when started, reading its stdout through read(stdout) and
// writing its stderr to stderr; log receives mcp-go's messages. The last
// TailLines lines of its stderr are kept for ExitError, each passed
// through redact (nil: kept as written).
func NewTransport(command string, env, args []string, read func(io.Reader) io.Reader, stderr io.Writer, redact func(string) string, log *slog.Logger) (*Transport, error) {
	childIn, stdin, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("stdin pipe of %s: %w", command, err)
	}
	stdout, childOut, err := os.Pipe()
	if err != nil {
		childIn.Close()
		stdin.Close()
		return nil, fmt.Errorf("stdout pipe of %s: %w", command, err)
	}
	t := &Transport{
		Stdio:   transport.NewIO(read(stdout), stdin, nil),
		command: command, env: env, args: args, stderr: stderr, tail: newTail(redact),
		childIn: childIn, childOut: childOut, stdout: stdout,
	}
	transport.WithCommandLogger(log)(t.Stdio)
	return t, nil
}

// Start starts the child, bound to ctx, and the transport's reading.
func (t *Transport) Start(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cmd != nil {
		return nil
	}
	if t.childIn == nil {
		return transport.ErrTransportClosed
	}
	ctx, stop := context.WithCancel(ctx)
	cmd, err := Command(ctx, t.command, t.env, t.args)
	if err != nil {
		stop()
		return err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = t.childIn, t.childOut, io.MultiWriter(t.stderr, t.tail)
	if err := cmd.Start(); err != nil {
		stop()
		return fmt.Errorf("failed to start command: %w", err)
	}
	// The child has its own copies: the pipes end with it.
	t.closeChildEnds()
	t.cmd, t.stop, t.exited = cmd, stop, make(chan struct{})
	go t.wait(ctx, cmd, t.exited) // owned by Close, which waits for exited
	return t.Stdio.Start(ctx)
}

// wait waits for the child to end (its stderr read to the end, or
// WaitDelay after), records how, and tells lost of an end the hub did not
// cause.
func (t *Transport) wait(ctx context.Context, cmd *exec.Cmd, exited chan<- struct{}) {
	err := cmd.Wait()
	t.endMu.Lock()
	t.end = childEnd{state: cmd.ProcessState, err: err, byHub: ctx.Err() != nil}
	lost := t.lost
	if t.closing || t.end.byHub {
		lost = nil // the hub's doing, not a connection lost
	}
	t.endMu.Unlock()
	close(exited)
	if lost != nil {
		lost(t.Exit("", nil))
	}
}

// SetConnectionLostHandler makes handler be told, with an *ExitError, of
// a child that ends before the transport is closed.
func (t *Transport) SetConnectionLostHandler(handler func(error)) {
	t.endMu.Lock()
	defer t.endMu.Unlock()
	t.lost = handler
}

// Exit returns err told as an *ExitError with how the child ended and its
// last stderr; stage is what the hub was waiting for ("" once connected).
// It is for a failure the child caused (its stdout closed, its stdin
// broken): asked after Close, it tells a child that lingered as stopped by
// the hub. nil while the child was never started or still runs.
func (t *Transport) Exit(stage string, err error) *ExitError {
	end, ok := t.ended()
	if !ok {
		return nil
	}
	if err == nil {
		err = end.err
	}
	return &ExitError{Stage: stage, Status: exitStatus(end.state, end.byHub), Stderr: t.tail.Lines(), Err: err}
}

// Stopped returns err told as the *ExitError of a child that had not
// answered stage within timeout (of setting) when the hub stopped it; nil
// when the child was never started or still runs (Close ends it).
func (t *Transport) Stopped(stage string, timeout time.Duration, setting string, err error) *ExitError {
	end, ok := t.ended()
	if !ok {
		return nil
	}
	status := exitStatus(end.state, end.byHub)
	if end.byHub {
		status = "was stopped"
	}
	return &ExitError{Stage: stage, Timeout: timeout, Setting: setting, Status: status, Stderr: t.tail.Lines(), Err: err}
}

// ended returns how the child ended, once it has.
func (t *Transport) ended() (childEnd, bool) {
	t.mu.Lock()
	exited := t.exited
	t.mu.Unlock()
	if exited == nil {
		return childEnd{}, false
	}
	select {
	case <-exited:
	default:
		return childEnd{}, false
	}
	t.endMu.Lock()
	defer t.endMu.Unlock()
	return t.end, true
}

// Close closes the child's stdin, gives it gracefulExit to end, then stops
// its process group, and waits for it.
func (t *Transport) Close() error {
	t.endMu.Lock()
	t.closing = true
	t.endMu.Unlock()
	err := t.Stdio.Close()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closeChildEnds()
	if t.cmd != nil {
		select {
		case <-t.exited:
		case <-time.After(gracefulExit):
		}
		t.stop() // the child's group, also what it left behind
		<-t.exited
		t.cmd = nil // exited stays: how it ended is for Exit and Stopped
	}
	// A reader blocked on stdout that a grandchild still holds open.
	t.stdout.Close()
	return err
}

// closeChildEnds closes the parent's copies of the child's pipe ends.
func (t *Transport) closeChildEnds() {
	if t.childIn != nil {
		t.childIn.Close()
		t.childOut.Close()
		t.childIn, t.childOut = nil, nil
	}
}
