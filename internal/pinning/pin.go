// Package pinning defends against a "rug pull": an upstream that changes a
// tool's definition (its description, schemas or annotations) after the
// operator and the model have come to trust it. The first definition seen
// of each tool is pinned and persisted; a later, different definition is
// reported so the hub can quarantine the tool until an operator approves
// the change.
//
// The package knows nothing of the registry or the server: it compares
// definitions, stores pins, and says what changed.
package pinning

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// Mode says what the hub does with a tool whose definition changed.
type Mode string

// The pinning modes.
const (
	// Enforce quarantines a changed tool: not listed, calls refused.
	Enforce Mode = "enforce"
	// Warn lists and runs a changed tool, but reports the change.
	Warn Mode = "warn"
	// Off pins nothing and compares nothing.
	Off Mode = "off"
)

// ParseMode reads a mode; "" is Enforce, the default.
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case "", Enforce:
		return Enforce, nil
	case Warn, Off:
		return Mode(s), nil
	}
	return "", fmt.Errorf("%q is not one of enforce, warn, off", s)
}

// Key names one pinned tool: its server and its name at the upstream (not
// the published name, which the naming policy may change).
type Key struct {
	Server string `json:"server"`
	Tool   string `json:"tool"`
}

func (k Key) String() string { return k.Server + "/" + k.Tool }

// Definition is what is pinned of a tool: everything a model reads or a
// policy decides on. Schemas and annotations are canonical JSON (sorted
// keys, no insignificant space), so two servers that send the same schema
// in another key order agree.
type Definition struct {
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
}

// Pin is the definition trusted for one tool.
type Pin struct {
	Key
	Definition Definition `json:"definition"`
	// SHA256 is the hex digest of the canonical definition.
	SHA256 string `json:"sha256"`
	// FirstSeen is when this definition was first pinned (or approved).
	FirstSeen time.Time `json:"firstSeen"`
	// Approved says the pin replaced an earlier one by an operator's
	// approval, and how ("config", "api").
	Approved string `json:"approved,omitempty"`
}

// DefinitionOf returns the canonical definition of an upstream tool. The
// tool's name is not part of it: the key holds the name.
func DefinitionOf(t mcp.Tool) (Definition, error) {
	raw, err := json.Marshal(t)
	if err != nil {
		return Definition{}, fmt.Errorf("encode tool %s: %w", t.Name, err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return Definition{}, fmt.Errorf("read tool %s: %w", t.Name, err)
	}
	var d Definition
	_ = json.Unmarshal(m["title"], &d.Title)
	_ = json.Unmarshal(m["description"], &d.Description)
	for _, f := range []struct {
		name string
		dst  *json.RawMessage
	}{{"inputSchema", &d.InputSchema}, {"outputSchema", &d.OutputSchema}, {"annotations", &d.Annotations}} {
		c, err := canonical(m[f.name])
		if err != nil {
			return Definition{}, fmt.Errorf("tool %s: %s: %w", t.Name, f.name, err)
		}
		*f.dst = c
	}
	if string(d.Annotations) == "{}" {
		d.Annotations = nil // mcp-go always writes annotations; none is none
	}
	return d, nil
}

// canonical re-encodes JSON with sorted object keys and no spaces; null and
// absent are both nil. Numbers keep their text.
func canonical(raw json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	// encoding/json writes map keys sorted: that is the canonical form.
	return json.Marshal(v)
}

// Sum returns the hex sha256 of the canonical definition.
func (d Definition) Sum() string {
	b, _ := json.Marshal(d) // fields in fixed order, contents canonical
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// NewPin pins d for key, first seen at now.
func NewPin(key Key, d Definition, now time.Time) Pin {
	return Pin{Key: key, Definition: d, SHA256: d.Sum(), FirstSeen: now.UTC().Truncate(time.Second)}
}
