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
	outcomeError       = "error"
)

// callTool is the handler of every published tool: route, call, measure,
// audit. Failures come back as an error result whose text starts with
// "ERROR:", which Purko's executor treats as failure and a model can read.
func (s *Server) callTool(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	s.inflight.Add(1)
	defer s.inflight.Done()
	start := time.Now()
	name := req.Params.Name
	res, srv, err := s.reg.CallTool(ctx, req)
	outcome := outcomeOK
	switch {
	case err == nil && res.IsError:
		outcome = outcomeToolError
	case err == nil:
	case ctx.Err() != nil:
		outcome = outcomeCanceled
	default:
		var unavailable *upstream.UnavailableError
		var unknown *registry.UnknownToolError
		switch {
		case errors.As(err, &unavailable):
			outcome = outcomeUnavailable
		case errors.As(err, &unknown):
			outcome = outcomeUnknown
		default:
			outcome = outcomeError
		}
	}
	if err != nil {
		res = mcp.NewToolResultError("ERROR: " + err.Error())
	}
	elapsed := time.Since(start)
	s.metrics.observeCall(srv, name, outcome, elapsed)
	ev := s.log.Info()
	if outcome != outcomeOK && outcome != outcomeToolError {
		ev = s.log.Warn().Str("error", errString(err))
	}
	ev.Str("audit", "tools/call").Str("session", sessionID(ctx)).Str("tool", name).Str("server", srv).
		Dur("duration", elapsed).Str("outcome", outcome).Msg("tool call")
	return res, nil
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func sessionID(ctx context.Context) string {
	if cs := server.ClientSessionFromContext(ctx); cs != nil {
		return cs.SessionID()
	}
	return ""
}
