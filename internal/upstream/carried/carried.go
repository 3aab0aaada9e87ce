// Package carried is what the hub declares to its upstreams of the MCP
// extensions it carries for its callers (config.Extensions): in a
// session's initialize, in the capabilities of every 2026-07-28 request,
// and, in place of what a 2026-07-28 caller declared itself, only the
// carried ones of that caller's. An extension the hub does not carry never
// reaches an upstream: its semantics may need the hub (the Tasks
// extension, which the hub serves itself) or be unknown to it.
package carried

import (
	"bytes"
	"encoding/json"

	"github.com/purko-io/mcp-hub/internal/config"
)

// Set is the extensions carried, ready to be declared. The zero Set (and
// nil) carries none. Read-only once made.
type Set struct {
	ext config.Extensions
	// caps is the client capabilities that declare them and nothing else.
	caps json.RawMessage
}

// New is the set of ext (config upstream.extensions).
func New(ext config.Extensions) *Set {
	s := &Set{ext: ext, caps: json.RawMessage(`{}`)}
	if len(ext) > 0 {
		s.caps, _ = json.Marshal(map[string]any{"extensions": ext})
	}
	return s
}

// Capabilities are client capabilities that declare the carried
// extensions and nothing else: what the hub declares on a 2026-07-28
// request of its own.
func (s *Set) Capabilities() json.RawMessage {
	if s == nil {
		return json.RawMessage(`{}`)
	}
	return s.caps
}

// Map is the carried extensions as mcp-go's ClientCapabilities.Extensions
// wants them; nil for none.
func (s *Set) Map() map[string]any {
	if s == nil || len(s.ext) == 0 {
		return nil
	}
	m := make(map[string]any, len(s.ext))
	for id, settings := range s.ext {
		m[id] = settings
	}
	return m
}

// With is base (client capabilities of the hub's own, a JSON object) with
// the carried extensions declared.
func (s *Set) With(base json.RawMessage) json.RawMessage {
	if s == nil || len(s.ext) == 0 {
		return base
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(base, &m) != nil {
		return base
	}
	m["extensions"] = s.extensions()
	b, _ := json.Marshal(m)
	return b
}

// Filter is caps, a caller's client capabilities, with only the carried
// extensions left of the ones it declares, each with the caller's own
// settings: the upstream learns what this caller can do, and nothing the
// hub cannot carry. Capabilities without extensions pass as they are.
func (s *Set) Filter(caps json.RawMessage) json.RawMessage {
	if !bytes.Contains(caps, []byte(`"extensions"`)) {
		return caps
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(caps, &m) != nil {
		return caps
	}
	var theirs map[string]json.RawMessage
	_ = json.Unmarshal(m["extensions"], &theirs)
	kept := map[string]json.RawMessage{}
	for id, settings := range theirs {
		if s != nil && s.ext[id] != nil {
			kept[id] = settings
		}
	}
	if len(kept) == 0 {
		delete(m, "extensions")
	} else {
		m["extensions"], _ = json.Marshal(kept)
	}
	b, _ := json.Marshal(m)
	return b
}

// Carries reports whether the extension id is carried.
func (s *Set) Carries(id string) bool { return s != nil && s.ext[id] != nil }

func (s *Set) extensions() json.RawMessage {
	b, _ := json.Marshal(s.ext)
	return b
}

// Declare is caps, client capabilities, with the extension id declared
// (no settings): what the hub adds for an extension it serves itself, on
// a request it sends for it (the Tasks extension, for a caller's task).
func Declare(caps json.RawMessage, id string) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(caps, &m) != nil || m == nil {
		m = map[string]json.RawMessage{}
	}
	var ext map[string]json.RawMessage
	_ = json.Unmarshal(m["extensions"], &ext)
	if ext == nil {
		ext = map[string]json.RawMessage{}
	}
	ext[id] = json.RawMessage(`{}`)
	m["extensions"], _ = json.Marshal(ext)
	b, _ := json.Marshal(m)
	return b
}
