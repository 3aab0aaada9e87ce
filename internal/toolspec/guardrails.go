package toolspec

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Guardrails are what an agent's tool calls are held to beyond its
// autonomy level, with the keys of Purko's Agent spec.guardrails: one
// schema for an Agent, a token caller (auth.tokens[].guardrails) and an
// OAuth grant, so a policy written for one reads the same for the others.
// The hub enforces them server-side on every face; Purko's executor may
// apply them too, which changes nothing.
type Guardrails struct {
	// ContentFilters name the filters applied to a call's arguments
	// (before the upstream) and its result (before the caller): pii (or
	// no-pii), secrets (or no-secrets-in-output), regex:PATTERN:REPLACEMENT.
	ContentFilters []string `json:"contentFilters,omitempty"`
	// ContentFilterMode is redact (default: what a filter finds is replaced
	// by a typed marker) or block (the call is refused, naming the rule).
	ContentFilterMode string `json:"contentFilterMode,omitempty"`
	// MaxIterations caps the tool calls of one agent run: a ServiceAccount
	// caller's pod, else the trace of the caller's traceparent, else its
	// MCP session; 0: no cap.
	MaxIterations int `json:"maxIterations,omitempty"`
	// MaxIterationsPerHour caps the tool calls of all runs of a token or
	// OAuth caller together within an hour; 0: no cap. Such a caller
	// starts a run whenever it sends a new session or traceparent, so
	// MaxIterations alone bounds a run, never the caller. A
	// ServiceAccount caller's run is its pod, which it cannot restart at
	// will: the hour does not apply to it (nor is it read from an Agent).
	MaxIterationsPerHour int `json:"maxIterationsPerHour,omitempty"`
	// HumanApprovalRequired holds every call of a write tool (one the
	// restricted level refuses) until a person approves it (internal/
	// approvals): the key Purko's Agent already has for irreversible
	// steps, enforced per call. Read tools are never held.
	HumanApprovalRequired bool `json:"humanApprovalRequired,omitempty"`
	// ApprovalFor, when not empty, narrows the approval to the write tools
	// whose published or upstream name matches one of these globs.
	ApprovalFor []string `json:"approvalFor,omitempty"`
	// ApprovalMode is api (default: out of band, an approver answers at
	// /api/mcp/approvals, the console, the CLI or the webhook's bot) or
	// elicit: the caller's own client is asked through elicitation, for a
	// person at the keyboard (an IDE user). Never elicit for a
	// ServiceAccount caller: an agent would answer for itself.
	ApprovalMode string `json:"approvalMode,omitempty"`
}

// The approval modes.
const (
	ApprovalAPI    = "api"
	ApprovalElicit = "elicit"
)

// NeedsApproval reports whether a call of a write tool published under
// published (original: its upstream's name) must wait for a person.
func (g *Guardrails) NeedsApproval(published, original string) bool {
	if g == nil || !g.HumanApprovalRequired {
		return false
	}
	if len(g.ApprovalFor) == 0 {
		return true
	}
	if _, ok := Match(g.ApprovalFor, published); ok {
		return true
	}
	_, ok := Match(g.ApprovalFor, original)
	return ok
}

// The content filters' canonical names and the modes.
const (
	FilterPII     = "pii"
	FilterSecrets = "secrets"
	FilterRegex   = "regex"

	ModeRedact = "redact"
	ModeBlock  = "block"
)

// filterAliases are the names Purko's executor knows, long and short.
var filterAliases = map[string]string{
	"pii": FilterPII, "no-pii": FilterPII,
	"secrets": FilterSecrets, "no-secrets-in-output": FilterSecrets,
}

// maxPatternBytes bounds a regex filter's pattern: RE2 runs in linear time
// whatever the pattern, but a pattern is compiled per policy and kept.
const maxPatternBytes = 1024

// Filter is one content filter, parsed.
type Filter struct {
	// Name is FilterPII, FilterSecrets or FilterRegex.
	Name string
	// Pattern and Replacement are a regex filter's (RE2 syntax; the
	// replacement is literal).
	Pattern, Replacement string
}

// ParseFilter reads one content filter name; its error names it and the
// names it may be.
func ParseFilter(s string) (Filter, error) {
	name := strings.TrimSpace(s)
	if canonical, ok := filterAliases[strings.ToLower(name)]; ok {
		return Filter{Name: canonical}, nil
	}
	rest, ok := strings.CutPrefix(name, "regex:")
	if !ok {
		return Filter{}, fmt.Errorf("unknown content filter %q (known: pii, no-pii, secrets, no-secrets-in-output, regex:PATTERN:REPLACEMENT)", s)
	}
	// The replacement follows the last colon: a pattern may hold colons
	// (\d{2}:\d{2}), a replacement rarely does.
	i := strings.LastIndexByte(rest, ':')
	if i < 0 {
		return Filter{}, fmt.Errorf("content filter %q: a regex filter is regex:PATTERN:REPLACEMENT", s)
	}
	f := Filter{Name: FilterRegex, Pattern: rest[:i], Replacement: rest[i+1:]}
	if f.Pattern == "" {
		return Filter{}, fmt.Errorf("content filter %q: empty pattern", s)
	}
	if len(f.Pattern) > maxPatternBytes {
		return Filter{}, fmt.Errorf("content filter regex: the pattern is %d bytes, at most %d", len(f.Pattern), maxPatternBytes)
	}
	re, err := regexp.Compile(f.Pattern)
	if err != nil {
		return Filter{}, fmt.Errorf("content filter %q: %w", s, err)
	}
	if re.MatchString("") {
		return Filter{}, fmt.Errorf("content filter %q: the pattern matches the empty text, so it would match everywhere", s)
	}
	return f, nil
}

// Filters returns the content filters parsed, without duplicates, in
// order; the error names every unknown or malformed one.
func (g *Guardrails) Filters() ([]Filter, error) {
	if g == nil {
		return nil, nil
	}
	var out []Filter
	var errs []string
	for _, s := range g.ContentFilters {
		f, err := ParseFilter(s)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("contentFilters: %s", strings.Join(errs, "; "))
	}
	return out, nil
}

// Validate checks every key and names what is wrong.
func (g *Guardrails) Validate() error {
	if g == nil {
		return nil
	}
	if _, err := g.Filters(); err != nil {
		return err
	}
	switch g.ContentFilterMode {
	case "", ModeRedact, ModeBlock:
	default:
		return fmt.Errorf("contentFilterMode: %q is not one of redact, block", g.ContentFilterMode)
	}
	if g.MaxIterations < 0 {
		return fmt.Errorf("maxIterations: %d is negative (0 or absent: no cap)", g.MaxIterations)
	}
	if g.MaxIterationsPerHour < 0 {
		return fmt.Errorf("maxIterationsPerHour: %d is negative (0 or absent: no cap)", g.MaxIterationsPerHour)
	}
	if err := ValidatePatterns(g.ApprovalFor); err != nil {
		return fmt.Errorf("approvalFor: %w", err)
	}
	if len(g.ApprovalFor) > 0 && !g.HumanApprovalRequired {
		return fmt.Errorf("approvalFor: set without humanApprovalRequired: true, so it would hold nothing")
	}
	switch g.ApprovalMode {
	case "", ApprovalAPI, ApprovalElicit:
	default:
		return fmt.Errorf("approvalMode: %q is not one of api, elicit", g.ApprovalMode)
	}
	return nil
}

// Block reports whether a filter's finding refuses the call rather than
// being redacted.
func (g *Guardrails) Block() bool { return g != nil && g.ContentFilterMode == ModeBlock }

// Empty reports whether g holds the caller to nothing.
func (g *Guardrails) Empty() bool {
	return g == nil || len(g.ContentFilters) == 0 && g.MaxIterations == 0 && g.MaxIterationsPerHour == 0 && !g.HumanApprovalRequired
}

// Merge returns the stricter union of g and o (either may be nil): every
// filter of both, block over redact, the lower cap. Several grants that
// match one caller add their guardrails up: a guardrail only ever narrows.
func (g *Guardrails) Merge(o *Guardrails) *Guardrails {
	switch {
	case o.Empty() && g != nil && !g.Empty():
		return g
	case g.Empty():
		if o.Empty() {
			return nil
		}
		return o
	}
	m := &Guardrails{ContentFilters: slices.Clone(g.ContentFilters), ContentFilterMode: g.ContentFilterMode,
		MaxIterations: g.MaxIterations, MaxIterationsPerHour: g.MaxIterationsPerHour}
	for _, f := range o.ContentFilters {
		if !slices.Contains(m.ContentFilters, f) {
			m.ContentFilters = append(m.ContentFilters, f)
		}
	}
	if o.Block() {
		m.ContentFilterMode = ModeBlock
	}
	m.MaxIterations = lowerCap(m.MaxIterations, o.MaxIterations)
	m.MaxIterationsPerHour = lowerCap(m.MaxIterationsPerHour, o.MaxIterationsPerHour)
	m.HumanApprovalRequired, m.ApprovalFor, m.ApprovalMode = mergeApproval(g, o)
	return m
}

// mergeApproval is the stricter of two approval policies: held if either
// holds; every tool if either holds every tool, else the globs of both;
// out of band unless both ask the caller's own client.
func mergeApproval(g, o *Guardrails) (required bool, patterns []string, mode string) {
	for _, x := range [2]*Guardrails{g, o} {
		if !x.HumanApprovalRequired {
			continue
		}
		if !required {
			required, patterns, mode = true, slices.Clone(x.ApprovalFor), x.ApprovalMode
			continue
		}
		if len(patterns) == 0 || len(x.ApprovalFor) == 0 {
			patterns = nil
		} else {
			for _, p := range x.ApprovalFor {
				if !slices.Contains(patterns, p) {
					patterns = append(patterns, p)
				}
			}
		}
		if mode != x.ApprovalMode {
			mode = ApprovalAPI
		}
	}
	return required, patterns, mode
}

// lowerCap is the stricter of two caps, where 0 is none.
func lowerCap(a, b int) int {
	if b > 0 && (a == 0 || b < a) {
		return b
	}
	return a
}
