package autonomy

import (
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/purko-io/mcp-hub/internal/toolspec"
)

// Kind says where a tool comes from, because each kind is classified by
// different evidence: an upstream MCP tool by its name and annotations, a
// builtin by a fixed table, an API tool by its HTTP method.
type Kind int

// The tool kinds. MCP is the zero value, so a Tool without a Kind gets the
// most general rules.
const (
	// MCP is a tool published by an upstream MCP server.
	MCP Kind = iota
	// Builtin is a tool the hub implements itself.
	Builtin
	// API is a tool that wraps one HTTP endpoint.
	API
)

// Tool is what the classifier needs to know about one tool. Other packages
// convert their own tool types into it.
type Tool struct {
	// Server is the name of the upstream server (the key of the override
	// and trust maps in Config).
	Server string
	// Name is the tool's original upstream name, not the name the hub
	// publishes (which may carry a prefix); for builtins and API tools it
	// is their own name. Operator patterns are written against it.
	Name string
	// Kind selects the rules that apply after the operator overrides and
	// Purko's write list.
	Kind Kind
	// ReadOnlyHint and DestructiveHint are the tool's MCP annotations; nil
	// means absent. They count only for servers listed in
	// Config.TrustedServers.
	ReadOnlyHint, DestructiveHint *bool
	// Method is the HTTP method of an API tool.
	Method string
}

// Class is the outcome of classification. The reason is kept so listings
// and audit logs can say why a tool was refused, and so operators can see
// which override to add.
type Class struct {
	// ReadOnly is true when the tool may run at Restricted.
	ReadOnly bool
	// Reason is a short human explanation of the rule that decided.
	Reason string
}

// Overrides are an operator's declarations for one server's tools: exact
// names or path.Match glob patterns matched against the original tool name.
// When a name matches both lists, Write wins.
type Overrides struct {
	// ReadOnly are the tools the operator declares safe at Restricted.
	ReadOnly []string
	// Write are the tools the operator declares writes; they win over
	// ReadOnly so that a broad read pattern can carry exceptions.
	Write []string
	// Hinted are tools (exact original names) whose readOnlyHint the
	// operator set in the server's tool overrides: true declares the tool
	// read-only, false a write, as the two lists do. It is the operator's
	// statement about the tool, not the server's about itself, so it
	// counts whether or not the server is trusted. A write still wins:
	// a Write pattern beats a readOnlyHint true.
	Hinted map[string]bool
}

// Config is everything the classifier depends on besides the tool itself.
type Config struct {
	// ConfigOverrides are the hub config's overrides, keyed by server
	// name. They are consulted first.
	ConfigOverrides map[string]Overrides
	// AnnotationOverrides are the overrides read from MCPServer
	// annotations, keyed by server name; consulted after ConfigOverrides,
	// so the hub's own configuration has the last word.
	AnnotationOverrides map[string]Overrides
	// TrustedServers lists the servers whose readOnlyHint and
	// destructiveHint annotations are believed. Other servers describe
	// themselves, so their hints are ignored.
	TrustedServers []string
}

// Classifier decides whether a tool is read-only. Build it with
// NewClassifier; it does not change afterwards and is safe for concurrent
// use. A nil *Classifier behaves as one built from an empty Config.
type Classifier struct {
	sources [2]overrideSource
	trusted map[string]bool
}

type overrideSource struct {
	label    string
	byServer map[string]Overrides
	// badWrite holds, per server, the first malformed Write pattern.
	badWrite map[string]string
}

// NewClassifier builds a classifier from cfg, copying it so that later
// changes by the caller cannot race with Classify.
//
// Patterns should be checked with ValidatePatterns where they are read. A
// malformed pattern that still arrives here fails closed: a malformed
// ReadOnly pattern matches nothing, and a malformed Write pattern (which
// might have been meant to match anything) makes every tool of its server a
// write, with a reason naming the pattern.
func NewClassifier(cfg Config) *Classifier {
	c := &Classifier{
		sources: [2]overrideSource{
			newOverrideSource("hub config", cfg.ConfigOverrides),
			newOverrideSource("MCPServer annotation", cfg.AnnotationOverrides),
		},
		trusted: make(map[string]bool, len(cfg.TrustedServers)),
	}
	for _, s := range cfg.TrustedServers {
		c.trusted[s] = true
	}
	return c
}

func newOverrideSource(label string, m map[string]Overrides) overrideSource {
	src := overrideSource{label: label, byServer: make(map[string]Overrides, len(m)), badWrite: map[string]string{}}
	for server, o := range m {
		src.byServer[server] = Overrides{
			ReadOnly: append([]string(nil), o.ReadOnly...),
			Write:    append([]string(nil), o.Write...),
			Hinted:   maps.Clone(o.Hinted),
		}
		for _, p := range o.Write {
			if validatePattern(p) != nil {
				src.badWrite[server] = p
				break
			}
		}
	}
	return src
}

// ValidatePatterns reports every malformed pattern in patterns, so that
// configuration and annotations can be rejected where they are read rather
// than silently misclassifying tools. A pattern is malformed when path.Match
// rejects it, when it is empty, or when it has leading or trailing spaces
// (tool names never do, so such a pattern could never match): the check
// of toolspec.ValidatePattern, which the configuration uses.
func ValidatePatterns(patterns []string) error {
	var errs []error
	for _, p := range patterns {
		if err := validatePattern(p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func validatePattern(p string) error {
	if err := toolspec.ValidatePattern(p); err != nil {
		return fmt.Errorf("autonomy: %w", err)
	}
	return nil
}

// Classify decides whether t is read-only. The first rule that applies wins:
//
//  1. operator overrides, hub config first, then MCPServer annotations
//     (within one source a Write match beats a ReadOnly match);
//  2. Purko executor's write list;
//  3. by kind: builtins by a fixed table, API tools by HTTP method
//     (GET and HEAD read-only), MCP tools by the annotations of a trusted
//     server and then by the verbs in the name;
//  4. otherwise a write.
func (c *Classifier) Classify(t Tool) Class {
	if c == nil {
		c = &Classifier{}
	}
	for i := range c.sources {
		if cl, ok := c.sources[i].match(t.Server, t.Name); ok {
			return cl
		}
	}
	if purkoWrites[Normalize(t.Name)] {
		return Class{Reason: "Purko write list"}
	}
	switch t.Kind {
	case MCP:
		if c.trusted[t.Server] {
			if cl, ok := classifyHints(t.ReadOnlyHint, t.DestructiveHint); ok {
				return cl
			}
			return classifyName(t.Name)
		}
		return ignoredHint(t, classifyName(t.Name))
	case Builtin:
		return classifyBuiltin(t.Name)
	case API:
		return classifyMethod(t.Method)
	}
	return Class{Reason: fmt.Sprintf("unknown tool kind %d: treated as write", int(t.Kind))}
}

func (s *overrideSource) match(server, name string) (Class, bool) {
	o, ok := s.byServer[server]
	if !ok {
		return Class{}, false
	}
	if p, bad := s.badWrite[server]; bad {
		return Class{Reason: fmt.Sprintf("operator override (%s): invalid write pattern %q: treated as write", s.label, p)}, true
	}
	if p, ok := toolspec.Match(o.Write, name); ok {
		return Class{Reason: fmt.Sprintf("operator override (%s): pattern %q", s.label, p)}, true
	}
	if ro, ok := o.Hinted[name]; ok {
		return Class{ReadOnly: ro, Reason: fmt.Sprintf("operator override (%s): tools.overrides readOnlyHint %t", s.label, ro)}, true
	}
	if p, ok := toolspec.Match(o.ReadOnly, name); ok {
		return Class{ReadOnly: true, Reason: fmt.Sprintf("operator override (%s): pattern %q", s.label, p)}, true
	}
	return Class{}, false
}

// ignoredHint says so in the reason of cl, how the name rules classed a
// tool of a server not trusted, when the tool declared readOnlyHint: true
// and is a write all the same: otherwise "unknown: treated as write" reads
// as if the hub had not seen the hint, and nothing names the setting that
// would let it count.
func ignoredHint(t Tool, cl Class) Class {
	if cl.ReadOnly || t.ReadOnlyHint == nil || !*t.ReadOnlyHint {
		return cl
	}
	cl.Reason = fmt.Sprintf("%s; its readOnlyHint: true was ignored: server %q is not trusted (trustAnnotations: true on the server lets its hints decide)", cl.Reason, t.Server)
	return cl
}

// classifyHints applies a trusted server's annotations as the MCP spec
// defines them: destructiveHint means something only when readOnlyHint is
// false. (mcp-go marks every tool destructiveHint=true unless told
// otherwise, so a read-only tool of a trusted mcp-go server carries both.)
func classifyHints(readOnly, destructive *bool) (Class, bool) {
	switch {
	case readOnly != nil && *readOnly:
		return Class{ReadOnly: true, Reason: "readOnlyHint from trusted server"}, true
	case destructive != nil && *destructive:
		return Class{Reason: "destructiveHint from trusted server"}, true
	case readOnly != nil:
		return Class{Reason: "readOnlyHint=false from trusted server"}, true
	}
	return Class{}, false
}

// purkoWrites is Purko executor's list of write tools, normalised. The hub
// must refuse at least what the executor refuses, whatever a server or the
// verb heuristics say.
var purkoWrites = normalizedSet(
	"push_files", "create_or_update_file", "delete_file",
	"create_pull_request", "merge_pull_request", "update_pull_request",
	"create_branch", "create_repository", "fork_repository",
	"update_pull_request_branch", "pull_request_review_write",
	"add_comment_to_pending_review", "add_reply_to_pull_request_comment",
	"issue_write", "sub_issue_write", "add_issue_comment",
	"assign_copilot_to_issue", "request_copilot_review",
	"execute_code", "code-sandbox",
)

// builtins are the hub's own tools; any other builtin name is a write.
var builtins = map[string]bool{
	Normalize("static-analysis"):  true,
	Normalize("trigger-workflow"): false,
}

func classifyBuiltin(name string) Class {
	ro, ok := builtins[Normalize(name)]
	if !ok {
		return Class{Reason: "unknown builtin: treated as write"}
	}
	return Class{ReadOnly: ro, Reason: fmt.Sprintf("builtin %q", name)}
}

func classifyMethod(method string) Class {
	m := strings.ToUpper(strings.TrimSpace(method))
	switch m {
	case "GET", "HEAD":
		return Class{ReadOnly: true, Reason: fmt.Sprintf("API method %q", m)}
	case "":
		return Class{Reason: "API method missing: treated as write"}
	}
	return Class{Reason: fmt.Sprintf("API method %q", m)}
}

func normalizedSet(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[Normalize(n)] = true
	}
	return m
}
