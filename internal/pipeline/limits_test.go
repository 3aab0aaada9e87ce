package pipeline

import (
	"testing"

	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/ratelimit"
	"github.com/purko-io/mcp-hub/internal/registry"
)

func check(t *testing.T, ok bool, format string, args ...any) {
	t.Helper()
	if !ok {
		t.Fatalf(format, args...)
	}
}

// TestNoLimitsNoLimiters: without limits the call path holds no limiter to
// consult (the step is two nil checks), and a catalog without servers'
// limits keeps it so; some caller's own limits need the callers' limiter.
func TestNoLimitsNoLimiters(t *testing.T) {
	l := newCallLimits(Options{})
	check(t, l.callers == nil && l.policy.Load() == nil, "limiters set up with no limits configured")
	l.follow(&registry.Catalog{Servers: []registry.ServerView{{Name: "docs"}}})
	check(t, l.policy.Load() == nil, "policy set up by a catalog without limits")
	l = newCallLimits(Options{OwnCallerLimits: true})
	check(t, l.callers != nil, "no callers' limiter while a caller has limits of its own")
}

// TestUpstreamPolicyFollowsCatalog: a server's own limits apply while the
// catalog has them, and without any limits the call path has no policy.
func TestUpstreamPolicyFollowsCatalog(t *testing.T) {
	own := &config.Limits{MaxInFlight: 2}
	withOwn := &registry.Catalog{Servers: []registry.ServerView{{Name: "gh", Limits: own}, {Name: "docs"}}}
	l := newCallLimits(Options{})
	check(t, l.policy.Load() == nil && l.callers == nil, "limiters without limits")
	l.follow(withOwn)
	p := l.policy.Load()
	check(t, p != nil && p.limits("gh").MaxInFlight == 2 && p.limits("gh").Where == "servers[gh].limits" && p.limits("docs").Zero(),
		"policy %+v", p)
	l.follow(&registry.Catalog{Servers: []registry.ServerView{{Name: "docs"}}})
	check(t, l.policy.Load() == nil, "policy kept after the server's limits went away")

	l = newCallLimits(Options{PerUpstream: ratelimit.Limits{MaxInFlight: 9}})
	l.follow(withOwn)
	p = l.policy.Load()
	check(t, p.limits("gh").MaxInFlight == 2 && p.limits("docs").MaxInFlight == 9, "own limits over the default: %+v", p)
}

// TestLimitsAcrossReplicas: callers' and upstreams' limits are shared by
// the replicas counted, except a stdio server's (a process per replica),
// whose own limits and limits.perUpstream apply whole on each replica.
func TestLimitsAcrossReplicas(t *testing.T) {
	cat := &registry.Catalog{Servers: []registry.ServerView{
		{Name: "gh", Transport: config.TransportStreamableHTTP},
		{Name: "own", Transport: config.TransportStreamableHTTP, Limits: &config.Limits{MaxInFlight: 6}},
		{Name: "git", Transport: config.TransportStdio},
		{Name: "fs", Transport: config.TransportStdio, Limits: &config.Limits{MaxInFlight: 6}},
	}}
	l := newCallLimits(Options{PerCaller: ratelimit.Limits{MaxInFlight: 6, Where: "limits.perCaller"},
		PerUpstream: ratelimit.Limits{MaxInFlight: 6, Where: "limits.perUpstream"}, Replicas: func() int { return 3 }})
	l.follow(cat)
	policy := l.policy.Load()
	admitted := func(acquire func() (func(), *ratelimit.Refusal)) (n int) {
		for range 10 {
			if _, r := acquire(); r == nil {
				n++
			}
		}
		return n
	}
	for _, tc := range []struct {
		server string
		want   int
	}{{"gh", 2}, {"own", 2}, {"git", 6}, {"fs", 6}} {
		if got := admitted(func() (func(), *ratelimit.Refusal) { return l.acquireUpstream(policy, tc.server) }); got != tc.want {
			t.Errorf("upstream %s: %d calls in flight admitted on one of 3 replicas, want %d", tc.server, got, tc.want)
		}
	}
	if got := admitted(func() (func(), *ratelimit.Refusal) { return l.acquireCaller(callers.Caller{Name: "ci"}) }); got != 2 {
		t.Errorf("caller: %d calls in flight admitted on one of 3 replicas, want 2", got)
	}
}
