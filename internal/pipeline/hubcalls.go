package pipeline

import (
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/ratelimit"
)

// The hub's bound of calls in flight (issue 41): limits.maxInFlight
// requests at once on this replica, whoever makes them, so that many
// callers, each under its own limits.perCaller, cannot together hold every
// goroutine, connection and buffer of the replica. Anonymous callers
// together hold at most http.anonymousShare percent of it (rounded up), so
// a few anonymous networks cannot crowd out the callers that authenticate;
// admins may go adminCallReserve past it, so an operator's call gets in
// however full the others made the hub, as the sessions and event streams
// keep theirs. It counts every request the pipeline serves (Run and Serve)
// and is not shared by the replicas: it guards each replica's own
// resources, whichever replica the balancer picks.

// adminCallReserve is how many calls admins may have in flight past
// limits.maxInFlight (the sessions' reserve is as many).
const adminCallReserve = 16

// hubCalls counts the calls in flight on this replica, in total and by
// class of caller, and refuses a call over the hub's bound or the
// anonymous callers' share. One mutex for all: its hold is a few
// instructions, shorter than the callers' limiter's own lock.
type hubCalls struct {
	max, maxAnonymous, share int

	mu    sync.Mutex
	total int
	held  [callers.Classes]int
}

// newHubCalls bounds the calls in flight at maxInFlight, share percent of
// them anonymous callers'.
func newHubCalls(maxInFlight, share int) *hubCalls {
	return &hubCalls{max: maxInFlight, share: share, maxAnonymous: (maxInFlight*share + 99) / 100}
}

// acquire admits a call of c, whose class is k, or refuses it.
func (h *hubCalls) acquire(c callers.Caller, k callers.Class) *ratelimit.Refusal {
	bound := h.max
	if k == callers.ClassAdmin {
		bound += adminCallReserve
	}
	h.mu.Lock()
	total, anonymous := h.total, h.held[callers.ClassAnonymous]
	admitted := total < bound && (k != callers.ClassAnonymous || anonymous < h.maxAnonymous)
	if admitted {
		h.total++
		h.held[k]++
	}
	h.mu.Unlock()
	if admitted {
		return nil
	}
	return h.refusal(c, k, total, anonymous)
}

// release gives back the place of a call of class k.
func (h *hubCalls) release(k callers.Class) {
	h.mu.Lock()
	h.total--
	h.held[k]--
	h.mu.Unlock()
}

// refusal is why a call of c (class k) was refused with total calls in
// flight, anonymous of them anonymous callers': in the words of the
// setting that refused it, and counted under the limit "hub" (the bound)
// or "anonymous" (the share) in mcphub_rate_limited_total.
func (h *hubCalls) refusal(c callers.Caller, k callers.Class, total, anonymous int) *ratelimit.Refusal {
	r := &ratelimit.Refusal{Limit: "hub", Key: c.BudgetKey(), Kind: ratelimit.KindInFlight, InFlight: total,
		Limits: ratelimit.Limits{MaxInFlight: h.max, Where: "limits"}, RetryAfter: ratelimit.DefaultInFlightRetryAfter}
	switch {
	case k == callers.ClassAdmin:
		r.Text = fmt.Sprintf("rate limit: the hub has %d calls in flight, its limit (limits.maxInFlight %d) and the %d kept for admins: retry after %s",
			total, h.max, adminCallReserve, r.RetryAfter)
	case total >= h.max:
		r.Text = fmt.Sprintf("rate limit: the hub has %d calls in flight, its limit (limits.maxInFlight %d): retry after %s",
			total, h.max, r.RetryAfter)
	default:
		r.Limit, r.InFlight, r.Limits.MaxInFlight = "anonymous", anonymous, h.maxAnonymous
		r.Text = fmt.Sprintf("rate limit: anonymous callers hold %d of their %d calls in flight (http.anonymousShare %d%% of limits.maxInFlight %d): authenticate, or retry after %s",
			anonymous, h.maxAnonymous, h.share, h.max, r.RetryAfter)
	}
	return r
}

var callsInFlightDesc = prometheus.NewDesc("mcphub_calls_in_flight",
	"Requests the pipeline serves (tool calls and the rest) in flight on this replica, by class of caller: limits.maxInFlight bounds them all (admins get 16 more), http.anonymousShare the anonymous callers' together.",
	[]string{"class"}, nil)

// Describe and Collect make the counts a Prometheus collector: a gauge
// read when scraped, so a call costs no metric update.
func (h *hubCalls) Describe(ch chan<- *prometheus.Desc) { ch <- callsInFlightDesc }

func (h *hubCalls) Collect(ch chan<- prometheus.Metric) {
	h.mu.Lock()
	held := h.held
	h.mu.Unlock()
	for k := range callers.Classes {
		ch <- prometheus.MustNewConstMetric(callsInFlightDesc, prometheus.GaugeValue, float64(held[k]), k.String())
	}
}
