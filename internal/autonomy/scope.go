package autonomy

import (
	"slices"
	"strings"

	"github.com/purko-io/mcp-hub/internal/toolspec"
)

// Scope is what an endpoint under /servers/NAME/ publishes: one upstream
// server's tools, or a virtual server's chosen servers and tools. Like an
// Allowlist it only ever narrows a caller's view; a nil *Scope (the hub's
// own /mcp) narrows nothing.
type Scope struct {
	name    string
	servers map[string]bool
	// tools are Normalize'd names and patterns.
	tools []string
	// key is what the scope publishes as one string (Key).
	key string
}

// ServerScope is the endpoint of one server: every tool of it.
func ServerScope(server string) *Scope {
	return &Scope{name: server, servers: map[string]bool{server: true}, key: "s\x00" + server}
}

// VirtualScope is the endpoint of a virtual server.
func VirtualScope(v toolspec.VirtualServer) *Scope {
	s := &Scope{name: v.Name, servers: make(map[string]bool, len(v.Servers))}
	for _, name := range v.Servers {
		s.servers[name] = true
	}
	for _, t := range v.Tools {
		s.tools = append(s.tools, Normalize(t))
	}
	slices.Sort(s.tools)
	s.tools = slices.Compact(s.tools)
	servers := slices.Sorted(func(yield func(string) bool) {
		for name := range s.servers {
			if !yield(name) {
				return
			}
		}
	})
	s.key = "v\x00" + strings.Join(servers, "\x00") + "\x01" + strings.Join(s.tools, "\x00")
	return s
}

// Name is the endpoint's name ("" for nil: the whole hub).
func (s *Scope) Name() string {
	if s == nil {
		return ""
	}
	return s.name
}

// Key says what the scope publishes: equal keys, equal views, so views of
// the catalog can be cached by content. "" for nil.
func (s *Scope) Key() string {
	if s == nil {
		return ""
	}
	return s.key
}

// Permits reports whether the tool published as published (upstream name
// original) of server is in the scope. A tool of no server ("", the hub's
// view helpers such as find_tools) is in every scope: it shows only what
// the scope lets it.
func (s *Scope) Permits(server, published, original string) bool {
	if s == nil || server == "" || s.servers[server] {
		return true
	}
	for _, name := range [2]string{published, original} {
		if _, ok := toolspec.Match(s.tools, Normalize(name)); ok {
			return true
		}
	}
	return false
}

// PermitsServer reports whether server is published whole: its resources
// and prompts go with it. A scope that names only some tools of a server
// shows none of its resources or prompts.
func (s *Scope) PermitsServer(server string) bool {
	return s == nil || s.servers[server]
}
