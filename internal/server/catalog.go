package server

import (
	"context"
	"reflect"
	"slices"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/registry"
)

// publish hands a new catalog to the MCP server. SetTools sends
// notifications/tools/list_changed to every session; the registry already
// debounced the changes. The tools of servers that are down are handed over
// too, so a call of one reaches the pipeline and hears why it cannot run
// instead of "not found"; filterList keeps them out of every list.
func (s *Server) publish(cat *registry.Catalog) {
	seen := make(map[string]bool, len(cat.Tools))
	tools := make([]server.ServerTool, 0, len(cat.Tools))
	add := func(t registry.Tool) {
		if !seen[t.Name] {
			seen[t.Name] = true
			tools = append(tools, server.ServerTool{Tool: t.Def, Handler: s.callTool})
		}
	}
	for _, t := range cat.Tools {
		add(t)
	}
	for _, sv := range cat.Servers {
		for _, t := range sv.Tools {
			add(t)
		}
		// Quarantined tools too: a call must hear why it is refused.
		for _, t := range sv.Quarantined {
			add(t)
		}
	}
	if s.find != nil {
		s.find.rebuild(cat)
		if !seen[findToolsName] {
			tools = append(tools, server.ServerTool{Tool: s.find.def, Handler: s.callTool})
		} else {
			// The hub's find_tools wins the name (route); mcp-go must
			// list the hub's definition, not the upstream's.
			for i := range tools {
				if tools[i].Tool.Name == findToolsName {
					tools[i].Tool = s.find.def
				}
			}
		}
	}
	s.limits.follow(cat)
	// SetTools tells every session the list changed; a rebuild that
	// published the same tools (a reconnect, a name claim saved) must
	// not, or a client rereads its list for nothing, and one that reads
	// only the first event of a reply stream reads that notice instead.
	listed := make([]string, len(cat.Tools))
	for i, t := range cat.Tools {
		listed[i] = t.Name
	}
	if s.published.changed(tools, listed) {
		s.mcp.SetTools(tools...)
	}
	s.publishFeatures(cat)
	s.log.Debug().Uint64("gen", cat.Gen).Int("tools", len(cat.Tools)).Msg("catalog published")
}

// filterList is the AfterListTools hook: each session lists only what it
// may run now, decided by the same function as calls.
func (s *Server) filterList(ctx context.Context, _ any, _ *mcp.ListToolsRequest, res *mcp.ListToolsResult) {
	caller := callers.From(ctx)
	cat := s.reg.Catalog()
	kept := res.Tools[:0]
	for _, t := range res.Tools {
		if ct, ok := cat.Tool(t.Name); ok && visible(caller, ct) {
			kept = append(kept, t)
		}
	}
	res.Tools = kept
	if s.find.applies(caller, len(kept)) {
		res.Tools = s.find.listTools(cat, caller, sessionID(ctx))
	}
}

// publishedTools is the tool list last handed to mcp-go, and the names of
// those tools/list shows (the others belong to servers that are down).
type publishedTools struct {
	mu     sync.Mutex
	tools  []mcp.Tool
	listed []string
}

// changed reports whether tools or the listed names differ from the last
// ones, and keeps them: a server going down changes no definition, but
// what every caller lists.
func (p *publishedTools) changed(tools []server.ServerTool, listed []string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	same := p.tools != nil && len(p.tools) == len(tools) && slices.Equal(p.listed, listed)
	for i := 0; same && i < len(tools); i++ {
		same = p.tools[i].Name == tools[i].Tool.Name
	}
	for i := 0; same && i < len(tools); i++ {
		same = reflect.DeepEqual(p.tools[i], tools[i].Tool)
	}
	if same {
		return false
	}
	p.listed = listed
	p.tools = make([]mcp.Tool, len(tools))
	for i, t := range tools {
		p.tools[i] = t.Tool
	}
	return true
}
