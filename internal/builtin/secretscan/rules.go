package secretscan

import (
	_ "embed"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/pelletier/go-toml/v2"

	"github.com/purko-io/mcp-hub/internal/builtin/secretscan/keywords"
)

// defaultConfig is gitleaks' default rule set (see the header of the file
// for its origin and license). It is embedded as text and parsed only when a
// Scanner first scans, so a hub that never scans never holds the rules.
//
//go:embed gitleaks.toml
var defaultConfig string

// hubConfig is the hub's own rules, in gitleaks' format, extending
// gitleaks' defaults ([extend] useDefault): credentials gitleaks' rules
// miss in what tools return (see the header of the file for why each
// rule exists).
//
//go:embed hub.toml
var hubConfig string

// configFile is the part of gitleaks' configuration format a text scanner
// needs. Keys it does not know make compile fail (strict decoding): a newer
// rule file with, say, composite rules (`required`) must be noticed and
// implemented, not half-applied.
type configFile struct {
	Title       string           `toml:"title"`
	Description string           `toml:"description"`
	MinVersion  string           `toml:"minVersion"`
	Extend      *extendEntry     `toml:"extend"`
	Allowlist   *allowlistEntry  `toml:"allowlist"` // the older single global form
	Allowlists  []allowlistEntry `toml:"allowlists"`
	Rules       []ruleEntry      `toml:"rules"`
}

// extendEntry is gitleaks' [extend]: a configuration that adds to another.
// Only useDefault (gitleaks' defaults, which this package embeds) can be
// extended: a text scanner reads no files.
type extendEntry struct {
	UseDefault    bool     `toml:"useDefault"`
	Path          string   `toml:"path"`
	URL           string   `toml:"url"`
	DisabledRules []string `toml:"disabledRules"`
}

type ruleEntry struct {
	ID          string           `toml:"id"`
	Description string           `toml:"description"`
	Regex       string           `toml:"regex"`
	Path        string           `toml:"path"`
	SecretGroup int              `toml:"secretGroup"`
	Entropy     float64          `toml:"entropy"`
	Keywords    []string         `toml:"keywords"`
	Tags        []string         `toml:"tags"`
	Allowlist   *allowlistEntry  `toml:"allowlist"` // the older single form
	Allowlists  []allowlistEntry `toml:"allowlists"`
}

type allowlistEntry struct {
	Description string   `toml:"description"`
	Condition   string   `toml:"condition"`
	Commits     []string `toml:"commits"`
	Paths       []string `toml:"paths"`
	RegexTarget string   `toml:"regexTarget"`
	Regexes     []string `toml:"regexes"`
	StopWords   []string `toml:"stopwords"`
	TargetRules []string `toml:"targetRules"` // global allowlists only
}

// target is what an allowlist's regexes are tested against.
type target int

const (
	targetSecret target = iota // the secret (the capture group), gitleaks' default
	targetMatch                // the whole match of the rule's regex
	targetLine                 // the line(s) the match is on
)

// allowlist is one compiled allowlist. Scanned text has neither a path nor
// a commit, so only regexes and stopwords can allow a finding.
type allowlist struct {
	target target
	// all is condition AND: every check present must pass.
	all bool
	// regex is the allowlist's regexes joined into one alternation, as
	// gitleaks joins them: a flag such as (?i) at the start of one pattern
	// then holds for the patterns after it too, and the rule file is tuned
	// on that behaviour.
	regex     *regexp.Regexp
	stopwords []string // lower case; matched against the lower-cased secret
	// stopIndex finds the stopwords in one pass over a secret: generic-
	// api-key has 1,446, 11 µs of strings.Contains per candidate.
	stopIndex *keywords.Index
}

// rule is one compiled rule.
type rule struct {
	id          string
	description string
	re          *regexp.Regexp
	secretGroup int
	entropy     float64
	keywords    []int // indexes into ruleSet.keywords; none: always run
	window      windowPlan
	gate        *gate // nil: every occurrence's window is scanned
	// distinct is what a window needs for a secret above the entropy
	// (entropy.go); nil: every window.
	distinct *distinctRun
	// reach bounds a window before and after an occurrence.
	reach      reach
	allowlists []*allowlist
	// allow is the global allowlists and the rule's own, cheapest first
	// (allowlist.cost): they are or'ed, so the order changes nothing
	// found, and a generic-api-key candidate a 194-character regex allows
	// no longer waits for the 935-character one listed before it (14 µs).
	allow []*allowlist
	// inert marks a rule that can never fire on text without a file name:
	// a path-only rule (no regex), or one whose path pattern rejects the
	// empty path, as gitleaks decides for a fragment without a path.
	inert bool
}

// keywordIndex finds the rules' keywords (keywords.Index) and keeps the
// buffers of its scans.
type keywordIndex struct {
	*keywords.Index
	// hitBufs holds the *hitScratch of scans: a large text has hundreds of
	// occurrences ("api" in every URL), a slice grown anew in each scan.
	hitBufs sync.Pool
}

// hit is one occurrence of a keyword.
type hit = keywords.Hit

// ruleSet is the compiled configuration: read-only once built, so one
// ruleSet serves concurrent scans.
type ruleSet struct {
	rules    []rule        // in file order, so results are deterministic
	keywords []string      // distinct lower-case keywords of all rules
	index    *keywordIndex // finds keywords; nil when there are none
	// keywordless is true when a rule that can fire has no keywords: it
	// runs on every text.
	keywordless bool
	global      []*allowlist // checked for every rule
	// rulesOf[k] are the rules (indices, in order) with keyword k, and
	// always the rules without keywords: a scan visits only the rules of
	// the keywords it found.
	rulesOf [][]int
	always  []int
}

// decode reads a gitleaks configuration, strictly, and applies its
// [extend]: the result holds the default rules and allowlists it extends
// (less its disabledRules) before its own, in one [[allowlists]] list.
func decode(config string) (*configFile, error) {
	var cf configFile
	dec := toml.NewDecoder(strings.NewReader(config)).DisallowUnknownFields()
	if err := dec.Decode(&cf); err != nil {
		var strict *toml.StrictMissingError
		if errors.As(err, &strict) {
			return nil, fmt.Errorf("reading the secret rules: keys this scanner does not implement:\n%s", strict.String())
		}
		return nil, fmt.Errorf("reading the secret rules: %w", err)
	}
	if cf.Allowlist != nil {
		if len(cf.Allowlists) > 0 {
			return nil, errors.New("reading the secret rules: [allowlist] and [[allowlists]] cannot both be used")
		}
		cf.Allowlists, cf.Allowlist = []allowlistEntry{*cf.Allowlist}, nil
	}
	ext := cf.Extend
	if ext == nil {
		return &cf, nil
	}
	if ext.Path != "" || ext.URL != "" || !ext.UseDefault {
		return nil, errors.New("reading the secret rules: [extend] can only use the default rules (useDefault = true): a text scanner reads no files")
	}
	base, err := decode(defaultConfig)
	if err != nil {
		return nil, err
	}
	rules := make([]ruleEntry, 0, len(base.Rules)+len(cf.Rules))
	for _, r := range base.Rules {
		if !slices.Contains(ext.DisabledRules, r.ID) {
			rules = append(rules, r)
		}
	}
	for _, id := range ext.DisabledRules {
		if !slices.ContainsFunc(base.Rules, func(r ruleEntry) bool { return r.ID == id }) {
			return nil, fmt.Errorf("reading the secret rules: [extend] disables rule %q, which the default rules do not have", id)
		}
	}
	cf.Rules = append(rules, cf.Rules...)
	cf.Allowlists = append(base.Allowlists, cf.Allowlists...)
	cf.Extend = nil
	return &cf, nil
}

// compile parses a gitleaks configuration and compiles its rules.
func compile(config string) (*ruleSet, error) {
	cf, err := decode(config)
	if err != nil {
		return nil, err
	}
	rs := &ruleSet{}
	keywordAt := map[string]int{}
	byID := map[string]int{}
	for _, e := range cf.Rules {
		r, err := compileRule(e, rs, keywordAt)
		if err != nil {
			return nil, err
		}
		if _, dup := byID[r.id]; dup {
			return nil, fmt.Errorf("secret rule %q: defined twice", r.id)
		}
		if !r.inert && len(r.keywords) == 0 {
			rs.keywordless = true
		}
		byID[r.id] = len(rs.rules)
		rs.rules = append(rs.rules, r)
	}

	for i, e := range cf.Allowlists {
		a, err := compileAllowlist(e)
		if err != nil {
			return nil, fmt.Errorf("secret rules: global allowlist %d: %w", i+1, err)
		}
		if len(e.TargetRules) == 0 {
			rs.global = appendUseful(rs.global, a)
			continue
		}
		for _, id := range e.TargetRules {
			j, ok := byID[id]
			if !ok {
				return nil, fmt.Errorf("secret rules: global allowlist %d targets rule %q, which does not exist", i+1, id)
			}
			rs.rules[j].allowlists = appendUseful(rs.rules[j].allowlists, a)
		}
	}
	for i := range rs.rules {
		r := &rs.rules[i]
		r.allow = append(slices.Clone(rs.global), r.allowlists...)
		slices.SortStableFunc(r.allow, func(a, b *allowlist) int { return a.cost() - b.cost() })
	}
	if index := keywords.New(rs.keywords); index != nil {
		rs.index = &keywordIndex{Index: index}
		rs.index.hitBufs.New = func() any { return new(hitScratch) }
	}
	rs.rulesOf = make([][]int, len(rs.keywords))
	for i, r := range rs.rules {
		switch {
		case r.inert:
		case len(r.keywords) == 0:
			rs.always = append(rs.always, i)
		default:
			for _, k := range r.keywords {
				rs.rulesOf[k] = append(rs.rulesOf[k], i)
			}
		}
	}
	return rs, nil
}

func compileRule(e ruleEntry, rs *ruleSet, keywordAt map[string]int) (rule, error) {
	if strings.TrimSpace(e.ID) == "" {
		return rule{}, fmt.Errorf("secret rule with description %q: no id", e.Description)
	}
	r := rule{id: e.ID, description: e.Description, secretGroup: e.SecretGroup, entropy: e.Entropy}
	if e.Regex == "" && e.Path == "" {
		return rule{}, fmt.Errorf("secret rule %q: neither regex nor path", e.ID)
	}
	if e.Regex != "" {
		re, err := regexp.Compile(e.Regex)
		if err != nil {
			return rule{}, fmt.Errorf("secret rule %q: regex: %w", e.ID, err)
		}
		if e.SecretGroup < 0 || e.SecretGroup > re.NumSubexp() {
			return rule{}, fmt.Errorf("secret rule %q: secretGroup %d, but the regex has %d groups", e.ID, e.SecretGroup, re.NumSubexp())
		}
		r.re = re
	}
	if e.Path != "" {
		pathRe, err := regexp.Compile(e.Path)
		if err != nil {
			return rule{}, fmt.Errorf("secret rule %q: path: %w", e.ID, err)
		}
		r.inert = r.re == nil || !pathRe.MatchString("")
	} else {
		r.inert = r.re == nil
	}
	for _, k := range e.Keywords {
		k = strings.ToLower(k)
		i, ok := keywordAt[k]
		if !ok {
			i = len(rs.keywords)
			keywordAt[k] = i
			rs.keywords = append(rs.keywords, k)
		}
		r.keywords = append(r.keywords, i)
	}
	if r.re != nil {
		lower := make([]string, len(e.Keywords))
		for i, k := range e.Keywords {
			lower[i] = strings.ToLower(k)
		}
		r.window = planWindow(e.Regex, lower)
		if r.window.windowed {
			r.gate = planGate(e.Regex, lower)
			r.reach = planReach(e.Regex, lower)
			r.distinct = planDistinct(e.Regex, e.SecretGroup, e.Entropy)
		}
	}
	if e.Allowlist != nil {
		if len(e.Allowlists) > 0 {
			return rule{}, fmt.Errorf("secret rule %q: [rules.allowlist] and [[rules.allowlists]] cannot both be used", e.ID)
		}
		e.Allowlists = []allowlistEntry{*e.Allowlist}
	}
	for i, ae := range e.Allowlists {
		if len(ae.TargetRules) > 0 {
			return rule{}, fmt.Errorf("secret rule %q: allowlist %d: targetRules belongs in a global allowlist", e.ID, i+1)
		}
		a, err := compileAllowlist(ae)
		if err != nil {
			return rule{}, fmt.Errorf("secret rule %q: allowlist %d: %w", e.ID, i+1, err)
		}
		r.allowlists = appendUseful(r.allowlists, a)
	}
	return r, nil
}

// compileAllowlist compiles one allowlist. It returns nil for an allowlist
// that can never allow a finding in text without path or commit: one that
// has only paths or commits, or, under condition AND, any path or commit
// (gitleaks holds a missing path or commit as not allowed).
func compileAllowlist(e allowlistEntry) (*allowlist, error) {
	if len(e.Commits) == 0 && len(e.Paths) == 0 && len(e.Regexes) == 0 && len(e.StopWords) == 0 {
		return nil, errors.New("empty: it needs commits, paths, regexes or stopwords")
	}
	a := &allowlist{}
	switch strings.ToUpper(e.Condition) {
	case "", "OR", "||":
	case "AND", "&&":
		a.all = true
	default:
		return nil, fmt.Errorf("condition %q: want AND or OR", e.Condition)
	}
	switch e.RegexTarget {
	case "", "secret":
		a.target = targetSecret
	case "match":
		a.target = targetMatch
	case "line":
		a.target = targetLine
	default:
		return nil, fmt.Errorf("regexTarget %q: want secret, match or line", e.RegexTarget)
	}
	for _, p := range e.Paths {
		if _, err := regexp.Compile(p); err != nil {
			return nil, fmt.Errorf("path %q: %w", p, err)
		}
	}
	if len(e.Regexes) > 0 {
		for _, p := range e.Regexes {
			if _, err := regexp.Compile(p); err != nil {
				return nil, fmt.Errorf("regex %q: %w", p, err)
			}
		}
		re, err := regexp.Compile("(?:" + strings.Join(e.Regexes, "|") + ")")
		if err != nil {
			return nil, fmt.Errorf("regexes joined: %w", err)
		}
		a.regex = re
	}
	seen := map[string]bool{}
	for _, w := range e.StopWords {
		w = strings.ToLower(w)
		if w != "" && !seen[w] {
			seen[w] = true
			a.stopwords = append(a.stopwords, w)
		}
	}
	if a.all && (len(e.Paths) > 0 || len(e.Commits) > 0) {
		return nil, nil
	}
	a.stopIndex = keywords.New(a.stopwords)
	if a.regex == nil && len(a.stopwords) == 0 {
		return nil, nil
	}
	return a, nil
}

// cost ranks allowlists by what checking one costs: its regex's length
// (Go's regexp runs a long alternation as an NFA, about a microsecond per
// hundred characters of pattern on a 40-byte secret) times what it reads:
// the secret, the match around it, or the whole line, which in a tool's
// result can be all of a 100 KB text (milliseconds); and a little for the
// stopwords' one pass over the secret.
func (a *allowlist) cost() int {
	c := 0
	if a.regex != nil {
		c = len(a.regex.String())
		switch a.target {
		case targetMatch:
			c *= 2
		case targetLine:
			c *= 1000
		}
	}
	if a.stopIndex != nil {
		c += 16
	}
	return c
}

// appendUseful appends a unless it is nil (an allowlist that never allows).
func appendUseful(list []*allowlist, a *allowlist) []*allowlist {
	if a == nil {
		return list
	}
	return append(list, a)
}
