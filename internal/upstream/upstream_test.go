package upstream

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
)

func TestBackoffGrowsWithJitterAndCaps(t *testing.T) {
	c := New(config.ServerSpec{Name: "x"}, Options{BackoffMin: 100 * time.Millisecond, BackoffMax: time.Second}, zerolog.Nop(), func() {})
	cases := []struct {
		attempt  int
		min, max time.Duration
	}{
		{0, 50 * time.Millisecond, 100 * time.Millisecond},
		{1, 100 * time.Millisecond, 200 * time.Millisecond},
		{3, 400 * time.Millisecond, 800 * time.Millisecond},
		{10, 500 * time.Millisecond, time.Second},
		{1000, 500 * time.Millisecond, time.Second},
	}
	for _, tc := range cases {
		seen := map[time.Duration]bool{}
		for i := 0; i < 50; i++ {
			d := c.opts.backoff(tc.attempt)
			if d < tc.min || d > tc.max {
				t.Fatalf("attempt %d: backoff %s outside [%s, %s]", tc.attempt, d, tc.min, tc.max)
			}
			seen[d] = true
		}
		if len(seen) < 5 {
			t.Errorf("attempt %d: only %d distinct delays in 50 draws: no jitter", tc.attempt, len(seen))
		}
	}
}

func TestTransportFailureClassification(t *testing.T) {
	cases := []struct {
		err  error
		want bool
	}{
		{transport.NewError(errors.New("connection refused")), true},
		{fmt.Errorf("wrapped: %w", transport.NewError(errors.New("EOF"))), true},
		{context.DeadlineExceeded, true},
		{mcp.ErrMethodNotFound, false},
		{errors.New("invalid params"), false},
		{callerGone{context.Canceled}, false},
		{callerGone{transport.NewError(context.Canceled)}, false},
	}
	for _, tc := range cases {
		if got := isTransportFailure(tc.err); got != tc.want {
			t.Errorf("isTransportFailure(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestUnreachableServerReportsErrorAndFailsFast(t *testing.T) {
	c := startUnreachable(t, "http://127.0.0.1:1/mcp")
	if st := c.Status(); !strings.Contains(st.Error, "connection refused") {
		t.Errorf("error = %q, want the reason", st.Error)
	}
	start := time.Now()
	_, err := c.Call(context.Background(), jsonrpc.ToolCall{Name: "x"})
	var ue *UnavailableError
	if !errors.As(err, &ue) || ue.Server != "gone" || time.Since(start) > 100*time.Millisecond {
		t.Fatalf("call on a down server = %v after %s", err, time.Since(start))
	}
}

// startUnreachable starts a client of a URL where nothing listens and waits
// for it to report the error state.
func startUnreachable(t *testing.T, url string) *Client {
	t.Helper()
	changes := make(chan struct{}, 100)
	c := New(config.ServerSpec{Name: "gone", URL: url, Transport: config.TransportStreamableHTTP},
		Options{ConnectTimeout: time.Second, BackoffMin: 10 * time.Millisecond, BackoffMax: 50 * time.Millisecond, Timeout: time.Second},
		zerolog.Nop(), func() {
			select {
			case changes <- struct{}{}:
			default:
			}
		})
	c.Start(context.Background())
	t.Cleanup(c.Stop)
	deadline := time.After(5 * time.Second)
	for c.Status().State != StateError {
		select {
		case <-changes:
		case <-deadline:
			t.Fatal("never reached error state")
		}
	}
	return c
}

// TestStdioChildKilledOnStop starts a stdio "server" that spawns a grandchild
// and never answers; Stop must end both (the whole process group).
func TestStdioChildKilledOnStop(t *testing.T) {
	pidFile := t.TempDir() + "/pid"
	script := `sleep 300 & echo $! > ` + pidFile + `; wait`
	c := New(config.ServerSpec{Name: "sh", Command: "sh", Args: []string{"-c", script}, Transport: config.TransportStdio},
		Options{ConnectTimeout: 30 * time.Second, BackoffMin: time.Second, BackoffMax: time.Second},
		zerolog.Nop(), func() {})
	c.Start(context.Background())
	var pid int
	deadline := time.Now().Add(5 * time.Second)
	for pid == 0 {
		if b, err := os.ReadFile(pidFile); err == nil {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		if time.Now().After(deadline) {
			t.Fatal("stdio child did not start its grandchild")
		}
		time.Sleep(10 * time.Millisecond)
	}
	stopped := make(chan struct{})
	go func() { c.Stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("Stop hangs on a stdio child that never answered")
	}
	deadline = time.Now().Add(5 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %d still alive after Stop", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestURLQueryRedactedFromErrors(t *testing.T) {
	c := startUnreachable(t, "http://127.0.0.1:1/mcp?api_key=sekret-value")
	if st := c.Status(); strings.Contains(st.Error, "sekret") || !strings.Contains(st.Error, "[redacted]") {
		t.Fatalf("status error = %q", st.Error)
	}
}
