// Package guardrails holds an agent's tool calls to its guardrails, the
// keys of a Purko Agent's spec.guardrails (toolspec.Guardrails): content
// filters on a call's arguments before the upstream sees them and on its
// result before the caller does, and budgets of tool calls per agent run
// and per caller's hour.
// The pipeline applies them to every call of a caller that has them,
// whatever face it came in on; a caller without guardrails costs nothing.
//
// What a filter finds is detected by internal/guardrails/detect (gitleaks'
// rules and the hub's own for secrets; e-mail addresses, phone numbers,
// payment cards, IBANs, US SSNs and national ids for pii) and either replaced by a typed marker
// ("[redacted: aws-access-token]") or refuses the call. Reports name rule
// ids and counts, never what was matched. The detectors read each string as
// its reader would (internal/guardrails/normalize: escapes, look-alike and
// invisible characters, base64 and hex, spaced-out letters undone), object
// keys too, and the text parts of an array joined, so that writing a
// credential some other way does not carry it past them.
package guardrails

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/purko-io/mcp-hub/internal/guardrails/detect"
	"github.com/purko-io/mcp-hub/internal/toolspec"
)

// Directions of a filtered document, as the audit line and the metric
// name them.
const (
	Arguments = "arguments"
	Result    = "result"
)

// policies bounds the compiled policies kept: one per distinct set of
// guardrails (an Agent, a token caller), so a few dozen in practice.
const policies = 256

// Options configure a Guard.
type Options struct {
	// Metrics registers mcphub_guardrail_*; nil, they are not exported.
	Metrics prometheus.Registerer
	// Runs counts the calls of agent runs (NewRuns); nil, a Guard of its
	// own that no peer hears of.
	Runs *Runs
}

// Guard applies guardrails. It is safe for concurrent use; its detectors
// compile their rules on first use, so a hub whose callers have no
// guardrails never pays for them.
type Guard struct {
	pii      func() *detect.PII
	secrets  func() *detect.Secrets
	compiled *lru.Cache[string, *policy]
	runs     *Runs
	hits     *prometheus.CounterVec
	refused  prometheus.Counter
	// texts lends the buffers a document's strings are unquoted into
	// (rewriteStrings): a 100 KB result is otherwise 100 KB more for the
	// collector on every call.
	texts sync.Pool
}

// New returns a Guard.
func New(opts Options) *Guard {
	cache, _ := lru.New[string, *policy](policies)
	g := &Guard{
		pii:      sync.OnceValue(detect.NewPII),
		secrets:  sync.OnceValue(detect.NewSecrets),
		compiled: cache,
		runs:     opts.Runs,
		hits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcphub_guardrail_hits_total",
			Help: "What the content filters found in tool calls, by filter, rule, direction (arguments, result) and action (redacted, blocked).",
		}, []string{"filter", "rule", "direction", "action"}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mcphub_guardrail_budget_refusals_total",
			Help: "Tool calls refused because their agent run had used its maxIterations, or their caller its maxIterationsPerHour.",
		}),
	}
	g.texts.New = func() any { return new([]byte) }
	if g.runs == nil {
		g.runs = NewRuns(nil)
	}
	if opts.Metrics != nil {
		opts.Metrics.MustRegister(g.hits, g.refused)
	}
	return g
}

// policy is a set of guardrails ready to apply.
type policy struct {
	pii, secrets bool
	regexes      []*regexp.Regexp
	replacements []string
	// regexRules are the regex filters' rule ids: regex-1 for the first.
	regexRules []string
	block      bool
}

// policyOf compiles spec, once per distinct spec. spec was validated where
// it was read (config, the Agent), so an error here is a bug, still
// reported rather than letting a call through unfiltered.
func (g *Guard) policyOf(spec *toolspec.Guardrails) (*policy, error) {
	key := spec.ContentFilterMode + "\x00" + strings.Join(spec.ContentFilters, "\x00")
	if p, ok := g.compiled.Get(key); ok {
		return p, nil
	}
	filters, err := spec.Filters()
	if err != nil {
		return nil, err
	}
	p := &policy{block: spec.Block()}
	for _, f := range filters {
		switch f.Name {
		case toolspec.FilterPII:
			p.pii = true
		case toolspec.FilterSecrets:
			p.secrets = true
		case toolspec.FilterRegex:
			re, err := regexp.Compile(f.Pattern)
			if err != nil {
				return nil, fmt.Errorf("content filter regex:%s: %w", f.Pattern, err)
			}
			p.regexes = append(p.regexes, re)
			p.replacements = append(p.replacements, f.Replacement)
			p.regexRules = append(p.regexRules, fmt.Sprintf("regex-%d", len(p.regexes)))
		}
	}
	g.compiled.Add(key, p)
	return p, nil
}

// Hit is what one rule found in one document.
type Hit struct {
	// Filter is pii, secrets or regex; Rule the rule's id (a gitleaks rule
	// id, email, phone, payment-card, iban, us-ssn, regex-N for the N-th
	// regex filter).
	Filter, Rule string
	Count        int
}

// Report says what the filters did to one document. The zero Report:
// nothing found.
type Report struct {
	Direction string
	// Blocked: the call is refused; else what was found was redacted.
	Blocked bool
	Hits    []Hit
}

// Found reports whether a filter found anything.
func (r Report) Found() bool { return len(r.Hits) > 0 }

// Action is redacted or blocked.
func (r Report) Action() string {
	if r.Blocked {
		return "blocked"
	}
	return "redacted"
}

// Rules is the hits as "rule×count" joined, for messages and the console.
func (r Report) Rules() string {
	parts := make([]string, len(r.Hits))
	for i, h := range r.Hits {
		parts[i] = h.Rule
		if h.Count > 1 {
			parts[i] += fmt.Sprintf("×%d", h.Count)
		}
	}
	return strings.Join(parts, ", ")
}

// Summary says what was done where, for the console and the call's audit
// line: "redacted email×2, phone in result"; "" for a nil Report or one
// that found nothing.
func (r *Report) Summary() string {
	if r == nil || !r.Found() {
		return ""
	}
	return r.Action() + " " + r.Rules() + " in " + r.Direction
}

// Denial is the BLOCKED text a blocked call answers, naming the tool, the
// direction and the rules (never what matched).
func (r Report) Denial(tool string) string { return r.DenialOf("tool '" + tool + "'") }

// DenialOf is Denial for what is not a tool call: what names the request
// or message ("prompts/get of 'review'", "notifications/message").
func (r Report) DenialOf(what string) string {
	filters := make([]string, 0, 2)
	for _, h := range r.Hits {
		if !slices.Contains(filters, h.Filter) {
			filters = append(filters, h.Filter)
		}
	}
	if r.Direction == Arguments {
		return fmt.Sprintf("BLOCKED: the arguments of %s hold what the content filter %s refuses (%s); the call was not sent.",
			what, strings.Join(filters, ", "), r.Rules())
	}
	return fmt.Sprintf("BLOCKED: the result of %s holds what the content filter %s refuses (%s); it was withheld.",
		what, strings.Join(filters, ", "), r.Rules())
}

// Filter applies spec's content filters to a JSON document (a call's
// arguments or its result, per direction): it returns the document with
// what they found redacted (raw itself when nothing was), and the Report.
// In block mode a finding is reported Blocked and the document returned
// unchanged: the caller must not pass it on. An error (a document that is
// not JSON) must refuse the call too: nothing unfiltered goes through.
//
// The filters read every string of the document, object names included,
// as its reader would (internal/guardrails/normalize: escapes, look-alike
// and invisible characters, base64 and hex, spaced-out letters) and the
// text parts of an array joined (see rewriteStrings); what they find is
// redacted with all that wrote it.
func (g *Guard) Filter(ctx context.Context, spec *toolspec.Guardrails, direction string, raw json.RawMessage) (json.RawMessage, Report, error) {
	rep := Report{Direction: direction}
	if spec == nil || len(spec.ContentFilters) == 0 || len(raw) == 0 {
		return raw, rep, nil
	}
	p, err := g.policyOf(spec)
	if err != nil {
		return nil, rep, err
	}
	ps := newPass(ctx, g, p)
	// The detectors' prefilters read the raw bytes: what they pass over
	// is not in any string as it is, but may be in a reading of one (an
	// encoded credential), or in the join of two. A regex filter can
	// match anything, so it always runs.
	ps.secrets = p.secrets && g.secrets().Maybe(raw)
	switch {
	case p.pii && ps.secrets && len(raw) >= overlapFrom:
		// The document is walked anyway: PII's prefilter reads it on
		// another core meanwhile, and the first long string that needs
		// its answer waits for it (pass.piiDoc).
		answer := make(chan bool, 1)
		go func() { answer <- g.pii().Maybe(raw) }()
		ps.piiAnswer = answer
		defer ps.piiDoc() // the prefilter ends before Filter does
	case p.pii:
		ps.pii = g.pii().Maybe(raw)
	}
	if !ps.pii && ps.piiAnswer == nil && !ps.secrets && len(p.regexes) == 0 && !ps.reader.MayHide(raw) && !mayJoin(raw) {
		return raw, rep, nil
	}
	out, err := rewriteStrings(raw, ps, &g.texts)
	if err != nil {
		return nil, rep, fmt.Errorf("filter the %s: %w", direction, err)
	}
	for k, n := range ps.counts {
		rep.Hits = append(rep.Hits, Hit{Filter: k[0], Rule: k[1], Count: n})
	}
	sort.Slice(rep.Hits, func(i, j int) bool { return rep.Hits[i].Rule < rep.Hits[j].Rule })
	rep.Blocked = p.block && len(rep.Hits) > 0
	for _, h := range rep.Hits {
		g.hits.WithLabelValues(h.Filter, h.Rule, direction, rep.Action()).Add(float64(h.Count))
	}
	if rep.Blocked {
		return raw, rep, nil
	}
	return out, rep, nil
}

// overlapFrom is the smallest document whose PII prefilter runs beside
// the walk, and the shortest string whose readings and PII run beside the
// secrets detector (pass.readLong): below it a goroutine costs more than
// the reading it overlaps.
const overlapFrom = 16 << 10

// find appends what p's filters find in s: the detectors pii and secrets
// ask for, and p's regex filters. Findings may overlap (the caller joins
// them: dropping one would leave the part of it outside the other).
func (g *Guard) find(ctx context.Context, p *policy, pii, secrets bool, s string, out []detect.Finding) ([]detect.Finding, error) {
	if secrets {
		var err error
		if out, err = g.secrets().Find(ctx, s, out); err != nil {
			return nil, fmt.Errorf("look for secrets: %w", err)
		}
	}
	if pii {
		out = g.findPII(s, out)
	}
	for i, re := range p.regexes {
		for _, m := range re.FindAllStringIndex(s, -1) {
			if m[1] > m[0] {
				out = append(out, detect.Finding{Rule: p.regexRules[i], Start: m[0], End: m[1]})
			}
		}
	}
	return out, nil
}

// findPII appends the PII detector's findings in s to out.
func (g *Guard) findPII(s string, out []detect.Finding) []detect.Finding {
	// Each detector drops what overlaps its own earlier findings: it must
	// not see the other's (an address before a key would hide the key).
	return append(out, g.pii().Find(s, out[len(out):len(out)])...)
}

// filterOf names the filter of p a rule id belongs to.
func (p *policy) filterOf(rule string) string {
	switch {
	case slices.Contains(p.regexRules, rule):
		return toolspec.FilterRegex
	case detect.IsPIIRule(rule):
		return toolspec.FilterPII
	}
	return toolspec.FilterSecrets
}
