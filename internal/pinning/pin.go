// Package pinning defends against a "rug pull": an upstream that changes a
// tool's definition (its description, schemas, annotations, _meta, icons,
// any member of it) after the operator and the model have come to trust
// it. The first definition seen of each tool is pinned and persisted; a
// later, different definition is reported so the hub can quarantine the
// tool until an operator approves the change.
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
// the published name, which the naming policy may change). With Kind it
// names a definition that is not a tool, whose pin only records an
// operator's approval of it (the hub's screening held it back): Tool is
// then the prompt's name, the resource's URI or the template's URI
// template ("" for the server's instructions).
type Key struct {
	Server string `json:"server"`
	Tool   string `json:"tool"`
	// Kind is "" for a tool, else KindPrompt, KindResource, KindTemplate
	// or KindInstructions.
	Kind string `json:"kind,omitempty"`
}

// The kinds of definitions besides tools that a pin can approve.
const (
	KindPrompt       = "prompt"
	KindResource     = "resource"
	KindTemplate     = "resourceTemplate"
	KindInstructions = "instructions"
)

func (k Key) String() string {
	if k.Kind != "" {
		return k.Server + "/" + k.Kind + ":" + k.Tool
	}
	return k.Server + "/" + k.Tool
}

// Describe names the definition in words: "tool read_file of server fs",
// "prompt summarize of server docs", "instructions of server docs".
func (k Key) Describe() string {
	switch k.Kind {
	case "":
		return "tool " + k.Tool + " of server " + k.Server
	case KindInstructions:
		return "instructions of server " + k.Server
	case KindTemplate:
		return "resource template " + k.Tool + " of server " + k.Server
	}
	return k.Kind + " " + k.Tool + " of server " + k.Server
}

// Definition is what is pinned of a tool: the whole definition as the
// hub's client read it and passes it on, but its name (the key holds the
// name). Schemas, annotations and the other members are canonical JSON
// (sorted keys, no insignificant space), so two servers that send the
// same schema in another key order agree. Every member has a field, the
// ones no field names in Extra, so a member the protocol adds later is
// pinned too.
type Definition struct {
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
	// Meta, Icons and Execution are the members digest version 1 left
	// out (DigestVersion): _meta, icons and execution.
	Meta      json.RawMessage `json:"_meta,omitempty"`
	Icons     json.RawMessage `json:"icons,omitempty"`
	Execution json.RawMessage `json:"execution,omitempty"`
	// Extra is every other member (a canonical object): defer_loading,
	// and whatever the protocol adds.
	Extra json.RawMessage `json:"extra,omitempty"`
}

// DigestVersion is what a pin's digest covers. Version 1 (pins written
// before it was recorded, Version 0 in them) covered the title, the
// description, the schemas and the annotations; version 2 covers the
// whole definition. A pin of version 1 whose digest still matches what
// the server offers is upgraded in place, without a report (Pinner): the
// definition it pinned has not changed, and the members it left out are
// pinned as they are now. Without that an upgrade of the hub would
// quarantine every tool with _meta, icons or execution at once. A
// definition without them has the same digest in both versions (the
// members are left out when empty), so its pin only gains its version.
const DigestVersion = 2

// Pin is the definition trusted for one tool.
type Pin struct {
	Key
	Definition Definition `json:"definition"`
	// SHA256 is the hex digest of the canonical definition, of digest
	// version Version.
	SHA256 string `json:"sha256"`
	// Version is the digest version of SHA256 (DigestVersion); 0 in pins
	// written before versions were, which are version 1.
	Version int `json:"version,omitempty"`
	// FirstSeen is when this definition was first pinned (or approved).
	FirstSeen time.Time `json:"firstSeen"`
	// Approved says the pin replaced an earlier one by an operator's
	// approval, and how ("config", "api").
	Approved string `json:"approved,omitempty"`
}

// Matches says whether d is the definition p pinned: the same digest, of
// p's version. A pin of version 1 matches every definition whose members
// of version 1 are the pinned ones.
func (p Pin) Matches(d Definition) bool {
	if p.Version >= DigestVersion {
		return p.SHA256 == d.Sum()
	}
	return p.SHA256 == d.Legacy().Sum()
}

// Upgraded returns p pinned in the current digest version with d, the
// definition the server offers now, which p matches: first seen and
// approved as p was.
func (p Pin) Upgraded(d Definition) Pin {
	p.Definition, p.SHA256, p.Version = d, d.Sum(), DigestVersion
	return p
}

// upgrades says whether stored is the pin of an earlier digest version
// that up upgrades (Upgraded): the same key, and still the definition up
// was made from.
func upgrades(stored, up Pin) bool {
	return stored.Key == up.Key && stored.Version < DigestVersion && stored.SHA256 == up.Definition.Legacy().Sum()
}

// Legacy returns the members of d that digest version 1 covered.
func (d Definition) Legacy() Definition {
	return Definition{Title: d.Title, Description: d.Description, InputSchema: d.InputSchema,
		OutputSchema: d.OutputSchema, Annotations: d.Annotations}
}

// DefinitionOf returns the canonical definition of an upstream tool. The
// tool's name is not part of it: the key holds the name.
func DefinitionOf(t mcp.Tool) (Definition, error) {
	d, err := definitionOf(t, "name")
	if err != nil {
		return Definition{}, fmt.Errorf("tool %s: %w", t.Name, err)
	}
	if string(d.Annotations) == "{}" {
		d.Annotations = nil // mcp-go always writes annotations; none is none
	}
	return d, nil
}

// FeatureDefinition returns the canonical definition of a prompt, a
// resource or a resource template (v), but for its member key, which
// names it: "name" for a prompt, "uri" for a resource, "uriTemplate" for
// a template. Approving a screened prompt or resource records it.
func FeatureDefinition(v any, key string) (Definition, error) {
	return definitionOf(v, key)
}

// definitionOf reads the definition v encodes to, but for its member key.
func definitionOf(v any, key string) (Definition, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return Definition{}, fmt.Errorf("encode: %w", err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return Definition{}, fmt.Errorf("read: %w", err)
	}
	delete(m, key)
	var d Definition
	_ = json.Unmarshal(m["title"], &d.Title)
	_ = json.Unmarshal(m["description"], &d.Description)
	delete(m, "title")
	delete(m, "description")
	for _, f := range []struct {
		name string
		dst  *json.RawMessage
	}{{"inputSchema", &d.InputSchema}, {"outputSchema", &d.OutputSchema}, {"annotations", &d.Annotations},
		{"_meta", &d.Meta}, {"icons", &d.Icons}, {"execution", &d.Execution}} {
		c, err := canonical(m[f.name])
		if err != nil {
			return Definition{}, fmt.Errorf("%s: %w", f.name, err)
		}
		*f.dst = c
		delete(m, f.name)
	}
	if len(m) > 0 {
		extra, err := json.Marshal(m)
		if err == nil {
			extra, err = canonical(extra)
		}
		if err != nil {
			return Definition{}, fmt.Errorf("extra members: %w", err)
		}
		d.Extra = extra
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

// Sum returns the hex sha256 of the canonical definition (digest version
// DigestVersion; Legacy().Sum() is version 1's).
func (d Definition) Sum() string {
	b, _ := json.Marshal(d) // fields in fixed order, contents canonical, empty ones left out
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// NewPin pins d for key, first seen at now.
func NewPin(key Key, d Definition, now time.Time) Pin {
	return Pin{Key: key, Definition: d, SHA256: d.Sum(), Version: DigestVersion, FirstSeen: now.UTC().Truncate(time.Second)}
}
