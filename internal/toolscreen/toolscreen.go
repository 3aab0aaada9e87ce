// Package toolscreen screens an upstream tool's definition for prompt
// injection before the hub lists it: every text of the definition a model
// reads (title, description, annotations, the descriptions, titles and
// example values inside its schemas) is looked at for hidden characters,
// hidden blocks, instructions aimed at the model, requests to read files
// or secrets and to pass them on, and instructions about other tools.
//
// A tool's description is read by the model as trusted context: a server
// that ships one with hidden instructions poisons every agent that lists
// it, whatever the agent is asked to do. Pinning (internal/pinning) only
// notices a definition that changes; this package judges the first one.
//
// Precision matters more than recall here: a hit quarantines a tool until
// an operator approves it, so a rule only fires on what a benign server
// has no reason to write (the tests hold the real definitions of the
// reference and popular servers to zero hits). The package knows nothing
// of the registry: it takes a definition and says what it found.
package toolscreen

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// The rule ids: short and stable, they are metric labels and appear in
// listings and audit lines.
const (
	// InvisibleUnicode: Unicode tag characters, zero-width and other
	// invisible formatting characters, stacked variation selectors: text a
	// model reads and a person reviewing the tool does not see.
	InvisibleUnicode = "invisible-unicode"
	// BidiControl: bidirectional embedding, override and isolate controls,
	// which reorder what a person sees against what a model reads.
	BidiControl = "bidi-control"
	// HiddenBlock: <IMPORTANT>-style blocks, HTML and Markdown comments,
	// chat-template tokens, text pushed out of sight by whitespace.
	HiddenBlock = "hidden-block"
	// ModelInstruction: instructions aimed at the model rather than a
	// description of the tool ("ignore previous instructions", "do not
	// tell the user").
	ModelInstruction = "model-instruction"
	// SensitiveFile: a request to read a file or secret no tool needs
	// (~/.ssh/id_rsa, mcp.json, ~/.aws/credentials, a private key).
	SensitiveFile = "sensitive-file"
	// Exfiltration: a request to pass a file's or a secret's content on in
	// a parameter.
	Exfiltration = "exfiltration"
	// ToolShadowing: instructions about how another tool is to be used
	// (change its recipient, its arguments).
	ToolShadowing = "tool-shadowing"
)

// Rules lists every rule id, in a fixed order.
func Rules() []string {
	return []string{InvisibleUnicode, BidiControl, HiddenBlock, ModelInstruction, SensitiveFile, Exfiltration, ToolShadowing}
}

// Hit is one finding: which rule, in which text of the definition, and
// why, in a few words.
type Hit struct {
	// Rule is one of the rule ids.
	Rule string `json:"rule"`
	// Where is the text's path in the definition: "description",
	// "annotations.title", "inputSchema.properties.note.description".
	Where string `json:"where"`
	// Reason says what was found, quoting at most a few words, with
	// invisible characters written as U+E0041.
	Reason string `json:"reason"`
}

func (h Hit) String() string { return fmt.Sprintf("%s in %s: %s", h.Rule, h.Where, h.Reason) }

// Summary says the hits in one line, for an error or an audit line.
func Summary(hits []Hit) string {
	parts := make([]string, len(hits))
	for i, h := range hits {
		parts[i] = h.String()
	}
	return strings.Join(parts, "; ")
}

// Screener screens tool definitions. Its rules' regular expressions are
// compiled on its first screening: a hub with no upstream never pays for
// them. Safe for concurrent use.
type Screener struct {
	patterns func() *patterns
}

// New returns a Screener.
func New() *Screener { return &Screener{patterns: sync.OnceValue(compilePatterns)} }

// Screen returns the hits of t's definition, sorted by where and rule;
// none for a clean tool. A definition that cannot be encoded is screened
// by its description and title alone.
func (sc *Screener) Screen(t mcp.Tool) []Hit {
	s := screener{params: map[string]bool{}, self: strings.ToLower(t.Name), re: sc.patterns()}
	raw, err := json.Marshal(t)
	var m map[string]any
	if err == nil {
		err = json.Unmarshal(raw, &m)
	}
	if err != nil {
		m = map[string]any{"title": t.Title, "description": t.Description}
	}
	s.collectParams(m["inputSchema"])
	s.unicodeOnly("name", t.Name)
	for _, k := range []string{"title", "description"} {
		if v, ok := m[k].(string); ok {
			s.text(k, v)
		}
	}
	if a, ok := m["annotations"].(map[string]any); ok {
		if v, ok := a["title"].(string); ok {
			s.text("annotations.title", v)
		}
	}
	for _, k := range []string{"inputSchema", "outputSchema"} {
		s.schema(k, m[k], true)
	}
	sort.Slice(s.hits, func(i, j int) bool {
		if s.hits[i].Where != s.hits[j].Where {
			return s.hits[i].Where < s.hits[j].Where
		}
		return s.hits[i].Rule < s.hits[j].Rule
	})
	return s.hits
}

// screener gathers the hits of one definition.
type screener struct {
	hits []Hit
	// params are the input schema's property names (lower case): a text
	// that asks for content to be passed "as note" names one of them.
	params map[string]bool
	// self is the tool's own name (lower case): a description that says
	// how to call itself is not shadowing another tool.
	self string
	re   *patterns
}

func (s *screener) add(rule, where, reason string) {
	for _, h := range s.hits {
		if h.Rule == rule && h.Where == where {
			return // one hit per rule and text is enough to judge
		}
	}
	s.hits = append(s.hits, Hit{Rule: rule, Where: where, Reason: reason})
}

// collectParams records the input schema's property names.
func (s *screener) collectParams(v any) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	if props, ok := m["properties"].(map[string]any); ok {
		for name, p := range props {
			s.params[strings.ToLower(name)] = true
			s.collectParams(p)
		}
	}
	if items, ok := m["items"].(map[string]any); ok {
		s.collectParams(items)
	}
}

// structural are the schema keywords whose strings are machinery, not
// prose: types, formats, patterns, references, required property names.
// They are screened for hidden characters only; every other string of a
// schema (descriptions, titles, enums, defaults, examples, and whatever a
// server adds of its own) is prose a model reads, and gets every rule.
var structural = map[string]bool{"type": true, "format": true, "pattern": true, "$ref": true, "$schema": true,
	"$id": true, "$anchor": true, "$dynamicRef": true, "required": true, "contentMediaType": true,
	"contentEncoding": true, "propertyNames": true}

// schema walks a JSON schema (or any JSON value inside one). prose says
// whether v's strings are prose.
func (s *screener) schema(where string, v any, prose bool) {
	switch v := v.(type) {
	case string:
		if prose {
			s.text(where, v)
		} else {
			s.unicodeOnly(where, v)
		}
	case []any:
		for i, e := range v {
			s.schema(where+"["+strconv.Itoa(i)+"]", e, prose)
		}
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		props := strings.HasSuffix(where, ".properties")
		for _, k := range keys {
			s.unicodeOnly(where+"."+k, k) // a property name is read too
			if props {
				s.paramName(where+"."+k, k)
			}
			s.schema(where+"."+k, v[k], prose && (props || !structural[k]))
		}
	}
}

// text screens one text a model reads as prose: every rule.
func (s *screener) text(where, v string) {
	if v == "" {
		return
	}
	s.unicodeOnly(where, v)
	s.hidden(where, v)
	s.phrases(where, v)
}
