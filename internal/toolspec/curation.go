package toolspec

import (
	"fmt"
	"slices"
	"sort"
)

// MaxToolNameLen is the longest tool name a client takes (Claude, Cursor
// and the OpenAI API refuse longer ones): a renamed tool's name must fit,
// before the naming policy adds a prefix.
const MaxToolNameLen = 64

// ToolCuration is an operator's choice of a server's tools and how they
// are published, without touching the server: which of its tools the hub
// publishes at all, and a tool's published name, description and
// annotations. Patterns and override keys are the server's own names.
type ToolCuration struct {
	// Allow, when not empty, publishes only the tools matching one of its
	// names or globs (path.Match); empty publishes all.
	Allow []string `json:"allow,omitempty"`
	// Deny leaves out the tools matching one of its names or globs, also
	// when Allow matches them.
	Deny []string `json:"deny,omitempty"`
	// Overrides change how a tool is published, by the server's name of
	// it.
	Overrides map[string]ToolOverride `json:"overrides,omitempty"`
}

// ToolOverride is how one tool is published instead of as the server
// describes it.
type ToolOverride struct {
	// Name is the published name (the naming policy still applies to it:
	// a prefix, a hash on a clash); "" keeps the server's.
	Name string `json:"name,omitempty"`
	// Description replaces the server's description; "" keeps it.
	Description string `json:"description,omitempty"`
	// Annotations replace the server's annotations field by field: a
	// field left out keeps the server's. Its readOnlyHint is the
	// operator's statement, so it classifies the tool as toolPolicy does.
	Annotations *ToolAnnotations `json:"annotations,omitempty"`
}

// ToolAnnotations are MCP tool annotations as an override sets them (nil:
// the server's value stands).
type ToolAnnotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool  `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// Publishes says whether the tool the server calls name is published:
// it matches Allow (or Allow is empty) and no Deny pattern. A nil
// curation publishes everything.
func (c *ToolCuration) Publishes(name string) bool {
	if c == nil {
		return true
	}
	if matchAny(c.Deny, name) {
		return false
	}
	return len(c.Allow) == 0 || matchAny(c.Allow, name)
}

// Override returns the override of the tool the server calls name.
func (c *ToolCuration) Override(name string) (ToolOverride, bool) {
	if c == nil {
		return ToolOverride{}, false
	}
	o, ok := c.Overrides[name]
	return o, ok
}

func matchAny(patterns []string, name string) bool {
	_, ok := Match(patterns, name)
	return ok
}

// Validate checks the curation; the error starts with the field's path
// under tools ("allow: ...", "overrides.search_code.name: ..."). An
// override of a tool the curation does not publish is an error: it could
// never apply, and is most likely a mistake in one of the two.
func (c *ToolCuration) Validate() error {
	if c == nil {
		return nil
	}
	for field, list := range map[string][]string{"allow": c.Allow, "deny": c.Deny} {
		if err := ValidatePatterns(list); err != nil {
			return fmt.Errorf("%s: %w", field, err)
		}
	}
	keys := make([]string, 0, len(c.Overrides))
	for k := range c.Overrides {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	renamedBy := map[string]string{}
	for _, k := range keys {
		o := c.Overrides[k]
		field := "overrides." + k
		if k == "" {
			return fmt.Errorf("overrides: a tool name is empty")
		}
		if !c.Publishes(k) {
			return fmt.Errorf("%s: tool %q is not published (tools.allow and tools.deny leave it out), so its override could never apply", field, k)
		}
		if o.Name == "" {
			continue
		}
		if err := checkToolName(o.Name); err != nil {
			return fmt.Errorf("%s.name: %w", field, err)
		}
		if prev, dup := renamedBy[o.Name]; dup {
			return fmt.Errorf("%s.name: %q is already the name of overrides.%s", field, o.Name, prev)
		}
		renamedBy[o.Name] = k
		// Another override's tool keeping its own name would clash.
		if other, ok := c.Overrides[o.Name]; ok && o.Name != k && other.Name == "" {
			return fmt.Errorf("%s.name: %q is the name of another of the server's tools (overrides.%s keeps it)", field, o.Name, o.Name)
		}
	}
	return nil
}

// checkToolName accepts the names clients take: 1 to MaxToolNameLen of
// a-z A-Z 0-9 _ -.
func checkToolName(name string) error {
	if len(name) > MaxToolNameLen {
		return fmt.Errorf("%q is longer than %d characters", name, MaxToolNameLen)
	}
	if i := slices.IndexFunc([]byte(name), func(b byte) bool { return !ToolNameByte(b) }); i >= 0 {
		return fmt.Errorf("%q holds %q: a tool name holds only a-z A-Z 0-9 _ -", name, name[i:i+1])
	}
	return nil
}

// ToolNameByte says whether c may be in a published tool name: model APIs
// take a-z A-Z 0-9 _ - alone.
func ToolNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}
