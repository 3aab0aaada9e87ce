// Package secretscan finds credentials in a text with gitleaks' default
// rules (gitleaks.toml beside this file, v8.30.1, MIT), applying them as
// gitleaks' detector applies them to a fragment without a file name or
// commit: keyword prefilter, the rule's regex and secret group, the entropy
// threshold, the global and per-rule allowlists and the `gitleaks:allow`
// marker, and generic rules giving way to specific ones on the same line.
// Hub adds the hub's own rules (hub.toml, in gitleaks' format, extending
// the defaults) for what tools return and gitleaks' rules, written for
// source files, miss: connection strings, config values, command lines,
// headers, provider tokens in any surroundings.
//
// It exists so the hub keeps gitleaks' rules without gitleaks' detector,
// whose archive, git and configuration machinery (viper) pulled ~370
// packages into the binary for the one call the static-analysis tool makes.
// Encoded content is not decoded (gitleaks' default decode depth is 0).
//
// Where gitleaks v8.30.1 slips, this scanner does not: gitleaks takes the
// "line" of a match on an unterminated last line to run from the start of
// the text (so a gitleaks:allow anywhere above hides it), and counts its
// columns after the first line from the newline before them.
package secretscan

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/purko-io/mcp-hub/internal/builtin/secretscan/keywords"
)

// allowMarker on a line keeps gitleaks from reporting a secret on it.
const allowMarker = "gitleaks:allow"

// Finding is one secret found. Secret is the credential itself: callers
// must not put it in results, logs or errors.
type Finding struct {
	RuleID      string
	Description string
	// Line is the 1-based line where the rule's match starts.
	Line int
	// Column is the 1-based byte column of the secret on Line, or of the
	// match when the secret starts on a later line.
	Column int
	Secret string
	// Start and End are the byte offsets of Secret in the text:
	// text[Start:End] == Secret.
	Start, End int
}

// Scanner scans texts with one rule set. Its rules are compiled on the
// first Scan, once, and then shared by concurrent scans: compiling a few
// hundred regular expressions is work a process that never scans should not
// pay for, nor keep in memory. Make one with New or Default.
type Scanner struct {
	rules func() (*ruleSet, error)
}

// New returns a Scanner for a gitleaks configuration in TOML; an invalid
// configuration is reported by Scan.
func New(config string) *Scanner {
	return &Scanner{rules: sync.OnceValues(func() (*ruleSet, error) { return compile(config) })}
}

// Default returns a Scanner with gitleaks' default rules.
func Default() *Scanner {
	return New(defaultConfig)
}

// Hub returns a Scanner with gitleaks' default rules and the hub's own
// (hub.toml): what tools return holds credentials in places gitleaks'
// rules, written for source files, do not look (connection strings,
// configuration values under secret-like names, command lines, headers,
// and tokens right before a '<', ',' or ']').
func Hub() *Scanner {
	return New(hubConfig)
}

// Scan returns the secrets in text, in rule order. When ctx ends during the
// scan it returns what it found so far with ctx's error.
func (s *Scanner) Scan(ctx context.Context, text string) ([]Finding, error) {
	if s == nil || s.rules == nil {
		return nil, errors.New("scanning for secrets: a Scanner without rules (use New or Default)")
	}
	rs, err := s.rules()
	if err != nil {
		return nil, err
	}
	return rs.scan(ctx, text)
}

func (rs *ruleSet) scan(ctx context.Context, text string) ([]Finding, error) {
	if rs.index == nil || hasFoldTrap(text) {
		return rs.scanWhole(ctx, text)
	}
	return rs.scanWindowed(ctx, text)
}

// scanWhole runs every rule whose keyword occurs over the whole text, as
// gitleaks does.
func (rs *ruleSet) scanWhole(ctx context.Context, text string) ([]Finding, error) {
	sc := scan{text: text, lower: strings.ToLower(text), present: make([]int8, len(rs.keywords))}
	var found []Finding
	for i := range rs.rules {
		if err := ctx.Err(); err != nil {
			return dropShadowed(found), fmt.Errorf("scanning for secrets: %w", err)
		}
		r := &rs.rules[i]
		if r.inert || !sc.anyKeyword(rs.keywords, r.keywords) {
			continue
		}
		found = sc.find(r, found, 0, len(text), -1)
	}
	return dropShadowed(found), nil
}

// scanWindowed finds the same as scanWhole, running a rule's regex only
// around its keywords where planWindow allows it (see window.go).
func (rs *ruleSet) scanWindowed(ctx context.Context, text string) ([]Finding, error) {
	hs := rs.index.hitBufs.Get().(*hitScratch)
	defer func() {
		hs.Reset()
		if cap(hs.hits) <= maxPooledHits {
			rs.index.hitBufs.Put(hs)
		}
	}()
	hits := rs.index.Hits(text, hs.hits[:0])
	hs.hits = hits
	if len(hits) == 0 && !rs.keywordless {
		return nil, nil
	}
	hs.Group(hits, len(rs.keywords))
	// The rules to visit: those of the keywords found, and the ones
	// without keywords, in rule order (results are in rule order).
	visit := slices.Clone(rs.always)
	for _, k := range hs.Found() {
		visit = append(visit, rs.rulesOf[k]...)
	}
	slices.Sort(visit)
	visit = slices.Compact(visit)
	sc := scan{text: text}
	var found []Finding
	var windows [][3]int // start, end, occurrences
	// A text with few occurrences has few tries of gates to repeat.
	var tried *gateCache
	if len(hits) >= minCachedHits {
		tried = newGateCache()
	}
	for _, i := range visit {
		if err := ctx.Err(); err != nil {
			return dropShadowed(found), fmt.Errorf("scanning for secrets: %w", err)
		}
		r := &rs.rules[i]
		if len(r.keywords) == 0 || !r.window.windowed {
			found = sc.find(r, found, 0, len(text), -1)
			continue
		}
		windows = windows[:0]
		for j, k := range r.keywords {
			if slices.Contains(r.keywords[:j], k) {
				continue // listed twice: its occurrences are read once
			}
			for _, h := range hs.Of(k) {
				if r.gate == nil || r.gate.opens(text, j, h, tried) {
					w := sc.window(h, r.window.before, r.window.after, &r.reach)
					windows = append(windows, [3]int{w[0], w[1], 1})
				}
			}
		}
		if len(windows) == 0 {
			continue
		}
		// Merged windows; a window holds at most one match per occurrence
		// in it (every match holds one, and two matches do not overlap),
		// so the search stops there rather than reading the window to its
		// end.
		slices.SortFunc(windows, func(a, b [3]int) int { return a[0] - b[0] })
		merged := windows[:1]
		for _, w := range windows[1:] {
			if last := &merged[len(merged)-1]; w[0] <= last[1] {
				last[1], last[2] = max(last[1], w[1]), last[2]+1
				continue
			}
			merged = append(merged, w)
		}
		for _, w := range merged {
			if r.window.holds(text[w[0]:w[1]]) && (r.distinct == nil || r.distinct.met(text[w[0]:w[1]])) {
				found = sc.find(r, found, w[0], w[1], w[2])
			}
		}
	}
	return dropShadowed(found), nil
}

// hitScratch is a scan's buffers for the occurrences of keywords, kept
// for the next scan.
type hitScratch struct {
	hits []hit
	keywords.Grouped
}

// maxPooledHits bounds the occurrences buffer a scan gives back for the
// next: one text with a million would otherwise keep its buffer forever.
const maxPooledHits = 1 << 14

// minCachedHits is how many occurrences of keywords make a scan remember
// its gates' tries (gateCache).
const minCachedHits = 16

// window returns the lines from before lines before an occurrence to after
// lines after it: from the start of a line to after a newline or the end of
// the text.
func (sc *scan) window(h hit, before, after int, rc *reach) [2]int {
	text := sc.text
	floor := max(0, h.Start-rc.bytes[0])
	// Back to the (n+1)-th stop byte before the occurrence, the first
	// barrier byte, or the newline the lines below stop at: no match
	// reaches over any.
	for j, n, lines := h.Start-1, rc.stops[0], before; j >= floor; j-- {
		c := text[j]
		stop := n >= 0 && isStop(c)
		if stop && n == 0 || rc.barrier[0][c] || c == '\n' && lines == 0 {
			floor = j
			break
		}
		if stop {
			n--
		}
		if c == '\n' {
			lines--
		}
	}
	ceil := min(len(text), h.End+rc.bytes[1])
	// On to the (n+1)-th stop byte from the start, the first barrier or
	// the newline that ends the lines.
	for j, n, lines := h.Start, rc.stops[1], after; j < ceil; j++ {
		c := text[j]
		stop := n >= 0 && isStop(c)
		if stop && n == 0 || rc.barrier[1][c] || c == '\n' && lines == 0 {
			ceil = j + 1
			break
		}
		if stop {
			n--
		}
		if c == '\n' {
			lines--
		}
	}
	ceil = max(ceil, h.End)
	lo := h.Start
	for range before + 1 {
		i := strings.LastIndexByte(text[floor:lo], '\n')
		if i < 0 {
			lo = floor - 1
			break
		}
		lo = floor + i
	}
	lo++ // after the newline, or at the floor
	hi := h.End
	for range after + 1 {
		i := strings.IndexByte(text[hi:ceil], '\n')
		if i < 0 {
			hi = ceil
			break
		}
		hi += i + 1
	}
	return [2]int{lo, hi}
}

// scan is the state of one Scan.
type scan struct {
	text, lower string
	// present caches whether each keyword occurs in lower: 0 not yet
	// looked up, 1 present, -1 absent.
	present  []int8
	newlines []int // offsets of '\n' in text, computed on first need
	// marked: 0 not yet looked up, 1 the text holds allowMarker, -1 not.
	marked int8
	// secrets remembers the secret in each match: a tool's result repeats
	// itself (a list of issues, a log), and a rule's regex rematched on
	// the same match (secretOf, an NFA run with captures) finds the same.
	secrets map[matchText][2]int
}

// matchText is a rule's match.
type matchText struct {
	r     *rule
	match string
}

// secretOf is secretOf, once per scan for each rule and match.
func (sc *scan) secretOf(r *rule, match string) (string, int) {
	key := matchText{r, match}
	if s, ok := sc.secrets[key]; ok {
		return match[s[0]:s[1]], s[0]
	}
	secret, offset := secretOf(r, match)
	if sc.secrets == nil {
		sc.secrets = map[matchText][2]int{}
	}
	sc.secrets[key] = [2]int{offset, offset + len(secret)}
	return secret, offset
}

// allowMarked reports whether allowMarker occurs anywhere in the text.
func (sc *scan) allowMarked() bool {
	if sc.marked == 0 {
		sc.marked = -1
		if strings.Contains(sc.text, allowMarker) {
			sc.marked = 1
		}
	}
	return sc.marked == 1
}

// anyKeyword reports whether one of a rule's keywords occurs in the text,
// ignoring case; a rule without keywords always runs.
func (sc *scan) anyKeyword(all []string, idx []int) bool {
	if len(idx) == 0 {
		return true
	}
	for _, i := range idx {
		if sc.present[i] == 0 {
			sc.present[i] = -1
			if strings.Contains(sc.lower, all[i]) {
				sc.present[i] = 1
			}
		}
		if sc.present[i] == 1 {
			return true
		}
	}
	return false
}

// find appends r's findings in text[lo:hi] to found.
func (sc *scan) find(r *rule, found []Finding, lo, hi, most int) []Finding {
	for _, m := range r.re.FindAllStringIndex(sc.text[lo:hi], most) {
		m[0] += lo
		m[1] += lo
		// gitleaks trims newlines off both ends of a match.
		match := strings.TrimLeft(sc.text[m[0]:m[1]], "\n")
		start := m[1] - len(match)
		match = strings.TrimRight(match, "\n")
		end := start + len(match)
		// The lines of the match, from the newlines found once per scan
		// (a text without newlines is one line: searching it for each
		// match would read it whole every time).
		line := sc.lineOf(start)
		lineStart, lineEnd := 0, len(sc.text)
		if line > 1 {
			lineStart = sc.newlines[line-2] + 1
		}
		if i, _ := slices.BinarySearch(sc.newlines, end); i < len(sc.newlines) {
			lineEnd = sc.newlines[i]
		}
		lines := sc.text[lineStart:lineEnd]
		if sc.allowMarked() && strings.Contains(lines, allowMarker) {
			continue
		}
		secret, offset := sc.secretOf(r, match)
		if r.entropy != 0 && shannonEntropy(secret) <= r.entropy {
			continue
		}
		if allowed(r.allow, secret, match, lines) {
			continue
		}
		column := start - lineStart + 1
		if firstLineEnd := strings.IndexByte(lines, '\n'); firstLineEnd < 0 || start+offset < lineStart+firstLineEnd {
			column += offset
		}
		found = append(found, Finding{
			RuleID:      r.id,
			Description: r.description,
			Line:        line,
			Column:      column,
			Secret:      secret,
			Start:       start + offset,
			End:         start + offset + len(secret),
		})
	}
	return found
}

// secretOf returns the secret in a rule's match and its offset in the
// match. Like gitleaks it matches the regex again on the match alone: the
// secret is the rule's secretGroup, or else its first non-empty group, or
// else the whole match.
func secretOf(r *rule, match string) (string, int) {
	sub := r.re.FindStringSubmatchIndex(match)
	if len(sub) < 4 {
		return match, 0
	}
	if g := r.secretGroup; g > 0 {
		if sub[2*g] < 0 {
			return "", 0
		}
		return match[sub[2*g]:sub[2*g+1]], sub[2*g]
	}
	for g := 1; 2*g+1 < len(sub); g++ {
		if sub[2*g] >= 0 && sub[2*g+1] > sub[2*g] {
			return match[sub[2*g]:sub[2*g+1]], sub[2*g]
		}
	}
	return match, 0
}

// lineOf returns the 1-based line of a byte offset in the text.
func (sc *scan) lineOf(offset int) int {
	if sc.newlines == nil {
		sc.newlines = []int{}
		for i := 0; i < len(sc.text); i++ {
			j := strings.IndexByte(sc.text[i:], '\n')
			if j < 0 {
				break
			}
			i += j
			sc.newlines = append(sc.newlines, i)
		}
	}
	return sort.SearchInts(sc.newlines, offset) + 1
}

// allowed reports whether one of the allowlists allows a finding.
func allowed(lists []*allowlist, secret, match, lines string) bool {
	for _, a := range lists {
		if a.allows(secret, match, lines) {
			return true
		}
	}
	return false
}

func (a *allowlist) allows(secret, match, lines string) bool {
	subject := secret
	switch a.target {
	case targetMatch:
		subject = match
	case targetLine:
		subject = lines
	}
	// The stopwords and the secret are lower-cased alike (strings.ToLower);
	// the index then finds what strings.Contains would. They are one pass
	// over the secret, so they go first: or'ed, a stopword spares the
	// regex.
	byStopword := a.stopIndex != nil && secret != "" && a.stopIndex.AnyIn(strings.ToLower(secret))
	if !a.all {
		return byStopword || a.regex != nil && subject != "" && a.regex.MatchString(subject)
	}
	byRegex := a.regex != nil && subject != "" && a.regex.MatchString(subject)
	return (a.regex == nil || byRegex) && (len(a.stopwords) == 0 || byStopword)
}

// dropShadowed drops a generic rule's finding when a specific rule found a
// secret containing it on the same line, as gitleaks does: the specific
// rule says more about the same credential.
func dropShadowed(found []Finding) []Finding {
	var kept []Finding
	for _, f := range found {
		if !isGeneric(f.RuleID) || !shadowed(f, found) {
			kept = append(kept, f)
		}
	}
	return kept
}

func shadowed(f Finding, found []Finding) bool {
	for _, g := range found {
		if g.Line == f.Line && g.RuleID != f.RuleID && !isGeneric(g.RuleID) && strings.Contains(g.Secret, f.Secret) {
			return true
		}
	}
	return false
}

func isGeneric(ruleID string) bool {
	return strings.Contains(strings.ToLower(ruleID), "generic")
}

// shannonEntropy is the Shannon entropy of s in bits per character, with
// gitleaks' normalisation (characters counted as runes, divided by the
// length in bytes) since the rules' thresholds are tuned on it. Terms are
// summed in order of first appearance, so the result does not depend on map
// iteration order.
func shannonEntropy(s string) float64 {
	if s == "" {
		return 0
	}
	counts := map[rune]int{}
	var order []rune
	for _, c := range s {
		if counts[c] == 0 {
			order = append(order, c)
		}
		counts[c]++
	}
	entropy := 0.0
	for _, c := range order {
		p := float64(counts[c]) / float64(len(s))
		entropy -= p * math.Log2(p)
	}
	return entropy
}

// MayMatch reports whether a rule could find a secret in text: false means
// Scan of text, or of any part of it, finds nothing. It is one pass over
// the text for the rules' keywords, for callers that want to skip a
// document before taking it apart. True when the rules do not compile (Scan
// reports why).
func (s *Scanner) MayMatch(text []byte) bool {
	if s == nil || s.rules == nil {
		return true
	}
	rs, err := s.rules()
	if err != nil || rs.index == nil || rs.keywordless || hasFoldTrap(text) {
		return true
	}
	return rs.index.Any(text)
}
