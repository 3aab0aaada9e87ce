package soak

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"
)

// The ledger: every call the soak makes, with what its caller saw. Each
// call carries a trace id of its own in its traceparent (a budget run's
// calls share their run's), which the hub's audit line of the call
// carries, so the audit of all replicas can be matched call by call.

// Outcomes as the caller saw them.
const (
	outOK             = "ok"
	outToolError      = "tool_error"      // the tool's own error result
	outDenied         = "denied"          // autonomy: BLOCKED: Restricted autonomy
	outBudget         = "budget"          // guardrails maxIterations
	outApprovalDenied = "approval_denied" // an approver said no
	outBlocked        = "blocked_other"   // another BLOCKED: never expected
	outLimited        = "rate_limited"
	outUpstream       = "upstream_error" // the upstream failed, was down, or answered garbage: an injected fault
	outUnauthorized   = "unauthorized"   // refused at the door (401/403)
	outTransport      = "transport_error"
)

// call is one call of the soak.
type call struct {
	seq        int64
	id         string // the id in its arguments, "c<seq>"
	trace      string // its trace id (32 hex)
	run        int64  // the budget run it belongs to (0: none)
	caller     string
	face       string
	replica    int // the replica of an SSE caller, -1 through the balancer
	tool       string
	server     string
	text       string // the text argument sent
	secret     string // the PII or secret in text that a filtered caller must never see back, nor the upstream get
	start, end time.Time
	reply      reply
	outcome    string
	decision   string // an approver's verdict on it: approved, denied ("" when not held)
}

// ledger holds every call.
type ledger struct {
	mu     sync.Mutex
	nonce  uint32
	seq    int64
	runs   int64
	calls  []*call
	byID   map[string]*call
	traces map[string][]*call
}

func newLedger(nonce uint32) *ledger {
	return &ledger{nonce: nonce, byID: map[string]*call{}, traces: map[string][]*call{}}
}

// soakTracePrefix starts the trace id of every call of the soak; probes
// of the harness itself use none.
const soakTracePrefix = "50a4"

// newRun is the trace id of a budget run.
func (l *ledger) newRun() (int64, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.runs++
	return l.runs, fmt.Sprintf("%s%08x1%019x", soakTracePrefix, l.nonce, l.runs)
}

// begin records a call about to be made and returns it with its id and,
// unless it belongs to a run, its own trace id.
func (l *ledger) begin(c *call, runTrace string) (*call, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	c.seq = l.seq
	c.id = fmt.Sprintf("c%d", c.seq)
	c.trace = runTrace
	if c.trace == "" {
		c.trace = fmt.Sprintf("%s%08x0%019x", soakTracePrefix, l.nonce, c.seq)
	}
	c.start = time.Now()
	l.calls = append(l.calls, c)
	l.byID[c.id] = c
	l.traces[c.trace] = append(l.traces[c.trace], c)
	return c, fmt.Sprintf("00-%s-%016x-01", c.trace, c.seq)
}

// finish records how c ended.
func (l *ledger) finish(c *call, r reply) {
	end := time.Now()
	out := classify(r)
	l.mu.Lock()
	defer l.mu.Unlock()
	c.end, c.reply, c.outcome = end, r, out
}

// decide records an approver's verdict on the call with id; false when no
// such call was made.
func (l *ledger) decide(id, verdict string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.byID[id]
	if ok {
		c.decision = verdict
	}
	return ok
}

// snapshot returns the calls (the caller must not change them).
func (l *ledger) snapshot() []*call {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]*call(nil), l.calls...)
}

// classify says how a call ended from what its caller got.
func classify(r reply) string {
	text := r.text
	switch {
	case r.err != nil:
		if strings.Contains(text, "status 401") || strings.Contains(text, "bearer token refused") {
			return outUnauthorized
		}
		return outTransport
	case r.status == 401 || strings.Contains(text, "bearer token refused"):
		return outUnauthorized
	case strings.Contains(text, "BLOCKED: Restricted autonomy"):
		return outDenied
	case strings.Contains(text, "tool call budget used up"):
		return outBudget
	case strings.Contains(text, "needs a person's approval") && strings.Contains(text, "denied it"):
		return outApprovalDenied
	case strings.HasPrefix(text, "BLOCKED"):
		return outBlocked
	case r.status == 429 || (r.rpc && strings.Contains(text, "rate limit")):
		return outLimited
	case r.rpc, r.status >= 500:
		return outUpstream
	case r.isError && strings.HasPrefix(text, "ERROR:"):
		return outUpstream
	case r.isError:
		return outToolError
	case r.status != 0 && r.status != 200:
		return outTransport
	}
	return outOK
}

// reachesPipeline says whether a call that ended so has an audit line.
func reachesPipeline(outcome string) bool {
	return outcome != outTransport && outcome != outUnauthorized
}

// auditAgrees says whether an audit line's outcome is the caller's.
func auditAgrees(audit, caller string) bool {
	switch audit {
	case "ok":
		return caller == outOK
	case "tool_error":
		return caller == outToolError
	case "denied":
		return caller == outDenied || caller == outBudget || caller == outApprovalDenied
	case "rate_limited":
		return caller == outLimited
	}
	return caller == outUpstream
}

// logLine is one JSON line of a hub's log.
type logLine struct {
	replica  int
	raw      string
	Level    string `json:"level"`
	Time     string `json:"time"`
	Message  string `json:"message"`
	Error    string `json:"error"`
	Audit    string `json:"audit"`
	TraceID  string `json:"trace_id"`
	Caller   string `json:"caller"`
	Tool     string `json:"tool"`
	Server   string `json:"server"`
	Face     string `json:"face"`
	Outcome  string `json:"outcome"`
	Decision string `json:"decision"`
	Event    string `json:"event"`
	Approval string `json:"approval"`
}

// at is when the line was written (zero when unreadable).
func (l logLine) at() time.Time {
	t, _ := time.Parse(time.RFC3339Nano, l.Time)
	return t
}

// parseLog reads the JSON lines of a hub's output.
func parseLog(replica int, out string) []logLine {
	var lines []logLine
	for raw := range strings.SplitSeq(out, "\n") {
		if !strings.HasPrefix(raw, "{") {
			continue
		}
		l := logLine{replica: replica, raw: raw}
		if json.Unmarshal([]byte(raw), &l) == nil {
			lines = append(lines, l)
		}
	}
	return lines
}
