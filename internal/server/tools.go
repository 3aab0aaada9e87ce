package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/purko-io/mcp-hub/internal/autonomy"
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
	s.publishFeatures(cat)
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
	outcomeDenied      = "denied"
	outcomeError       = "error"
)

// callTool is the handler of every published tool: route, decide, call,
// measure, audit. Failures come back as an error result whose text starts
// with "ERROR:" (or "BLOCKED:" for a denial), which Purko's executor treats
// as failure and a model can read.
func (s *Server) callTool(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	s.calls.start()
	defer s.calls.done()
	start := time.Now()
	caller := callerFrom(ctx)
	name := req.Params.Name
	rt, err := s.reg.Lookup(name)
	if err == nil {
		if denial := decide(caller, name, rt); denial != "" {
			s.recordDenial(sessionID(ctx), caller, name, rt, denial)
			return mcp.NewToolResultError(denial), nil
		}
	}
	var res *mcp.CallToolResult
	srv := ""
	switch {
	case err == nil && rt.Local != nil:
		srv = rt.Server()
		res = rt.Local.Run(ctx, req.GetArguments(), caller.bindings())
	case err == nil:
		srv = rt.Server()
		res, err = rt.Client.CallTool(upstream.WithRelay(ctx, s.relayFor(ctx)), rt.Original, req)
	}
	s.record(ctx, sessionID(ctx), caller, name, srv, start, err == nil && res.IsError, err)
	var rpcErr *upstream.RPCError
	switch {
	case errors.As(err, &rpcErr):
		return nil, rpcErr // the upstream's JSON-RPC error stays one
	case err != nil:
		res = mcp.NewToolResultError("ERROR: " + err.Error())
	}
	return res, nil
}

// decide is the one decision for listing and calling: it returns Purko's
// BLOCKED text when caller may not run the tool, or "".
func decide(caller Caller, published string, rt registry.Route) string {
	agent := ""
	if rt.Local != nil {
		agent = rt.Local.Agent
	}
	return decideTool(caller, published, rt.Original, rt.Class, agent)
}

func decideTool(caller Caller, published, original string, class autonomy.Class, agent string) string {
	if agent != "" && agent != caller.verifiedAgent {
		return fmt.Sprintf("BLOCKED: tool '%s' belongs to agent %s.", published, agent)
	}
	if !autonomy.Allowed(caller.Level, class) {
		return autonomy.Denial(caller.Level, published)
	}
	// An agent's own api tool is in its tool list by definition.
	if agent == "" && caller.Allow != nil && !caller.Allow.Permits(published, original) {
		return fmt.Sprintf("BLOCKED: tool '%s' is not in the tool list of %s.", published, caller.Name)
	}
	return ""
}

// visible reports whether caller's tools/list shows t.
func visible(caller Caller, t registry.Tool) bool {
	return decideTool(caller, t.Name, t.Original, t.Class, t.Agent) == ""
}

// filterList is the AfterListTools hook: each session lists only what it
// may run, decided by the same function as calls.
func (s *Server) filterList(ctx context.Context, _ any, _ *mcp.ListToolsRequest, res *mcp.ListToolsResult) {
	caller := callerFrom(ctx)
	cat := s.reg.Catalog()
	kept := res.Tools[:0]
	for _, t := range res.Tools {
		if ct, ok := cat.Tool(t.Name); ok && visible(caller, ct) {
			kept = append(kept, t)
		}
	}
	res.Tools = kept
}

// record writes the metrics and the audit line of one call (never its
// arguments: they may hold secrets).
func (s *Server) record(ctx context.Context, session string, caller Caller, tool, srv string, start time.Time, toolError bool, err error) {
	elapsed := time.Since(start)
	outcome := outcomeOf(ctx, toolError, err)
	s.metrics.observeCall(srv, tool, outcome, elapsed)
	ev := s.log.Info()
	if outcome != outcomeOK && outcome != outcomeToolError {
		ev = s.log.Warn().Str("error", err.Error())
	}
	ev.Str("audit", "tools/call").Str("session", session).Str("caller", caller.Name).Str("level", caller.Level.String()).
		Str("tool", tool).Str("server", srv).Str("decision", "allowed").
		Dur("duration", elapsed).Str("outcome", outcome).Msg("tool call")
}

// recordDenial writes the audit line and metric of a refused call.
func (s *Server) recordDenial(session string, caller Caller, tool string, rt registry.Route, reason string) {
	s.metrics.observeCall(rt.Server(), tool, outcomeDenied, 0)
	s.log.Warn().Str("audit", "tools/call").Str("session", session).Str("caller", caller.Name).Str("level", caller.Level.String()).
		Str("tool", tool).Str("server", rt.Server()).Str("decision", "denied").Str("reason", reason).
		Str("class", rt.Class.Reason).Str("outcome", outcomeDenied).Msg("tool call denied")
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
