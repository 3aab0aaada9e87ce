package stdiochild

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
)

// TailLines is how many of the last lines a child wrote on its stderr are
// kept to tell why it failed: enough for a stack trace's head or npm's
// error block, short enough for a status line.
const TailLines = 20

const (
	// maxTailLine bounds each kept line, cut after redaction so that the
	// cut cannot leave the first part of a credential.
	maxTailLine = 300
	// maxPending bounds a line not ended yet (a progress bar drawn with
	// carriage returns, a child that never writes a newline): beyond it,
	// what came is kept as a line of its own.
	maxPending = 4096
)

// ExitError is why a stdio child failed, told with how it ended and the
// last lines it wrote on its stderr: what a person needs to fix it
// ("FATAL: GITHUB_TOKEN is not set"), where the transport alone says only
// "transport closed". Its lines are redacted of the child's credentials.
type ExitError struct {
	// Stage is what the hub was waiting for when the child ended
	// ("initialize", "list tools"); "" once it was connected.
	Stage string
	// Timeout, when not 0, is how long the child had to answer Stage
	// before the hub stopped it, and Setting the setting that said so
	// ("upstream.startTimeout").
	Timeout time.Duration
	Setting string
	// Status says how it ended: "exited with status 1", "was killed by
	// signal killed", "was stopped by the hub".
	Status string
	// Stderr are its last lines of stderr, oldest first, redacted.
	Stderr []string
	// Err is what the transport or the wait said.
	Err error
}

func (e *ExitError) Error() string {
	var b strings.Builder
	b.WriteString("stdio child ")
	switch {
	case e.Timeout > 0:
		fmt.Fprintf(&b, "did not answer %s within %s (%s) and %s", e.Stage, e.Timeout, e.Setting, e.Status)
	case e.Stage != "":
		fmt.Fprintf(&b, "%s before %s", e.Status, e.Stage)
	default:
		b.WriteString(e.Status)
	}
	if len(e.Stderr) == 0 {
		b.WriteString("; it wrote nothing on stderr")
	} else {
		b.WriteString("; last stderr: ")
		b.WriteString(strings.Join(e.Stderr, " | "))
	}
	return b.String()
}

func (e *ExitError) Unwrap() error { return e.Err }

// exitStatus says how a child ended; byHub: the hub had cancelled it.
func exitStatus(state *os.ProcessState, byHub bool) string {
	switch {
	case state == nil:
		return "ended"
	case state.Exited():
		return fmt.Sprintf("exited with status %d", state.ExitCode())
	case byHub:
		return "was stopped by the hub"
	}
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return "was killed by signal " + ws.Signal().String()
	}
	return "ended: " + state.String()
}

// tail keeps the last TailLines lines written to it, each redacted and
// then cut at maxTailLine. It is the child's stderr's second reader,
// beside the log.
type tail struct {
	redact func(string) string

	mu      sync.Mutex
	lines   [TailLines]string // a ring; next is the oldest once full
	next, n int
	pending []byte // the line not ended yet
}

func newTail(redact func(string) string) *tail {
	if redact == nil {
		redact = func(s string) string { return s }
	}
	return &tail{redact: redact}
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range p {
		switch {
		case c == '\n' || c == '\r':
			t.endLine()
		default:
			t.pending = append(t.pending, c)
			if len(t.pending) >= maxPending {
				t.endLine()
			}
		}
	}
	return len(p), nil
}

// endLine keeps the pending line unless it is blank.
func (t *tail) endLine() {
	line := strings.TrimSpace(strings.ToValidUTF8(string(t.pending), "\uFFFD"))
	t.pending = t.pending[:0]
	if line == "" {
		return
	}
	line = t.redact(line)
	if len(line) > maxTailLine {
		line = strings.ToValidUTF8(line[:maxTailLine], "") + " …"
	}
	t.lines[t.next] = line
	t.next = (t.next + 1) % TailLines
	t.n = min(t.n+1, TailLines)
}

// Lines returns the kept lines, oldest first, with the line not ended yet
// last.
func (t *tail) Lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.pending) > 0 {
		t.endLine()
	}
	out := make([]string, 0, t.n)
	for i := range t.n {
		out = append(out, t.lines[(t.next-t.n+i+TailLines)%TailLines])
	}
	return out
}
