// Package config holds the hub's configuration: the YAML file, the embedded
// default, and the types every discovery source produces. Validation errors
// name the file and the field so an operator can fix a typo without reading code.
package config

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/purko-io/mcp-hub/internal/credential"
	"github.com/purko-io/mcp-hub/internal/secrets"
	"github.com/purko-io/mcp-hub/internal/toolspec"
)

// Transport is how the hub speaks to one upstream MCP server.
type Transport string

// The transports an upstream may use.
const (
	TransportStreamableHTTP Transport = "streamable-http"
	TransportSSE            Transport = "sse"
	TransportStdio          Transport = "stdio"
	TransportWebSocket      Transport = "websocket"
)

// Prefix policies for published tool names.
const (
	PrefixNever      = "never"
	PrefixOnConflict = "on-conflict"
	PrefixAlways     = "always"
)

//go:embed default.yaml
var defaultYAML []byte

// Config is the whole hub configuration. Only Servers is reloaded while the
// hub runs; the other settings are read at start-up.
//
// This package imports none of the packages that run the hub (apitools,
// autonomy, upstream, registry, server): what it shares with them lives in
// the leaf packages toolspec and credential, so discovery sources can use
// the config types without pulling in the request path.
type Config struct {
	// Servers are the static upstreams of this file. Parse leaves it nil
	// when the file has no servers key (or "servers:" without a value) and
	// empty for "servers: []": the file source uses the difference to tell a
	// half-written file from an edit that removes every server.
	Servers []ServerSpec `json:"servers"`
	// Naming decides how upstream tool names are published.
	Naming Naming `json:"naming"`
	// Upstream holds defaults for every upstream connection.
	Upstream UpstreamDefaults `json:"upstream"`
	// Catalog tunes the tool catalog.
	Catalog CatalogSettings `json:"catalog"`
	// ShutdownGrace bounds how long in-flight calls may finish after SIGTERM.
	ShutdownGrace Duration `json:"shutdownGrace"`
	// Kubernetes configures the cluster source; it is off without a cluster.
	Kubernetes KubeSettings `json:"kubernetes"`
	// Replicas configures how replicas of the hub reach each other.
	Replicas ReplicaSettings `json:"replicas"`
	// Auth says who may call the hub and at which autonomy level at most.
	Auth AuthSettings `json:"auth"`
	// Builtins configures the hub's own tools.
	Builtins BuiltinSettings `json:"builtins"`
	// HTTP bounds what one caller can make the hub's HTTP endpoint hold:
	// body size, sessions, slow clients.
	HTTP HTTPSettings `json:"http"`
	// Limits bound the calls of each caller, to each upstream, and in flight.
	Limits LimitSettings `json:"limits"`
	// APITools are api-type tools: one HTTP request per call, credentials
	// attached by the hub.
	APITools []toolspec.EndpointSpec `json:"apiTools,omitempty"`
	// OpenAPI imports api tools from OpenAPI 3 documents.
	OpenAPI []OpenAPIImport `json:"openapi,omitempty"`
	// Pinning pins the first definition of every upstream tool and
	// quarantines a tool whose definition later changes.
	Pinning PinningSettings `json:"pinning"`
	// Screening screens every upstream tool definition the hub has not
	// seen before (and every changed one) for prompt injection, and
	// quarantines one that looks like it.
	Screening ScreeningSettings `json:"screening"`
	// Registrations say which credentials servers registered through the
	// REST API may name.
	Registrations RegistrationSettings `json:"registrations"`
	// VirtualServers are named endpoints (/servers/NAME/mcp) that publish
	// a chosen set of servers and tools; every server has one of its own
	// besides.
	VirtualServers []toolspec.VirtualServer `json:"virtualServers,omitempty"`
	// RegistryAPI shapes the MCP Registry API (/v0.1/servers).
	RegistryAPI RegistryAPISettings `json:"registryAPI"`
	// Approvals say who approves the calls that guardrails hold for a
	// person (humanApprovalRequired), and for how long they wait.
	Approvals ApprovalSettings `json:"approvals"`
	// UserGrants keep the grants of servers with userOAuth: each caller's
	// own account there (useroauth.go).
	UserGrants UserGrantSettings `json:"userGrants"`
}

// Pinning modes (pinning.mode).
const (
	PinningEnforce = "enforce"
	PinningWarn    = "warn"
	PinningOff     = "off"
)

// PinningSettings: the defence against an upstream that changes a trusted
// tool's definition ("rug pull").
type PinningSettings struct {
	// Mode is enforce (default: a changed tool is hidden and refused), warn
	// (listed and callable, but reported) or off.
	Mode string `json:"mode,omitempty"`
	// StateFile is where a hub keeps its pins (name claims beside it, in
	// names.json) instead of its state directory (internal/statedir:
	// pins.json in one directory per config file) or, in a cluster, the
	// pins ConfigMap.
	StateFile string `json:"stateFile,omitempty"`
	// Approve are standing approvals of changed definitions.
	Approve []PinApproval `json:"approve,omitempty"`
}

// PinApproval approves the current definitions of a server's tools that
// match Tool (a glob, default "*"), or with SHA256 exactly that
// definition. Without SHA256 it approves whatever the server offers while
// it stays in the config: remove it after the upgrade it was written for.
type PinApproval struct {
	Server string `json:"server"`
	Tool   string `json:"tool,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
}

// Screening modes (screening.mode).
const (
	ScreeningEnforce = "enforce"
	ScreeningWarn    = "warn"
	ScreeningOff     = "off"
)

// ScreeningSettings: the defence against a server whose tool descriptions
// carry instructions for the model (tool poisoning). It is a block of its
// own beside pinning, as the two answer different questions (is this the
// definition trusted before; is this definition fit to trust at all); a
// screened tool is approved as a changed one is, through its pin.
type ScreeningSettings struct {
	// Mode is enforce (default: a tool whose definition looks like a
	// prompt injection is quarantined: not listed, calls refused, until
	// approved), warn (listed and callable, but reported) or off.
	Mode string `json:"mode,omitempty"`
}

func (s ScreeningSettings) validate() error {
	switch s.Mode {
	case ScreeningEnforce, ScreeningWarn, ScreeningOff:
		return nil
	}
	return fmt.Errorf("screening.mode: %q is not one of enforce, warn, off", s.Mode)
}

// AgentTool is an api tool declared in a Purko Agent's spec.tools: only
// that agent's callers see and run it.
type AgentTool struct {
	// Agent is namespace/name of the Agent.
	Agent string
	Spec  toolspec.EndpointSpec
	// Credential is the resolved credential (from the Agent's namespace).
	Credential Secret
	// Problem, when set, makes every call fail with this reason (a missing
	// Secret, say) instead of sending the request.
	Problem string
}

// OpenAPIImport turns every operation of an OpenAPI 3 document into an api
// tool; Base supplies what the document does not say (credentials,
// headers, bindings, a server URL).
type OpenAPIImport struct {
	// File or URL of the document (exactly one); a URL is fetched once at
	// start-up.
	File string                `json:"file,omitempty"`
	URL  string                `json:"url,omitempty"`
	Base toolspec.EndpointSpec `json:"base"`
}

// BuiltinSettings configure the builtin tools.
type BuiltinSettings struct {
	StaticAnalysis  Toggle          `json:"staticAnalysis"`
	TriggerWorkflow TriggerSettings `json:"triggerWorkflow"`
}

// Toggle turns a builtin on or off; on when Enabled is omitted.
type Toggle struct {
	Enabled *bool `json:"enabled,omitempty"`
}

// On reports whether the toggle is on (the default).
func (t Toggle) On() bool { return t.Enabled == nil || *t.Enabled }

// TriggerSettings configure trigger-workflow, which starts Purko workflows
// through the Purko dashboard.
type TriggerSettings struct {
	Toggle
	// DashboardURL is the dashboard's base URL; in a cluster it defaults to
	// http://purko-operator.<hub namespace>.svc:8082. Without one (and out
	// of a cluster) the tool is not offered.
	DashboardURL string `json:"dashboardURL,omitempty"`
	// Namespace is the workflows' default namespace (the hub's own in a
	// cluster).
	Namespace string `json:"namespace,omitempty"`
	// Token is an optional bearer token for the dashboard.
	Token *TokenRef `json:"token,omitempty"`
	// Timeout bounds one trigger; default 30s.
	Timeout Duration `json:"timeout,omitempty"`

	// TokenValue is the resolved token.
	TokenValue Secret `json:"-"`
}

// ReplicaSettings: replicas share no state; they only pass each other a
// client's answer to a server request (sampling, elicitation, roots) that a
// load balancer delivered to a replica other than the one that asked.
type ReplicaSettings struct {
	// Peers are the replicas as host:port, comma-separated; a host that
	// resolves to several addresses (a headless Service) names them all.
	// Empty for a single replica. The list names this replica too: how
	// many replicas it names is how many share every rate limit.
	Peers string `json:"peers,omitempty"`
	// InstanceID names this hub to the hubs it connects to, so a
	// registration that leads back to it is refused (a loop); replicas of
	// one deployment share it (the chart sets <namespace>/<release>).
	// Empty: a random id per process.
	InstanceID string `json:"instanceId,omitempty"`
	// Secret is the key every replica seals task handles with (MCP Tasks:
	// a task's follow-up requests may reach any replica, and its handle
	// carries its route, authenticated by this key). Unset: a random key
	// per process, right for one replica.
	Secret *TokenRef `json:"secret,omitempty"`

	// SecretValue is the resolved Secret.
	SecretValue Secret `json:"-"`
}

// PeerList returns the peers' host:port entries.
func (r ReplicaSettings) PeerList() []string { return SplitList(r.Peers) }

// AuthSettings are the hub's callers. With none configured, the hub serves
// anonymous callers only on a loopback address (a laptop) and refuses to
// start on any other.
type AuthSettings struct {
	// Tokens are inbound bearer tokens, each naming one caller.
	Tokens []CallerToken `json:"tokens,omitempty"`
	// Anonymous, when set, admits requests without credentials.
	Anonymous *AnonymousAccess `json:"anonymous,omitempty"`
	// ServiceAccounts admits pods by their projected ServiceAccount token
	// (TokenReview), with the ceiling of their purko.io/agent Agent.
	ServiceAccounts ServiceAccountAuth `json:"serviceAccounts"`
	// OAuth accepts JWT access tokens of trusted authorization servers
	// (the MCP authorization spec), for remote IDE clients.
	OAuth *OAuthSettings `json:"oauth,omitempty"`
}

// CallerToken is one inbound bearer token.
type CallerToken struct {
	// Name identifies the caller in audit lines.
	Name string `json:"name"`
	// Token says where the token is read from (env or file).
	Token TokenRef `json:"token"`
	// MaxLevel is the caller's ceiling: manual, restricted, supervised, full
	// (or shu, ha, ri).
	MaxLevel string `json:"maxLevel"`
	// Tools, when not empty, are the only tools the caller may see and run
	// (published or original names).
	Tools []string `json:"tools,omitempty"`
	// Limits, when set, replace limits.perCaller for this caller.
	Limits *Limits `json:"limits,omitempty"`
	// Admin lets the caller change the hub's state through its REST API
	// (approving changed tool definitions); tools are not affected.
	Admin bool `json:"admin,omitempty"`
	// Guardrails hold the caller's calls to content filters and a tool-call
	// budget per run, with the keys of a Purko Agent's spec.guardrails.
	Guardrails *toolspec.Guardrails `json:"guardrails,omitempty"`

	// Value is the resolved token.
	Value Secret `json:"-"`
}

// AnonymousAccess admits callers without credentials up to MaxLevel.
type AnonymousAccess struct {
	Enabled  bool   `json:"enabled"`
	MaxLevel string `json:"maxLevel"`
}

// ServiceAccountAuth configures TokenReview-based callers.
type ServiceAccountAuth struct {
	Enabled bool `json:"enabled"`
	// Audiences the token must be issued for; empty accepts the API
	// server's default audience.
	Audiences []string `json:"audiences,omitempty"`
	// Admins are ServiceAccounts ("namespace/name") whose pods are admin
	// callers: they may use the REST API's writes (register servers,
	// approve tool definitions), like auth.tokens entries with admin: true.
	Admins []string `json:"admins,omitempty"`
}

// Configured reports whether any way to authenticate is set up.
func (a AuthSettings) Configured() bool {
	return len(a.Tokens) > 0 || a.Anonymous != nil || a.ServiceAccounts.Enabled || a.OAuth != nil
}

// KubeSettings say what the Kubernetes source watches. Command-line flags
// override them.
type KubeSettings struct {
	// Namespaces to watch; empty means the hub's own namespace in a cluster
	// (or the kubeconfig context's namespace outside one).
	Namespaces []string `json:"namespaces,omitempty"`
	// AllNamespaces watches every namespace (needs a ClusterRole).
	AllNamespaces bool `json:"allNamespaces,omitempty"`
	// LabelSelector limits the MCPServer resources the hub picks up.
	LabelSelector string `json:"labelSelector,omitempty"`
	// ConfigMapName is Purko's "connect by URL" ConfigMap; default mcp-servers.
	ConfigMapName string `json:"configMapName,omitempty"`
	// SecretNames, when set, are the only Secrets the hub reads (each
	// watched by name), so its RBAC can grant exactly these resourceNames
	// rather than every Secret of the watched namespaces; a Secret named
	// by an MCPServer, the ConfigMap or an Agent but not listed here is
	// refused. Empty: every Secret of the watched namespaces. Either way
	// only Secrets labelled UpstreamCredentialLabel are read.
	SecretNames []string `json:"secretNames,omitempty"`
	// LeaderElection picks the one replica that writes MCPServer status
	// and Events; the others watch and serve all the same.
	LeaderElection LeaderElection `json:"leaderElection"`
}

// LeaderElection is the election of the replica that writes status: a
// coordination.k8s.io Lease, held by one replica at a time. Replicas that
// wrote at once made the status flap between their views, repeated every
// Event once per replica and lost each other's conditions.
type LeaderElection struct {
	// Enabled is true unless set false; false makes every replica write
	// status (one replica, or RBAC without leases).
	Enabled *bool `json:"enabled,omitempty"`
	// LeaseName is the Lease's name; default mcp-hub.
	LeaseName string `json:"leaseName,omitempty"`
	// Namespace is the Lease's namespace; default the hub's own (the
	// kubeconfig context's outside a cluster, else "default").
	Namespace string `json:"namespace,omitempty"`
	// LeaseDuration is how long the others wait after the leader's last
	// renewal before one takes over (whole seconds); default 15s. It
	// bounds the hand-over when a leader dies without releasing.
	LeaseDuration Duration `json:"leaseDuration,omitempty"`
	// RenewDeadline is how long the leader keeps trying to renew before
	// it stops writing; default 10s, below leaseDuration.
	RenewDeadline Duration `json:"renewDeadline,omitempty"`
	// RetryPeriod is how often candidates try, and the leader renews;
	// default 2s.
	RetryPeriod Duration `json:"retryPeriod,omitempty"`
}

// On reports whether replicas elect a status writer (the default).
func (l LeaderElection) On() bool { return l.Enabled == nil || *l.Enabled }

func (l *LeaderElection) applyDefaults() {
	setDefault(&l.LeaseName, "mcp-hub")
	setDefault(&l.LeaseDuration, Duration(15*time.Second))
	setDefault(&l.RenewDeadline, Duration(10*time.Second))
	setDefault(&l.RetryPeriod, Duration(2*time.Second))
}

// validate checks what client-go's elector would refuse at start, here
// where the error can name the field.
func (l LeaderElection) validate() error {
	const at = "kubernetes.leaderElection."
	switch {
	case !secretNamePattern.MatchString(l.LeaseName):
		return fmt.Errorf(at+"leaseName: %q is not a Lease name (lower-case a-z 0-9 - ., at most 253)", l.LeaseName)
	case l.Namespace != "" && !namespacePattern.MatchString(l.Namespace):
		return fmt.Errorf(at+"namespace: %q is not a namespace name (lower-case a-z 0-9 -, at most 63)", l.Namespace)
	case l.LeaseDuration.D() < time.Second || l.LeaseDuration.D()%time.Second != 0:
		return fmt.Errorf(at+"leaseDuration: %s must be whole seconds, at least 1s (a Lease holds seconds)", l.LeaseDuration.D())
	case l.RenewDeadline >= l.LeaseDuration:
		return fmt.Errorf(at+"renewDeadline: %s must be shorter than leaseDuration %s (the leader stops before the others take over)", l.RenewDeadline.D(), l.LeaseDuration.D())
	case l.RetryPeriod <= 0 || float64(l.RenewDeadline) <= 1.2*float64(l.RetryPeriod):
		return fmt.Errorf(at+"retryPeriod: %s must be above zero and renewDeadline %s more than 1.2 times it (retries are jittered by 1.2)", l.RetryPeriod.D(), l.RenewDeadline.D())
	}
	return nil
}

// Naming is the collision policy for tool names of different upstreams.
type Naming struct {
	// Prefix is never, on-conflict (default) or always.
	Prefix string `json:"prefix"`
	// Separator goes between server name and tool name; default "__".
	Separator string `json:"separator"`
}

// UpstreamDefaults apply to every upstream unless the server overrides them.
type UpstreamDefaults struct {
	Timeout         Duration `json:"timeout"`         // per call
	ConnectTimeout  Duration `json:"connectTimeout"`  // per connect attempt incl. handshake and tools/list
	PingInterval    Duration `json:"pingInterval"`    // health check of a connected upstream
	BackoffMin      Duration `json:"backoffMin"`      // first reconnect delay
	BackoffMax      Duration `json:"backoffMax"`      // reconnect delay ceiling
	BreakerFailures int      `json:"breakerFailures"` // consecutive failures that open the breaker
	BreakerOpenFor  Duration `json:"breakerOpenFor"`  // how long an open breaker fails fast
	DiscoverTimeout Duration `json:"discoverTimeout"` // bound of the 2026-07-28 probe on first connect
	// StartTimeout bounds the handshake and first tools/list of a stdio
	// child in place of ConnectTimeout: a child started with npx or uvx
	// may spend tens of seconds downloading its package before it reads
	// its stdin, and a child stopped mid-download starts no faster next
	// time. A child that exits is reported at once, whatever is left of it.
	StartTimeout Duration `json:"startTimeout"`
	// Dial says which private address ranges upstream connections may
	// reach (dial.go); metadata addresses are never reached.
	Dial DialSettings `json:"dial"`
	// LogLevel is the logging/setLevel every upstream that logs gets on
	// connect ("off": none). Callers' own levels are applied by the hub on
	// top, so it must be at least as verbose as what callers ask for on a
	// replica that did not see their logging/setLevel.
	LogLevel string `json:"logLevel"`
	// MaxResultChars caps the text of every tool result, upstream and api
	// tools alike, at this many characters: what Purko's executor keeps
	// (package resultcap says what counts). 0 turns the cap off; a server's
	// own maxResultChars overrides it. Default 100000.
	MaxResultChars *int `json:"maxResultChars"`
	// MaxResponseBytes is the most the hub reads of one upstream answer;
	// a larger one fails the call with an error that says so. Default 32 MiB.
	MaxResponseBytes int64 `json:"maxResponseBytes"`
	// MaxListPages, MaxTools and MaxListBytes bound what one server lists
	// on a connect or a refresh: pages of one list, tools, and bytes of
	// all its lists together (tools, resources, resource templates,
	// prompts). Over a bound the server is in error and publishes
	// nothing. Defaults 100, 2000 and 2 MiB.
	MaxListPages int   `json:"maxListPages"`
	MaxTools     int   `json:"maxTools"`
	MaxListBytes int64 `json:"maxListBytes"`
	// Extensions are the MCP extensions carried between callers and
	// upstreams (extensions.go); nil (absent): MCP Apps.
	Extensions Extensions `json:"extensions"`
}

// Bounds of the result cap: below the minimum the cut's notice would not
// fit beside any text.
const (
	DefaultMaxResultChars   = 100000
	MinMaxResultChars       = 1000
	DefaultMaxResponseBytes = 16 << 20
	minMaxResponseBytes     = 64 << 10
	maxMaxResponseBytes     = 1 << 30
)

// DefaultStartTimeout is upstream.startTimeout unless set: a cold
// `npx -y PKG` downloads for about half a minute before the server starts;
// four times that leaves room for a slow network without hiding a child
// that hangs for good.
const DefaultStartTimeout = Duration(2 * time.Minute)

// Bounds of what one server lists (upstream.maxListPages, maxTools,
// maxListBytes).
const (
	DefaultMaxListPages = 100
	DefaultMaxTools     = 2000
	DefaultMaxListBytes = 2 << 20
	maxMaxListPages     = 100000
	maxMaxTools         = 100000
	minMaxListBytes     = 64 << 10
	maxMaxListBytes     = 1 << 30
)

// checkListBounds checks upstream.maxListPages, maxTools and maxListBytes.
func (u UpstreamDefaults) checkListBounds() error {
	if n := u.MaxListPages; n < 1 || n > maxMaxListPages {
		return fmt.Errorf("upstream.maxListPages: %d is not within 1 and %d", n, maxMaxListPages)
	}
	if n := u.MaxTools; n < 1 || n > maxMaxTools {
		return fmt.Errorf("upstream.maxTools: %d is not within 1 and %d", n, maxMaxTools)
	}
	if n := u.MaxListBytes; n < minMaxListBytes || n > maxMaxListBytes {
		return fmt.Errorf("upstream.maxListBytes: %d is not within %d (64 KiB) and %d (1 GiB)", n, minMaxListBytes, maxMaxListBytes)
	}
	return nil
}

// ResultCap is the result cap in characters; 0 is off.
func (u UpstreamDefaults) ResultCap() int {
	if u.MaxResultChars == nil {
		return DefaultMaxResultChars
	}
	return *u.MaxResultChars
}

// checkResultCap checks a maxResultChars setting.
func checkResultCap(field string, v *int) error {
	if v != nil && *v != 0 && *v < MinMaxResultChars {
		return fmt.Errorf("%s: %d must be 0 (off) or at least %d, room for the text and the notice of the cut", field, *v, MinMaxResultChars)
	}
	return nil
}

// logLevels are the MCP logging levels, most verbose first.
func logLevels() []string {
	return []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}
}

// CatalogSettings tune the catalog and its change notifications.
type CatalogSettings struct {
	// RouteCacheSize is the capacity of the tool-to-client LRU map.
	RouteCacheSize int `json:"routeCacheSize"`
	// NotifyDebounce coalesces catalog changes into one tools/list_changed.
	NotifyDebounce Duration `json:"notifyDebounce"`
	// FindTools lets callers that may see many tools search for them
	// instead of reading the whole list: a list of 1,000 tools costs a
	// model far more tokens than the few it needs.
	FindTools FindToolsSettings `json:"findTools"`
}

// FindToolsSettings configure the hub's find_tools tool.
type FindToolsSettings struct {
	// Above is the number of tools a caller may see above which its
	// tools/list holds only find_tools and the tools it found in its
	// session; 0 (the default) is off: every caller lists everything.
	Above int `json:"above"`
}

// ServerSpec describes one upstream MCP server, whatever source found it.
type ServerSpec struct {
	Name      string            `json:"name"`
	URL       string            `json:"url,omitempty"`
	Transport Transport         `json:"transport,omitempty"`
	Command   string            `json:"command,omitempty"`
	Args      []string          `json:"args,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
	Headers   map[string]string `json:"headers,omitempty"`
	// Token names where the bearer token comes from; never the token itself.
	Token *TokenRef `json:"token,omitempty"`
	// OAuth, when set, makes the hub get its bearer token for this server
	// from an authorization server (client credentials); it excludes Token.
	OAuth *OAuthClient `json:"oauth,omitempty"`
	// TokenExchange, when set, makes every call reach the server with a
	// token minted for its caller (RFC 8693); it excludes Token and OAuth.
	TokenExchange *TokenExchange `json:"tokenExchange,omitempty"`
	// UserOAuth, when set, makes every call reach the server as its
	// caller's own account there (useroauth.go); a token or oauth beside
	// it is the hub's, for its own requests.
	UserOAuth *UserOAuth `json:"userOAuth,omitempty"`
	// Auth says which of the above the server expects (none, bearer,
	// oauth, tokenExchange); empty, the credential set says it. Set, a
	// mismatch is an error rather than a server reached the wrong way.
	Auth string `json:"auth,omitempty"`
	// Timeout overrides the per-call timeout of this server.
	Timeout Duration `json:"timeout,omitempty"`
	// ProtocolVersion pins the MCP revision; empty opens the session with the
	// initialize handshake, and 2026-07-28 only for a server that refuses it.
	ProtocolVersion string `json:"protocolVersion,omitempty"`
	// ToolPolicy overrides the read-only/write classification of this
	// server's tools (read by the autonomy rules).
	ToolPolicy *ToolPolicy `json:"toolPolicy,omitempty"`
	// TrustAnnotations lets the server's own readOnlyHint/destructiveHint
	// decide when no operator rule does; off by default, since a server
	// describes itself.
	TrustAnnotations bool `json:"trustAnnotations,omitempty"`
	// Tools, when set, choose which of the server's tools are published
	// and how (allow, deny, overrides): the operator's curation of a
	// server the hub does not control.
	Tools *ToolCuration `json:"tools,omitempty"`
	// Limits, when set, replace limits.perUpstream for this server.
	Limits *Limits `json:"limits,omitempty"`
	// MaxResultChars overrides upstream.maxResultChars for this server's
	// tools (0: no cap).
	MaxResultChars *int `json:"maxResultChars,omitempty"`

	// Problem, when set by a source, says why the server cannot be used as
	// found (a missing Secret, say): the hub lists it as error with this
	// reason instead of connecting.
	Problem string `json:"problem,omitempty"`
	// Origin names the Kubernetes object the spec came from, so status can
	// be written back to it.
	Origin *Origin `json:"origin,omitempty"`

	// BearerToken is the resolved token, filled by the source. It is a
	// Secret so it cannot be printed or marshalled by accident.
	BearerToken Secret `json:"-"`
	// Source names the discovery source that produced this spec.
	Source string `json:"-"`
}

// ToolPolicy lists tool names or glob patterns (path.Match) an operator
// declares read-only or write, whatever the server says about them.
type ToolPolicy struct {
	ReadOnly []string `json:"readOnly,omitempty"`
	Write    []string `json:"write,omitempty"`
}

// Origin is a Kubernetes object reference.
type Origin struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// TokenRef says where a bearer token is read from. The value is read by
// package credential, the same rules as api tool credentials: trimmed, not
// empty, at most 64 KiB, a regular file.
type TokenRef struct {
	Env  string `json:"env,omitempty"`
	File string `json:"file,omitempty"`
}

// Secret is a credential value. It prints and marshals as a redaction so it
// cannot reach a log line, an error or a listing.
type Secret string

// String redacts the value.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return "[redacted]"
}

// GoString redacts the value for %#v.
func (s Secret) GoString() string { return s.String() }

// MarshalJSON redacts the value.
func (s Secret) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// Reveal returns the credential; call it only where the value is sent.
func (s Secret) Reveal() string { return string(s) }

// Default returns the embedded default configuration.
func Default() (*Config, error) {
	return Parse("(embedded default)", defaultYAML)
}

// Load reads, parses and validates the config file at path.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return Parse(path, data)
}

// Parse parses and validates YAML (or JSON) config data. name is used in
// errors to say which file was wrong.
//
// A document with nothing in it (no bytes, only whitespace or comments) is
// an error, not an empty config: it is what a half-written or truncated
// file looks like, and taking it for "no servers" would drop every
// upstream. A config without servers says so: "servers: []".
func Parse(name string, data []byte) (*Config, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errEmptyConfig(name)
	}
	doc, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("config %s: %s", name, cleanYAMLError(err))
	}
	if string(bytes.TrimSpace(doc)) == "null" {
		return nil, errEmptyConfig(name)
	}
	var tree any
	if err := json.Unmarshal(doc, &tree); err != nil {
		return nil, fmt.Errorf("config %s: %s", name, cleanYAMLError(err))
	}
	// Durations and token references first: the YAML decoder cannot say
	// which field a bad one was in, this walk can.
	if err := checkFields(reflect.TypeFor[Config](), tree, ""); err != nil {
		return nil, fmt.Errorf("config %s: %w", name, err)
	}
	var c Config
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return nil, fmt.Errorf("config %s: %s", name, cleanYAMLError(err))
	}
	c.applyDefaults()
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("config %s: %w", name, err)
	}
	if tr := &c.Builtins.TriggerWorkflow; tr.Token != nil {
		v, err := tr.Token.read()
		if err != nil {
			return nil, fmt.Errorf("config %s: builtins.triggerWorkflow.token: %w", name, err)
		}
		tr.TokenValue = v
	}
	if r := &c.Replicas; r.Secret != nil {
		v, err := r.Secret.read()
		if err != nil {
			return nil, fmt.Errorf("config %s: replicas.secret: %w", name, err)
		}
		r.SecretValue = v
	}
	if k := c.UserGrants.Key; k != nil {
		v, err := k.read()
		if err != nil {
			return nil, fmt.Errorf("config %s: userGrants.key: %w", name, err)
		}
		c.UserGrants.KeyValue = v
	}
	if w := c.Approvals.Webhook; w != nil && w.Token != nil {
		v, err := w.Token.read()
		if err != nil {
			return nil, fmt.Errorf("config %s: approvals.webhook.token: %w", name, err)
		}
		w.TokenValue = v
	}
	for i := range c.Auth.Tokens {
		t := &c.Auth.Tokens[i]
		v, err := t.Token.read()
		if err != nil {
			return nil, fmt.Errorf("config %s: auth.tokens[%d] (%s).token: %w", name, i, t.Name, err)
		}
		t.Value = v
	}
	for i := range c.Servers {
		s := &c.Servers[i]
		s.Source = "file"
		if err := s.ResolveToken(); err != nil {
			return nil, fmt.Errorf("config %s: servers[%d] (%s).token: %w", name, i, s.Name, err)
		}
		if err := s.ResolveOAuthSecret(); err != nil {
			field := "oauth"
			if s.TokenExchange != nil {
				field = "tokenExchange"
			}
			return nil, fmt.Errorf("config %s: servers[%d] (%s).%s.clientSecret: %w", name, i, s.Name, field, err)
		}
		if err := s.ResolveUserOAuthSecret(); err != nil {
			return nil, fmt.Errorf("config %s: servers[%d] (%s).userOAuth.clientSecret: %w", name, i, s.Name, err)
		}
	}
	return &c, nil
}

func errEmptyConfig(name string) error {
	return fmt.Errorf("config %s: the file is empty; a config without servers says \"servers: []\"", name)
}

func cleanYAMLError(err error) string {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "error unmarshaling JSON: ")
	msg = strings.TrimPrefix(msg, "while decoding JSON: ")
	msg = strings.TrimPrefix(msg, "json: ")
	return msg
}

func (c *Config) applyDefaults() {
	setDefault(&c.Naming.Prefix, PrefixOnConflict)
	setDefault(&c.Naming.Separator, "__")
	u := &c.Upstream
	setDefault(&u.Timeout, Duration(60*time.Second))
	setDefault(&u.ConnectTimeout, Duration(15*time.Second))
	setDefault(&u.StartTimeout, DefaultStartTimeout)
	setDefault(&u.PingInterval, Duration(15*time.Second))
	setDefault(&u.BackoffMin, Duration(250*time.Millisecond))
	setDefault(&u.BackoffMax, Duration(30*time.Second))
	setDefault(&u.BreakerFailures, 5)
	setDefault(&u.BreakerOpenFor, Duration(10*time.Second))
	setDefault(&u.LogLevel, "info")
	setDefault(&u.DiscoverTimeout, Duration(2*time.Second))
	setDefault(&u.MaxResponseBytes, DefaultMaxResponseBytes)
	setDefault(&u.MaxListPages, DefaultMaxListPages)
	setDefault(&u.MaxTools, DefaultMaxTools)
	setDefault(&u.MaxListBytes, DefaultMaxListBytes)
	if u.Extensions == nil {
		u.Extensions = defaultExtensions()
	}
	setDefault(&c.Catalog.RouteCacheSize, 16384)
	setDefault(&c.Catalog.NotifyDebounce, Duration(100*time.Millisecond))
	setDefault(&c.ShutdownGrace, Duration(10*time.Second))
	setDefault(&c.Kubernetes.ConfigMapName, "mcp-servers")
	c.Kubernetes.LeaderElection.applyDefaults()
	setDefault(&c.Pinning.Mode, PinningEnforce)
	setDefault(&c.Screening.Mode, ScreeningEnforce)
	c.HTTP.applyDefaults()
	setDefault(&c.Limits.MaxInFlight, new(int(DefaultMaxInFlight)))
	c.Approvals.applyDefaults()
	c.UserGrants.applyDefaults()
	c.RegistryAPI.applyDefaults()
}

func setDefault[T comparable](p *T, v T) {
	var zero T
	if *p == zero {
		*p = v
	}
}

// separatorPattern keeps published names inside ^[a-zA-Z0-9_-]{1,64}$.
var separatorPattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,8}$`)

func (c *Config) validate() error {
	switch c.Naming.Prefix {
	case PrefixNever, PrefixOnConflict, PrefixAlways:
	default:
		return fmt.Errorf("naming.prefix: %q is not one of never, on-conflict, always", c.Naming.Prefix)
	}
	if !separatorPattern.MatchString(c.Naming.Separator) {
		return fmt.Errorf("naming.separator: %q must be 1-8 characters of a-z A-Z 0-9 _ - (published tool names allow nothing else)", c.Naming.Separator)
	}
	if err := c.HTTP.validate(); err != nil {
		return err
	}
	if err := c.RegistryAPI.validate(); err != nil {
		return err
	}
	if err := c.UserGrants.validate(); err != nil {
		return err
	}
	if err := c.Approvals.validate(); err != nil {
		return err
	}
	if c.Upstream.BackoffMax < c.Upstream.BackoffMin {
		return fmt.Errorf("upstream.backoffMax: %s is shorter than upstream.backoffMin %s", c.Upstream.BackoffMax.D(), c.Upstream.BackoffMin.D())
	}
	if levels := logLevels(); c.Upstream.LogLevel != "off" && !slices.Contains(levels, c.Upstream.LogLevel) {
		return fmt.Errorf("upstream.logLevel: %q is not one of off, %s", c.Upstream.LogLevel, strings.Join(levels, ", "))
	}
	if err := checkResultCap("upstream.maxResultChars", c.Upstream.MaxResultChars); err != nil {
		return err
	}
	if n := c.Upstream.MaxResponseBytes; n < minMaxResponseBytes || n > maxMaxResponseBytes {
		return fmt.Errorf("upstream.maxResponseBytes: %d is not within %d (64 KiB) and %d (1 GiB)", n, minMaxResponseBytes, maxMaxResponseBytes)
	}
	if err := c.Upstream.checkListBounds(); err != nil {
		return err
	}
	if err := c.Upstream.Extensions.validate(); err != nil {
		return err
	}
	if c.Upstream.BreakerFailures < 0 {
		return fmt.Errorf("upstream.breakerFailures: must not be negative")
	}
	if c.Catalog.RouteCacheSize < 0 {
		return fmt.Errorf("catalog.routeCacheSize: must not be negative")
	}
	if c.Catalog.FindTools.Above < 0 {
		return fmt.Errorf("catalog.findTools.above: must not be negative (0 is off)")
	}
	if err := c.Limits.normalize(); err != nil {
		return err
	}
	if err := c.Auth.validate(c.Limits.PerUpstream); err != nil {
		return err
	}
	if err := c.Pinning.validate(); err != nil {
		return err
	}
	if err := c.Screening.validate(); err != nil {
		return err
	}
	for i, n := range c.Kubernetes.SecretNames {
		if !secretNamePattern.MatchString(n) {
			return fmt.Errorf("kubernetes.secretNames[%d]: %q is not a Secret name (lower-case a-z 0-9 - ., at most 253)", i, n)
		}
	}
	if err := c.Kubernetes.LeaderElection.validate(); err != nil {
		return err
	}
	if err := checkInstanceID(c.Replicas.InstanceID); err != nil {
		return err
	}
	for _, p := range c.Replicas.PeerList() {
		host, port, err := net.SplitHostPort(p)
		if err != nil || host == "" || port == "" {
			return fmt.Errorf("replicas.peers: %q is not host:port", p)
		}
		if err := toolspec.ValidatePort(port); err != nil {
			return fmt.Errorf("replicas.peers: %q: %w", p, err)
		}
	}
	if u := c.Builtins.TriggerWorkflow.DashboardURL; u != "" {
		if err := checkHTTPURL(u); err != nil {
			return fmt.Errorf("builtins.triggerWorkflow.dashboardURL: %w", err)
		}
	}
	for i, spec := range c.APITools {
		if err := spec.Validate(); err != nil {
			return fmt.Errorf("apiTools[%d]%s.%w", i, nameHint(spec.Name), err)
		}
	}
	for i, imp := range c.OpenAPI {
		if (imp.File == "") == (imp.URL == "") {
			return fmt.Errorf("openapi[%d].file: set exactly one of file or url", i)
		}
		if imp.URL != "" {
			if err := checkHTTPURL(imp.URL); err != nil {
				return fmt.Errorf("openapi[%d].url: %w", i, err)
			}
		}
		// The base is a template, validated whole only per imported
		// operation; its URL, when set, must already be usable.
		if u := imp.Base.URL; u != "" {
			if err := checkHTTPURL(toolspec.FillPlaceholders(u, func(string) (string, bool) { return "x", true })); err != nil {
				return fmt.Errorf("openapi[%d].base.url: %w", i, err)
			}
		}
	}
	if t := c.Builtins.TriggerWorkflow.Token; t != nil && (t.Env == "") == (t.File == "") {
		return fmt.Errorf("builtins.triggerWorkflow.token: set exactly one of env or file")
	}
	seen := make(map[string]int, len(c.Servers))
	for i := range c.Servers {
		s := &c.Servers[i]
		if err := s.Normalize(); err != nil {
			return fmt.Errorf("servers[%d]%s.%w", i, nameHint(s.Name), err)
		}
		if j, dup := seen[s.Name]; dup {
			return fmt.Errorf("servers[%d].name: %q is already used by servers[%d]", i, s.Name, j)
		}
		seen[s.Name] = i
	}
	virtual := make(map[string]int, len(c.VirtualServers))
	for i := range c.VirtualServers {
		v := &c.VirtualServers[i]
		if err := v.Validate(); err != nil {
			return fmt.Errorf("virtualServers[%d]%s.%w", i, nameHint(v.Name), err)
		}
		if j, dup := virtual[v.Name]; dup {
			return fmt.Errorf("virtualServers[%d].name: %q is already used by virtualServers[%d]", i, v.Name, j)
		}
		virtual[v.Name] = i
		v.Source = "config"
	}
	return c.validateRegistrations()
}

// checkHTTPURL accepts an absolute http(s) URL whose port, if any, is a
// port.
func checkHTTPURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("%q is not an absolute http(s) URL", secrets.URLForMessage(raw))
	}
	if err := toolspec.ValidatePort(u.Port()); err != nil {
		return fmt.Errorf("%q: %w", secrets.URLForMessage(raw), err)
	}
	return nil
}

func nameHint(name string) string {
	if name == "" {
		return ""
	}
	return " (" + name + ")"
}

// secretNamePattern is a Kubernetes object name (DNS subdomain), as a
// Secret's must be.
var secretNamePattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$`)

// namespacePattern is a Kubernetes namespace name (DNS label).
var namespacePattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// serverNamePattern accepts Kubernetes object names and the usual config
// names; it keeps names usable as tool-name prefixes.
var serverNamePattern = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$`)

// Normalize infers the transport and checks the spec. The error starts with
// the field name so callers can prefix where the spec came from.
func (s *ServerSpec) Normalize() error {
	if s.Name == "" {
		return fmt.Errorf("name: is required")
	}
	if !serverNamePattern.MatchString(s.Name) {
		return fmt.Errorf("name: %q must start with a letter or digit and hold at most 63 of a-z A-Z 0-9 . _ -", s.Name)
	}
	if s.URL != "" && s.Command != "" {
		return fmt.Errorf("url: set either url or command, not both")
	}
	if s.Transport == "" {
		s.Transport = InferTransport(s.URL, s.Command)
	}
	switch s.Transport {
	case TransportStdio:
		if s.Command == "" {
			return fmt.Errorf("command: is required with transport stdio")
		}
	case TransportStreamableHTTP, TransportSSE, TransportWebSocket:
		if s.URL == "" {
			return fmt.Errorf("url: is required with transport %s", s.Transport)
		}
		u, err := url.Parse(s.URL)
		if err != nil || u.Host == "" {
			return fmt.Errorf("url: %q is not an absolute URL", secrets.URLForMessage(s.URL))
		}
		want := map[Transport][]string{
			TransportStreamableHTTP: {"http", "https"},
			TransportSSE:            {"http", "https"},
			TransportWebSocket:      {"ws", "wss", "http", "https"},
		}[s.Transport]
		ok := false
		for _, w := range want {
			ok = ok || u.Scheme == w
		}
		if !ok {
			return fmt.Errorf("url: scheme %q does not fit transport %s (want %s)", u.Scheme, s.Transport, strings.Join(want, " or "))
		}
		if u.User != nil {
			return fmt.Errorf("url: must not carry credentials; use token or headers")
		}
		if err := toolspec.ValidatePort(u.Port()); err != nil {
			return fmt.Errorf("url: %q: %w", secrets.URLForMessage(s.URL), err)
		}
	case "":
		return fmt.Errorf("url: one of url or command is required")
	default:
		return fmt.Errorf("transport: %q is not one of streamable-http, sse, stdio, websocket", s.Transport)
	}
	if s.Token != nil && (s.Token.Env == "") == (s.Token.File == "") {
		return fmt.Errorf("token: set exactly one of env or file")
	}
	if err := s.validateOAuth(); err != nil {
		return err
	}
	if err := s.validateAuth(); err != nil {
		return err
	}
	if err := s.validateUserOAuth(); err != nil {
		return err
	}
	if s.Timeout < 0 {
		return fmt.Errorf("timeout: must not be negative")
	}
	if s.Limits != nil {
		if err := s.Limits.Normalize(); err != nil {
			return fmt.Errorf("limits.%w", err)
		}
	}
	if err := checkResultCap("maxResultChars", s.MaxResultChars); err != nil {
		return err
	}
	if p := s.ToolPolicy; p != nil {
		for field, list := range map[string][]string{"readOnly": p.ReadOnly, "write": p.Write} {
			if err := toolspec.ValidatePatterns(list); err != nil {
				return fmt.Errorf("toolPolicy.%s: %w", field, err)
			}
		}
	}
	if err := s.Tools.Validate(); err != nil {
		return fmt.Errorf("tools.%w", err)
	}
	return nil
}

// InferTransport guesses the transport when a spec does not name one.
func InferTransport(rawURL, command string) Transport {
	switch {
	case command != "":
		return TransportStdio
	case rawURL == "":
		return ""
	case strings.HasPrefix(rawURL, "ws://"), strings.HasPrefix(rawURL, "wss://"):
		return TransportWebSocket
	}
	if u, err := url.Parse(rawURL); err == nil && strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/sse") {
		return TransportSSE
	}
	return TransportStreamableHTTP
}

// ResolveToken reads the bearer token named by Token into BearerToken.
func (s *ServerSpec) ResolveToken() error {
	if s.Token == nil {
		return nil
	}
	v, err := s.Token.read()
	s.BearerToken = v
	return err
}

// read returns the token from its env variable or file. A token never
// comes from a Secret here (the file source has no cluster), so there is no
// SecretReader.
func (t TokenRef) read() (Secret, error) {
	v, err := credential.Resolve(context.Background(), credential.Ref{Env: t.Env, File: t.File}, nil)
	if err != nil {
		return "", err
	}
	return Secret(v), nil
}

func (a AuthSettings) validate(perUpstream Limits) error {
	names := map[string]bool{}
	for i, t := range a.Tokens {
		where := fmt.Sprintf("auth.tokens[%d]%s", i, nameHint(t.Name))
		if t.Name == "" {
			return fmt.Errorf("%s.name: is required", where)
		}
		if names[t.Name] {
			return fmt.Errorf("%s.name: %q is used twice", where, t.Name)
		}
		names[t.Name] = true
		if (t.Token.Env == "") == (t.Token.File == "") {
			return fmt.Errorf("%s.token: set exactly one of env or file", where)
		}
		if _, err := toolspec.CanonicalLevel(t.MaxLevel); err != nil {
			return fmt.Errorf("%s.maxLevel: %w", where, err)
		}
		if err := t.Guardrails.Validate(); err != nil {
			return fmt.Errorf("%s.guardrails.%w", where, err)
		}
		if l := t.Limits; l != nil {
			if err := l.Normalize(); err != nil {
				return fmt.Errorf("%s.limits.%w", where, err)
			}
			if u := perUpstream.MaxInFlight; l.MaxInFlight > 0 && u > 0 && l.MaxInFlight >= u {
				return fmt.Errorf("%s.limits.maxInFlight: %d is not below limits.perUpstream.maxInFlight %d, so this caller could take every slot of an upstream", where, l.MaxInFlight, u)
			}
		}
	}
	for i, sa := range a.ServiceAccounts.Admins {
		ns, name, ok := strings.Cut(sa, "/")
		if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			return fmt.Errorf("auth.serviceAccounts.admins[%d]: %q is not namespace/name", i, sa)
		}
	}
	if an := a.Anonymous; an != nil && an.Enabled {
		if _, err := toolspec.CanonicalLevel(an.MaxLevel); err != nil {
			return fmt.Errorf("auth.anonymous.maxLevel: %w", err)
		}
	}
	if a.OAuth != nil {
		return a.OAuth.validate()
	}
	return nil
}

// sha256Pattern is a hex sha256 digest, as /api/mcp/pins lists them.
var sha256Pattern = regexp.MustCompile(`^[0-9a-f]{64}$`)

func (p PinningSettings) validate() error {
	switch p.Mode {
	case PinningEnforce, PinningWarn, PinningOff:
	default:
		return fmt.Errorf("pinning.mode: %q is not one of enforce, warn, off", p.Mode)
	}
	if p.StateFile != "" && !filepath.IsAbs(p.StateFile) {
		return fmt.Errorf("pinning.stateFile: %q must be an absolute path", p.StateFile)
	}
	for i, a := range p.Approve {
		where := fmt.Sprintf("pinning.approve[%d]", i)
		if a.Server == "" {
			return fmt.Errorf("%s.server: is required", where)
		}
		if a.Tool != "" {
			if _, err := path.Match(a.Tool, ""); err != nil {
				return fmt.Errorf("%s (%s).tool: %q is not a glob: %w", where, a.Server, a.Tool, err)
			}
		}
		if a.SHA256 != "" && !sha256Pattern.MatchString(a.SHA256) {
			return fmt.Errorf("%s (%s).sha256: %q is not 64 lower-case hex digits", where, a.Server, a.SHA256)
		}
	}
	return nil
}

// Equal reports whether two specs would produce the same connection, so the
// registry restarts an upstream only when something that matters changed.
func (s ServerSpec) Equal(o ServerSpec) bool {
	a, _ := json.Marshal(s)
	b, _ := json.Marshal(o)
	return string(a) == string(b) && s.BearerToken == o.BearerToken && s.oauthSecret() == o.oauthSecret() && s.userOAuthSecret() == o.userOAuthSecret()
}

// SplitList splits a comma-separated setting (a flag, an annotation) into
// its trimmed, non-empty items.
func SplitList(v string) []string {
	var out []string
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
