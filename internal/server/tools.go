package server

import (
	"context"
	"errors"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/purko-io/mcp-hub/internal/registry"
	"github.com/purko-io/mcp-hub/internal/upstream"
)

// publish hands a new catalog to the MCP server. SetTools sends
// notifications/tools/list_changed to every session; the registry already
// debounced the changes.
func (s *Server) publish(cat *registry.Catalog) {
	tools := make([]server.ServerTool, len(cat.Tools))
	for i, t := range cat.Tools {
		tools[i] = server.ServerTool{Tool: t.Def, Handler: s.callTool}
	}
	s.mcp.SetTools(tools...)
	s.log.Debug().Uint64("gen", cat.Gen).Int("tools", len(tools)).Msg("catalog published")
}

// Outcomes of a call, as counted in metrics and written in the audit line.
const (
	outcomeOK          = "ok"
	outcomeToolError   = "tool_error"
	outcomeUnavailable = "unavailable"
	outcomeUnknown     = "unknown_tool"
	outcomeCanceled    = "canceled"
	outcomeRPCError    = "rpc_error"
	outcomeError       = "error"
)

// callTool is the handler of every published tool: route, call, measure,
// audit. Failures come back as an error result whose text starts with
// "ERROR:", which Purko's executor treats as failure and a model can read.
func (s *Server) callTool(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	s.calls.start()
	defer s.calls.done()
	start := time.Now()
	res, srv, err := s.reg.CallTool(ctx, req)
	s.record(ctx, sessionID(ctx), req.Params.Name, srv, start, err == nil && res.IsError, err)
	var rpcErr *upstream.RPCError
	switch {
	case errors.As(err, &rpcErr):
		return nil, rpcErr // the upstream's JSON-RPC error stays one
	case err != nil:
		res = mcp.NewToolResultError("ERROR: " + err.Error())
	}
	return res, nil
}

// record writes the metrics and the audit line of one call (never its
// arguments: they may hold secrets).
func (s *Server) record(ctx context.Context, session, tool, srv string, start time.Time, toolError bool, err error) {
	elapsed := time.Since(start)
	outcome := outcomeOf(ctx, toolError, err)
	s.metrics.observeCall(srv, tool, outcome, elapsed)
	ev := s.log.Info()
	if outcome != outcomeOK && outcome != outcomeToolError {
		ev = s.log.Warn().Str("error", err.Error())
	}
	ev.Str("audit", "tools/call").Str("session", session).Str("tool", tool).Str("server", srv).
		Dur("duration", elapsed).Str("outcome", outcome).Msg("tool call")
}

func outcomeOf(ctx context.Context, toolError bool, err error) string {
	var unavailable *upstream.UnavailableError
	var unknown *registry.UnknownToolError
	var rpcErr *upstream.RPCError
	switch {
	case err == nil && toolError:
		return outcomeToolError
	case err == nil:
		return outcomeOK
	case ctx.Err() != nil:
		return outcomeCanceled
	case errors.As(err, &unavailable):
		return outcomeUnavailable
	case errors.As(err, &unknown):
		return outcomeUnknown
	case errors.As(err, &rpcErr):
		return outcomeRPCError
	}
	return outcomeError
}

func sessionID(ctx context.Context) string {
	if cs := server.ClientSessionFromContext(ctx); cs != nil {
		return cs.SessionID()
	}
	return ""
}
