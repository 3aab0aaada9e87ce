package server

import (
	"bytes"
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
	"github.com/purko-io/mcp-hub/internal/dispatch"
	"github.com/purko-io/mcp-hub/internal/features"
	"github.com/purko-io/mcp-hub/internal/findtools"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/pipeline"
	"github.com/purko-io/mcp-hub/internal/registry"
	"github.com/purko-io/mcp-hub/internal/rounds"
	"github.com/purko-io/mcp-hub/internal/usergrants"
)

// tools is the tools capability on the hub's dispatcher
// (internal/dispatch): every tools/call on every face reaches the pipeline
// by serveCall, a name no server offers included (audited, counted and
// limited like the rest), and tools/list is answered from the catalog
// (view), the same way the /mcp fast path answers it from its cache
// (internal/toollist). It keeps what was last published, which a
// 2026-07-28 call's headers are checked against. mcp-go's tool table
// stays empty: it only declares the tools capability on initialize.
type tools struct {
	reg  *registry.Registry
	find *findtools.Finder // nil: tool search is off
	pipe *pipeline.Pipeline
	// relayFor brings what an upstream sends during a call to the
	// caller's session.
	relayFor func(context.Context) registry.Relay
	// rounds keep a 2026-07-28 caller's calls between rounds, and askFor
	// relays to such a call's rounds.
	rounds    *rounds.Rounds
	askFor    func(context.Context, rounds.Ask, bool) registry.Relay
	published publishedTools
}

// checkParamHeaders refuses a 2026-07-28 call whose Mcp-Param-* headers
// disagree with its arguments (the tool's x-mcp-header annotations), as
// mcp-go refuses one to a tool in its table. Only a request that came over
// HTTP has the headers to check.
func (s *tools) checkParamHeaders(h http.Header, call jsonrpc.ToolCall) error {
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

// publishedDefs are the definitions of every tool a call can name: the
// listed ones, those of servers that are down or quarantined (a call of
// one hears why it cannot run), and the hub's find_tools, which wins its
// name while tool search is on.
func (s *tools) publishedDefs(cat *registry.Catalog) []mcp.Tool {
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
func (s *tools) listedDef(t registry.Tool) mcp.Tool {
	if s.find != nil && t.Name == findtools.Name {
		return s.find.Def()
	}
	return t.Def
}

// view yields the tools caller's tools/list shows, in the catalog's order
// (by name): the one decision a list is built by, the same as calls'
// (pipeline.Visible), which the /mcp list cache builds its views by too.
func (s *tools) view(cat *registry.Catalog, caller callers.Caller) iter.Seq[mcp.Tool] {
	return func(yield func(mcp.Tool) bool) {
		for _, t := range cat.Tools {
			if pipeline.Visible(caller, t) && !yield(s.listedDef(t)) {
				return
			}
		}
	}
}

// publish takes a new catalog: the index of tool search, the tools
// whose arguments are mirrored into headers, and whether what is
// published changed since the last catalog. A rebuild that published the
// same tools (a reconnect, a name claim saved) is not a change, or a
// client rereads its list for nothing, and one that reads only the first
// event of a reply stream reads that notice instead.
func (s *tools) publish(cat *registry.Catalog) (changed bool) {
	if s.find != nil {
		s.find.Rebuild(cat)
	}
	listed := make([]string, len(cat.Tools))
	for i, t := range cat.Tools {
		listed[i] = t.Name
	}
	changed = s.published.changed(s.publishedDefs(cat), listed)
	s.published.keepParamTools(cat)
	s.published.gen.Store(cat.Gen)
	return changed
}

// serveList serves tools/list through the pipeline (a List): caller's
// view of the catalog, or the short list of tool search. A list is one page; a cursor (the name after which
// to go on, as mcp-go's) is honoured.
func (s *tools) serveList(ctx context.Context, req *dispatch.Request) (json.RawMessage, error) {
	var p struct {
		Cursor string `json:"cursor"`
	}
	if len(req.Msg.Params) > 0 {
		if err := json.Unmarshal(req.Msg.Params, &p); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params of tools/list: " + err.Error()}
		}
	}
	caller := callers.From(ctx)
	out := s.pipe.Serve(ctx, caller, req.Session, pipeline.Request{Method: req.Msg.Method, List: true}, func(context.Context, json.RawMessage) (json.RawMessage, error) {
		cat := s.reg.Catalog()
		tools := []mcp.Tool{}
		for def := range s.view(cat, caller) {
			tools = append(tools, def)
		}
		if s.find.Applies(caller, len(tools)) {
			tools = s.find.ListTools(cat, caller, req.Session)
		}
		if p.Cursor != "" {
			after, err := base64.StdEncoding.DecodeString(p.Cursor)
			if err != nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params of tools/list: cursor: " + err.Error()}
			}
			tools = slices.DeleteFunc(tools, func(t mcp.Tool) bool { return t.Name <= string(after) })
		}
		return json.Marshal(mcp.ListToolsResult{Tools: tools})
	})
	if out.Error != nil {
		return nil, out.Error
	}
	return out.Result, nil
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

// serveCall serves tools/call on every face: the call as the gate read
// it, checked against a 2026-07-28 request's Mcp-Param-* headers, run by
// the pipeline. What the upstream sends during the call goes to the
// caller's session when the request came on one that can carry it (a
// connection, a reply stream); a plain JSON answer carries nothing else.
func (s *tools) serveCall(ctx context.Context, req *dispatch.Request) (res json.RawMessage, err error) {
	call := req.Call
	if call == nil {
		c, perr := jsonrpc.ParseToolCall(req.Msg.Params)
		if perr != nil {
			return nil, perr
		}
		call = &c
	}
	if req.Header != nil {
		if err := s.checkParamHeaders(req.Header, *call); err != nil {
			return nil, err
		}
	}
	defer func() {
		// The dispatcher's recovery would name the method; a tool's
		// name says which of hundreds failed.
		if r := recover(); r != nil {
			res, err = nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("panic recovered in %s tool handler: %v", call.Name, r)}
		}
	}()
	if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern && rounds.Takes(call) {
		// Its upstream's server requests come back as rounds of the call.
		caller, id, url := callers.From(ctx), bytes.Clone(req.Msg.ID), features.TakesURLElicitation(ctx, call.Meta)
		res, err := s.rounds.Serve(ctx, string(caller.AppendKey(nil)), call, func(ctx context.Context, call jsonrpc.ToolCall, ask rounds.Ask) pipeline.Result {
			return s.pipe.Run(s.pipe.WithRequestID(ctx, id), caller, "", call, s.askFor(ctx, ask, url))
		})
		if err != nil {
			return usergrants.ForCaller(url, err)
		}
		return res, nil
	}
	var relay registry.Relay
	if server.ClientSessionFromContext(ctx) != nil {
		relay = s.relayFor(ctx)
	}
	out := s.pipe.Run(s.pipe.WithRequestID(ctx, req.Msg.ID), callers.From(ctx), req.Session, *call, relay)
	if out.Error != nil {
		return usergrants.ForCaller(features.TakesURLElicitation(ctx, call.Meta), out.Error)
	}
	return out.Result, nil
}

// sessionID is the id of the mcp-go session ctx is served in, "" for none.
func sessionID(ctx context.Context) string {
	if cs := server.ClientSessionFromContext(ctx); cs != nil {
		return cs.SessionID()
	}
	return ""
}
