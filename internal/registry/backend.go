package registry

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/upstream"
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
	// Bindings are the trusted per-call values (caller, agent, workflow,
	// step) the hub's api tools may map into their requests.
	Bindings map[string]string
	// Relay, when set, brings what an upstream sends during the call to
	// the caller; nil means only the result travels back.
	Relay Relay
}

// Relay receives what an upstream sends while it runs a caller's request.
type Relay = upstream.Relay

// WithRelay makes what an upstream sends during requests made with ctx
// (reads, prompts) reach r.
func WithRelay(ctx context.Context, r Relay) context.Context { return upstream.WithRelay(ctx, r) }

// Status is a point-in-time view of an upstream connection.
type Status = upstream.Status

// State is where a connection stands.
type State = upstream.State

// The states of an upstream.
const (
	StateConnecting = upstream.StateConnecting
	StateConnected  = upstream.StateConnected
	StateError      = upstream.StateError
)

// UnavailableError says an upstream cannot take calls now, and why.
type UnavailableError = upstream.UnavailableError

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
}

var _ Upstream = (*upstream.Client)(nil)

// upstreamBackend runs calls on an upstream connection.
type upstreamBackend struct{ c *upstream.Client }

func (b upstreamBackend) Call(ctx context.Context, call Call) (json.RawMessage, error) {
	if call.Relay != nil {
		ctx = upstream.WithRelay(ctx, call.Relay)
	}
	return b.c.Call(ctx, call.ToolCall)
}

// localBackend runs one of the hub's own tools.
type localBackend struct{ t *LocalTool }

func (b localBackend) Call(ctx context.Context, call Call) (json.RawMessage, error) {
	args := map[string]any{}
	if call.Arguments != nil {
		if err := json.Unmarshal(call.Arguments, &args); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("invalid params: arguments of %s: %v", call.Name, err)}
		}
	}
	out, err := json.Marshal(b.t.Run(ctx, args, call.Bindings))
	if err != nil {
		return nil, fmt.Errorf("encode the result of %s: %w", call.Name, err)
	}
	return out, nil
}

// HubRoute is the route of a tool the server runs itself because it needs
// the caller and session (find_tools): the decision and the audit line are
// the same as for every other tool.
func HubRoute(b Backend, name string, class autonomy.Class) Route {
	return Route{Backend: b, Original: name, Class: class, server: ServerBuiltin}
}
