// Package edge holds the hub's HTTP edge: what every request must satisfy,
// and what a caller, anonymous included, can make the hub hold, before a
// face reads the request as MCP.
//
//   - browser.go keeps browser pages out: the Host check against DNS
//     rebinding, the Origin check (with the CORS headers an allowed
//     cross-site origin needs) and the Content-Type of MCP messages.
//   - body.go bounds request bodies (http.maxBodyBytes) and reads them
//     for the faces, answering 413 and 408.
//   - sessions.go caps the live MCP sessions per caller, of anonymous
//     callers together and in total, with a reserve for admins;
//     budgets.go says what a caller's sessions count against (anonymous
//     callers by network) and shows the counts in /metrics.
//   - sessionids.go mints session ids bound to their caller, valid on
//     every replica, and checks an id against the caller presenting it.
//
// The time to send a request and to keep an idle connection is bounded by
// the http.Server settings of Configure. Every refusal is a JSON-RPC error
// written by jsonrpc.Refuse, the encoder of the faces too. Per-call rate
// limits are the pipeline's, not the edge's: they need the tool.
package edge

import (
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/config"
)

// Options are the limits of the edge (config.HTTPSettings); zero means the
// default.
type Options struct {
	// MaxBodyBytes caps a request body and a WebSocket message; 4 MiB.
	MaxBodyBytes int64
	// AllowedOrigins are the browser origins (scheme://host[:port]), besides
	// the hub's own, whose pages may call the MCP faces.
	AllowedOrigins []string
	// MaxSessions caps the live MCP sessions; 10000. MaxSessionsPerCaller
	// caps one caller's; 1000 (or MaxSessions if less).
	MaxSessions, MaxSessionsPerCaller int
	// AnonymousShare is the percent of MaxSessions that anonymous callers
	// may hold together (http.anonymousShare); nil means 25, 0 none.
	AnonymousShare *int
	// SessionIdleTimeout is how long an idle Streamable HTTP session keeps
	// its registration (Idle); 5m.
	SessionIdleTimeout time.Duration
	// ReadTimeout bounds reading a whole request, ReadHeaderTimeout its
	// headers; 30s and 10s.
	ReadTimeout, ReadHeaderTimeout time.Duration
	// Log receives the refusals at a session cap (audit "limit").
	Log zerolog.Logger
	// Metrics, when set, gets the session counts and refusals
	// (mcphub_sessions, mcphub_sessions_refused_total).
	Metrics prometheus.Registerer
}

// Defaults of the limits in Options: the configuration's (config.HTTPSettings).
const (
	defaultMaxBodyBytes         = config.DefaultMaxBodyBytes
	defaultMaxSessions          = config.DefaultMaxSessions
	defaultMaxSessionsPerCaller = config.DefaultMaxSessionsPerCaller
	defaultSessionIdleTimeout   = config.DefaultSessionIdleTimeout
	defaultAnonymousShare       = config.DefaultAnonymousShare
	defaultReadTimeout          = config.DefaultReadTimeout
	defaultReadHeaderTimeout    = config.DefaultReadHeaderTimeout

	// idleConnTimeout closes keep-alive connections nobody uses.
	idleConnTimeout = 2 * time.Minute
	// maxHeaderBytes bounds request headers: room for the largest bearer
	// tokens (cluster and OIDC tokens are a few KiB), far below net/http's
	// default of 1 MiB per connection.
	maxHeaderBytes = 64 << 10
)

// Edge is what the hub's HTTP face is allowed to hold, and the guards in
// front of it.
type Edge struct {
	maxBody int64
	// origins are the allowed cross-site origins, lower-cased
	// scheme://host[:port] as browsers send them.
	origins  map[string]bool
	sessions *sessionLimits
	// idle is the TTL of the sessions' idle sweep (internal/mcpsession,
	// like mcp-go's): a Streamable HTTP session
	// nothing happened on for that long loses its registration (and its
	// slot) at the sweep's next round. The sweep runs every TTL/2, so idle
	// is two thirds of http.sessionIdleTimeout: an abandoned session is
	// gone within the documented timeout, never before two thirds of it.
	idle                           time.Duration
	readTimeout, readHeaderTimeout time.Duration
	log                            zerolog.Logger
}

// New applies the defaults to opts' limits.
func New(opts Options) *Edge {
	timeout := cmpPositive(opts.SessionIdleTimeout, defaultSessionIdleTimeout)
	e := &Edge{
		maxBody:           cmpPositive(opts.MaxBodyBytes, defaultMaxBodyBytes),
		origins:           map[string]bool{},
		idle:              timeout * 2 / 3,
		readTimeout:       cmpPositive(opts.ReadTimeout, defaultReadTimeout),
		readHeaderTimeout: cmpPositive(opts.ReadHeaderTimeout, defaultReadHeaderTimeout),
		log:               opts.Log,
	}
	for _, o := range opts.AllowedOrigins {
		e.origins[strings.ToLower(strings.TrimSuffix(o, "/"))] = true
	}
	total := cmpPositive(opts.MaxSessions, defaultMaxSessions)
	perCaller := cmpPositive(opts.MaxSessionsPerCaller, min(defaultMaxSessionsPerCaller, total))
	share := defaultAnonymousShare
	if opts.AnonymousShare != nil {
		share = min(max(*opts.AnonymousShare, 0), 100)
	}
	e.sessions = newSessionLimits(total, perCaller, share, timeout)
	if opts.Metrics != nil {
		opts.Metrics.MustRegister(e.sessions)
	}
	return e
}

// cmpPositive is v, or def when v is not positive (left unset).
func cmpPositive[T int | int64 | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

// Idle is the TTL to give the idle sweep of Streamable HTTP sessions.
func (e *Edge) Idle() time.Duration { return e.idle }

// MaxBody is the largest request body, and WebSocket message, read.
func (e *Edge) MaxBody() int64 { return e.maxBody }

// Configure sets hs's limits on reading requests and keeping connections.
// ReadTimeout covers the request only: net/http clears the deadline once
// the body is read, so SSE streams and hijacked WebSocket connections
// (which keep their own deadlines) outlive it.
func (e *Edge) Configure(hs *http.Server) {
	hs.ReadTimeout = e.readTimeout
	hs.ReadHeaderTimeout = e.readHeaderTimeout
	hs.IdleTimeout = idleConnTimeout
	hs.MaxHeaderBytes = maxHeaderBytes
}
