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
	"syscall"
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
// so that it dies with the hub (Pdeathsig); with env and only the
// harmless variables of the hub's environment.
func Command(ctx context.Context, command string, env []string, args []string) (*exec.Cmd, error) {
	cmd := exec.CommandContext(ctx, command, args...)
	base := make([]string, 0, len(inheritedEnv)+len(env))
	for _, k := range inheritedEnv {
		if v, ok := os.LookupEnv(k); ok {
			base = append(base, k+"="+v)
		}
	}
	cmd.Env = append(base, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error {
		pgid := -cmd.Process.Pid
		_ = syscall.Kill(pgid, syscall.SIGTERM)
		time.AfterFunc(childKillDelay, func() { _ = syscall.Kill(pgid, syscall.SIGKILL) })
		return nil
	}
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

	mu sync.Mutex
	// The child's ends of its stdin and stdout until it starts, and the
	// hub's; the hub's stdout end is closed once the child is gone.
	childIn, childOut, stdout *os.File
	cmd                       *exec.Cmd
	stop                      context.CancelFunc
}

// NewTransport returns a transport that starts command with env and args
// (Command) when started, reading its stdout through read(stdout) and
// writing its stderr to stderr; log receives mcp-go's messages.
func NewTransport(command string, env, args []string, read func(io.Reader) io.Reader, stderr io.Writer, log *slog.Logger) (*Transport, error) {
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
		command: command, env: env, args: args, stderr: stderr,
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
	cmd.Stdin, cmd.Stdout, cmd.Stderr = t.childIn, t.childOut, t.stderr
	if err := cmd.Start(); err != nil {
		stop()
		return fmt.Errorf("failed to start command: %w", err)
	}
	// The child has its own copies: the pipes end with it.
	t.closeChildEnds()
	t.cmd, t.stop = cmd, stop
	return t.Stdio.Start(ctx)
}

// Close closes the child's stdin, gives it gracefulExit to end, then stops
// its process group, and waits for it.
func (t *Transport) Close() error {
	err := t.Stdio.Close()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closeChildEnds()
	if t.cmd != nil {
		exited := make(chan struct{})
		go func() {
			defer close(exited)
			_ = t.cmd.Wait() // how it ended is the transport's read error's to say
		}()
		select {
		case <-exited:
		case <-time.After(gracefulExit):
		}
		t.stop() // the child's group, also what it left behind
		<-exited
		t.cmd = nil
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
