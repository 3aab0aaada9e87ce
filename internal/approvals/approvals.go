// Package approvals holds the write calls of callers whose guardrails
// require a person's approval (guardrails.humanApprovalRequired) until a
// person decides: the supervised level with teeth. The pipeline asks Hold
// after its decision and content filters, so what waits is exactly the
// call the upstream would get (arguments already redacted); nothing
// reaches the upstream before the approval, and the call that was
// approved is the one that runs, once: an approval is not a token the
// agent could carry to another call, it releases one held call in this
// replica's memory. Another call, even of the same tool, is held anew.
//
// An approver is never the caller that made the call. Approvers answer out
// of band (REST: http.go; the console and the CLI use it; a webhook tells a
// chat bot), or, for a caller configured approvalMode: elicit whose client
// can elicit (an IDE user: the person at the keyboard approves), in band
// (elicit.go).
//
// Nothing is stored or shared: a held call lives in the memory of the
// replica whose caller is waiting for it, whose id the approval's id
// carries (peers.Tag); a decision sent to another replica is passed on to
// that one (internal/peers), and a replica that dies loses its held calls,
// whose callers see their request fail while nothing has run.
package approvals

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/peers"
)

// DefaultTimeout is how long a call waits for a decision when
// approvals.timeout is not set: long enough for a person to be asked in
// chat, short enough that an agent run is not stuck for good.
const DefaultTimeout = 10 * time.Minute

// progressEvery is how often a waiting caller that gave a progress token
// hears that its call still waits.
const progressEvery = 5 * time.Second

// maxPendingPerCaller and maxPending bound the calls held at once for one
// caller (by its limit key) and in all on one replica: each is a waiting
// request, a listing entry and a webhook POST, and an agent in a loop
// must not bury the approvers (or the hub) under them.
const (
	maxPendingPerCaller = 16
	maxPending          = 1024
)

// recentDecisions bounds the decisions remembered after their call ended,
// so a replayed approval is told it was already used (409) or expired
// (410) rather than that it never existed.
const recentDecisions = 1024

// The verdicts of a held call.
const (
	Approved = "approved"
	Denied   = "denied"
	Expired  = "expired"
	// Canceled: the caller went away, or the hub shut down, before a
	// decision; nothing ran.
	Canceled = "canceled"
)

// Options configure a Gate.
type Options struct {
	// Timeout bounds the wait for a decision (default DefaultTimeout).
	Timeout time.Duration
	// Approvers are globs of the caller names that may approve (hub
	// tokens' names, OAuth callers' issuer/subject); empty: every admin
	// caller. A caller whose grant says approver: true may approve too.
	Approvers []string
	// Webhook, when not nil, hears of every new request (webhook.go).
	Webhook *Webhook
	// Peers pass a decision on to the replica holding its call and
	// gather the lists of every replica; nil: this replica alone.
	Peers *peers.Peers
	// Metrics registers the gauge of held calls and the histogram of the
	// time to a decision; nil: not exported.
	Metrics prometheus.Registerer
	// Log takes the audit lines of requests and decisions.
	Log zerolog.Logger
	// OnChange is called when a call starts or stops waiting (the
	// console's event stream wakes its pages); nil: nothing.
	OnChange func()
}

// Gate holds calls until they are decided. It is safe for concurrent use.
type Gate struct {
	timeout   time.Duration
	approvers []string
	webhook   *Webhook
	peers     *peers.Peers
	log       zerolog.Logger
	onChange  func()
	now       func() time.Time
	every     time.Duration // progressEvery; tests shorten it

	mu      sync.Mutex
	pending map[string]*held
	recent  *lru.Cache[string, Decision] // decided or expired, by id
	closed  bool

	pendingGauge prometheus.Gauge
	decision     *prometheus.HistogramVec

	// life ends with Close (stop): webhook deliveries in flight (hooks)
	// end with it.
	life  context.Context
	stop  context.CancelFunc
	hooks sync.WaitGroup
}

// held is one call waiting.
type held struct {
	Pending
	callerKey string
	decided   chan Decision // buffered 1: the one decision
	done      bool          // a decision was sent (under Gate.mu)
}

// Pending is a held call as the listing shows it: never the caller's
// token, arguments as the caller's content filters left them.
type Pending struct {
	ID     string `json:"id"`
	Caller string `json:"caller"`
	Agent  string `json:"agent,omitempty"`
	Level  string `json:"level"`
	Tool   string `json:"tool"`
	Server string `json:"server"`
	// Arguments are the call's arguments after the caller's content
	// filters: what the upstream will get.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// ArgumentsSHA256 is the digest of the canonical arguments: an
	// approver may send it back to approve only what it was shown.
	ArgumentsSHA256 string    `json:"argumentsSha256"`
	Created         time.Time `json:"created"`
	Expires         time.Time `json:"expires"`
	AgeSeconds      float64   `json:"ageSeconds"`
	// Approvers says who may decide, for the caller's BLOCKED text and
	// the listing.
	Approvers string `json:"approvers"`
	// Own marks, in a listing, a call of the caller that lists: no one
	// decides their own (the console shows it without buttons).
	Own bool `json:"own,omitempty"`
}

// Decision is how a held call ended.
type Decision struct {
	ID      string        `json:"id"`
	Verdict string        `json:"verdict"`
	By      string        `json:"by,omitempty"`
	Reason  string        `json:"reason,omitempty"`
	Waited  time.Duration `json:"-"`
	InBand  bool          `json:"-"` // approved by the caller's own client (elicit)
}

// Summary is the decision in a few words, for the console's feed and the
// call's audit line: "approved by alice after 12s".
func (d Decision) Summary() string {
	s := d.Verdict
	if d.By != "" {
		s += " by " + d.By
	}
	if d.InBand {
		s += " (asked in the caller's client)"
	}
	s += " after " + d.Waited.Round(time.Second).String()
	if d.Reason != "" {
		s += ": " + d.Reason
	}
	return s
}

// New returns a Gate.
func New(opts Options) *Gate {
	g := &Gate{
		timeout:   opts.Timeout,
		approvers: opts.Approvers,
		webhook:   opts.Webhook,
		peers:     opts.Peers,
		log:       opts.Log,
		onChange:  opts.OnChange,
		now:       time.Now,
		every:     progressEvery,
		pending:   map[string]*held{},
		pendingGauge: prometheus.NewGauge(prometheus.GaugeOpts{Name: "mcphub_approvals_pending",
			Help: "Tool calls held for a person's approval on this replica."}),
		decision: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "mcphub_approval_decision_seconds",
			Help:    "Time from a held call's request to its decision, by verdict (approved, denied, expired, canceled).",
			Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600}}, []string{"verdict"}),
	}
	if g.timeout <= 0 {
		g.timeout = DefaultTimeout
	}
	if g.onChange == nil {
		g.onChange = func() {}
	}
	g.recent, _ = lru.New[string, Decision](recentDecisions)
	g.life, g.stop = context.WithCancel(context.Background())
	if opts.Metrics != nil {
		opts.Metrics.MustRegister(g.pendingGauge, g.decision)
	}
	return g
}

// MayApprove reports whether caller may decide held calls (other than its
// own, which no one decides for themselves: Decide).
func (g *Gate) MayApprove(caller callers.Caller) bool {
	if caller.Approver {
		return true
	}
	if len(g.approvers) == 0 {
		return caller.Admin
	}
	for _, p := range g.approvers {
		if ok, _ := path.Match(p, caller.Name); ok && caller.Address() == "" {
			return true
		}
	}
	return false
}

// approverNames says who may approve.
func (g *Gate) approverNames() string {
	if len(g.approvers) == 0 {
		return "the hub's admins"
	}
	return strings.Join(g.approvers, ", ")
}

type holdNoticeKey struct{}

// WithHoldNotice returns ctx with f, told when a call made under ctx
// starts to wait for a decision: a task-augmented call (internal/tasks)
// answers its caller with a task then, instead of keeping the request open.
func WithHoldNotice(ctx context.Context, f func(Pending)) context.Context {
	return context.WithValue(ctx, holdNoticeKey{}, f)
}

// Request is a call to hold.
type Request struct {
	Caller       callers.Caller
	Session      string
	Tool, Server string
	Arguments    json.RawMessage
	// Progress, when not nil, is told that the call waits, at once and
	// then every few seconds, with how long it has waited so far.
	Progress func(waited time.Duration, p Pending)
	// Ask, when not nil, asks the caller's own client (approvalMode:
	// elicit) while the call waits (elicit.go).
	Ask Ask
}

// ArgumentsDigest is the SHA-256 of args in canonical form (members
// sorted, no spaces, numbers as written), hex: the same arguments give the
// same digest however they were spaced or ordered.
func ArgumentsDigest(args json.RawMessage) (string, error) {
	canon := []byte("{}")
	if len(bytes.TrimSpace(args)) > 0 && string(bytes.TrimSpace(args)) != "null" {
		dec := json.NewDecoder(bytes.NewReader(args))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return "", fmt.Errorf("read the arguments: %w", err)
		}
		var err error
		if canon, err = json.Marshal(v); err != nil {
			return "", fmt.Errorf("write the arguments canonically: %w", err)
		}
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:]), nil
}

// Hold waits until req's call is approved, denied, expired or canceled
// (ctx ended: the caller went away) and returns how it ended. Only
// Approved lets the call run.
func (g *Gate) Hold(ctx context.Context, req Request) Decision {
	digest, err := ArgumentsDigest(req.Arguments)
	if err != nil {
		return Decision{Verdict: Denied, Reason: err.Error()}
	}
	now := g.now()
	h := &held{
		Pending: Pending{ID: g.peers.Tag(rand.Text()), Caller: req.Caller.Name, Agent: req.Caller.Agent, Level: req.Caller.Level.String(),
			// A copy: listings and the webhook read it while the request
			// whose buffer it came from may be over.
			Tool: req.Tool, Server: req.Server, Arguments: bytes.Clone(req.Arguments), ArgumentsSHA256: digest,
			Created: now, Expires: now.Add(g.timeout), Approvers: g.approverNames()},
		callerKey: req.Caller.Key(),
		decided:   make(chan Decision, 1),
	}
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return Decision{ID: h.ID, Verdict: Canceled, Reason: "the hub is shutting down"}
	}
	if refused := g.overLimitLocked(h.callerKey); refused != "" {
		g.mu.Unlock()
		g.log.Warn().Str("audit", "approval").Str("event", "refused").Str("caller", h.Caller).Str("tool", h.Tool).Str("server", h.Server).
			Str("reason", refused).Msg("tool call not held: too many wait for approval")
		return Decision{ID: h.ID, Verdict: Denied, Reason: refused}
	}
	g.pending[h.ID] = h
	g.mu.Unlock()
	g.pendingGauge.Inc()
	g.log.Warn().Str("audit", "approval").Str("event", "requested").Str("approval", h.ID).
		Str("session", req.Session).Str("caller", h.Caller).Str("agent", h.Agent).Str("autonomy", h.Level).
		Str("tool", h.Tool).Str("server", h.Server).Str("arguments_sha256", digest).
		Time("expires", h.Expires).Msg("tool call held for approval")
	g.onChange()
	g.notify(h.Pending)
	if f, ok := ctx.Value(holdNoticeKey{}).(func(Pending)); ok {
		f(h.Pending)
	}
	if req.Ask != nil {
		askCtx, stopAsk := context.WithCancel(ctx)
		var asking sync.WaitGroup
		asking.Go(func() { g.askInBand(askCtx, h, req.Caller.Name, req.Ask) })
		defer func() { stopAsk(); asking.Wait() }()
	}

	timer := time.NewTimer(g.timeout)
	defer timer.Stop()
	var tick <-chan time.Time
	if req.Progress != nil {
		req.Progress(0, h.Pending)
		t := time.NewTicker(g.every)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case d := <-h.decided:
			return g.end(h, d, true)
		case <-timer.C:
			return g.end(h, Decision{Verdict: Expired, Reason: fmt.Sprintf("no decision within %s", g.timeout)}, false)
		case <-ctx.Done():
			return g.end(h, Decision{Verdict: Canceled, Reason: "the caller went away before a decision"}, false)
		case <-tick:
			req.Progress(g.now().Sub(h.Created), h.Pending)
		}
	}
}

// overLimitLocked says why one more call of the caller of key cannot be
// held, "" when it can.
func (g *Gate) overLimitLocked(key string) string {
	if len(g.pending) >= maxPending {
		return fmt.Sprintf("%d calls already wait for approval on this replica, its limit", maxPending)
	}
	n := 0
	for _, o := range g.pending {
		if o.callerKey == key {
			n++
		}
	}
	if n >= maxPendingPerCaller {
		return fmt.Sprintf("%d calls of this caller already wait for approval, its limit: wait for a decision", n)
	}
	return ""
}

// end takes h off the pending calls with d (received: d came from
// h.decided; else a decision sent meanwhile wins) and records it.
func (g *Gate) end(h *held, d Decision, received bool) Decision {
	g.mu.Lock()
	if !received && h.done {
		// A decision was sent as the wait ended otherwise: it counts.
		d = <-h.decided
	}
	h.done = true
	delete(g.pending, h.ID)
	d.ID = h.ID
	d.Waited = g.now().Sub(h.Created)
	g.recent.Add(h.ID, d)
	g.mu.Unlock()
	g.pendingGauge.Dec()
	g.decision.WithLabelValues(d.Verdict).Observe(d.Waited.Seconds())
	ev := g.log.Warn()
	if d.Verdict == Approved {
		ev = g.log.Info()
	}
	ev = ev.Str("audit", "approval").Str("event", d.Verdict).Str("approval", h.ID).
		Str("caller", h.Caller).Str("tool", h.Tool).Str("server", h.Server).Dur("waited", d.Waited)
	if d.By != "" {
		ev = ev.Str("by", d.By)
	}
	if d.InBand {
		ev = ev.Bool("in_band", true)
	}
	if d.Reason != "" {
		ev = ev.Str("reason", d.Reason)
	}
	ev.Msg("approval " + d.Verdict)
	g.onChange()
	return d
}

// The refusals of Decide, each an HTTP status at the REST API.
var (
	ErrUnknown     = errors.New("no call waits for approval under this id")
	ErrOwnCall     = errors.New("a caller cannot decide its own call")
	ErrNotApprover = errors.New("not an approver")
	ErrDecided     = errors.New("already decided")
	ErrExpired     = errors.New("expired")
	ErrChanged     = errors.New("the arguments are not the ones shown")
)

// Decide approves (approve true) or denies the held call id for
// approver. sha, when not "", must be the digest of the arguments the
// approver was shown. The error wraps one of the Err values.
func (g *Gate) Decide(approver callers.Caller, id string, approve bool, reason, sha string) (Decision, error) {
	if !g.MayApprove(approver) {
		// Before the id is looked up: a caller that may decide nothing
		// learns nothing of which calls wait, and nothing is passed on.
		return Decision{}, g.notApprover(approver, id)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	h, ok := g.pending[id]
	if !ok || h.done {
		if d, seen := g.recent.Get(id); seen {
			if d.Verdict == Expired {
				return d, fmt.Errorf("approval %s: %w: %s", id, ErrExpired, d.Reason)
			}
			return d, fmt.Errorf("approval %s: %w (%s)", id, ErrDecided, d.Verdict)
		}
		if ok {
			return Decision{}, fmt.Errorf("approval %s: %w", id, ErrDecided)
		}
		return Decision{}, fmt.Errorf("approval %s: %w", id, ErrUnknown)
	}
	switch {
	case approver.Key() == h.callerKey:
		return Decision{}, fmt.Errorf("approval %s: %w: %s made it", id, ErrOwnCall, h.Caller)
	case sha != "" && sha != h.ArgumentsSHA256:
		return Decision{}, fmt.Errorf("approval %s: %w: their digest is %s", id, ErrChanged, h.ArgumentsSHA256)
	case !g.now().Before(h.Expires):
		return Decision{}, fmt.Errorf("approval %s: %w", id, ErrExpired)
	}
	d := Decision{ID: id, Verdict: Denied, By: approver.Name, Reason: reason}
	if approve {
		d.Verdict = Approved
	}
	h.done = true
	h.decided <- d
	return d, nil
}

// notApprover is the refusal of a decision by a caller that may decide
// none.
func (g *Gate) notApprover(caller callers.Caller, id string) error {
	return fmt.Errorf("approval %s: %w: %s may not decide held calls (approvers: %s)", id, ErrNotApprover, caller.Name, g.approverNames())
}

// decideInBand is the caller's own decision through its client
// (elicit.go), which Decide refuses to any caller.
func (g *Gate) decideInBand(id string, d Decision) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if h, ok := g.pending[id]; ok && !h.done {
		h.done = true
		d.InBand = true
		h.decided <- d
	}
}

// List returns the calls waiting on this replica that caller may see:
// every one for an approver, its own for any other caller. Oldest first.
func (g *Gate) List(caller callers.Caller) []Pending {
	all := g.MayApprove(caller)
	key := caller.Key()
	now := g.now()
	g.mu.Lock()
	out := make([]Pending, 0, len(g.pending))
	for _, h := range g.pending {
		if !h.done && (all || h.callerKey == key) {
			p := h.Pending
			p.AgeSeconds = now.Sub(p.Created).Round(time.Millisecond).Seconds()
			p.Own = h.callerKey == key
			out = append(out, p)
		}
	}
	g.mu.Unlock()
	sortPending(out)
	return out
}

func sortPending(ps []Pending) {
	sort.Slice(ps, func(i, j int) bool {
		if !ps[i].Created.Equal(ps[j].Created) {
			return ps[i].Created.Before(ps[j].Created)
		}
		return ps[i].ID < ps[j].ID
	})
}

// Close ends every wait (canceled: nothing runs) and refuses new ones; it
// ends webhook deliveries in flight and waits for them. The hub calls it
// when it stops.
func (g *Gate) Close() {
	g.mu.Lock()
	g.closed = true
	for _, h := range g.pending {
		if !h.done {
			h.done = true
			h.decided <- Decision{Verdict: Canceled, Reason: "the hub is shutting down"}
		}
	}
	g.mu.Unlock()
	g.stop()
	g.hooks.Wait()
}
