package stdiochild

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// A child sees its own env and PATH, not the hub's secrets.
func TestChildEnvIsMinimal(t *testing.T) {
	t.Setenv("MCPHUB_SECRET_FOR_TEST", "hunter2")
	cmd, err := Command(context.Background(), "env", []string{"OWN=1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	env := strings.Join(cmd.Env, "\n")
	if strings.Contains(env, "hunter2") || !strings.Contains(env, "OWN=1") || !strings.Contains(env, "PATH=") {
		t.Fatalf("child env = %q", env)
	}
}

// TestTransport: the child's stdout is read through the transport's
// reader; Close ends a child that ends on its stdin's EOF at once and
// stops one that does not, its group too; a command that cannot start
// fails Start and leaves nothing to stop.
func TestTransport(t *testing.T) {
	const answer = `{"jsonrpc":"2.0","id":"r1","result":{}}`
	cases := []struct {
		name      string
		script    string // run by sh -c; "" runs a command that does not exist
		answers   bool   // it answers a request
		closeSlow bool   // Close waits for gracefulExit
	}{
		{"ends on EOF", "read l; echo '" + answer + "'; cat >/dev/null", true, false},
		{"ignores EOF and SIGTERM, its child too", "trap '' TERM; (trap '' TERM; sleep 60) & echo $! >\"$PIDFILE\"; read l; echo '" + answer + "'; sleep 60", true, true},
		{"cannot start", "", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var read atomic.Int64
			command, args := "sh", []string{"-c", tc.script}
			if tc.script == "" {
				command, args = "/nonexistent/mcp-server", nil
			}
			pidFile := filepath.Join(t.TempDir(), "pid")
			tr, err := NewTransport(command, []string{"PIDFILE=" + pidFile}, args,
				func(r io.Reader) io.Reader { return countingReader{r, &read} }, io.Discard, nil, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			err = tr.Start(context.Background())
			if tc.script == "" {
				if err == nil || !strings.Contains(err.Error(), "failed to start command") {
					t.Fatalf("Start = %v; want a failure to start", err)
				}
				if err := tr.Close(); err != nil {
					t.Fatalf("Close after a failed Start: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			resp, err := tr.SendRequest(ctx, transport.JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId("r1"), Method: "ping"})
			if err != nil || resp.Error != nil || read.Load() != int64(len(answer)+1) {
				t.Fatalf("request: %+v, %v, %d bytes read through the reader", resp, err, read.Load())
			}
			start := time.Now()
			_ = tr.Close()
			took := time.Since(start)
			if slow := took >= gracefulExit; slow != tc.closeSlow || took > gracefulExit+childKillDelay+2*time.Second {
				t.Fatalf("Close took %s", took)
			}
			if pid, err := os.ReadFile(pidFile); err == nil && !gone(strings.TrimSpace(string(pid)), 2*time.Second) {
				t.Fatalf("the child's own child %s runs on", pid)
			}
		})
	}
}

// gone reports whether process pid stops running within d: a SIGKILL sent
// to the group as its leader ends is delivered at once, but the process
// ends when it is next scheduled, which on a loaded machine may be after
// Close returned.
func gone(pid string, d time.Duration) bool {
	for end := time.Now().Add(d); running(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			return false
		}
	}
	return true
}

// running reports whether process pid runs (a zombie, not reaped in a
// container without init, does not).
func running(pid string) bool {
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return false
	}
	_, after, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(after, "Z")
}

type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// The tail keeps the last TailLines lines, oldest first, each redacted
// before it is cut, a line not ended yet last, blank lines not at all.
func TestTail(t *testing.T) {
	secret := strings.Repeat("s", 20)
	redact := func(s string) string { return strings.ReplaceAll(s, secret, "[redacted]") }
	long := strings.Repeat("x", maxTailLine-5) + secret // the cut would split the secret
	cases := []struct {
		name   string
		writes []string
		want   []string
	}{
		{"lines, blank ones dropped", []string{"a\n\nb\r\n", "c"}, []string{"a", "b", "c"}},
		{"a line split across writes", []string{"FATAL: GITHUB_", "TOKEN is not set\n"}, []string{"FATAL: GITHUB_TOKEN is not set"}},
		{"only the last lines", []string{strings.Repeat("old\n", 5) + func() string {
			var b strings.Builder
			for i := range TailLines {
				fmt.Fprintf(&b, "l%d\n", i)
			}
			return b.String()
		}()}, func() []string {
			var out []string
			for i := range TailLines {
				out = append(out, fmt.Sprintf("l%d", i))
			}
			return out
		}()},
		{"redacted, then cut", []string{"token " + secret + "\n", long + "\n"}, []string{"token [redacted]", strings.Repeat("x", maxTailLine-5) + "[reda …"}},
		{"a line that never ends is bounded", []string{strings.Repeat("y", maxPending+10)}, []string{strings.Repeat("y", maxTailLine) + " …", strings.Repeat("y", 10)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tl := newTail(redact)
			for _, w := range tc.writes {
				if n, err := tl.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if got := tl.Lines(); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("Lines = %q, want %q", got, tc.want)
			}
		})
	}
}
