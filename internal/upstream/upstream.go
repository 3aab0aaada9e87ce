// Package upstream keeps one managed MCP client connection per upstream
// server: transport, handshake, tool list, list_changed, health checks,
// reconnect with backoff, and a circuit breaker. The registry reads a
// client's state as data; nothing here blocks a caller on another server.
//
// The mechanisms a client is made of, each a job of its own, are
// subpackages it imports (they import nothing from here): transports (the
// mcp-go transport of each session), credentials (the hub's credentials
// for an upstream: the headers that carry them, the redactor of every
// text that leaves the client), statustext (a failure told in the hub's
// words and, for admins, the upstream's), listbound (the bounds of what a
// server lists), httpbound (the limits of what is read of an answer),
// streambound (of each message of a stream), streamhttp (the hub's own
// POST, the fast path of a plain tools/call), relay (what an upstream
// sends during one caller's request, back to that caller), oauthclient
// (the hub's own access token for an upstream), loopcheck (an upstream
// that leads back to the hub), answerlog (what an upstream answered
// lately, to tell a failure by), liblog (mcp-go's and a child's logs into
// the hub's) and stdiochild (a stdio server as a contained child).
package upstream

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/rs/zerolog"
	"github.com/sony/gobreaker/v2"
	"go.opentelemetry.io/otel/trace"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/hubchain"
	"github.com/purko-io/mcp-hub/internal/netpolicy"
	"github.com/purko-io/mcp-hub/internal/secrets"
	"github.com/purko-io/mcp-hub/internal/tracing"
	"github.com/purko-io/mcp-hub/internal/upstream/answerlog"
	"github.com/purko-io/mcp-hub/internal/upstream/calltoken"
	"github.com/purko-io/mcp-hub/internal/upstream/carried"
	"github.com/purko-io/mcp-hub/internal/upstream/credentials"
	"github.com/purko-io/mcp-hub/internal/upstream/httpbound"
	"github.com/purko-io/mcp-hub/internal/upstream/listbound"
	"github.com/purko-io/mcp-hub/internal/upstream/loopcheck"
	"github.com/purko-io/mcp-hub/internal/upstream/oauthclient"
	"github.com/purko-io/mcp-hub/internal/upstream/relay"
	"github.com/purko-io/mcp-hub/internal/upstream/statustext"
	"github.com/purko-io/mcp-hub/internal/upstream/stdiochild"
	"github.com/purko-io/mcp-hub/internal/upstream/tokenexchange"
	"github.com/purko-io/mcp-hub/internal/upstream/transports"
)

// State is where a connection stands, as shown in listings and metrics.
type State string

// The states of an upstream.
const (
	StateConnecting State = "connecting"
	StateConnected  State = "connected"
	StateError      State = "error"
)

// Status is a point-in-time view of an upstream for listings.
type Status struct {
	State    State
	Error    string // last error, when State is error
	Protocol string // negotiated MCP revision
	// Info is what the server said of itself at initialize (serverInfo),
	// kept while it is disconnected: the hub's MCP Registry API publishes
	// its version, title and description.
	Info     Info
	Since    time.Time
	ListedAt time.Time // last successful tools/list

	// Detail is what the upstream answered that Error does not show: the
	// start of its body, redacted. Only admins and the log see it.
	Detail string
}

// Info is the part of a server's serverInfo the hub passes on. It is the
// server's own word: free text, never used for a decision.
type Info struct {
	Version, Title, Description string
}

// Options are the connection settings shared by all upstreams.
type Options struct {
	Timeout        time.Duration
	ConnectTimeout time.Duration
	// StartTimeout bounds the handshake and first listing of a stdio
	// child in place of ConnectTimeout when longer (config.StartTimeout).
	StartTimeout    time.Duration
	PingInterval    time.Duration
	BackoffMin      time.Duration
	BackoffMax      time.Duration
	BreakerFailures int
	BreakerOpenFor  time.Duration
	DiscoverTimeout time.Duration
	// HTTPClient is shared by HTTP transports so connections are pooled.
	// Each Client uses a copy of it that refuses redirects to another
	// origin (see New); nil means Go's default transport.
	HTTPClient *http.Client
	// ClientInfo is what the hub calls itself in handshakes.
	ClientInfo mcp.Implementation
	// Dial is the policy of which addresses upstreams may be reached at
	// (package netpolicy): WebSocket upstreams are dialled with it here,
	// HTTPClient's transport must dial with it too. nil: no policy.
	Dial *netpolicy.Policy
	// Chain is this hub's chain (package hubchain): an upstream whose
	// answer leads back to the hub fails with *loopcheck.LoopError (package loopcheck), and
	// the chains of the others make the hub's. nil: no check.
	Chain *hubchain.Chain
	// MaxResponseBytes is the most read of one answer to a request (0:
	// DefaultMaxResponseBytes); a larger one fails with *httpbound.TooLargeError.
	// It bounds each message of a stream too; a larger one ends the
	// connection with *streambound.TooLargeError (limit.go).
	MaxResponseBytes int64
	// MaxListPages, MaxTools and MaxListBytes bound what one server lists
	// (0: config.DefaultMaxListPages, DefaultMaxTools, DefaultMaxListBytes); over
	// a bound the server is in error and publishes nothing (package
	// listbound).
	MaxListPages int
	MaxTools     int
	MaxListBytes int64
	// Events receives resource updates; nil drops them.
	Events Events
	// Carried are the extensions declared to every upstream (package
	// carried); nil: none.
	Carried *carried.Set
	// Tracer makes a CLIENT span of every tools/call sent upstream and
	// passes it on as the upstream's parent (tracing.go); nil, tracing is
	// off and costs nothing.
	Tracer trace.Tracer
	// UserGrants are the grants of a server with userOAuth (package
	// usergrants); nil: such a server's calls fail, saying so.
	UserGrants func(config.ServerSpec) calltoken.Grants

	// tokenEarlyExpiry is how long before its expiry an OAuth access token
	// is replaced (0: oauth2's 10s); tests shorten it.
	tokenEarlyExpiry time.Duration
}

// OptionsFrom builds Options from the config defaults.
func OptionsFrom(u config.UpstreamDefaults, httpClient *http.Client, info mcp.Implementation) Options {
	return Options{
		Timeout: u.Timeout.D(), ConnectTimeout: u.ConnectTimeout.D(), StartTimeout: u.StartTimeout.D(), PingInterval: u.PingInterval.D(),
		BackoffMin: u.BackoffMin.D(), BackoffMax: u.BackoffMax.D(),
		BreakerFailures: u.BreakerFailures, BreakerOpenFor: u.BreakerOpenFor.D(),
		DiscoverTimeout: u.DiscoverTimeout.D(), HTTPClient: httpClient, ClientInfo: info,
		MaxResponseBytes: u.MaxResponseBytes,
		MaxListPages:     u.MaxListPages, MaxTools: u.MaxTools, MaxListBytes: u.MaxListBytes,
		Carried: carried.New(u.Extensions),
	}
}

// UnavailableError says an upstream cannot take calls right now and why.
// It is what a call to a tool of a down server gets (the tool is known, its
// server is not reachable), as opposed to a tool nobody offers. Reason is
// redacted of the server's credentials and meant for people.
type UnavailableError struct {
	Server string
	Reason string
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("upstream %s is unavailable: %s", e.Server, e.Reason)
}

// Client is the managed connection to one upstream server.
type Client struct {
	spec     config.ServerSpec
	opts     Options
	log      zerolog.Logger
	onChange func()
	// answers are what the upstream answered lately (package answerlog).
	answers answerlog.Log
	// cred are the hub's credentials for this upstream: the headers
	// that carry them and the redactor that keeps them out of every text
	// that leaves the client (package credentials).
	cred *credentials.Set
	// transports make the transport of each session (package transports).
	transports transports.Config
	// exchange trades each caller's token for one of this upstream's
	// (spec.TokenExchange, package tokenexchange); nil without it.
	exchange *tokenexchange.Exchanger
	// perCall gives each call its caller's token (exchange, or user
	// grants); nil: every request carries the hub's credentials.
	perCall calltoken.Source
	// loops checks every answer for a loop back to the hub (package loopcheck);
	// nil without Options.Chain.
	loops *loopcheck.Watch
	// breaker is replaced by a fresh one on every successful connect
	// (gobreaker has no reset): an outage's open breaker must not fail the
	// calls of the server that came back.
	breaker atomic.Pointer[gobreaker.CircuitBreaker[any]]

	mu       sync.RWMutex
	status   Status
	tools    []mcp.Tool
	features Features
	conn     *conn
	// extras serve resources, prompts, completions, subscriptions and
	// the log level (features.go).
	extras Extras

	relays relay.Tracker

	// legacy says the session is opened with the initialize handshake
	// (2025-11-25 and older), see preferHandshake. It is false for a
	// server that refused the handshake, or one pinned to 2026-07-28.
	legacy bool
	// noModern remembers that the server answered the side client's
	// 2026-07-28 discovery with an older revision (side.go).
	noModern atomic.Bool

	kick    chan struct{} // a call saw a transport error: check health now
	refresh chan struct{} // a tools, resources or prompts list_changed arrived
	acked   chan struct{} // a 2026-07-28 subscriptions/listen was acknowledged
	cancel  context.CancelFunc
	done    chan struct{}
}

// conn is one established session with the upstream.
type conn struct {
	// c is the client whose session this is: its settings, credentials
	// and log.
	c        *Client
	mc       *client.Client
	ctx      context.Context // ends when the session is over
	cancel   context.CancelCauseFunc
	protocol string
	info     Info     // its serverInfo
	features Features // as listed when the session was made
	// instructions are the instructions of its initialize result.
	instructions string
	// out is how the hub sends the requests it builds (wire.go); it is
	// replaced when the tool list changes.
	out    atomic.Pointer[out]
	nextID atomic.Uint64
	// level is the log level asked of a 2026-07-28 upstream, which takes
	// it on every request; nil: none asked.
	level atomic.Pointer[mcp.LoggingLevel]
	// side is the stateless 2026-07-28 client of relayed calls beside a
	// 2025-11-25 session (side.go).
	side sideClient
	// child is the session's stdio child (stdio.go); nil on other
	// transports.
	child *stdiochild.Transport
}

// New returns a client for spec. It does nothing until Start.
// onChange is called (without locks held) whenever tools or status change.
//
// The client's HTTP requests go through a copy of opts.HTTPClient (same
// connection pool) that refuses redirects to another origin: Go's client
// would forward Authorization across a port change and custom headers such
// as X-API-Key anywhere, and this server's credentials are for its origin
// only. A same-origin redirect is followed.
//
// With spec.OAuth, every request of the copy carries the hub's own access
// token for this server (package oauthclient); the token endpoint is reached
// through the same connection pool.
func New(spec config.ServerSpec, opts Options, log zerolog.Logger, onChange func()) *Client {
	var base http.RoundTripper = http.DefaultTransport
	if opts.HTTPClient != nil && opts.HTTPClient.Transport != nil {
		base = opts.HTTPClient.Transport
	}
	loops := loopcheck.New(opts.Chain, spec.URL)
	opts.HTTPClient = httpbound.Limit(secrets.WithPolicy(loops.Wrap(opts.HTTPClient), secrets.RefuseCrossOrigin), spec.Name, opts.maxResponseBytes())
	// The hub's span, or with tracing off the caller's trace context,
	// goes upstream in headers (tracing.HeaderClient).
	opts.HTTPClient = tracing.HeaderClient(opts.HTTPClient)
	exchange, endpoint := newExchanger(spec, base, opts.ConnectTimeout)
	oauth := oauthclient.New(spec, base, opts.ConnectTimeout, opts.tokenEarlyExpiry, credentials.Values(spec), endpoint)
	grants := grantsOf(spec, opts)
	switch {
	case oauth != nil:
		opts.HTTPClient = oauthclient.Wrap(opts.HTTPClient, oauth)
	}
	cred := credentials.New(spec, oauth)
	if oauth == nil && spec.UserOAuth != nil {
		opts.HTTPClient = oauthclient.WrapCallTokens(opts.HTTPClient, userHub(spec, grants, cred))
	}
	c := &Client{
		spec:     spec,
		opts:     opts,
		log:      log.With().Str("upstream", spec.Name).Logger(),
		onChange: onChange,
		cred:     cred,
		exchange: exchange,
		perCall:  perCall(spec, exchange, grants),
		loops:    loops,
		status:   Status{State: StateConnecting, Since: time.Now()},
		kick:     make(chan struct{}, 1),
		refresh:  make(chan struct{}, 1),
		acked:    make(chan struct{}, 1),
		done:     make(chan struct{}),
		legacy:   preferHandshake(spec),
	}
	c.extras.c = c
	c.opts.HTTPClient = c.answers.Wrap(c.opts.HTTPClient)
	c.transports = transports.Config{Spec: spec, HTTPClient: c.opts.HTTPClient, MaxMessageBytes: opts.maxResponseBytes(),
		Credentials: c.cred, Log: c.log, Dial: opts.Dial, ConnectTimeout: opts.ConnectTimeout, Loops: loops}
	c.breaker.Store(newBreaker(c.spec.Name, &c.opts, &c.log))
	return c
}

// newBreaker returns a closed breaker for server that opens after the
// configured number of consecutive transport failures.
func newBreaker(server string, opts *Options, log *zerolog.Logger) *gobreaker.CircuitBreaker[any] {
	failures := uint32(max(opts.BreakerFailures, 1))
	return gobreaker.NewCircuitBreaker[any](gobreaker.Settings{
		Name:         server,
		MaxRequests:  1,
		Timeout:      opts.BreakerOpenFor,
		ReadyToTrip:  func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= failures },
		IsSuccessful: func(err error) bool { return err == nil || !isTransportFailure(err) },
		OnStateChange: func(name string, from, to gobreaker.State) {
			log.Warn().Str("from", from.String()).Str("to", to.String()).Msg("circuit breaker changed state")
		},
	})
}

// Spec returns the spec the client was made for.
func (c *Client) Spec() config.ServerSpec { return c.spec }

// Name returns the server name.
func (c *Client) Name() string { return c.spec.Name }

// Status returns the current status. Its Error is redacted of the
// server's credentials.
func (c *Client) Status() Status {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.status
}

// Reason says in words why a server in this status takes no calls; "" when
// it is connected.
func (s Status) Reason() string {
	switch {
	case s.State == StateConnected:
		return ""
	case s.Error != "":
		return s.Error
	case s.State == StateConnecting:
		return "not connected yet"
	}
	return string(s.State)
}

// Unavailable returns the *UnavailableError a call would get now, or nil
// when the server is connected. It lets the registry answer a call to a
// down server's tool without trying it.
func (c *Client) Unavailable() error {
	c.mu.RLock()
	cn, st := c.conn, c.status
	c.mu.RUnlock()
	if cn != nil {
		return nil
	}
	return &UnavailableError{Server: c.spec.Name, Reason: st.Reason()}
}

// Tools returns the server's tools as last listed; they are kept while the
// server is down so published names stay stable. Status tells whether they
// can be called. The slice must not be modified.
func (c *Client) Tools() []mcp.Tool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.tools
}

// Start runs the connection loop until Stop or ctx ends.
func (c *Client) Start(ctx context.Context) {
	ctx, c.cancel = context.WithCancel(ctx)
	go func() {
		defer close(c.done)
		c.run(ctx)
	}()
}

// Stop ends the connection (killing a stdio child) and waits for the loop.
func (c *Client) Stop() {
	if oauth := c.cred.OAuth(); oauth != nil {
		oauth.Close() // a token request in flight must not hold Stop up
	}
	if c.cancel != nil {
		c.cancel()
		<-c.done
	}
	c.loops.Close()
}

func (c *Client) run(ctx context.Context) {
	if c.spec.Problem != "" {
		// The source already knows this server cannot work as found; a
		// corrected spec replaces this client.
		c.setStatus(Status{State: StateError, Error: c.spec.Problem, Since: time.Now()}, nil, nil)
		<-ctx.Done()
		return
	}
	for attempt := 0; ; attempt++ {
		cn, tools, err := c.connect(ctx)
		if ctx.Err() != nil {
			if cn != nil {
				c.closeConn(cn, ctx.Err())
			}
			return
		}
		if err != nil {
			st := c.setFailed(err)
			c.log.Warn().Str("error", st.Error).Func(st.logDetail).Int("attempt", attempt+1).Msg("connect failed")
			if !sleep(ctx, c.opts.backoff(attempt)) {
				return
			}
			continue
		}
		attempt = -1
		// The server answered a handshake and a listing: whatever opened
		// the breaker is over. The fresh breaker is in place before the
		// status lets calls through.
		c.breaker.Store(newBreaker(c.spec.Name, &c.opts, &c.log))
		c.setStatus(Status{State: StateConnected, Protocol: cn.protocol, Info: cn.info, Since: time.Now()}, cn, tools)
		c.extras.resubscribe(cn)
		c.log.Info().Str("protocol", cn.protocol).Int("tools", len(tools)).Msg("connected")
		err = c.serve(ctx, cn)
		if over := streamBoundCause(cn.ctx); over != nil {
			// Whatever the transport, or a health check, made of the
			// stream it stopped reading.
			err = fmt.Errorf("connection lost: %w", over)
		}
		c.closeConn(cn, err)
		if ctx.Err() != nil {
			return
		}
		err = cn.childExit(err)
		st := c.setFailed(err)
		c.log.Warn().Str("error", st.Error).Func(st.logDetail).Msg("connection lost; reconnecting")
		if !sleep(ctx, c.opts.backoff(0)) {
			return
		}
	}
}

// backoff is the wait before reconnect attempt: exponential from
// BackoffMin to BackoffMax, with full jitter in [d/2, d).
func (o *Options) backoff(attempt int) time.Duration {
	d := o.BackoffMin
	for i := 0; i < attempt && d < o.BackoffMax; i++ {
		d *= 2
	}
	d = min(d, o.BackoffMax)
	if d <= 0 {
		return 0
	}
	return d/2 + rand.N(d/2+1)
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// serve watches an established connection until it is lost or ctx ends.
func (c *Client) serve(ctx context.Context, cn *conn) error {
	interval := c.opts.PingInterval
	if interval <= 0 {
		interval = time.Hour
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-cn.ctx.Done():
			return fmt.Errorf("connection lost: %w", context.Cause(cn.ctx))
		case <-ticker.C:
			if err := cn.ping(); err != nil {
				return err
			}
		case <-c.kick:
			if err := cn.ping(); err != nil {
				return err
			}
		case <-c.refresh:
			lctx, cancel := context.WithTimeout(cn.ctx, c.opts.ConnectTimeout)
			tools, features, err := cn.lists(lctx)
			cancel()
			var over *listbound.Error
			if err != nil {
				if isTransportFailure(err) || errors.As(err, &over) {
					return fmt.Errorf("refresh tools: %w", err)
				}
				c.log.Warn().Err(c.cred.Redact(err)).Msg("refresh tools after list_changed failed")
				continue
			}
			cn.out.Store(cn.newOut(tools))
			c.mu.Lock()
			c.tools, c.features = tools, features
			c.status.ListedAt = time.Now()
			c.mu.Unlock()
			c.log.Info().Int("tools", len(tools)).Int("resources", len(features.Resources)).Int("prompts", len(features.Prompts)).Msg("lists changed")
			c.onChange()
		}
	}
}

func (cn *conn) ping() error {
	c := cn.c
	ctx, cancel := context.WithTimeout(cn.ctx, c.opts.ConnectTimeout)
	defer cancel()
	var err error
	if mcp.IsModernProtocol(cn.protocol) {
		// 2026-07-28 removed ping; server/discover is its cheapest request.
		_, err = cn.mc.Discover(ctx, mcp.DiscoverRequest{})
	} else {
		err = cn.mc.Ping(ctx)
	}
	if err != nil && isTransportFailure(err) {
		return fmt.Errorf("health check: %w", err)
	}
	return nil // a JSON-RPC error still proves the server is alive
}

// setStatus records a new status and connection; tools replace the last
// known list only when a connection was made (cn != nil). The error is
// redacted here, the one way into the status.
func (c *Client) setStatus(s Status, cn *conn, tools []mcp.Tool) {
	s.Error, s.Detail = c.cred.Text(s.Error), c.cred.Text(s.Detail)
	c.answers.SetConnected(cn != nil)
	c.mu.Lock()
	if s.Protocol == "" && s.State != StateConnected {
		s.Protocol, s.Info = c.status.Protocol, c.status.Info
	}
	changed := c.status.State != s.State || c.status.Error != s.Error || c.conn != cn
	if cn != nil {
		c.tools, c.features = tools, cn.features
		s.ListedAt = time.Now()
	} else {
		s.ListedAt = c.status.ListedAt
	}
	c.status, c.conn = s, cn
	c.mu.Unlock()
	if changed {
		c.onChange()
	}
}

func (c *Client) closeConn(cn *conn, cause error) {
	cn.cancel(cause)
	cn.side.close()
	if err := cn.mc.Close(); err != nil {
		c.log.Debug().Err(c.cred.Redact(err)).Msg("close upstream session")
	}
}

// connect establishes a session: transport, handshake, first tools/list.
// When the upstream refused the hub's OAuth token on the way (401), the
// token is dropped and the connect is tried once more with a new one: a
// revoked or rotated token should not cost a backoff. Only the handshake
// is retried, never a tools/call.
func (c *Client) connect(ctx context.Context) (cn *conn, tools []mcp.Tool, err error) {
	defer func() { err = ownRefusal(err) }()
	oauth := c.cred.OAuth()
	if oauth == nil {
		return c.connectOnce(ctx)
	}
	before := oauth.Rejections()
	cn, tools, err = c.connectOnce(ctx)
	if err != nil && ctx.Err() == nil && oauth.Rejections() != before {
		c.log.Info().Err(c.cred.Redact(err)).Msg("upstream refused the hub's OAuth token; connecting once more with a new one")
		return c.connectOnce(ctx)
	}
	return cn, tools, err
}

// newMCPClient is the mcp-go client of a session over tr.
func (c *Client) newMCPClient(tr transport.Interface, legacy bool) *client.Client {
	var opts []client.ClientOption
	switch {
	case c.spec.ProtocolVersion != "":
		opts = append(opts, client.WithProtocolVersion(c.spec.ProtocolVersion))
	case legacy || c.spec.Transport == config.TransportSSE:
		opts = append(opts, client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	}
	if c.opts.DiscoverTimeout > 0 {
		opts = append(opts, client.WithDiscoverTimeout(c.opts.DiscoverTimeout))
	}
	// The hub answers sampling, elicitation and roots requests for the
	// caller whose call caused them (see features.go).
	// Both elicitation modes are declared: a server offers URL-mode flows
	// (sign-ins, payments) only to clients that declare url, and the hub
	// passes them to the caller like a form. The extensions carried for
	// callers are declared too.
	h := relay.Handlers{Server: c.spec.Name, Tracker: &c.relays}
	opts = append(opts, client.WithSamplingHandler(h), client.WithElicitationHandler(h), client.WithRootsHandler(h),
		client.WithClientCapabilities(mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{Form: &struct{}{}, URL: &struct{}{}},
			Extensions: c.opts.Carried.Map()}))
	return client.NewClient(tr, opts...)
}

// preferHandshake reports whether a session with the server opens with the
// initialize handshake (2025-11-25) rather than 2026-07-28's discovery.
// Every 2026-07-28 request carries the client's revision, identity and
// capabilities in its _meta and mirrors its method into headers, which the
// server decodes per request (an mcp-go upstream's CPU per tools/call
// doubled); a 2025-11-25 session says it once. So a streamable HTTP server,
// the transport of the hub's own POST (wire.go), is asked for the
// handshake unless pinned to 2026-07-28; relayed calls keep 2026-07-28
// where the server speaks it (side.go). Other transports keep one
// connection and negotiate as before.
func preferHandshake(spec config.ServerSpec) bool {
	if spec.ProtocolVersion != "" {
		return !mcp.IsModernProtocol(spec.ProtocolVersion)
	}
	return spec.Transport == config.TransportStreamableHTTP
}

// refusedHandshake reports whether err is a server's refusal of the
// initialize handshake itself (it answered, with no such method or no
// revision it takes), which a server speaking only 2026-07-28 gives.
func refusedHandshake(err error) bool {
	var unsupported mcp.UnsupportedProtocolVersionError
	return errors.Is(err, mcp.ErrMethodNotFound) || errors.As(err, &unsupported)
}

// connectOnce is one attempt of connect.
func (c *Client) connectOnce(ctx context.Context) (*conn, []mcp.Tool, error) {
	c.mu.RLock()
	legacy := c.legacy
	c.mu.RUnlock()
	cn, tools, err := c.dial(ctx, legacy)
	if err != nil && legacy && c.spec.ProtocolVersion == "" && refusedHandshake(err) && c.spec.Transport == config.TransportStreamableHTTP {
		c.log.Debug().Err(c.cred.Redact(err)).Msg("server refused the initialize handshake; using 2026-07-28")
		if cn, tools, err = c.dial(ctx, false); err == nil && mcp.IsModernProtocol(cn.protocol) {
			c.mu.Lock()
			c.legacy = false
			c.mu.Unlock()
		}
		return cn, tools, err
	}
	var unsupported mcp.UnsupportedProtocolVersionError
	if err != nil && !legacy && errors.As(err, &unsupported) {
		// Some servers answer server/discover without supporting
		// 2026-07-28 (go-sdk v1.8.0 lists only older revisions there) and
		// refuse the next request: they are legacy servers.
		c.log.Debug().Err(c.cred.Redact(err)).Msg("server refused 2026-07-28 after discovery; using the initialize handshake")
		c.mu.Lock()
		c.legacy = true
		c.mu.Unlock()
		return c.dial(ctx, true)
	}
	if err != nil || legacy || cn.protocol == "" || mcp.IsModernProtocol(cn.protocol) {
		return cn, tools, err
	}
	// The server answered the 2026-07-28 probe with an older revision:
	// remember that, so reconnects skip the probe.
	c.mu.Lock()
	c.legacy = true
	c.mu.Unlock()
	if c.spec.Transport != config.TransportStreamableHTTP {
		return cn, tools, nil
	}
	// A legacy streamable HTTP server sends list_changed on the standalone
	// GET stream, which must be configured before the transport starts.
	c.closeConn(cn, errors.New("redialing with the legacy GET stream"))
	return c.dial(ctx, true)
}

func (c *Client) dial(ctx context.Context, legacy bool) (*conn, []mcp.Tool, error) {
	if oauth := c.cred.OAuth(); oauth != nil {
		// Fetched here (cached for the requests that follow) so that a
		// failing token endpoint is the status's whole message, not the
		// tail of a transport error.
		if _, err := oauth.Token(); err != nil {
			return nil, nil, err
		}
	}
	sessCtx, cancel := context.WithCancelCause(ctx)
	tr, err := c.transports.New(legacy, cancel)
	if err != nil {
		cancel(err)
		return nil, nil, err
	}
	mc := c.newMCPClient(tr, legacy)
	cn := &conn{c: c, mc: mc, ctx: sessCtx, cancel: cancel}
	cn.child, _ = tr.(*stdiochild.Transport)
	c.answers.Reset() // what an earlier connect was answered is not this one's
	handshake, setting := c.opts.handshakeTimeout(c.spec.Transport)
	hctx, hcancel := context.WithTimeout(sessCtx, handshake)
	defer hcancel()
	fail := func(what string, err error) (*conn, []mcp.Tool, error) {
		if over := streamBoundCause(sessCtx); over != nil {
			err = over // whatever the transport made of the stream it stopped reading
		}
		if cn.child != nil {
			if exit := cn.childFailed(hctx, what, handshake, setting, err); exit != nil {
				return nil, nil, statustext.Failures{Answers: &c.answers, Redactor: c.cred}.Failed("", exit)
			}
		}
		err = statustext.Failures{Answers: &c.answers, Redactor: c.cred}.Failed(what, err) // before closing adds answers
		c.closeConn(cn, err)
		return nil, nil, err
	}
	if err := mc.Start(sessCtx); err != nil {
		return fail("start transport", err)
	}
	mc.OnNotification(c.notification)
	mc.OnConnectionLost(func(err error) { cancel(fmt.Errorf("transport: %w", err)) })

	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = c.opts.ClientInfo
	res, err := mc.Initialize(hctx, init)
	if err != nil {
		return fail("initialize", err)
	}
	cn.protocol = res.ProtocolVersion
	cn.info = Info{Version: res.ServerInfo.Version, Title: res.ServerInfo.Title, Description: res.ServerInfo.Description}
	cn.instructions = res.Instructions
	if cn.protocol == "" {
		cn.protocol = mc.ProtocolVersion()
	}
	cn.out.Store(cn.newOut(nil))
	tools, features, err := cn.lists(hctx)
	var over *listbound.Error
	switch {
	case errors.As(err, &over):
		c.closeConn(cn, err)
		return nil, nil, over // its own words, not a transport's around them
	case err != nil:
		return fail("list tools", err)
	}
	cn.features = features
	if c.opts.Events != nil && cn.features.Capabilities.Logging != nil {
		if lvl := c.opts.Events.LogLevel(); lvl != "" {
			req := mcp.SetLevelRequest{}
			req.Params.Level = lvl
			if err := mc.SetLevel(hctx, req); err != nil {
				c.log.Warn().Err(c.cred.Redact(err)).Msg("set log level")
			} else {
				cn.level.Store(&lvl)
			}
		}
	}
	if filter := listenFilter(res.Capabilities); mcp.IsModernProtocol(cn.protocol) && !filter.IsEmpty() {
		// 2026-07-28 delivers list_changed only to an explicit subscription.
		cn.listen(filter)
	}
	cn.out.Store(cn.newOut(tools))
	return cn, tools, nil
}

// listen opens the 2026-07-28 subscriptions/listen stream with filter; it
// replaces the session's previous stream and ends with the session.
func (cn *conn) listen(filter mcp.SubscriptionFilter) {
	c := cn.c
	go func() {
		// The stream's messages are bounded one by one, as a GET stream's
		// are, not together as the answer to a request.
		err := cn.mc.Listen(httpbound.WithStream(cn.ctx, "subscriptions/listen stream"), filter)
		if err != nil && cn.ctx.Err() == nil {
			c.log.Debug().Err(c.cred.Redact(err)).Msg("subscriptions/listen ended")
		}
	}()
}

// listenFilter subscribes to every list change the server announces.
func listenFilter(caps mcp.ServerCapabilities) mcp.SubscriptionFilter {
	var f mcp.SubscriptionFilter
	f.ToolsListChanged = caps.Tools != nil && caps.Tools.ListChanged
	f.PromptsListChanged = caps.Prompts != nil && caps.Prompts.ListChanged
	f.ResourcesListChanged = caps.Resources != nil && caps.Resources.ListChanged
	return f
}

// defaultCallTimeout bounds a call when neither the server nor the options
// set a timeout: a zero timeout would fail every call at once, and none at
// all would let a hung server hold a caller forever.
const defaultCallTimeout = 60 * time.Second

// callTimeout bounds a call: the server's own timeout, else the options'
// (def), else defaultCallTimeout.
func callTimeout(own config.Duration, def time.Duration) time.Duration {
	switch {
	case own > 0:
		return own.D()
	case def > 0:
		return def
	}
	return defaultCallTimeout
}

// call runs op on the current connection, bounded by the server's timeout,
// guarded by its breaker, and ended at once when the connection is lost. It
// fails fast when the server is down or the breaker is open. Every error it
// returns names the server and is redacted of the server's credentials.
func (c *Client) call(ctx context.Context, tool string, op func(context.Context, *conn) (any, error)) (any, error) {
	c.mu.RLock()
	cn, st := c.conn, c.status
	c.mu.RUnlock()
	if cn == nil {
		return nil, &UnavailableError{Server: c.spec.Name, Reason: st.Reason()}
	}
	callCtx, cancel := context.WithTimeout(ctx, callTimeout(c.spec.Timeout, c.opts.Timeout))
	defer cancel()
	stop := context.AfterFunc(cn.ctx, cancel)
	defer stop()
	rc := c.relays.Begin(relay.From(ctx))
	defer c.relays.End(rc)

	res, err := c.breaker.Load().Execute(func() (any, error) {
		res, err := op(callCtx, cn)
		if err != nil && ctx.Err() != nil {
			// The caller went away: not the server's fault.
			return nil, callerGone{ctx.Err()}
		}
		return res, err
	})
	if err == nil {
		return res, nil
	}
	var rpcErr *RPCError
	switch {
	case errors.As(err, &rpcErr):
		return nil, c.cred.RPC(rpcErr)
	case errors.Is(err, gobreaker.ErrOpenState), errors.Is(err, gobreaker.ErrTooManyRequests):
		return nil, &UnavailableError{Server: c.spec.Name, Reason: "circuit breaker open after repeated failures; failing fast"}
	case ctx.Err() != nil:
		return nil, fmt.Errorf("call %s on %s: %w", tool, c.spec.Name, ctx.Err())
	case cn.ctx.Err() != nil:
		return nil, c.cred.Redact(fmt.Errorf("call %s on %s: connection lost during the call: %v", tool, c.spec.Name, context.Cause(cn.ctx)))
	case errors.Is(callCtx.Err(), context.DeadlineExceeded), pastDeadline(callCtx):
		// A transport's own timer (mcp-go's SSE) may fire a moment before
		// the context says so: past the deadline, it is our timeout.
		c.suspect()
		return nil, fmt.Errorf("call %s on %s: timed out after %s", tool, c.spec.Name, callTimeout(c.spec.Timeout, c.opts.Timeout))
	case isTransportFailure(err):
		// One answer for a connection that failed under a call, whichever
		// transport noticed first and in its own words.
		c.suspect()
		said := err
		if te := (*transport.Error)(nil); errors.As(err, &te) {
			said = te.Err
		}
		return nil, c.cred.Redact(statustext.Reworded(fmt.Sprintf("call %s on %s: connection lost during the call: %v", tool, c.spec.Name, said), err))
	}
	return nil, c.cred.Redact(fmt.Errorf("call %s on %s: %w", tool, c.spec.Name, err))
}

func pastDeadline(ctx context.Context) bool {
	d, ok := ctx.Deadline()
	return ok && !time.Now().Before(d)
}

// suspect asks the connection loop to health-check now.
func (c *Client) suspect() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// callerGone marks a failure caused by the caller's cancellation, which must
// not count against the upstream's breaker.
type callerGone struct{ err error }

func (e callerGone) Error() string { return e.err.Error() }
func (e callerGone) Unwrap() error { return e.err }

// isTransportFailure tells a broken or silent server from one that answered
// with a JSON-RPC error.
func isTransportFailure(err error) bool {
	var cg callerGone
	if errors.As(err, &cg) {
		return false
	}
	var te *transport.Error
	return errors.As(err, &te) || errors.Is(err, context.DeadlineExceeded)
}
