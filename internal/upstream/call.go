package upstream

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/mark3labs/mcp-go/mcp"

	"go.opentelemetry.io/otel/trace"

	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/upstream/calltoken"
	"github.com/purko-io/mcp-hub/internal/upstream/relay"
)

// RPCError is a JSON-RPC error an upstream answered with. It is passed to
// the caller unchanged: the upstream is alive, the request was wrong.
type RPCError = jsonrpc.Error

// Call runs one tools/call that the hub has decided on: call.Name is the
// tool's name at this upstream, and the request the upstream sees is built
// from call's fields alone. With a relay in ctx (relay.With), what the
// upstream sends during the call (progress, log messages, sampling,
// elicitation, roots) reaches the caller; without one, the call takes the
// shortest way: one POST on a streamable HTTP connection, arguments and
// result passed through as bytes.
//
// With a tracer in the options the call gets a CLIENT span, whose context
// the upstream receives in place of any the caller sent; without one the
// caller's trace context passes on unchanged (tracing.go).
func (c *Client) Call(ctx context.Context, call jsonrpc.ToolCall) (json.RawMessage, error) {
	if c.opts.Tracer != nil {
		var span trace.Span
		ctx, span = startCall(ctx, c.opts.Tracer, c.spec.Name, c.spec.Transport, call.Name)
		defer span.End()
		call = tracedCall(ctx, call, headerTransport(c.spec.Transport))
		res, err := c.callOnce(ctx, call)
		endCall(span, err)
		return res, err
	}
	ctx, call = carriedCall(ctx, call, headerTransport(c.spec.Transport))
	return c.callOnce(ctx, call)
}

// callOnce is Call without its span.
func (c *Client) callOnce(ctx context.Context, call jsonrpc.ToolCall) (json.RawMessage, error) {
	ctx, b, err := calltoken.On(ctx, c.perCall, c.spec.Name)
	if err != nil {
		return nil, err
	}
	res, err := c.call(ctx, call.Name, func(ctx context.Context, cn *conn) (any, error) {
		res, err := cn.send(ctx, call)
		return res, b.Failed(err)
	})
	if err != nil {
		c.elicitationsRequired(ctx, err)
		return nil, b.Err(err)
	}
	out, err := c.cred.Result(res.(json.RawMessage))
	return b.Result(out), err
}

// elicitationsRequired remembers the URL-mode elicitations of a -32042
// (URL elicitation required) error with the caller's relay, so that their
// notifications/elicitation/complete, which come after the call has
// failed, reach this caller. The error itself passes on unchanged.
func (c *Client) elicitationsRequired(ctx context.Context, err error) {
	r := relay.From(ctx)
	var rpcErr *RPCError
	if r == nil || !errors.As(err, &rpcErr) || rpcErr.Code != mcp.URL_ELICITATION_REQUIRED {
		return
	}
	var data struct {
		Elicitations []struct {
			ElicitationID string `json:"elicitationId"`
		} `json:"elicitations"`
	}
	if json.Unmarshal(rpcErr.Data, &data) != nil {
		return
	}
	for _, e := range data.Elicitations {
		c.relays.Elicited(e.ElicitationID, r)
	}
}
