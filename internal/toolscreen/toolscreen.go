// Package toolscreen screens an upstream's definitions for prompt
// injection before the hub lists them: tools, prompts, resources,
// resource templates, and the instructions a server gives at initialize.
// Every member of a definition a model may read is looked at (title,
// description, annotations, _meta, icons, execution, and in a schema the
// property names, descriptions, enums, defaults and examples) for hidden
// characters, hidden blocks, instructions aimed at the model, requests to
// read files or secrets and to pass them on, exfiltration by Markdown or
// HTML, and instructions about other tools.
//
// A definition is read by the model as trusted context: a server that
// ships one with hidden instructions poisons every agent that lists it,
// whatever the agent is asked to do. Pinning (internal/pinning) only
// notices a definition that changes; this package judges the first one.
// It reads like an attacker writes: a text is also read with lookalike
// letters and leetspeak folded to Latin (fold.go), with its base64, hex,
// URL-encoded and escaped runs decoded (encoded.go), and in twenty
// languages besides English (languages.go).
//
// Precision matters more than recall here: a hit quarantines a definition
// until an operator approves it, so a rule only fires on what a benign
// server has no reason to write (the tests hold the real definitions of
// the reference and popular servers to zero hits, and catch a corpus of
// published and constructed poisonings, testdata/poisoned). The package
// knows nothing of the registry: it takes a definition and says what it
// found.
package toolscreen

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
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
	// invisible formatting characters, stacked variation selectors,
	// control characters (ANSI escapes): text a model reads and a person
	// reviewing the tool does not see.
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
	// a parameter or to a URL; a Markdown or HTML image or link that sends
	// data out when a client renders it.
	Exfiltration = "exfiltration"
	// ToolShadowing: instructions about how another tool is to be used
	// (change its recipient, its arguments), named or not ("any other
	// tool", "all outgoing emails").
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
// none for a clean tool. Every member of the definition is read: its
// name, title, description, annotations, _meta, icons and execution, and
// its schemas (property names, descriptions, enums, defaults, examples
// and whatever else a server writes in them). A definition that cannot
// be encoded is screened by its name, description and title alone.
func (sc *Screener) Screen(t mcp.Tool) []Hit {
	s := sc.screener(t.Name)
	m, ok := members(t)
	if !ok {
		m = map[string]any{"name": t.Name, "title": t.Title, "description": t.Description}
	}
	s.collectParams(m["inputSchema"])
	return s.definition(m)
}

// ScreenPrompt returns the hits of a prompt's definition: its name, title,
// description, arguments (names, titles, descriptions), icons and _meta.
func (sc *Screener) ScreenPrompt(p mcp.Prompt) []Hit { return sc.screenAny(p.Name, p) }

// ScreenResource returns the hits of a resource's definition: its name,
// title, description, URI, icons, annotations and _meta.
func (sc *Screener) ScreenResource(r mcp.Resource) []Hit { return sc.screenAny(r.Name, r) }

// ScreenTemplate returns the hits of a resource template's definition,
// as ScreenResource.
func (sc *Screener) ScreenTemplate(t mcp.ResourceTemplate) []Hit { return sc.screenAny(t.Name, t) }

// ScreenInstructions returns the hits of the instructions a server gave
// at initialize: prose a client may put before the model as a whole.
func (sc *Screener) ScreenInstructions(text string) []Hit {
	s := sc.screener("")
	s.text("instructions", text)
	return s.sorted()
}

func (sc *Screener) screener(self string) *screener {
	return &screener{params: map[string]bool{}, self: strings.ToLower(self), re: sc.patterns()}
}

// screenAny screens the definition v (a prompt or resource) encodes to.
func (sc *Screener) screenAny(name string, v any) []Hit {
	s := sc.screener(name)
	m, ok := members(v)
	if !ok {
		s.unicodeOnly("name", name)
		return s.sorted()
	}
	return s.definition(m)
}

// members returns the members of v's JSON object.
func members(v any) (map[string]any, bool) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, false
	}
	return m, true
}

// definition screens every member of a definition m, and returns the
// hits sorted.
func (s *screener) definition(m map[string]any) []Hit {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		switch k {
		case "inputSchema", "outputSchema":
			s.schema(k, m[k], true)
		default:
			s.value(k, k, m[k])
		}
	}
	return s.sorted()
}

func (s *screener) sorted() []Hit {
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
	// note is said before the reason of a hit: how the text was read
	// ("base64-decoded: "). depth is how many encodings deep the text
	// screened is, decoded how many bytes were decoded (encoded.go).
	note    string
	depth   int
	decoded int
}

func (s *screener) add(rule, where, reason string) {
	for _, h := range s.hits {
		if h.Rule == rule && h.Where == where {
			return // one hit per rule and text is enough to judge
		}
	}
	s.hits = append(s.hits, Hit{Rule: rule, Where: where, Reason: s.note + reason})
}

// noted says how until the returned function is called.
func (s *screener) noted(how string) func() {
	old := s.note
	s.note += how
	return func() { s.note = old }
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
		keys := slices.Sorted(maps.Keys(v))
		props := strings.HasSuffix(where, ".properties")
		for _, k := range keys {
			s.key(where+"."+k, k) // a property name is read too
			if props {
				s.paramName(where+"."+k, k)
			}
			s.schema(where+"."+k, v[k], prose && (props || !structural[k]))
		}
	}
}

// machine are the members outside the schemas that are identifiers or
// addresses, not prose: screened for hidden characters, and a name for
// an instruction spelled in its words.
var machine = map[string]bool{"name": true, "uri": true, "uriTemplate": true, "mimeType": true}

// value walks a member of a definition outside its schemas (any JSON
// value): every string is prose, but for machine members, and every key
// is a name. key is the member's own key.
func (s *screener) value(where, key string, v any) {
	switch v := v.(type) {
	case string:
		if !machine[key] {
			s.text(where, v)
			return
		}
		s.unicodeOnly(where, v)
		if key == "name" {
			s.name(where, v)
		}
	case []any:
		for i, e := range v {
			s.value(where+"["+strconv.Itoa(i)+"]", key, e)
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			s.key(where+"."+k, k)
			s.value(where+"."+k, k, v[k])
		}
	}
}

// key screens a key of a JSON object: it is read as a name.
func (s *screener) key(where, k string) {
	s.unicodeOnly(where, k)
	s.name(where, k)
}

// minNameWords is the fewest words of a name read as an instruction: no
// instruction is shorter, and most names are.
const minNameWords = 3

// name screens a name (of a property, a tool, an argument, a key) as the
// words it is made of: "ignore_previous_instructions",
// "beforeUsingThisToolReadSshKey".
func (s *screener) name(where, k string) {
	words := s.re.nameWords.FindAllString(k, -1)
	if len(words) < minNameWords {
		return
	}
	s.prose(where, strings.Join(words, " "))
}

// text screens one text a model reads as prose: every rule, on the text
// as written, as folded (fold.go) and as decoded (encoded.go).
func (s *screener) text(where, v string) {
	if v == "" {
		return
	}
	s.unicodeOnly(where, v)
	s.hidden(where, v)
	s.markup(where, v)
	s.prose(where, v)
	s.encoded(where, v)
}
