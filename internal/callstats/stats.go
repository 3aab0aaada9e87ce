// Package callstats counts what the hub's calls did over the last hour and
// the last day, per server and for the whole hub, in memory: the web
// console's Activity charts (GET /api/mcp/stats). Prometheus keeps the
// history of a fleet; this is what one hub can show by itself, with no
// Prometheus at hand.
//
// Each series is two rings of fixed buckets (a minute each for the hour,
// a quarter of an hour each for the day), reused as time moves on: no
// goroutine, no sample kept. A bucket counts calls, errors, refusals,
// guardrail and approval events, and sorts latencies into a small
// histogram of log-spaced bins, enough for a p50 and a p95 within 13%.
// Recording a call is on every call's path: two short locks and a few
// counters, no allocation once its server has a series.
package callstats

import (
	"math"
	"math/bits"
	"strings"
	"sync"
	"time"
)

// The two windows: an hour of minutes and a day of quarter hours.
const (
	hourStep    = time.Minute
	hourBuckets = 60
	dayStep     = 15 * time.Minute
	dayBuckets  = 96
)

// MaxServers caps the servers that have series of their own, so that the
// memory kept stays bounded (44 KiB a series: 2.8 MiB at most with the
// hub's). The calls of a server past the cap count in the hub's series
// only, until a catalog change (Keep) or a day without calls frees a place.
const MaxServers = 64

// The latency histogram: bin 0 holds what took under latencyFloor, bin i
// (i ≥ 1) [floor·2^((i-1)/3), floor·2^(i/3)), the last bin everything
// above. Three bins an octave put a bin's geometric middle within 12.3% of
// any latency in it; 64 bins reach past two minutes.
const (
	latencyBins   = 64
	binsPerOctave = 3
	latencyFloor  = 100 * time.Microsecond
)

// The outcomes told apart: success and the refusals, as the pipeline
// names them (its Outcome values, label values of mcphub_tool_calls_total,
// which dashboards read and which therefore stay).
const (
	outcomeOK          = "ok"
	outcomeDenied      = "denied"
	outcomeRateLimited = "rate_limited"
	outcomeQuarantined = "quarantined"
)

// Call is what a finished call tells the counters. Nothing of its caller
// or arguments: the series are shared by every admin who looks.
type Call struct {
	// At is when the call ended; zero: now (the Stats' clock). The feed
	// has it from the call's start and duration, which saves reading the
	// clock again on every call.
	At time.Time
	// Server owns the tool; "" when none does (an unknown name, a refusal
	// before the lookup): such calls count for the hub only.
	Server string
	// Outcome is the pipeline's: "ok", a refusal ("denied",
	// "rate_limited", "quarantined"), anything else is an error
	// (tool_error, unavailable, rpc_error, canceled, unknown_tool, error).
	Outcome  string
	Duration time.Duration
	// Guardrail is the feed's account of what the caller's guardrails did
	// ("; "-joined): a part starting with "approval " is a person's
	// decision on a held call (internal/approvals' summary), any other part
	// a content filter's or a budget's.
	Guardrail string
}

// event is a Call sorted into what the counters count.
type event struct {
	errored, refused, guardrail, approval bool
	bin                                   int // latency bin; -1: no latency to count
}

func eventOf(c Call) event {
	e := event{bin: -1}
	switch c.Outcome {
	case outcomeOK:
	case outcomeDenied, outcomeRateLimited, outcomeQuarantined:
		e.refused = true
	default:
		e.errored = true
	}
	e.guardrail, e.approval = guardParts(c.Guardrail)
	// A refused call never ran; a held one waited mostly for a person:
	// neither says how fast the server answers.
	if !e.refused && !e.approval {
		e.bin = binOf(c.Duration)
	}
	return e
}

// guardParts reads a feed's guardrail text, without allocating.
func guardParts(s string) (guardrail, approval bool) {
	for s != "" {
		part, rest, _ := strings.Cut(s, "; ")
		if strings.HasPrefix(part, "approval ") {
			approval = true
		} else if part != "" {
			guardrail = true
		}
		s = rest
	}
	return guardrail, approval
}

// binOf is the latency bin of d: its octave above the floor from the
// bit length, its third of the octave from two comparisons (no logarithm
// on the call's path).
func binOf(d time.Duration) int {
	if d < latencyFloor {
		return 0
	}
	octave := bits.Len64(uint64(d/latencyFloor)) - 1
	x := float64(d) / float64(latencyFloor<<octave) // in [1, 2)
	third := 0
	switch {
	case x >= cubeRoot4:
		third = 2
	case x >= cubeRoot2:
		third = 1
	}
	return min(1+binsPerOctave*octave+third, latencyBins-1)
}

// The bounds of the thirds of an octave: 2^(1/3) and 2^(2/3).
const (
	cubeRoot2 = 1.2599210498948732
	cubeRoot4 = 1.5874010519681994
)

// binMillis is what a latency of bin i is reported as, in milliseconds:
// its geometric middle (half the floor for bin 0).
func binMillis(i int) float64 {
	floor := float64(latencyFloor) / float64(time.Millisecond)
	if i == 0 {
		return floor / 2
	}
	return floor * math.Exp2((float64(i)-0.5)/binsPerOctave)
}

// bucket is one step of one series.
type bucket struct {
	// period is the bucket's start in steps since the Unix epoch: a
	// bucket whose period is not the one asked for is from an earlier
	// turn of its ring and counts nothing.
	period                                      int64
	calls, errors, refused, guardrail, approval uint32
	latency                                     [latencyBins]uint32
}

func (b *bucket) add(period int64, e event) {
	switch {
	case period < b.period:
		return // a call that ended a whole ring ago: its bucket is gone
	case period > b.period:
		*b = bucket{period: period}
	}
	b.calls++
	if e.errored {
		b.errors++
	}
	if e.refused {
		b.refused++
	}
	if e.guardrail {
		b.guardrail++
	}
	if e.approval {
		b.approval++
	}
	if e.bin >= 0 {
		b.latency[e.bin]++
	}
}

// series is the two rings of one server, or of the hub.
type series struct {
	mu   sync.Mutex
	hour [hourBuckets]bucket
	day  [dayBuckets]bucket
	last int64 // Unix second of the last call recorded
}

func (s *series) add(sec int64, e event) {
	h, d := floorDiv(sec, int64(hourStep/time.Second)), floorDiv(sec, int64(dayStep/time.Second))
	s.mu.Lock()
	s.hour[mod(h, hourBuckets)].add(h, e)
	s.day[mod(d, dayBuckets)].add(d, e)
	s.last = sec
	s.mu.Unlock()
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

func mod(a int64, n int) int {
	m := a % int64(n)
	if m < 0 {
		m += int64(n)
	}
	return int(m)
}

// Stats holds the series of the hub and of each server. It is safe for
// concurrent use.
type Stats struct {
	now func() time.Time
	hub series
	mu  sync.RWMutex
	// servers holds a series per server, at most MaxServers; found under
	// the read lock on every call, added under the write lock once.
	servers map[string]*series
}

// New returns empty Stats reading the time from now (time.Now; a test's
// clock).
func New(now func() time.Time) *Stats {
	if now == nil {
		now = time.Now
	}
	return &Stats{now: now, servers: map[string]*series{}}
}

// Record counts one finished call.
func (s *Stats) Record(c Call) {
	at := c.At
	if at.IsZero() {
		at = s.now()
	}
	sec := at.Unix()
	e := eventOf(c)
	s.hub.add(sec, e)
	if c.Server == "" {
		return
	}
	if sr := s.server(c.Server, sec); sr != nil {
		sr.add(sec, e)
	}
}

// server returns the series of name, made on its first call; nil when
// MaxServers series are kept and none is idle for a day.
func (s *Stats) server(name string, sec int64) *series {
	s.mu.RLock()
	sr := s.servers[name]
	s.mu.RUnlock()
	if sr != nil {
		return sr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if sr = s.servers[name]; sr != nil {
		return sr
	}
	if len(s.servers) >= MaxServers && !s.dropIdleLocked(sec) {
		return nil
	}
	sr = &series{}
	s.servers[strings.Clone(name)] = sr
	return sr
}

// dropIdleLocked drops the series of servers without a call for a day,
// which neither window shows, and reports whether it dropped any.
func (s *Stats) dropIdleLocked(sec int64) bool {
	dropped := false
	for name, sr := range s.servers {
		sr.mu.Lock()
		idle := sec-sr.last > int64(dayStep*dayBuckets/time.Second)
		sr.mu.Unlock()
		if idle {
			delete(s.servers, name)
			dropped = true
		}
	}
	return dropped
}

// Keep drops the series of the servers keep says are gone (no longer in
// the catalog): servers come and go, their series must not pile up. Their
// calls stay counted in the hub's series.
func (s *Stats) Keep(keep func(server string) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name := range s.servers {
		if !keep(name) {
			delete(s.servers, name)
		}
	}
}
