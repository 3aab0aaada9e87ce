// Package callers says who is calling the hub and what it may do: hub
// tokens, OAuth access tokens, Kubernetes ServiceAccounts and anonymous
// callers become one Caller with its ceiling, allow-list and budgets' key.
// The faces authenticate every request with an Auth and carry the Caller
// in the request's context; everything downstream (pipeline, limits,
// sessions, the console's feed) reads it from there.
package callers

import (
	"context"
	"net"
	"net/netip"
	"strings"

	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/identity"
	"github.com/purko-io/mcp-hub/internal/ratelimit"
	"github.com/purko-io/mcp-hub/internal/toolspec"
)

// HeaderAutonomyLevel lets a caller ask for a lower level than its ceiling
// (Purko's executor sends its AUTONOMY_LEVEL this way).
const HeaderAutonomyLevel = "X-Autonomy-Level"

// Headers a Purko executor sets to tell the hub which run a call belongs to.
const (
	HeaderAgent    = "X-Purko-Agent"
	HeaderWorkflow = "X-Purko-Workflow"
	HeaderStep     = "X-Purko-Step"
)

// Caller is who makes a request and what it may do.
type Caller struct {
	// Name identifies the caller in audit lines (never a token).
	Name string
	// Ceiling is the most the caller may do; Level is what this request
	// does (the lower of the ceiling and what it asked for).
	Ceiling, Level autonomy.Level
	// Allow, when not nil, limits the tools the caller may see and run.
	Allow *autonomy.Allowlist
	// Scope, when not nil, is the endpoint the caller came through
	// (/servers/NAME/...): only its server's or virtual server's tools,
	// on top of everything else that limits the caller.
	Scope *autonomy.Scope
	// Agent, Workflow and Step are the trusted context api tools may bind
	// into requests: the agent from the caller's identity (or the
	// X-Purko-Agent header), workflow and step from the executor's headers.
	Agent, Workflow, Step string
	// Admin may change the hub's state through its REST API (approve
	// changed tool definitions): a token with admin: true, the local
	// user of a hub without auth on loopback, and stdio.
	Admin bool
	// Approver may decide the calls held for a person's approval
	// (internal/approvals), besides approvals.approvers: an OAuth grant
	// with approver: true.
	Approver bool
	// Face names the face the call came through in its audit line, when
	// it is not an MCP one ("rest"); empty keeps the MCP faces' lines as
	// they were.
	Face string
	// Guardrails, when set, hold the caller's calls to content filters and
	// a budget of calls per run (internal/guardrails).
	Guardrails *toolspec.Guardrails
	// Traceparent is the request's W3C traceparent header, read only for a
	// caller with guardrails: its trace is the run a budget counts.
	Traceparent string
	// Subject is the caller's own token (OAuth access token or
	// ServiceAccount token), which a server with token exchange trades for
	// one minted for it; zero for callers without one. It never prints.
	Subject identity.Subject
	// verifiedAgent is the Agent proven by the caller's identity (never a
	// header): only it unlocks an agent's own api tools.
	verifiedAgent string
	// limits, when set, replace the hub's per-caller limits for this caller.
	limits *ratelimit.Limits
	// anonymousAt is an anonymous caller's remote address, whose sessions
	// and calls are its own (Key), its budgets its network's (BudgetKey).
	anonymousAt string
}

// Anonymous is the caller without credentials at remote (a RemoteAddr),
// up to ceiling: its sessions and calls are its address's, its budgets
// its network's.
func Anonymous(remote string, ceiling autonomy.Level) Caller {
	return Caller{Name: "anonymous", Ceiling: ceiling, Level: ceiling, anonymousAt: remote}
}

// VerifiedAgent is the Agent the caller's identity proves (a ServiceAccount
// bound to it), never one a header names: only it unlocks an agent's own
// api tools.
func (c Caller) VerifiedAgent() string { return c.verifiedAgent }

// Limits are the caller's own rate and in-flight limits, nil when the
// hub's per-caller defaults apply.
func (c Caller) Limits() *ratelimit.Limits { return c.limits }

// Address is an anonymous caller's remote address, "" for any other: the
// console's feed keeps it to show an anonymous caller only its own calls.
func (c Caller) Address() string { return c.anonymousAt }

// AuditFace adds the caller's face to an audit line that has one, and
// the endpoint (/servers/NAME) it came through, if any.
func (c Caller) AuditFace(ev *zerolog.Event) {
	if c.Face != "" {
		ev.Str("face", c.Face)
	}
	if c.Scope != nil {
		ev.Str("endpoint", c.Scope.Name())
	}
}

// Key is who the caller is to what it owns: what its sessions are bound
// to, which calls of the console's feed and which tasks are its own: its
// name, or for an anonymous caller its address, so that one anonymous
// address cannot see or use what is another's. Its budgets count under
// BudgetKey.
func (c Caller) Key() string {
	if c.anonymousAt != "" {
		return AnonymousKey(c.anonymousAt)
	}
	return c.Name
}

// AppendKey appends Key to dst without allocating: session bindings are
// checked on every request that carries a session id.
func (c Caller) AppendKey(dst []byte) []byte {
	if c.anonymousAt != "" {
		return appendAnonymousKey(dst, c.anonymousAt, 32)
	}
	return append(dst, c.Name...)
}

// BudgetKey is what the caller's budgets count under (rate and in-flight
// limits, sessions, event streams; issue 41): Key, except for an anonymous
// caller, whose budgets are its network's, a /24 for IPv4 and a /64 for
// IPv6, because whoever has one address of a network usually has its
// neighbours too. Only budgets group this way: what an anonymous caller
// owns stays its address's (Key), so a neighbour cannot use it.
func (c Caller) BudgetKey() string {
	if c.anonymousAt != "" {
		var buf [64]byte
		return string(appendAnonymousKey(buf[:0], c.anonymousAt, 24))
	}
	return c.Name
}

// BudgetKeyOf is the BudgetKey of the anonymous caller whose Key is key,
// and key itself for any other: for counts asked of by a caller's Key
// (edge.Edge.SessionCount).
func BudgetKeyOf(key string) string {
	rest, ok := strings.CutPrefix(key, anonymousPrefix)
	if !ok {
		return key
	}
	var buf [64]byte
	return string(appendAnonymousKey(buf[:0], rest, 24)) // an IPv6 key is its /64 already, kept as it is
}

// Class is the kind of caller the hub-wide budgets (sessions, event
// streams, calls in flight) tell apart: anonymous callers together hold at
// most their share of each (http.anonymousShare), so a few anonymous
// networks cannot crowd out the callers that authenticate, and admins get
// a reserve past each, so an operator always gets in.
type Class uint8

// The classes of callers; Classes counts them, to size arrays by class.
const (
	ClassAnonymous Class = iota
	ClassAuthenticated
	ClassAdmin
	Classes
)

// String is the class's label in the metrics (class="anonymous").
func (k Class) String() string {
	switch k {
	case ClassAnonymous:
		return "anonymous"
	case ClassAuthenticated:
		return "authenticated"
	}
	return "admin"
}

// Class is the caller's class. An admin is one even without credentials
// (the local user of a laptop hub).
func (c Caller) Class() Class {
	switch {
	case c.Admin:
		return ClassAdmin
	case c.anonymousAt != "":
		return ClassAnonymous
	}
	return ClassAuthenticated
}

// anonymousPrefix is how every anonymous caller's Key and BudgetKey begin.
const anonymousPrefix = "anonymous@"

// AnonymousKey is the Key of an anonymous caller at remote (a RemoteAddr):
// its IP address, so that what one anonymous address owns is its own. An
// IPv6 address counts by its /64, which one host usually holds whole.
func AnonymousKey(remote string) string {
	var buf [64]byte
	return string(appendAnonymousKey(buf[:0], remote, 32))
}

// appendAnonymousKey appends the key of an anonymous caller at remote to
// dst without allocating: its IPv4 address's first v4Bits bits (32: the
// address, AnonymousKey; 24: its /24, BudgetKey) or its IPv6 address's /64.
func appendAnonymousKey(dst []byte, remote string, v4Bits int) []byte {
	dst = append(dst, anonymousPrefix...)
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return append(dst, host...)
	}
	ip = ip.Unmap()
	bits := 64
	if ip.Is4() {
		bits = v4Bits
	}
	if bits >= ip.BitLen() {
		return ip.AppendTo(dst)
	}
	p, _ := ip.Prefix(bits)
	return p.AppendTo(dst)
}

type callerKey struct{}

// With attaches the caller to a request's context.
func With(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// From returns the request's caller. A context without one (which the
// HTTP faces never produce) gets no tools at all: fail closed.
func From(ctx context.Context) Caller {
	if c, ok := ctx.Value(callerKey{}).(Caller); ok {
		return c
	}
	return Caller{Name: "unauthenticated", Ceiling: autonomy.Manual, Level: autonomy.Manual}
}
