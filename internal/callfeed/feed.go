// Package callfeed is the web console's live view of the hub: the last
// calls the pipeline recorded (GET /api/mcp/calls) and an event stream
// (GET /api/events) that says when a call was recorded or the catalog
// changed. Recording a call is on every call's path, so it costs one short
// lock and a copy into a fixed ring, no allocation. What a caller sees is
// scoped by who it is (callers.From): an admin every call, any other
// caller its own. The same calls are counted for the console's charts
// (internal/callstats, GET /api/mcp/stats).
package callfeed

import (
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/callstats"
	"github.com/purko-io/mcp-hub/internal/httpjson"
	"github.com/purko-io/mcp-hub/internal/registry"
)

// recentCalls is how many calls the ring keeps.
const recentCalls = 200

// maxFeedName is the most of a tool name the ring keeps; published names
// have at most 64 characters.
const maxFeedName = 128

// Call is one recorded call: who, what, where, the decision and how it
// ended. Never its arguments nor a credential: those may hold secrets.
type Call struct {
	Time time.Time
	// Caller is the caller's name, Level the level it called at.
	Caller string
	Level  string
	// Address is an anonymous caller's address (callers.Caller.Address):
	// with Caller, whose call it is (callers.Caller.Key), kept as it is so
	// that recording a call allocates nothing. Never shown.
	Address  string
	Tool     string
	Server   string
	Decision string // allowed, denied, limited
	Outcome  string
	Duration time.Duration
	// Guardrail says what the caller's guardrails did to the call: the
	// content filters' rules and action ("redacted email×2 in result"), or
	// "budget"; "" for nothing.
	Guardrail string
}

// callJSON is a Call as /api/mcp/calls and the "call" events show it.
type callJSON struct {
	Seq        uint64    `json:"seq"`
	Time       time.Time `json:"time"`
	Caller     string    `json:"caller"`
	Level      string    `json:"level"`
	Tool       string    `json:"tool"`
	Server     string    `json:"server,omitempty"`
	Decision   string    `json:"decision"`
	Outcome    string    `json:"outcome"`
	DurationMs float64   `json:"durationMs"`
	Guardrail  string    `json:"guardrail,omitempty"`

	address string // the entry's, for visibleCalls
}

// Feed holds the ring of recent calls and the event streams to wake.
type Feed struct {
	mu   sync.Mutex
	ring [recentCalls]Call
	seq  uint64 // calls recorded so far; the newest is ring[(seq-1)%len]
	gen  uint64 // catalog changes seen
	// approvals counts the changes of the calls held for approval
	// (internal/approvals): a page reads /api/mcp/approvals again.
	approvals uint64
	subs      map[chan struct{}]struct{}
	// streams counts the open event streams (events.go); heartbeat is
	// their keep-alive interval.
	streams   int
	heartbeat time.Duration
	// shared counts the streams of callers that are not admins, anonymous
	// those of anonymous callers, perCaller those of each (by budget key);
	// maxAnonymous is the anonymous callers' bound together.
	shared, anonymous, maxAnonymous int
	perCaller                       map[string]int
	// stats counts every call added, per minute and quarter hour.
	stats *callstats.Stats
}

// New returns an empty feed whose event streams anonymous callers may
// hold anonymousShare percent of (http.anonymousShare) of those open to
// callers that are not admins, so a few anonymous networks cannot take
// them from the callers that authenticate.
func New(anonymousShare int) *Feed {
	return &Feed{subs: map[chan struct{}]struct{}{}, heartbeat: eventHeartbeat, perCaller: map[string]int{},
		maxAnonymous: (maxSharedEventStreams*anonymousShare + 99) / 100, stats: callstats.New(time.Now)}
}

// Stats returns the counts of the calls added: GET /api/mcp/stats.
func (f *Feed) Stats() *callstats.Stats { return f.stats }

// Add records a call and wakes the streams.
func (f *Feed) Add(e Call) {
	if len(e.Tool) > maxFeedName {
		// An unknown tool's name is the caller's text: a copy of its
		// start, so the ring never holds a large request's body.
		e.Tool = strings.Clone(e.Tool[:maxFeedName])
	}
	var end time.Time // when the call ended: its start and duration, no second clock read
	if !e.Time.IsZero() {
		end = e.Time.Add(e.Duration)
	}
	f.stats.Record(callstats.Call{At: end, Server: e.Server, Outcome: e.Outcome, Duration: e.Duration, Guardrail: e.Guardrail})
	f.mu.Lock()
	f.ring[f.seq%recentCalls] = e
	f.seq++
	f.wakeLocked()
	f.mu.Unlock()
}

// CatalogChanged wakes the streams, which tell their consoles to read the
// catalog again, and drops the counts of servers c no longer holds: call it
// with every new catalog of the registry.
func (f *Feed) CatalogChanged(c *registry.Catalog) {
	f.stats.Keep(func(server string) bool {
		return slices.ContainsFunc(c.Servers, func(v registry.ServerView) bool { return v.Name == server })
	})
	f.mu.Lock()
	f.gen++
	f.wakeLocked()
	f.mu.Unlock()
}

// ApprovalsChanged wakes the streams, which tell their consoles to read
// the held calls again (/api/mcp/approvals): call it whenever a call
// starts or stops waiting for approval.
func (f *Feed) ApprovalsChanged() {
	f.mu.Lock()
	f.approvals++
	f.wakeLocked()
	f.mu.Unlock()
}

// approvalsGen is the count of ApprovalsChanged so far.
func (f *Feed) approvalsGen() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.approvals
}

// wakeLocked signals each stream without blocking: a stream that has not
// taken its last signal yet will read everything new anyway.
func (f *Feed) wakeLocked() {
	for c := range f.subs {
		select {
		case c <- struct{}{}:
		default:
		}
	}
}

// subscribe returns a channel signalled on every change and its release.
func (f *Feed) subscribe() (<-chan struct{}, func()) {
	c := make(chan struct{}, 1)
	f.mu.Lock()
	f.subs[c] = struct{}{}
	f.mu.Unlock()
	return c, func() {
		f.mu.Lock()
		delete(f.subs, c)
		f.mu.Unlock()
	}
}

// since returns the calls recorded after the first `after` ones (at most the
// ring's length, oldest first), the count of calls recorded and the
// catalog generation.
func (f *Feed) since(after uint64) (calls []callJSON, seq, gen uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	seq, gen = f.seq, f.gen
	from := after
	if seq > recentCalls && from < seq-recentCalls {
		from = seq - recentCalls
	}
	if from >= seq {
		return nil, seq, gen
	}
	calls = make([]callJSON, 0, seq-from)
	for i := from; i < seq; i++ {
		e := f.ring[i%recentCalls]
		calls = append(calls, callJSON{Seq: i + 1, Time: e.Time, Caller: e.Caller, Level: e.Level, Tool: e.Tool,
			Server: e.Server, Decision: e.Decision, Outcome: e.Outcome, DurationMs: float64(e.Duration.Microseconds()) / 1000,
			Guardrail: e.Guardrail, address: e.Address})
	}
	return calls, seq, gen
}

// HandleCalls lists the recent calls the request's caller (callers.From)
// may see, newest last.
func (f *Feed) HandleCalls(w http.ResponseWriter, r *http.Request) {
	calls, _, _ := f.since(0)
	calls = visibleCalls(callers.From(r.Context()), calls)
	if calls == nil {
		calls = []callJSON{}
	}
	httpjson.Write(w, http.StatusOK, map[string]any{"calls": calls})
}

// visibleCalls keeps the calls caller may see: an admin (the operator; the
// local user on the no-auth default) sees every call, any other caller
// only its own, so that one agent's token does not show what the others do.
// Own means the same limit key: an anonymous caller sees the calls made
// from its address, not every anonymous caller's.
func visibleCalls(caller callers.Caller, calls []callJSON) []callJSON {
	if caller.Admin {
		return calls
	}
	key := caller.Key()
	own := calls[:0]
	for _, c := range calls {
		if c.Caller == caller.Name && entryKey(c) == key {
			own = append(own, c)
		}
	}
	return own
}

// entryKey is the key (callers.Caller.Key) of the caller that made c.
func entryKey(c callJSON) string {
	if c.address != "" {
		return callers.AnonymousKey(c.address)
	}
	return c.Caller
}
