package callstats

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/httpjson"
)

// Window is a span the series are read over: its name in the query
// (?window=1h), its step and its number of buckets.
type Window struct {
	Name  string
	Step  time.Duration
	Steps int
}

// Windows are the windows kept: 1h (the default) and 24h.
func Windows() []Window {
	return []Window{{"1h", hourStep, hourBuckets}, {"24h", dayStep, dayBuckets}}
}

// WindowOf returns the window called name ("" is 1h), or an error naming
// the parameter and what it may be, for a 400.
func WindowOf(name string) (Window, error) {
	ws := Windows()
	if name == "" {
		return ws[0], nil
	}
	names := make([]string, len(ws))
	for i, w := range ws {
		if w.Name == name {
			return w, nil
		}
		names[i] = w.Name
	}
	return Window{}, fmt.Errorf("query parameter window: want %s, not %q", strings.Join(names, " or "), name)
}

// Report is GET /api/mcp/stats: the series of the hub and of each server
// with a call in the window, bucket by bucket, oldest first; the last
// bucket is the current one, still filling.
type Report struct {
	Window      string      `json:"window"`
	StepSeconds int         `json:"stepSeconds"`
	Buckets     []time.Time `json:"buckets"` // each bucket's start
	Hub         Series      `json:"hub"`
	Servers     []Series    `json:"servers"` // by name
}

// Series is one server's counts (the hub's: every call, those of no
// server included), one number a bucket.
type Series struct {
	Name      string   `json:"name,omitempty"` // the server; "" for the hub
	Calls     []uint32 `json:"calls"`
	Errors    []uint32 `json:"errors"`
	Refused   []uint32 `json:"refused"`
	Guardrail []uint32 `json:"guardrail"`
	Approvals []uint32 `json:"approvals"`
	P50Ms     Millis   `json:"p50Ms"`
	P95Ms     Millis   `json:"p95Ms"`
}

// Millis are latencies in milliseconds, NaN for a bucket without one,
// written as null: no call is not a call of 0 ms.
type Millis []float64

// MarshalJSON writes m with null for NaN.
func (m Millis) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 2+8*len(m))
	b = append(b, '[')
	for i, v := range m {
		if i > 0 {
			b = append(b, ',')
		}
		if math.IsNaN(v) {
			b = append(b, "null"...)
		} else {
			b = strconv.AppendFloat(b, v, 'f', -1, 64)
		}
	}
	return append(b, ']'), nil
}

// Report reads the series over w, ending with the bucket of now.
func (s *Stats) Report(w Window) Report {
	step := int64(w.Step / time.Second)
	last := floorDiv(s.now().Unix(), step)
	first := last - int64(w.Steps) + 1
	r := Report{Window: w.Name, StepSeconds: int(step), Buckets: make([]time.Time, w.Steps), Servers: []Series{}}
	for i := range r.Buckets {
		r.Buckets[i] = time.Unix((first+int64(i))*step, 0).UTC()
	}
	r.Hub, _ = s.hub.read(w, first)
	s.mu.RLock()
	named := make(map[string]*series, len(s.servers))
	for name, sr := range s.servers {
		named[name] = sr
	}
	s.mu.RUnlock()
	for name, sr := range named {
		if out, counted := sr.read(w, first); counted {
			out.Name = name
			r.Servers = append(r.Servers, out)
		}
	}
	slices.SortFunc(r.Servers, func(a, b Series) int { return strings.Compare(a.Name, b.Name) })
	return r
}

// read returns the series over w from the bucket of period first on, and
// whether a call is counted in it.
func (sr *series) read(w Window, first int64) (Series, bool) {
	n := w.Steps
	out := Series{Calls: make([]uint32, n), Errors: make([]uint32, n), Refused: make([]uint32, n),
		Guardrail: make([]uint32, n), Approvals: make([]uint32, n), P50Ms: make(Millis, n), P95Ms: make(Millis, n)}
	sr.mu.Lock()
	defer sr.mu.Unlock()
	ring := sr.hour[:]
	if w.Step == dayStep {
		ring = sr.day[:]
	}
	counted := false
	for i := range n {
		p := first + int64(i)
		b := &ring[mod(p, len(ring))]
		out.P50Ms[i], out.P95Ms[i] = math.NaN(), math.NaN()
		if b.period != p || b.calls == 0 {
			continue
		}
		counted = true
		out.Calls[i], out.Errors[i], out.Refused[i] = b.calls, b.errors, b.refused
		out.Guardrail[i], out.Approvals[i] = b.guardrail, b.approval
		out.P50Ms[i], out.P95Ms[i] = quantile(&b.latency, 0.50), quantile(&b.latency, 0.95)
	}
	return out, counted
}

// quantile is the q-quantile of the latencies of h in milliseconds (the
// middle of the bin it falls in, rounded to a microsecond), NaN when h is
// empty.
func quantile(h *[latencyBins]uint32, q float64) float64 {
	var n uint64
	for _, c := range h {
		n += uint64(c)
	}
	if n == 0 {
		return math.NaN()
	}
	rank := max(uint64(math.Ceil(q*float64(n))), 1)
	var seen uint64
	for i, c := range h {
		if seen += uint64(c); seen >= rank {
			return math.Round(binMillis(i)*1000) / 1000
		}
	}
	return math.NaN() // not reached: seen ends at n ≥ rank
}

// Handle answers GET /api/mcp/stats?window=1h|24h with the Report. Admin
// callers only: the counts are of every caller's calls, and a caller that
// is not an admin sees only its own calls anywhere else (the feed).
func (s *Stats) Handle(w http.ResponseWriter, r *http.Request) {
	if !callers.From(r.Context()).Admin {
		httpjson.Write(w, http.StatusForbidden, map[string]any{"error": "the hub's activity counts every caller's calls: admin callers only"})
		return
	}
	win, err := WindowOf(r.URL.Query().Get("window"))
	if err != nil {
		httpjson.Write(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
		return
	}
	httpjson.Write(w, http.StatusOK, s.Report(win))
}
