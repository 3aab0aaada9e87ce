package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/upstream"
	"github.com/purko-io/mcp-hub/internal/upstream/relay"
)

// The registry hands the server what it needs to run a call and nothing
// more: a Backend per route, and the Upstream view of a connection for
// resources, prompts, completions and logging. The server never holds an
// upstream client itself.

// Backend runs one decided tools/call: an upstream's tool, or one of the
// hub's own.
type Backend interface {
	Call(ctx context.Context, call Call) (json.RawMessage, error)
}

// Call is a tools/call as a backend runs it.
type Call struct {
	// ToolCall is the call as decided; Name is the backend's own name of
	// the tool (Route.Original).
	jsonrpc.ToolCall
	// Bindings are the trusted per-call values the hub's api tools may map
	// into their requests.
	Bindings Bindings
	// Relay, when set, brings what an upstream sends during the call to
	// the caller; nil means only the result travels back.
	Relay Relay
}

// Relay receives what an upstream sends while it runs a caller's request:
// the server implements it per caller. It is the registry's own, so the
// server needs nothing of package upstream; the registry hands it on to
// the connection (WithRelay, upstreamBackend), which takes any value with
// these methods.
type Relay interface {
	// Notify sends a notification (progress with the caller's own token,
	// or a log message) to the caller.
	Notify(method string, params map[string]any)
	CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error)
	Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error)
	ListRoots(ctx context.Context, req mcp.ListRootsRequest) (*mcp.ListRootsResult, error)
}

// A Relay is what the connection relays to: the compiler keeps the two in
// step.
var _ relay.Relay = Relay(nil)

// WithRelay makes what an upstream sends during requests made with ctx
// (reads, prompts) reach r.
func WithRelay(ctx context.Context, r Relay) context.Context { return relay.With(ctx, r) }

// State is where a server stands, as listings, metrics and MCPServer
// statuses show it.
type State string

// The states of a server.
const (
	StateConnecting State = "connecting"
	StateConnected  State = "connected"
	StateError      State = "error"
)

// Status is a server's state as the catalog lists it.
type Status struct {
	State    State
	Error    string    // last error, when State is error; for everyone
	Protocol string    // negotiated MCP revision
	ListedAt time.Time // last successful tools/list
	// Info is what the server announced of itself (serverInfo): its
	// version, title and description, published by the MCP Registry API.
	Info upstream.Info
	// Detail is what the upstream answered that Error does not show: the
	// start of its body, redacted. Only admins and the log see it.
	Detail string
}

// statusOf is the catalog's view of a connection's status.
func statusOf(s upstream.Status) Status {
	return Status{State: State(s.State), Error: s.Error, Protocol: s.Protocol, ListedAt: s.ListedAt, Detail: s.Detail, Info: s.Info}
}

// UnavailableError says a tool's server cannot take calls now, and why:
// the tool is known, its server is not connected (or fails fast after
// repeated failures), as opposed to a tool nobody offers
// (UnknownToolError). Reason is redacted of the server's credentials and
// meant for people.
type UnavailableError struct {
	Server string
	Reason string
	// err is the connection's error this one stands for, when it came from
	// a call: its text is kept as it was.
	err error
}

func (e *UnavailableError) Error() string {
	if e.err != nil {
		return e.err.Error()
	}
	return fmt.Sprintf("upstream %s is unavailable: %s", e.Server, e.Reason)
}

func (e *UnavailableError) Unwrap() error { return e.err }

// unavailableOf turns a call's error that says the connection was down
// into the registry's *UnavailableError, which the server tells apart;
// any other error passes unchanged.
func unavailableOf(err error) error {
	if err == nil {
		return nil // before the target: errors.As makes it escape
	}
	var ue *upstream.UnavailableError
	if !errors.As(err, &ue) {
		return err
	}
	return &UnavailableError{Server: ue.Server, Reason: ue.Reason, err: err}
}

// Upstream is what the server may do with a connected upstream besides
// calling its tools.
type Upstream interface {
	Name() string
	ReadResource(ctx context.Context, uri string, req mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error)
	GetPrompt(ctx context.Context, name string, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error)
	Complete(ctx context.Context, ref any, arg mcp.CompleteArgument, cctx mcp.CompleteContext) (*mcp.Completion, error)
	Subscribe(ctx context.Context, uri string) error
	Unsubscribe(ctx context.Context, uri string) error
	SetLogLevel(ctx context.Context, level mcp.LoggingLevel) error
	// Request sends a request whose params name the upstream's own
	// objects (a task's id) and returns the result's bytes.
	Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
}

var _ Upstream = (*upstream.Extras)(nil)

// upstreamBackend runs calls on an upstream connection.
type upstreamBackend struct{ c *upstream.Client }

func (b upstreamBackend) Call(ctx context.Context, call Call) (json.RawMessage, error) {
	if call.Relay != nil {
		ctx = relay.With(ctx, call.Relay)
	}
	res, err := b.c.Call(ctx, call.ToolCall)
	return res, unavailableOf(err)
}

// localBackend runs one of the hub's own tools.
// Bindings are the trusted values of one call (who calls, for which
// agent, workflow and step). A value, not a map: only the hub's own tools
// read them, and a call to an upstream should not pay for a map.
type Bindings struct{ Caller, Agent, Workflow, Step string }

// Map is b by the names an api tool's bindings refer to.
func (b Bindings) Map() map[string]string {
	return map[string]string{"caller": b.Caller, "agent": b.Agent, "workflow": b.Workflow, "step": b.Step}
}

type localBackend struct{ t *LocalTool }

func (b localBackend) Call(ctx context.Context, call Call) (json.RawMessage, error) {
	args := map[string]any{}
	if call.Arguments != nil {
		if err := json.Unmarshal(call.Arguments, &args); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("invalid params: arguments of %s: %v", call.Name, err)}
		}
	}
	out, err := json.Marshal(b.t.Run(ctx, args, call.Bindings.Map()))
	if err != nil {
		return nil, fmt.Errorf("encode the result of %s: %w", call.Name, err)
	}
	return out, nil
}

// HubRoute is the route of a tool the server runs itself because it needs
// the caller and session (find_tools): the decision and the audit line are
// the same as for every other tool. It belongs to no endpoint's scope: it
// is in every one (autonomy.Scope), showing only what the scope lets it.
func HubRoute(b Backend, name string, class autonomy.Class) Route {
	return Route{Backend: b, Original: name, Class: class, server: ServerBuiltin, everyScope: true}
}
