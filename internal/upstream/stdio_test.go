package upstream

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/config"
)

// stdioChildEnv makes the test binary a stdio child that behaves as its
// value says (runStdioChild), as npx-started servers do.
const stdioChildEnv = "MCPHUB_UPSTREAM_TEST_STDIO_CHILD"

// stdioStartEnv is how long a "slow" or "hang" child prints progress
// before it serves (or not). Like every env value of a child, it is
// redacted as a credential: keep it unlike the texts the tests look for.
const stdioStartEnv = "MCPHUB_UPSTREAM_TEST_STDIO_START"

// runStdioChild is the test binary as a stdio child; it returns the exit
// status. Modes:
//   - slow: prints progress on stderr for $stdioStartEnv, then serves;
//   - hang: prints progress and never reads its stdin;
//   - fatal: prints a few lines (and the token of its environment) on
//     stderr and exits 1 before reading anything;
//   - dies: serves, and exits 2 saying why when its tool "die" is called.
func runStdioChild(mode string) int {
	start, _ := time.ParseDuration(os.Getenv(stdioStartEnv))
	progress := func(d time.Duration) {
		for end, i := time.Now().Add(d), 0; time.Now().Before(end); i++ {
			fmt.Fprintf(os.Stderr, "npm http fetch GET 200 https://registry.npmjs.org/pkg-%d\n", i)
			time.Sleep(20 * time.Millisecond)
		}
	}
	s := testServer("child", nil)
	switch mode {
	case "slow":
		progress(start)
	case "hang":
		progress(start)
		time.Sleep(time.Hour)
		return 0
	case "fatal":
		for i := range 30 { // more than the tail keeps
			fmt.Fprintf(os.Stderr, "npm WARN line %d\n", i)
		}
		fmt.Fprintln(os.Stderr, "using token "+os.Getenv(stdioTokenEnv))
		fmt.Fprint(os.Stderr, "FATAL: GITHUB_TOKEN is not set") // no newline: the tail keeps it still
		return 1
	case "dies":
		s.AddTool(mcp.NewTool("die"), func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			fmt.Fprintln(os.Stderr, "panic: out of cheese")
			os.Exit(2)
			return nil, nil
		})
	}
	if err := mcpserver.ServeStdio(s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// stateLog records every state a client was in, in order.
type stateLog struct {
	mu     sync.Mutex
	states []string
}

func (l *stateLog) add(st Status) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.states = append(l.states, string(st.State)+": "+st.Error)
}

func (l *stateLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.states, "\n")
}

// TestStdioChildStart: a stdio child's first start is bounded by
// startTimeout, not connectTimeout, and when it fails, its status says
// how the child ended and what it last wrote on stderr, redacted, in the
// status and in the log.
func TestStdioChildStart(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name          string
		mode, start   string
		startTimeout  time.Duration
		connect       time.Duration // 300ms unless set
		want          State
		wantIn        []string // in the status's error and the log line
		wantNotIn     []string
		wantNoErrorOn bool // it never was in error on its way
	}{
		{name: "slower than connectTimeout comes up", mode: "slow", start: "1s", startTimeout: 20 * time.Second,
			want: StateConnected, wantNoErrorOn: true},
		{name: "slower than connectTimeout without startTimeout", mode: "slow", start: "4500ms", connect: 1500 * time.Millisecond,
			want: StateError, wantIn: []string{"stdio child did not answer initialize within 1.5s (upstream.connectTimeout) and was stopped; last stderr: npm http fetch"}},
		{name: "silent past startTimeout", mode: "hang", start: "100ms", startTimeout: time.Second,
			want: StateError, wantIn: []string{"stdio child did not answer initialize within 1s (upstream.startTimeout) and was stopped; last stderr: npm http fetch GET 200"}},
		{name: "exits before initialize", mode: "fatal", startTimeout: 20 * time.Second,
			want: StateError, wantIn: []string{"stdio child exited with status 1 before initialize; last stderr: npm WARN line 12 | ", "| using token [redacted] | FATAL: GITHUB_TOKEN is not set"},
			wantNotIn: []string{testToken, "npm WARN line 11 "}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var logs lockedBuffer
			var states stateLog
			spec := config.ServerSpec{Name: "child", Command: self, Transport: config.TransportStdio,
				Env: map[string]string{stdioChildEnv: tc.mode, stdioStartEnv: tc.start, stdioTokenEnv: testToken}}
			var c *Client
			connect := cmp.Or(tc.connect, 300*time.Millisecond)
			c = New(spec, Options{ConnectTimeout: connect, StartTimeout: tc.startTimeout, Timeout: 5 * time.Second,
				BackoffMin: time.Hour, BackoffMax: time.Hour}, zerolog.New(&logs), func() { states.add(c.Status()) })
			c.Start(context.Background())
			t.Cleanup(c.Stop)
			deadline := time.Now().Add(30 * time.Second)
			st := c.Status()
			for ; st.State == StateConnecting && time.Now().Before(deadline); st = c.Status() {
				time.Sleep(10 * time.Millisecond)
			}
			if st.State != tc.want {
				t.Fatalf("state %s (%q), want %s; states:\n%s", st.State, st.Error, tc.want, states.String())
			}
			if tc.wantNoErrorOn && strings.Contains(states.String(), string(StateError)) {
				t.Errorf("the child was in error on its way up:\n%s", states.String())
			}
			for _, w := range tc.wantIn {
				if !strings.Contains(st.Error, w) {
					t.Errorf("status error %q lacks %q", st.Error, w)
				}
				if !strings.Contains(logs.String(), w) {
					t.Errorf("log lacks %q:\n%s", w, logs.String())
				}
			}
			for _, w := range tc.wantNotIn {
				if strings.Contains(st.Error, w) || strings.Contains(logs.String(), w) {
					t.Errorf("status error %q or the log holds %q", st.Error, w)
				}
			}
			if tc.want == StateConnected {
				if got, err := callTool(context.Background(), c, "echo", "up"); err != nil || got != "child:up" {
					t.Fatalf("call = %q, %v", got, err)
				}
			}
		})
	}
}

// A connected stdio child that exits: the status says at once (not at the
// next health check) how it ended and what it last wrote.
func TestStdioChildExitAfterConnect(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	spec := config.ServerSpec{Name: "child", Command: self, Transport: config.TransportStdio,
		Env: map[string]string{stdioChildEnv: "dies"}}
	c := startClient(t, spec, Options{PingInterval: time.Hour, BackoffMin: time.Hour, BackoffMax: time.Hour})
	_, _ = callTool(context.Background(), c, "die", "")
	st := waitState(t, c, StateError)
	want := "connection lost: stdio child exited with status 2; last stderr: panic: out of cheese"
	if st.Error != want {
		t.Fatalf("status error %q, want %q", st.Error, want)
	}
}
