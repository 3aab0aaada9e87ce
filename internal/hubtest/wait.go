package hubtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// Poll calls cond at once and then every interval until it returns nil,
// and returns nil then. When ctx ends first it returns ctx's error joined
// with cond's last one, which says what was seen.
func Poll(ctx context.Context, interval time.Duration, cond func() error) error {
	if last := poll(ctx, interval, cond); last != nil {
		return fmt.Errorf("%w; last: %w", ctx.Err(), last)
	}
	return nil
}

// poll is Poll returning cond's last error alone.
func poll(ctx context.Context, interval time.Duration, cond func() error) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		last := cond()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return last
		case <-tick.C:
		}
	}
}

// Eventually is Poll for a test: it fails t, naming what it waited for and
// cond's last error, when cond has not returned nil within timeout.
func Eventually(t testing.TB, timeout, interval time.Duration, what string, cond func() error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if last := poll(ctx, interval, cond); last != nil {
		t.Fatalf("timed out after %s waiting for %s; last seen: %v", timeout, what, last)
	}
}

// FreeAddr returns a 127.0.0.1 address whose port was free a moment ago.
// Another process may take it before the caller binds it: starts that
// pick a port this way retry (LaunchServer does).
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// FreePort is FreeAddr's port, for a test.
func FreePort(t testing.TB) int {
	t.Helper()
	addr, err := FreeAddr()
	if err != nil {
		t.Fatalf("hubtest: %v", err)
	}
	_, port, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(port)
	return n
}

// startTries is how often LaunchServer starts a server that exited before
// it listened: the free port may have been taken meanwhile.
const startTries = 5

// LaunchServer starts the server command(port) makes, on port or on a free
// port when port is 0, and returns once it accepts TCP connections on
// 127.0.0.1:port. A server that exits before it listens (most likely: the
// port was taken meanwhile, or a restart on a fixed port came too early) is
// started again, up to five times; one that runs but does not listen is
// not. ctx bounds the start, not the server's life.
func LaunchServer(ctx context.Context, name string, port int, command func(port int) *exec.Cmd) (*Process, int, error) {
	var lastErr error
	for range startTries {
		p := port
		if p == 0 {
			addr, err := FreeAddr()
			if err != nil {
				return nil, 0, err
			}
			_, ps, _ := net.SplitHostPort(addr)
			p, _ = strconv.Atoi(ps)
		}
		proc, err := Launch(fmt.Sprintf("%s :%d", name, p), command(p))
		if err != nil {
			return nil, 0, err
		}
		if lastErr = waitPort(ctx, proc, p); lastErr == nil {
			return proc, p, nil
		}
		exited := proc.Exited()
		proc.Kill()
		if !exited || ctx.Err() != nil {
			break // alive but deaf, or out of time: another try will not help
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil, 0, fmt.Errorf("start %s: %w", name, lastErr)
}

// StartServer is LaunchServer for a test, bounded by StartTimeout: it fails
// t when the server does not come up, and stops it at t.Cleanup.
func StartServer(t testing.TB, name string, port int, command func(port int) *exec.Cmd) (*Process, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	p, port, err := LaunchServer(ctx, name, port, command)
	if err != nil {
		t.Fatalf("hubtest: %v", err)
	}
	p.stopAtCleanup(t)
	return p, port
}

// waitPort waits until 127.0.0.1:port accepts a connection while p runs.
func waitPort(ctx context.Context, p *Process, port int) error {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	err := p.pollWhileRunning(ctx, 20*time.Millisecond, func() error {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return err
		}
		c.Close()
		return nil
	})
	switch {
	case err == nil && !p.Exited():
		return nil
	case p.Exited(): // exited, or another process holds the port
		return fmt.Errorf("%s exited (%v) before listening on %d:\n%s", p.Name(), p.Err(), port, Tail(p.Output()))
	default:
		return fmt.Errorf("%s not listening on %d: %w", p.Name(), port, err)
	}
}

// EverythingScript returns the absolute path of the official reference
// server's entry point (@modelcontextprotocol/server-everything, installed
// in test/interop by `make test-deps`), or an error that says how to
// install it.
func EverythingScript() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	script := filepath.Join(root, "test", "interop", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if _, err := os.Stat(script); err != nil {
		return "", fmt.Errorf("the reference server is not installed (%v): run `make test-deps` (npm ci in test/interop)", err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		return "", fmt.Errorf("node is not on PATH (%v): install Node.js >= 20", err)
	}
	return script, nil
}

// EverythingCommand is the reference server in mode (streamableHttp, sse
// or stdio) on port, for LaunchServer. Its environment is PATH, HOME, PORT
// and env only: its get-env tool answers with all of it. It binds every
// interface and has no host option; tests only talk to it on 127.0.0.1.
func EverythingCommand(script, mode string, port int, env ...string) *exec.Cmd {
	cmd := exec.Command("node", script, mode)
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + os.Getenv("HOME"),
		"PORT=" + strconv.Itoa(port),
	}, env...)
	return cmd
}
