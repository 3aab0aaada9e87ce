package pipeline

import (
	"encoding/json"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/callfeed"
	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/ratelimit"
	"github.com/purko-io/mcp-hub/internal/registry"
)

// Rate and concurrency limits of tool calls, one step of Run: the hub's
// bound of calls in flight (hubcalls.go) and the caller's limits before the
// lookup (so a flood of unknown names is limited too), the owning server's
// after the decision (a denied call takes no upstream slot). A call over a limit is refused at once with a JSON-RPC
// error that says when to retry; nothing queues. With no limits configured
// the step is a nil check.
//
// Fairness: with limits.perCaller.maxInFlight below a server's maxInFlight,
// one caller can never hold all of that server's slots, so the others still
// get theirs however hard it pushes.
//
// Replicas: every limit is fleet-wide, each replica applying its share of
// the replicas counted (Options.Replicas, ratelimit.Limits.Share): a
// caller's limits bound the caller whichever replica it reaches, and an
// upstream's protect the one server all replicas call. A stdio server's
// limits are the exception: each replica runs its own process of it, so
// each applies them whole (PerReplica); so is the hub's bound, which
// guards each replica's own resources.

// callLimits are the limiters of the call path.
type callLimits struct {
	// hub is the hub's bound of calls in flight, nil when there is none.
	hub *hubCalls
	// callers is nil when no caller has limits.
	callers   *ratelimit.Limiter
	perCaller ratelimit.Limits
	// upstreams keeps the state of each owning server; policy says which
	// limits apply, nil when none do (read on every call, swapped when the
	// catalog changes).
	upstreams   *ratelimit.Limiter
	perUpstream ratelimit.Limits
	policy      atomic.Pointer[upstreamPolicy]
}

// upstreamPolicy is the limits of each owning server.
type upstreamPolicy struct {
	def ratelimit.Limits
	own map[string]ratelimit.Limits
}

func (p *upstreamPolicy) limits(server string) ratelimit.Limits {
	if l, ok := p.own[server]; ok {
		return l
	}
	return p.def
}

func newCallLimits(opts Options) *callLimits {
	l := &callLimits{
		perCaller:   opts.PerCaller,
		perUpstream: opts.PerUpstream,
		upstreams:   ratelimit.New(ratelimit.Options{Name: "upstream", Replicas: opts.Replicas}),
	}
	if opts.MaxInFlight > 0 {
		l.hub = newHubCalls(opts.MaxInFlight, opts.AnonymousShare)
		if opts.Metrics != nil {
			opts.Metrics.MustRegister(l.hub)
		}
	}
	if !opts.PerCaller.Zero() || opts.OwnCallerLimits {
		l.callers = ratelimit.New(ratelimit.Options{Name: "caller", Replicas: opts.Replicas})
	}
	if !opts.PerUpstream.Zero() {
		l.policy.Store(&upstreamPolicy{def: opts.PerUpstream})
	}
	return l
}

// Follow takes the owning servers' own limits (their specs' limits) from a
// new catalog: the registry's OnChange calls it, so a server's limits
// change with its spec and no call reads the catalog for them.
func (p *Pipeline) Follow(cat *registry.Catalog) { p.limits.follow(cat) }

// follow takes the servers' own limits from a new catalog, and marks the
// limits of stdio servers (their own or limits.perUpstream) per replica.
func (l *callLimits) follow(cat *registry.Catalog) {
	var own map[string]ratelimit.Limits
	for _, sv := range cat.Servers {
		stdio := sv.Transport == config.TransportStdio
		if sv.Limits == nil && (!stdio || l.perUpstream.Zero()) {
			continue
		}
		if own == nil {
			own = map[string]ratelimit.Limits{}
		}
		lim := l.perUpstream
		if sv.Limits != nil {
			lim = LimitsOf(*sv.Limits, "servers["+sv.Name+"].limits")
		}
		lim.PerReplica = stdio
		own[sv.Name] = lim
	}
	if own == nil && l.perUpstream.Zero() {
		l.policy.Store(nil)
		return
	}
	l.policy.Store(&upstreamPolicy{def: l.perUpstream, own: own})
}

// LimitsOf turns configured limits into the pipeline's; where names the
// setting (such as "limits.perCaller") for refusals.
func LimitsOf(c config.Limits, where string) ratelimit.Limits {
	return ratelimit.Limits{Rate: c.Rate, Burst: c.Burst, MaxInFlight: c.MaxInFlight, Where: where}
}

// slots are what a call holds of the bounds met before its lookup: its
// place under the hub's bound and its caller's slot, given back together
// when the call ends, or while it waits for a person.
type slots struct {
	hub    *hubCalls // nil: no place held
	class  callers.Class
	caller func() // nil: no slot held
}

// release gives back what h holds, once.
func (h *slots) release() {
	if h.hub != nil {
		h.hub.release(h.class)
		h.hub = nil
	}
	if h.caller != nil {
		h.caller()
		h.caller = nil
	}
}

// admits reports whether a call meets any bound before its lookup.
func (l *callLimits) admits() bool { return l.hub != nil || l.callers != nil }

// admit takes a call's place under the hub's bound, then its caller's
// slot, or refuses it. The hub's first: a call it refuses spends no
// token of its caller's rate.
func (l *callLimits) admit(c callers.Caller) (slots, *ratelimit.Refusal) {
	var h slots
	if l.hub != nil {
		k := c.Class()
		if r := l.hub.acquire(c, k); r != nil {
			return h, r
		}
		h.hub, h.class = l.hub, k
	}
	if l.callers != nil {
		release, r := l.acquireCaller(c)
		if r != nil {
			h.release()
			return slots{}, r
		}
		h.caller = release
	}
	return h, nil
}

// acquireCaller admits a call of caller, or refuses it. Its limits count
// under its budget key: an anonymous caller's network (a /24, a /64), so
// that one network's addresses share one budget.
func (l *callLimits) acquireCaller(c callers.Caller) (func(), *ratelimit.Refusal) {
	lim := l.perCaller
	if c.Limits() != nil {
		lim = *c.Limits()
	}
	return l.callers.Acquire(c.BudgetKey(), lim)
}

// acquireUpstream admits a call to server, or refuses it; policy is not nil.
func (l *callLimits) acquireUpstream(policy *upstreamPolicy, server string) (func(), *ratelimit.Refusal) {
	return l.upstreams.Acquire(server, policy.limits(server))
}

// refusalError is the JSON-RPC error a refused call is answered with.
func refusalError(r *ratelimit.Refusal) *jsonrpc.Error {
	data, _ := json.Marshal(struct {
		RetryAfterMs int64  `json:"retryAfterMs"`
		Limit        string `json:"limit"`
		Kind         string `json:"kind"`
	}{r.RetryAfter.Milliseconds(), r.Limit, string(r.Kind)})
	return &jsonrpc.Error{Code: jsonrpc.CodeServerBusy, Message: r.Error(), Data: data}
}

// refuse records a request refused by a limit and returns its error. srv
// is the owning server ("" before the lookup). A tools/call counts in the
// tool series and names its tool ("tool"); any other request its target.
func (p *Pipeline) refuse(span trace.Span, session string, caller callers.Caller, req Request, srv string, r *ratelimit.Refusal) *jsonrpc.Error {
	if req.Method == methodToolsCall {
		metricTool := req.Target
		if srv == "" {
			metricTool = "" // not looked up: the caller's text, unbounded as a label
		}
		p.metrics.observeCall(srv, metricTool, RateLimited, 0)
	} else {
		p.metrics.observeRequest(req.Method, srv, RateLimited, 0)
	}
	p.metrics.observeRefusal(r.Limit, string(r.Kind), srv)
	tool := req.Target
	if req.Method != methodToolsCall {
		tool = req.Method + " " + req.Target
	}
	if !req.List {
		p.feed.Add(callfeed.Call{Time: time.Now(), Caller: caller.Name, Address: caller.Address(), Level: caller.Level.String(), Tool: tool, Server: srv,
			Decision: "limited", Outcome: RateLimited})
	}
	// Info, as allowed calls: a refusal is load, not a policy breach, and
	// a flood of them must not become a flood of warnings.
	err := refusalError(r)
	ev := traced(p.log.Info(), span, srv, "limited", RateLimited, err).Str("audit", req.Method).Str("session", session).Str("caller", caller.Name).Str("autonomy", caller.Level.String())
	if req.Method == methodToolsCall {
		ev = ev.Str("tool", req.Target)
	} else {
		ev = ev.Str("target", req.Target)
	}
	ev.Str("server", srv).Str("decision", "limited").Str("limit", r.Limit).Str("kind", string(r.Kind)).
		Str("key", r.Key).Dur("retryAfter", r.RetryAfter).Str("outcome", RateLimited).Func(caller.AuditFace).Msg(r.Error())
	return err
}
