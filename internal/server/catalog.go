package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/findtools"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/pipeline"
	"github.com/purko-io/mcp-hub/internal/registry"
)

// One router. mcp-go's tool table holds one tool, the router, from New on:
// a hook (routeCall) points every tools/call at it, whatever name the
// caller sent, and the router's handler runs the pipeline with that name.
// So every call reaches the pipeline on every face mcp-go serves, a name no
// server offers included (audited, counted and limited like the rest), and
// nothing is kept in step with mcp-go: tools/list is answered from the
// catalog (view), the same way the /mcp fast path answers it.

// routerName is the name of the one tool mcp-go knows. A caller never sees
// it: tools/list is the catalog's, and a call of this name is a call of an
// unknown tool like any other (the hook records the caller's name first).
const routerName = "mcp-hub/router"

// calledToolHeader carries the caller's tool name from routeCall to the
// router. routeCall always sets it, so a caller cannot send its own.
const calledToolHeader = "X-Mcp-Hub-Called-Tool"

// routerTool is the router's definition in mcp-go's table. It declares no
// task support: the hub offers no tasks capability, so a call's task
// member is ignored and the call runs as a plain one.
func routerTool() mcp.Tool {
	return mcp.NewTool(routerName, mcp.WithDescription("mcp-hub's router: never listed"))
}

// routeCall is the BeforeCallTool hook: mcp-go runs it before it looks the
// tool up. It records the caller's name and points the lookup at the
// router.
func routeCall(_ context.Context, _ any, req *mcp.CallToolRequest) {
	h := make(http.Header, len(req.Header)+1)
	for k, v := range req.Header {
		h[k] = v
	}
	h.Set(calledToolHeader, req.Params.Name)
	req.Header = h
	req.Params.Name = routerName
}

// checkParamHeaders refuses a 2026-07-28 call whose Mcp-Param-* headers
// disagree with its arguments, as mcp-go refuses one to a tool in its
// table: it checks before any hook, by the tool's x-mcp-header
// annotations, and its table holds the router alone. Only a request that
// came over HTTP has the headers to check.
func (s *Server) checkParamHeaders(h http.Header, call jsonrpc.ToolCall) error {
	if !mcp.IsModernProtocol(h.Get(mcp.HeaderProtocolVersion)) {
		return nil
	}
	if !s.published.mirrorsParams(call.Name) {
		return nil
	}
	t, ok := s.reg.Catalog().Tool(call.Name)
	if !ok || len(mcp.ExtractParamHeaderBindings(&t.Def)) == 0 {
		return nil
	}
	params, err := json.Marshal(struct {
		Arguments json.RawMessage `json:"arguments,omitempty"`
	}{call.Arguments})
	if err != nil {
		return fmt.Errorf("check the Mcp-Param-* headers of %s: %w", call.Name, err)
	}
	lookup := func(name string) (string, bool) {
		v := h.Values(name)
		if len(v) == 0 {
			return "", false
		}
		return v[0], true
	}
	if err := mcp.ValidateParamHeadersLookup(lookup, &t.Def, params); err != nil {
		return &jsonrpc.Error{Code: mcp.HEADER_MISMATCH, Message: err.Error()}
	}
	return nil
}

// publish takes a new catalog: the index of tool search, the servers'
// limits, and a notifications/tools/list_changed to every session when
// what is published changed (the registry already debounced the changes).
func (s *Server) publish(cat *registry.Catalog) {
	if s.find != nil {
		s.find.Rebuild(cat)
	}
	s.pipe.Follow(cat)
	// A rebuild that published the same tools (a reconnect, a name claim
	// saved) tells no session, or a client rereads its list for nothing,
	// and one that reads only the first event of a reply stream reads
	// that notice instead.
	listed := make([]string, len(cat.Tools))
	for i, t := range cat.Tools {
		listed[i] = t.Name
	}
	if s.published.changed(s.publishedDefs(cat), listed) {
		s.mcp.SendNotificationToAllClients(string(mcp.MethodNotificationToolsListChanged), nil)
	}
	s.published.keepParamTools(cat)
	s.published.gen.Store(cat.Gen)
	s.feat.Publish(cat)
	s.log.Debug().Uint64("gen", cat.Gen).Int("tools", len(cat.Tools)).Msg("catalog published")
}

// publishedDefs are the definitions of every tool a call can name: the
// listed ones, those of servers that are down or quarantined (a call of
// one hears why it cannot run), and the hub's find_tools, which wins its
// name while tool search is on.
func (s *Server) publishedDefs(cat *registry.Catalog) []mcp.Tool {
	seen := make(map[string]bool, len(cat.Tools))
	defs := make([]mcp.Tool, 0, len(cat.Tools)+1)
	add := func(t registry.Tool) {
		if !seen[t.Name] {
			seen[t.Name] = true
			defs = append(defs, s.listedDef(t))
		}
	}
	for _, t := range cat.Tools {
		add(t)
	}
	for _, sv := range cat.Servers {
		for _, t := range sv.Tools {
			add(t)
		}
		for _, t := range sv.Quarantined {
			add(t)
		}
	}
	if s.find != nil && !seen[findtools.Name] {
		defs = append(defs, s.find.Def())
	}
	return defs
}

// listedDef is the definition tools/list shows for t: the hub's own for
// find_tools while tool search is on (route sends its calls to the hub).
func (s *Server) listedDef(t registry.Tool) mcp.Tool {
	if s.find != nil && t.Name == findtools.Name {
		return s.find.Def()
	}
	return t.Def
}

// view yields the tools caller's tools/list shows, in the catalog's order
// (by name), with each one's index in cat.Tools: the one way a list is
// built, by the same decision as calls (visible).
func (s *Server) view(cat *registry.Catalog, caller callers.Caller) iter.Seq2[int, mcp.Tool] {
	return func(yield func(int, mcp.Tool) bool) {
		for i, t := range cat.Tools {
			if pipeline.Visible(caller, t) && !yield(i, s.listedDef(t)) {
				return
			}
		}
	}
}

// listTools is the AfterListTools hook: mcp-go listed its table (the router
// alone); the answer is caller's view of the catalog, or the short list of
// tool search. mcp-go has no page size here, so a list is one page; a
// cursor (the name after which to go on, as mcp-go's) is honoured as
// mcp-go would, and mcp-go has already refused one it cannot read.
func (s *Server) listTools(ctx context.Context, _ any, req *mcp.ListToolsRequest, res *mcp.ListToolsResult) {
	caller := callers.From(ctx)
	cat := s.reg.Catalog()
	tools := []mcp.Tool{}
	for _, def := range s.view(cat, caller) {
		tools = append(tools, def)
	}
	if s.find.Applies(caller, len(tools)) {
		tools = s.find.ListTools(cat, caller, sessionID(ctx))
	}
	if req != nil && req.Params.Cursor != "" {
		after, _ := base64.StdEncoding.DecodeString(string(req.Params.Cursor))
		tools = slices.DeleteFunc(tools, func(t mcp.Tool) bool { return t.Name <= string(after) })
	}
	res.Tools, res.NextCursor = tools, ""
}

// publishedTools is what was last published: the definitions of every
// tool a call can name and the names tools/list shows (the others belong
// to servers that are down), and the generation of the catalog.
type publishedTools struct {
	mu     sync.Mutex
	tools  []mcp.Tool
	listed []string
	gen    atomic.Uint64
	// paramTools are the names of the tools whose arguments a 2026-07-28
	// caller mirrors into Mcp-Param-* headers (x-mcp-header), found once
	// per catalog: finding them re-encodes a tool's schema, too much for
	// every call.
	paramTools atomic.Pointer[map[string]bool]
}

// keepParamTools finds the tools of cat whose arguments are mirrored into
// headers.
func (p *publishedTools) keepParamTools(cat *registry.Catalog) {
	names := map[string]bool{}
	for i := range cat.Tools {
		if len(mcp.ExtractParamHeaderBindings(&cat.Tools[i].Def)) > 0 {
			names[cat.Tools[i].Name] = true
		}
	}
	p.paramTools.Store(&names)
}

// mirrorsParams reports whether the published tool name mirrors arguments
// into headers; true before the first catalog, when nobody knows.
func (p *publishedTools) mirrorsParams(name string) bool {
	names := p.paramTools.Load()
	return names == nil || (*names)[name]
}

// changed reports whether tools or the listed names differ from the last
// ones, and keeps them: a server going down changes no definition, but
// what every caller lists.
func (p *publishedTools) changed(tools []mcp.Tool, listed []string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	same := p.tools != nil && len(p.tools) == len(tools) && slices.Equal(p.listed, listed)
	for i := 0; same && i < len(tools); i++ {
		same = p.tools[i].Name == tools[i].Name
	}
	for i := 0; same && i < len(tools); i++ {
		same = reflect.DeepEqual(p.tools[i], tools[i])
	}
	if same {
		return false
	}
	p.listed, p.tools = listed, tools
	return true
}

// callTool is the router's handler: mcp-go runs it for every
// tools/call on every face it serves, with the caller's tool name in
// calledToolHeader. The gate has already refused any message whose strict
// reading differs from mcp-go's, so the call read from req is the one the
// caller sent. Calls here go through the relay: they come from sessions
// that take progress, log messages or server requests, or from faces with
// one channel per session.
func (s *Server) callTool(ctx context.Context, req mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
	call, err := toolCallOf(req)
	defer func() {
		// mcp-go's recovery (server.WithRecovery) would name the router.
		if r := recover(); r != nil {
			res, err = nil, s.marks.mark(&jsonrpc.Error{Code: jsonrpc.CodeInternalError,
				Message: fmt.Sprintf("panic recovered in %s tool handler: %v", call.Name, r)})
		}
	}()
	if err == nil {
		err = s.checkParamHeaders(req.Header, call)
	}
	if err != nil {
		return nil, s.marks.mark(jsonrpc.AsError(err))
	}
	out := s.pipe.Run(ctx, callers.From(ctx), sessionID(ctx), call, s.relayFor(ctx))
	if out.Error != nil {
		// Each face mcp-go writes to puts the error back in place of
		// mcp-go's -32603 (reply.go).
		return nil, s.marks.mark(out.Error)
	}
	raw := out.Result
	return mcp.ParseCallToolResult(&raw)
}

// toolCallOf turns mcp-go's reading of a tools/call, routed to the router
// by routeCall, into the hub's.
func toolCallOf(req mcp.CallToolRequest) (jsonrpc.ToolCall, error) {
	p := req.Params
	call := jsonrpc.ToolCall{Name: req.Header.Get(calledToolHeader), Arguments: p.RawArguments}
	var err error
	if call.Arguments == nil && p.Arguments != nil {
		if call.Arguments, err = json.Marshal(p.Arguments); err != nil {
			return call, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params: arguments: " + err.Error()}
		}
	}
	if p.Meta != nil {
		b, err := json.Marshal(p.Meta)
		if err == nil {
			err = json.Unmarshal(b, &call.Meta)
		}
		if err != nil {
			return call, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params: _meta: " + err.Error()}
		}
	}
	if len(p.InputResponses) > 0 {
		call.InputResponses, _ = json.Marshal(p.InputResponses)
	}
	if p.RequestState != "" {
		call.RequestState, _ = json.Marshal(p.RequestState)
	}
	return call, nil
}

// sessionID is the id of the mcp-go session ctx is served in, "" for none.
func sessionID(ctx context.Context) string {
	if cs := server.ClientSessionFromContext(ctx); cs != nil {
		return cs.SessionID()
	}
	return ""
}
