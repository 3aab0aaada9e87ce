package toolspec

import (
	"errors"
	"fmt"
	"regexp"
)

// VirtualServer is a named endpoint of the hub (/servers/NAME/mcp and the
// other faces under /servers/NAME/) that publishes a chosen part of the
// catalog: whole servers, and tools of any server by name or pattern. It
// only narrows what its caller may see; the caller's autonomy and
// allow-list still apply on top. Defined in the config file
// (virtualServers) or by an annotated Purko Agent.
type VirtualServer struct {
	// Name is the endpoint's name: /servers/NAME/mcp.
	Name string `json:"name"`
	// Description tells people (the console, the registry API) what the
	// endpoint is for.
	Description string `json:"description,omitempty"`
	// Servers are published whole: every tool, resource and prompt of
	// each ("hub" is the hub's own tools).
	Servers []string `json:"servers,omitempty"`
	// Tools are published whatever their server: published or upstream
	// names, or patterns (path.Match, compared case-insensitively with '-'
	// read as '_', as allow-lists compare names).
	Tools []string `json:"tools,omitempty"`
	// Source says where it was defined ("config", "Agent ns/name"), for
	// the listing and for errors.
	Source string `json:"-"`
}

// virtualNamePattern is a server name's (config.serverNamePattern): a
// virtual server's name is a path segment and may stand where a server's
// does.
var virtualNamePattern = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$`)

// Validate checks the definition; the error starts with the field name so
// the caller can prefix where it came from.
func (v VirtualServer) Validate() error {
	if !virtualNamePattern.MatchString(v.Name) {
		return fmt.Errorf("name: %q must start with a letter or digit and hold at most 63 of a-z A-Z 0-9 . _ -", v.Name)
	}
	if len(v.Servers) == 0 && len(v.Tools) == 0 {
		return errors.New("servers: a virtual server needs servers or tools to publish (an empty one would publish nothing)")
	}
	for i, s := range v.Servers {
		if !virtualNamePattern.MatchString(s) {
			return fmt.Errorf("servers[%d]: %q is not a server name", i, s)
		}
	}
	for i, p := range v.Tools {
		if err := ValidatePattern(p); err != nil {
			return fmt.Errorf("tools[%d]: %w", i, err)
		}
	}
	return nil
}
