package callstats

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/purko-io/mcp-hub/internal/callers"
)

// clock is a test's time, moved by hand.
type clock struct{ t atomic.Int64 }

func newClock(at time.Time) *clock {
	c := &clock{}
	c.t.Store(at.UnixNano())
	return c
}
func (c *clock) now() time.Time              { return time.Unix(0, c.t.Load()) }
func (c *clock) advance(d time.Duration)     { c.t.Add(int64(d)) }
func (c *clock) set(at time.Time)            { c.t.Store(at.UnixNano()) }
func ok(server string, d time.Duration) Call { return Call{Server: server, Outcome: "ok", Duration: d} }

// startTime is on a quarter hour: buckets of both windows begin there.
func startTime() time.Time { return time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC) }

// TestBucketsRollOver: calls land in the bucket of their minute (and
// quarter hour), age out of the hour after 60 minutes and out of the day
// after 96 quarters, and a ring slot used again starts from zero.
func TestBucketsRollOver(t *testing.T) {
	start := startTime()
	for _, tc := range []struct {
		name string
		// at are the offsets from start of the calls (one each, to "a").
		at []time.Duration
		// now is when the report is read, from start.
		now time.Duration
		// hour and day map a bucket's offset from start to its calls; every
		// other bucket in the window must be empty.
		hour, day map[time.Duration]uint32
	}{
		{"one minute", []time.Duration{0, 10 * time.Second, 59 * time.Second}, 30 * time.Second,
			map[time.Duration]uint32{0: 3}, map[time.Duration]uint32{0: 3}},
		{"two minutes", []time.Duration{0, 61 * time.Second, 119 * time.Second}, 2 * time.Minute,
			map[time.Duration]uint32{0: 1, time.Minute: 2}, map[time.Duration]uint32{0: 3}},
		{"out of the hour, still in the day", []time.Duration{0, 20 * time.Minute}, 70 * time.Minute,
			map[time.Duration]uint32{20 * time.Minute: 1}, map[time.Duration]uint32{0: 1, 15 * time.Minute: 1}},
		{"a slot used again starts from zero", []time.Duration{5 * time.Minute, 5 * time.Minute, 65 * time.Minute}, 65 * time.Minute,
			map[time.Duration]uint32{65 * time.Minute: 1}, map[time.Duration]uint32{0: 2, 60 * time.Minute: 1}},
		{"out of the day", []time.Duration{0, 23 * time.Hour}, 24*time.Hour + time.Minute,
			map[time.Duration]uint32{}, map[time.Duration]uint32{23 * time.Hour: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClock(start)
			s := New(c.now)
			for _, at := range tc.at {
				c.set(start.Add(at))
				s.Record(ok("a", time.Millisecond))
			}
			c.set(start.Add(tc.now))
			for _, w := range Windows() {
				want := tc.hour
				if w.Name == "24h" {
					want = tc.day
				}
				r := s.Report(w)
				if len(r.Buckets) != w.Steps || !r.Buckets[w.Steps-1].Equal(start.Add(tc.now).Truncate(w.Step)) {
					t.Fatalf("%s: %d buckets, the last at %v, want %d ending with the bucket of %v", w.Name, len(r.Buckets), r.Buckets[len(r.Buckets)-1], w.Steps, start.Add(tc.now))
				}
				got := map[time.Duration]uint32{}
				for i, b := range r.Buckets {
					if n := r.Hub.Calls[i]; n != 0 {
						got[b.Sub(start)] = n
					}
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("%s: calls by bucket %v, want %v", w.Name, got, want)
				}
				var servers []string
				for _, sr := range r.Servers {
					servers = append(servers, sr.Name)
					if !slices.Equal(sr.Calls, r.Hub.Calls) {
						t.Errorf("%s: a's calls %v differ from the hub's %v", w.Name, sr.Calls, r.Hub.Calls)
					}
				}
				if wantServers := len(want) > 0; (len(servers) == 1) != wantServers {
					t.Errorf("%s: servers %v, want a listed: %v (a server without a call in the window is left out)", w.Name, servers, wantServers)
				}
			}
		})
	}
}

// TestPercentiles: p50 and p95 of a bucket are within 13% of the true
// ones, however the latencies spread; a bucket of refusals alone has none.
func TestPercentiles(t *testing.T) {
	start := startTime()
	for _, tc := range []struct {
		name     string
		lat      func(i int) time.Duration // of call i of 1000
		p50, p95 time.Duration
	}{
		{"all alike", func(int) time.Duration { return 40 * time.Millisecond }, 40 * time.Millisecond, 40 * time.Millisecond},
		{"uniform 1..1000 ms", func(i int) time.Duration { return time.Duration(i+1) * time.Millisecond }, 500 * time.Millisecond, 950 * time.Millisecond},
		{"a slow tail", func(i int) time.Duration {
			if i >= 900 {
				return 3 * time.Second
			}
			return 2 * time.Millisecond
		}, 2 * time.Millisecond, 3 * time.Second},
		{"fast, under the floor", func(int) time.Duration { return 30 * time.Microsecond }, 50 * time.Microsecond, 50 * time.Microsecond},
		{"past the last bin", func(int) time.Duration { return time.Hour }, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(newClock(start).now)
			for i := range 1000 {
				s.Record(ok("a", tc.lat(i)))
			}
			r := s.Report(Windows()[0])
			got50, got95 := r.Hub.P50Ms[59], r.Hub.P95Ms[59]
			if tc.p50 == 0 { // the last bin: at least its lower edge
				edge := float64(latencyFloor) / 1e6 * math.Exp2(float64(latencyBins-2)/binsPerOctave)
				if got50 < edge || got95 < edge {
					t.Fatalf("p50 %v, p95 %v ms, want at least the last bin's %v", got50, got95, edge)
				}
				return
			}
			for _, q := range []struct {
				got  float64
				want time.Duration
			}{{got50, tc.p50}, {got95, tc.p95}} {
				want := float64(q.want) / 1e6
				if math.Abs(q.got-want)/want > 0.13 {
					t.Errorf("got %v ms, want %v ms within 13%%", q.got, want)
				}
			}
		})
	}
	s := New(newClock(start).now)
	s.Record(Call{Server: "a", Outcome: "denied"})
	r := s.Report(Windows()[0])
	if !math.IsNaN(r.Hub.P50Ms[59]) || r.Hub.Calls[59] != 1 || r.Hub.Refused[59] != 1 {
		t.Fatalf("a refusal alone: calls %d, refused %d, p50 %v; want 1, 1, none", r.Hub.Calls[59], r.Hub.Refused[59], r.Hub.P50Ms[59])
	}
}

// TestBins: the bins of the call's path (bit length and two comparisons)
// are those of the logarithm, and a reported latency is within 12.3% of
// any latency of its bin.
func TestBins(t *testing.T) {
	for d := latencyFloor; d < 3*time.Minute; d = d*21/20 + 1 {
		l := binsPerOctave * math.Log2(float64(d)/float64(latencyFloor))
		exact := min(1+int(l), latencyBins-1)
		onEdge := math.Abs(l-math.Round(l)) < 1e-9 // where the two may round apart
		got := binOf(d)
		if got != exact && !onEdge {
			t.Fatalf("binOf(%v) = %d, want %d", d, got, exact)
		}
		if ms := float64(d) / 1e6; got < latencyBins-1 && math.Abs(binMillis(got)-ms)/ms > 0.123 {
			t.Fatalf("%v is reported as %v ms", d, binMillis(got))
		}
	}
	if binOf(0) != 0 || binOf(latencyFloor-1) != 0 || binOf(latencyFloor) != 1 || binOf(time.Hour) != latencyBins-1 {
		t.Fatalf("bins of 0, under and at the floor, an hour: %d %d %d %d", binOf(0), binOf(latencyFloor-1), binOf(latencyFloor), binOf(time.Hour))
	}
}

// TestCallTime: a call counts in the bucket of the time it ended, when it
// says it; one that ended a whole ring before the bucket's present period
// is dropped, not counted over the present.
func TestCallTime(t *testing.T) {
	start := startTime()
	s := New(newClock(start.Add(10 * time.Minute)).now)
	s.Record(Call{At: start.Add(3 * time.Minute), Server: "a", Outcome: "ok"})
	s.Record(Call{At: start.Add(10 * time.Minute), Server: "a", Outcome: "ok"})
	s.Record(Call{At: start.Add(10*time.Minute - time.Hour), Server: "a", Outcome: "ok"}) // the slot of minute 10, an hour ago
	r := s.Report(Windows()[0])
	if r.Hub.Calls[52] != 1 || r.Hub.Calls[59] != 1 || sum32(r.Hub.Calls) != 2 {
		t.Fatalf("calls by minute %v, want one at minute 3 and one at minute 10", r.Hub.Calls[50:])
	}
}

func sum32(n []uint32) (t uint32) {
	for _, v := range n {
		t += v
	}
	return t
}

// TestWhatIsCounted: outcomes and the feed's guardrail text sorted into
// errors, refusals, guardrail and approval events.
func TestWhatIsCounted(t *testing.T) {
	start := startTime()
	for _, tc := range []struct {
		call                                       Call
		errors, refused, guardrail, approvals, lat int
	}{
		{Call{Outcome: "ok"}, 0, 0, 0, 0, 1},
		{Call{Outcome: "tool_error"}, 1, 0, 0, 0, 1},
		{Call{Outcome: "unavailable"}, 1, 0, 0, 0, 1},
		{Call{Outcome: "canceled"}, 1, 0, 0, 0, 1},
		{Call{Outcome: "denied"}, 0, 1, 0, 0, 0},
		{Call{Outcome: "rate_limited"}, 0, 1, 0, 0, 0},
		{Call{Outcome: "quarantined"}, 0, 1, 0, 0, 0},
		{Call{Outcome: "ok", Guardrail: "redacted email×2 in result"}, 0, 0, 1, 0, 1},
		{Call{Outcome: "denied", Guardrail: "budget"}, 0, 1, 1, 0, 0},
		{Call{Outcome: "ok", Guardrail: "approval Q2X approved by alice after 12s"}, 0, 0, 0, 1, 0},
		{Call{Outcome: "ok", Guardrail: "redacted email in arguments; approval Q2X approved by alice (asked in the caller's client) after 3s"}, 0, 0, 1, 1, 0},
		{Call{Outcome: "denied", Guardrail: "approval Q2X denied by bob after 1m0s: not now"}, 0, 1, 0, 1, 0},
		{Call{Outcome: "denied", Guardrail: "approval unavailable"}, 0, 1, 0, 1, 0},
	} {
		s := New(newClock(start).now)
		s.Record(tc.call)
		r := s.Report(Windows()[0])
		lat := 0
		if !math.IsNaN(r.Hub.P50Ms[59]) {
			lat = 1
		}
		got := []int{int(r.Hub.Errors[59]), int(r.Hub.Refused[59]), int(r.Hub.Guardrail[59]), int(r.Hub.Approvals[59]), lat}
		if want := []int{tc.errors, tc.refused, tc.guardrail, tc.approvals, tc.lat}; !slices.Equal(got, want) {
			t.Errorf("%+v: errors, refused, guardrail, approvals, latency %v, want %v", tc.call, got, want)
		}
		if len(r.Servers) != 0 {
			t.Errorf("%+v: a call of no server gives a server series %v", tc.call, r.Servers)
		}
	}
}

// TestWindow24h: the day is 96 quarter hours starting on the quarter, each
// with its own latencies.
func TestWindow24h(t *testing.T) {
	start := startTime()
	c := newClock(start.Add(7 * time.Minute))
	s := New(c.now)
	s.Record(ok("a", 10*time.Millisecond))
	c.advance(time.Hour)
	s.Record(ok("a", 200*time.Millisecond))
	s.Record(Call{Server: "b", Outcome: "tool_error", Duration: time.Millisecond})
	w, err := WindowOf("24h")
	if err != nil {
		t.Fatal(err)
	}
	r := s.Report(w)
	if r.Window != "24h" || r.StepSeconds != 900 || len(r.Buckets) != 96 || !r.Buckets[95].Equal(start.Add(time.Hour)) || !r.Buckets[0].Equal(start.Add(-95*15*time.Minute+time.Hour)) {
		t.Fatalf("24h: %s, step %d, %d buckets from %v to %v", r.Window, r.StepSeconds, len(r.Buckets), r.Buckets[0], r.Buckets[len(r.Buckets)-1])
	}
	if r.Hub.Calls[91] != 1 || r.Hub.Calls[95] != 2 || r.Hub.Errors[95] != 1 {
		t.Fatalf("hub calls %v errors %v", r.Hub.Calls[90:], r.Hub.Errors[90:])
	}
	if len(r.Servers) != 2 || r.Servers[0].Name != "a" || r.Servers[1].Name != "b" {
		t.Fatalf("servers %+v, want a and b by name", r.Servers)
	}
	if p := r.Servers[0].P50Ms; math.Abs(p[91]-10)/10 > 0.13 || math.Abs(p[95]-200)/200 > 0.13 || !math.IsNaN(p[0]) {
		t.Fatalf("a's p50 by quarter %v", p[90:])
	}
	if _, err := WindowOf("2h"); err == nil || !strings.Contains(err.Error(), "window") || !strings.Contains(err.Error(), "1h or 24h") {
		t.Fatalf("WindowOf(2h): %v, want an error naming the parameter and its values", err)
	}
	if w, err := WindowOf(""); err != nil || w.Name != "1h" {
		t.Fatalf("WindowOf(\"\"): %v %v, want 1h", w, err)
	}
}

// TestServerCap: past MaxServers a new server counts in the hub's series
// only, until Keep drops a server that left the catalog or one is idle
// for a day; the memory of a full set stays under 3 MiB.
func TestServerCap(t *testing.T) {
	start := startTime()
	c := newClock(start)
	s := New(c.now)
	for i := range MaxServers + 1 {
		s.Record(ok(fmt.Sprintf("s%02d", i), time.Millisecond))
	}
	r := s.Report(Windows()[0])
	over := fmt.Sprintf("s%02d", MaxServers)
	if len(r.Servers) != MaxServers || r.Hub.Calls[59] != MaxServers+1 || slices.ContainsFunc(r.Servers, func(sr Series) bool { return sr.Name == over }) {
		t.Fatalf("%d servers, hub %d calls: want %d servers (not %s) and every call in the hub's", len(r.Servers), r.Hub.Calls[59], MaxServers, over)
	}
	s.Keep(func(name string) bool { return name != "s00" })
	s.Record(ok(over, time.Millisecond))
	r = s.Report(Windows()[0])
	if len(r.Servers) != MaxServers || r.Servers[0].Name != "s01" || r.Servers[len(r.Servers)-1].Name != over {
		t.Fatalf("after s00 left the catalog: %d servers, %s..%s", len(r.Servers), r.Servers[0].Name, r.Servers[len(r.Servers)-1].Name)
	}
	// A day later, the idle ones make room.
	c.advance(24*time.Hour + time.Minute)
	s.Record(ok("new", time.Millisecond))
	if r = s.Report(Windows()[1]); len(r.Servers) != 1 || r.Servers[0].Name != "new" {
		t.Fatalf("a day later: %d servers, want only new", len(r.Servers))
	}
	const limit = 3 << 20
	if size := int(unsafe.Sizeof(series{})) * (MaxServers + 1); size > limit {
		t.Fatalf("%d series of %d bytes: %d bytes, over %d", MaxServers+1, unsafe.Sizeof(series{}), size, limit)
	}
}

// TestConcurrentRecording: calls recorded from many goroutines while
// reports are read are all counted (run with -race).
func TestConcurrentRecording(t *testing.T) {
	start := startTime()
	s := New(newClock(start).now)
	const workers, calls = 8, 500
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range calls {
				s.Record(ok(fmt.Sprintf("s%d", (w+i)%3), time.Duration(i)*time.Microsecond))
			}
		})
	}
	wg.Go(func() {
		for range 50 {
			_ = s.Report(Windows()[0])
			s.Keep(func(string) bool { return true })
		}
	})
	wg.Wait()
	r := s.Report(Windows()[0])
	var perServer uint32
	for _, sr := range r.Servers {
		perServer += sr.Calls[59]
	}
	if r.Hub.Calls[59] != workers*calls || perServer != workers*calls || len(r.Servers) != 3 {
		t.Fatalf("hub %d, servers %d in %d series, want %d in 3", r.Hub.Calls[59], perServer, len(r.Servers), workers*calls)
	}
}

// TestRecordAllocatesNothing: on every call's path, once the server has
// its series.
func TestRecordAllocatesNothing(t *testing.T) {
	s := New(time.Now)
	s.Record(ok("a", time.Millisecond))
	call := Call{Server: "a", Outcome: "ok", Duration: 3 * time.Millisecond, Guardrail: "redacted email in result; approval X approved by b after 1s"}
	if n := testing.AllocsPerRun(1000, func() { s.Record(call) }); n != 0 {
		t.Fatalf("Record allocates %v times a call", n)
	}
}

// TestHandle: admins only, a bad window is a 400 naming the parameter in
// the REST API's error body, and buckets without latencies are null.
func TestHandle(t *testing.T) {
	start := startTime()
	s := New(newClock(start).now)
	s.Record(ok("alpha", 2*time.Millisecond))
	get := func(query string, c callers.Caller) (int, map[string]any) {
		t.Helper()
		req := httptest.NewRequest(http.MethodGet, "/api/mcp/stats"+query, nil)
		rec := httptest.NewRecorder()
		s.Handle(rec, req.WithContext(callers.With(req.Context(), c)))
		var out map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			t.Fatalf("%s: %v\n%s", query, err, rec.Body)
		}
		return rec.Code, out
	}
	admin := callers.Caller{Name: "ops", Admin: true}
	if code, out := get("", callers.Caller{Name: "bot"}); code != http.StatusForbidden || !strings.Contains(fmt.Sprint(out["error"]), "admin") {
		t.Fatalf("a caller that is not an admin: %d %v", code, out)
	}
	if code, out := get("?window=7d", admin); code != http.StatusBadRequest || !strings.Contains(fmt.Sprint(out["error"]), "window") || len(out) != 1 {
		t.Fatalf("window=7d: %d %v, want 400 {\"error\"} naming window", code, out)
	}
	code, out := get("?window=1h", admin)
	hub, _ := out["hub"].(map[string]any)
	p50, _ := hub["p50Ms"].([]any)
	servers, _ := out["servers"].([]any)
	if code != http.StatusOK || out["window"] != "1h" || out["stepSeconds"] != 60.0 || len(p50) != 60 || p50[0] != nil || p50[59] == nil || len(servers) != 1 {
		t.Fatalf("window=1h: %d %v", code, out)
	}
}

// BenchmarkRecord is the cost Record adds to every call the feed records
// (which says when the call ended).
func BenchmarkRecord(b *testing.B) {
	s := New(time.Now)
	call := Call{At: time.Now(), Server: "alpha", Outcome: "ok", Duration: 3 * time.Millisecond}
	b.ReportAllocs()
	for b.Loop() {
		s.Record(call)
	}
}
