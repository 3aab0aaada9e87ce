package secretscan

import (
	"bytes"
	"hash/maphash"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The windowed scan. gitleaks runs a rule's regex over the whole text when
// one of its keywords occurs anywhere in it; with a few words such as "key"
// or "token" in a large text that is most rules over all of it (1.9 MB/s).
// Here the keywords are found in one pass (Aho-Corasick) and a rule's regex
// runs only on the lines around its keywords' occurrences, which gives the
// same findings when two things hold for the rule, both checked on its
// regex when the rules are compiled:
//
//   - every match of the regex contains one of the rule's keywords (ignoring
//     case), so every match lies around an occurrence;
//   - a match spans at most N newlines, so the lines from N before the
//     occurrence to N after it hold every match containing it.
//
// Windows that overlap or touch are merged, so no finding of the whole-text
// scan crosses a window's edge, and every window starts at the start of a
// line and ends after a newline (or at the text's end), where `\b` and the
// rules' `(?:^|[\s...])` and `(?:[\s...]|$)` edges decide as they do in the
// whole text once gitleaks' trimming of newlines off a match is applied.
// Rules failing either check (private keys, Kubernetes secrets, curl's
// --user, rules whose regex can match without their keyword) keep the
// whole-text scan. TestWindowedMatchesWhole holds the two scans equal.

// windowPlan is what the windowed scan knows of a rule.
type windowPlan struct {
	// windowed is false when the rule must run over the whole text.
	windowed bool
	// before and after are how many lines before and after an occurrence
	// of a keyword a match containing it can reach.
	before, after int
	// required are strings every match holds: "://" of a URL, "value:"
	// of a Kubernetes env entry. A window without one holds no match: a
	// gate that opens on every "@" of an e-mail address or every "name:"
	// of a manifest then costs a look, not a run of the regex.
	required []literal
}

// literal is a string a match holds, in any ASCII case when fold.
type literal struct {
	s    string // lower case when fold
	fold bool
}

// holds reports whether window holds every string the plan requires. A
// windowed scan reads no text holding a character that folds to ASCII
// (foldTraps), so ASCII case is all a (?i) literal can differ by.
func (p *windowPlan) holds(window string) bool {
	for _, r := range p.required {
		if !r.in(window) {
			return false
		}
	}
	return true
}

// in reports whether text holds l.
func (l literal) in(text string) bool {
	if !l.fold {
		return strings.Contains(text, l.s)
	}
	first := l.s[0]
	upper := first
	if 'a' <= first && first <= 'z' {
		upper -= 'a' - 'A'
	}
	for i := 0; i+len(l.s) <= len(text); i++ {
		if (text[i] == first || text[i] == upper) && strings.EqualFold(text[i:i+len(l.s)], l.s) {
			return true
		}
	}
	return false
}

// requiredOf returns the ASCII literals of two bytes or more of the
// top-level concatenation of re: every match of re holds each.
func requiredOf(re *syntax.Regexp) []literal {
	for re.Op == syntax.OpCapture {
		re = re.Sub[0]
	}
	if re.Op != syntax.OpConcat {
		return nil
	}
	var out []literal
	for _, part := range re.Sub {
		if part.Op != syntax.OpLiteral || len(part.Rune) < 2 {
			continue
		}
		lit := string(part.Rune)
		if strings.ContainsFunc(lit, func(r rune) bool { return r >= utf8.RuneSelf }) {
			continue
		}
		fold := part.Flags&syntax.FoldCase != 0 && strings.ContainsFunc(lit, unicode.IsLetter)
		if fold {
			lit = strings.ToLower(lit)
		}
		out = append(out, literal{s: lit, fold: fold})
	}
	return out
}

// planWindow decides how a rule's regex may be windowed.
func planWindow(expr string, keywords []string) windowPlan {
	if len(keywords) == 0 {
		return windowPlan{}
	}
	re, parts, i, err := keywordPart(expr, keywords)
	if err != nil {
		return windowPlan{}
	}
	n := maxNewlines(re)
	if n < 0 || n > 20 || !mustContain(re, keywords) {
		return windowPlan{}
	}
	// The newlines of the parts before the keyword's can only come before
	// it, and those after it after it: the generic rules' newlines are all
	// after their keyword.
	return windowPlan{windowed: true, before: maxNewlines(concat(parts[:i+1])), after: maxNewlines(concat(parts[i:])), required: requiredOf(re)}
}

// keywordPart parses a rule's regex and finds the part of its top-level
// concatenation every match of which holds one of the keywords: parts are
// the concatenation's parts and i that part's index. When no single part
// does, the shortest run of adjacent parts that does is made one part: the
// parser factors common prefixes out of an alternation of names
// ((?:password|pwd) is p(?:assword|wd)), which leaves the keyword
// straddling two parts. When no run does either, or the regex is no
// concatenation, the whole regex is the one part.
func keywordPart(expr string, keywords []string) (re *syntax.Regexp, parts []*syntax.Regexp, i int, err error) {
	if re, err = syntax.Parse(expr, syntax.Perl); err != nil {
		return nil, nil, 0, err
	}
	top := re
	for top.Op == syntax.OpCapture {
		top = top.Sub[0]
	}
	if top.Op == syntax.OpConcat {
		subs := top.Sub
		for width := 1; width < len(subs); width++ {
			for i := 0; i+width <= len(subs); i++ {
				run := subs[i]
				if width > 1 {
					run = &syntax.Regexp{Op: syntax.OpConcat, Flags: top.Flags, Sub: subs[i : i+width]}
				}
				if mustContain(run, keywords) {
					merged := append(append(slices.Clone(subs[:i]), run), subs[i+width:]...)
					return re, merged, i, nil
				}
			}
		}
	}
	return re, []*syntax.Regexp{top}, 0, nil
}

// concat is the concatenation of parts.
func concat(parts []*syntax.Regexp) *syntax.Regexp {
	return &syntax.Regexp{Op: syntax.OpConcat, Sub: parts}
}

// maxNewlines returns how many '\n' a match of re can hold at most, or -1
// when there is no bound.
func maxNewlines(re *syntax.Regexp) int {
	return most(re, func(leaf *syntax.Regexp) int {
		switch leaf.Op {
		case syntax.OpLiteral:
			return strings.Count(string(leaf.Rune), "\n")
		case syntax.OpAnyChar:
			return 1
		case syntax.OpCharClass:
			if classHas(leaf, func(c byte) bool { return c == '\n' }) {
				return 1
			}
		}
		return 0
	})
}

// most returns the most a match of re can hold of what count counts in a
// leaf matching runes (a literal, a class, any character): summed over a
// concatenation, the largest of an alternation, times the repetitions; -1
// when a repetition without bound repeats something counted.
func most(re *syntax.Regexp, count func(leaf *syntax.Regexp) int) int {
	switch re.Op {
	case syntax.OpLiteral, syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return count(re)
	case syntax.OpCapture, syntax.OpQuest:
		return most(re.Sub[0], count)
	case syntax.OpStar, syntax.OpPlus, syntax.OpRepeat:
		n := most(re.Sub[0], count)
		switch {
		case n == 0:
			return 0
		case n < 0 || re.Op != syntax.OpRepeat || re.Max < 0:
			return -1
		}
		return min(n*re.Max, 1<<20)
	case syntax.OpConcat, syntax.OpAlternate:
		total := 0
		for _, s := range re.Sub {
			n := most(s, count)
			if n < 0 {
				return -1
			}
			if re.Op == syntax.OpConcat {
				total += n
			} else {
				total = max(total, n)
			}
		}
		return total
	}
	return 0 // empty matches, anchors, word boundaries
}

// classHas reports whether a character class holds an ASCII byte for
// which is reports true.
func classHas(class *syntax.Regexp, is func(byte) bool) bool {
	for i := 0; i+1 < len(class.Rune); i += 2 {
		for c := max(class.Rune[i], 0); c <= min(class.Rune[i+1], utf8.RuneSelf-1); c++ {
			if is(byte(c)) {
				return true
			}
		}
	}
	return false
}

// maxLiterals bounds the strings a finite part of a regex is expanded to.
const maxLiterals = 256

// literals returns every string (lower case) a part of a regex can match
// when there are few of them, or ok false.
func literals(re *syntax.Regexp) (lits []string, ok bool) {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText,
		syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return []string{""}, true
	case syntax.OpLiteral:
		return []string{strings.ToLower(string(re.Rune))}, true
	case syntax.OpCharClass:
		var out []string
		for i := 0; i+1 < len(re.Rune); i += 2 {
			if re.Rune[i+1]-re.Rune[i] > 8 {
				return nil, false
			}
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				s := string(unicode.ToLower(r))
				if !slices.Contains(out, s) {
					out = append(out, s)
				}
				if len(out) > 8 {
					return nil, false
				}
			}
		}
		return out, true
	case syntax.OpCapture:
		return literals(re.Sub[0])
	case syntax.OpQuest:
		l, ok := literals(re.Sub[0])
		if !ok {
			return nil, false
		}
		return append(l, ""), true
	case syntax.OpConcat:
		out := []string{""}
		for _, s := range re.Sub {
			l, ok := literals(s)
			if !ok {
				return nil, false
			}
			if out = cross(out, l); out == nil {
				return nil, false
			}
		}
		return out, true
	case syntax.OpAlternate:
		var out []string
		for _, s := range re.Sub {
			l, ok := literals(s)
			if !ok || len(out)+len(l) > maxLiterals {
				return nil, false
			}
			out = append(out, l...)
		}
		return out, true
	}
	return nil, false
}

// prefixes returns strings (lower case) one of which every match of re
// starts with; {""} when it cannot tell.
func prefixes(re *syntax.Regexp) []string {
	if l, ok := literals(re); ok {
		return l
	}
	switch re.Op {
	case syntax.OpCapture, syntax.OpPlus:
		return prefixes(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min > 0 {
			return prefixes(re.Sub[0])
		}
	case syntax.OpAlternate:
		var out []string
		for _, s := range re.Sub {
			out = append(out, prefixes(s)...)
			if len(out) > maxLiterals {
				return []string{""}
			}
		}
		return out
	case syntax.OpConcat:
		run := []string{""}
		for _, s := range re.Sub {
			l, ok := literals(s)
			if !ok {
				if p := cross(run, prefixes(s)); p != nil {
					return p
				}
				return run
			}
			next := cross(run, l)
			if next == nil {
				return run
			}
			run = next
		}
		return run
	}
	return []string{""}
}

// cross returns every a+b, or nil when there would be too many.
func cross(as, bs []string) []string {
	if len(as)*len(bs) > maxLiterals {
		return nil
	}
	out := make([]string, 0, len(as)*len(bs))
	for _, a := range as {
		for _, b := range bs {
			out = append(out, a+b)
		}
	}
	return out
}

// allContain reports whether every string holds one of the keywords.
func allContain(lits, keywords []string) bool {
	for _, l := range lits {
		if !slices.ContainsFunc(keywords, func(k string) bool { return strings.Contains(l, k) }) {
			return false
		}
	}
	return true
}

// mustContain reports whether every match of re, lower-cased, contains one
// of the (lower-case) keywords. False when it cannot tell.
func mustContain(re *syntax.Regexp, keywords []string) bool {
	if l, ok := literals(re); ok {
		return allContain(l, keywords)
	}
	switch re.Op {
	case syntax.OpCapture, syntax.OpPlus:
		return mustContain(re.Sub[0], keywords)
	case syntax.OpRepeat:
		return re.Min > 0 && mustContain(re.Sub[0], keywords)
	case syntax.OpAlternate:
		for _, s := range re.Sub {
			if !mustContain(s, keywords) {
				return false
			}
		}
		return true
	case syntax.OpConcat:
		for i, s := range re.Sub {
			if mustContain(s, keywords) {
				return true
			}
			// A keyword may straddle parts: "sk" + "-" + "(?:proj|admin)".
			run := []string{""}
			for _, t := range re.Sub[i:] {
				l, ok := literals(t)
				if !ok {
					// What the part starts with still counts.
					if p := cross(run, prefixes(t)); p != nil && allContain(p, keywords) {
						return true
					}
					break
				}
				if run = cross(run, l); run == nil {
					break
				}
				if allContain(run, keywords) {
					return true
				}
			}
		}
	}
	return false
}

// foldTraps are the UTF-8 encodings of the three characters outside ASCII
// that case-fold to or lower-case to ASCII letters (Kelvin sign K, long s
// ſ, dotted capital İ): a rule's (?i) regex matches them where an ASCII
// lower-casing sees no keyword, and gitleaks' strings.ToLower turns K and İ
// into k and i. A text holding one is scanned whole.
var foldTraps = [...]string{"\u212a", "\u017f", "\u0130"}

func hasFoldTrap[T string | []byte](text T) bool {
	// string(text) would copy a []byte (the conversion of a type
	// parameter is not elided): a raw document is read where it is.
	b, isBytes := any(text).([]byte)
	for _, t := range foldTraps {
		if isBytes && bytes.Contains(b, []byte(t)) || !isBytes && strings.Contains(any(text).(string), t) {
			return true
		}
	}
	return false
}

// The gate. Most windows hold no secret: "key" or "token" in prose, "api"
// in a URL. A rule's regex is a concatenation whose part holding the
// keyword is followed by what a credential needs (the generic rules: an
// assignment within a few characters, then ten or more characters of a
// secret). That part and the rest, anchored where the keyword's part must
// start, are the gate: a match of the rule contains a match of the gate
// starting there, so an occurrence whose gate fails can be dropped, and a
// failing anchored match gives up within a few bytes. Whatever the gate
// lets through is still scanned with the rule's own regex.

// gate is a rule's anchored necessary condition.
type gate struct {
	re *regexp.Regexp
	// keys holds what the gate knows of each of the rule's keywords, in
	// the rule's order (rule.keywords): a scan looks it up by position,
	// hundreds of times in a page, where a map by keyword cost a hash.
	keys []gateKey
	// maxLen bounds the bytes a match of re spans.
	maxLen int
	// tails are strings (lower case) one of which the text right before
	// the gate's start ends with in every match of the rule, when the
	// parts before the gate's are few strings: generic-key's "api",
	// "access", ... before "key", whose gate starts at "key" and would
	// open on every "key: value" of a manifest.
	tails []string
}

// gateKey is what a gate knows of one keyword.
type gateKey struct {
	// at are the places it can sit in what the gate's first part
	// matches: the gate is tried at the occurrence's start minus each
	// offset, where the text before the occurrence reads as one of its
	// heads ("key" in "api-key" is tried only after "api-": in source
	// code "key" is everywhere, "api-key" rare).
	at []place
	// follow, when the keyword can start a match of re, holds the bytes
	// that can come right after it there (when no match ends within it):
	// one byte then turns most occurrences away ("api" in "/api/v1/",
	// "key" before a space for a rule wanting "key=") without starting
	// the regex, whose every try clears the backtracker's state.
	follow *[256]bool
	// needs, when the keyword can start a match of re, is what the match
	// needs soon after it: in keyword-dense text (source code, config
	// files) most occurrences pass the follow byte ("token0 := auth",
	// "password[0])") and fail only at the assignment or the run of
	// secret characters that does not come; a look at the next few
	// characters turns them away without the regex.
	needs needs
}

// place is where a keyword sits in matches of a gate's first part: at
// offset o, after one of heads (lower case, each o bytes long).
type place struct {
	o     int
	heads []string
}

// after reports whether text[:at] ends with one of the heads, ignoring
// case.
func (p *place) after(text string, at int) bool {
	if p.o == 0 {
		return true
	}
	if at < p.o {
		return false
	}
	for _, h := range p.heads {
		if strings.EqualFold(text[at-p.o:at], h) {
			return true
		}
	}
	return false
}

// need is a run of characters a match needs soon after its keyword: run
// characters in a row, each starting with a byte of set, the first of
// them among the first runes+1 characters after the keyword.
type need struct {
	set   [256]bool
	runes int
	run   int
}

// within reports whether text[at:] starts with what n needs.
func (n *need) within(text string, at int) bool {
	got := 0 // characters of set in a row
	for i := 0; at < len(text); i++ {
		if n.set[text[at]] {
			if got++; got >= n.run {
				return true
			}
		} else if got = 0; i >= n.runes {
			return false // a run starting later starts too late
		}
		if text[at] < utf8.RuneSelf {
			at++
			continue
		}
		_, size := utf8.DecodeRuneInString(text[at:])
		at += size
	}
	return false
}

// needs are what a match needs after its keyword, each necessary.
type needs []need

// met reports whether text[at:] has all that ns need.
func (ns needs) met(text string, at int) bool {
	for i := range ns {
		if !ns[i].within(text, at) {
			return false
		}
	}
	return true
}

// planGate returns the gate of a rule, or nil when it has none that can be
// proven necessary.
func planGate(expr string, keywords []string) *gate {
	if len(keywords) == 0 {
		return nil
	}
	re, parts, i, err := keywordPart(expr, keywords)
	if err != nil {
		return nil
	}
	s := parts[i]
	if !mustContain(s, keywords) {
		return nil
	}
	starts, ok := literals(s)
	if !ok {
		starts = prefixes(s)
	}
	if !allContain(starts, keywords) || lookBehind(parts[i:]) {
		return nil
	}
	g := &gate{keys: make([]gateKey, len(keywords)), tails: tailsOf(parts[:i])}
	for _, p := range starts {
		for j, k := range keywords {
			for o := 0; o+len(k) <= len(p); o++ {
				if p[o:o+len(k)] == k {
					g.keys[j].addPlace(o, p[:o])
				}
			}
		}
	}
	// The gate takes parts while they stay short, then the shortest start
	// of the next one (a prefix of every match of the rest): a gate reads
	// at most maxLen bytes, and Go's backtracker clears a bit per
	// instruction and byte of its input on every try.
	sub := []*syntax.Regexp{{Op: syntax.OpBeginText, Flags: re.Flags}}
	runes := 0
	for _, p := range parts[i:] {
		if n := maxRunes(p); n >= 0 && runes+n <= gateRunes {
			sub = append(sub, p)
			runes += n
			continue
		}
		sub = append(sub, minPrefix(p, gateRunes-runes))
		break
	}
	anchored := &syntax.Regexp{Op: syntax.OpConcat, Flags: re.Flags, Sub: sub}
	for j, k := range keywords {
		key := &g.keys[j]
		if slices.ContainsFunc(key.at, func(p place) bool { return p.o == 0 }) {
			if set, ok := followOf(anchored, k); ok {
				key.follow = &set
			}
			key.needs = needsOf(anchored, k)
		}
	}
	if g.maxLen = maxRunes(anchored) * utf8.UTFMax; g.maxLen < 0 {
		return nil
	}
	if g.re, err = regexp.Compile(anchored.String()); err != nil {
		return nil
	}
	return g
}

// tailsOf returns the strings (lower case) one of which every match of
// the concatenation of parts ends with: those of its longest run of last
// parts that matches few strings and no empty one; nil when there is
// none.
func tailsOf(parts []*syntax.Regexp) []string {
	var tails []string
	for j := len(parts) - 1; j >= 0; j-- {
		l, ok := literals(concat(parts[j:]))
		if !ok {
			break
		}
		tails = l
	}
	if slices.Contains(tails, "") {
		return nil
	}
	return tails
}

// afterTail reports whether text[:at] ends with one of the gate's tails,
// ignoring case (true when it has none).
func (g *gate) afterTail(text string, at int) bool {
	if g.tails == nil {
		return true
	}
	for _, t := range g.tails {
		if len(t) <= at && strings.EqualFold(text[at-len(t):at], t) {
			return true
		}
	}
	return false
}

// addPlace notes that the keyword sits at offset o after head in a start
// of the gate's first part.
func (key *gateKey) addPlace(o int, head string) {
	for i := range key.at {
		if p := &key.at[i]; p.o == o {
			if !slices.Contains(p.heads, head) {
				p.heads = append(p.heads, head)
			}
			return
		}
	}
	key.at = append(key.at, place{o: o, heads: []string{head}})
}

// lookBehind reports whether a part can test what comes before the
// gate's start (\B, ^ or \A): cut there, the gate would see the start of
// the text and could fail where the rule matches. \b is no such part: at
// the start of the text it can only match more often.
func lookBehind(parts []*syntax.Regexp) bool {
	for _, p := range parts {
		switch p.Op {
		case syntax.OpNoWordBoundary, syntax.OpBeginLine, syntax.OpBeginText:
			return true
		}
		if lookBehind(p.Sub) {
			return true
		}
	}
	return false
}

// opens reports whether the gate lets an occurrence h of the rule's j-th
// keyword through: the gate matches anchored at h's start minus an offset
// of the keyword.
// tried, when not nil, remembers what gates' regexes said of recent
// inputs in one scan: a tool's result repeats itself ("the signing key to
// the vault" in every other issue of a list), and the same input reads
// the same.
func (g *gate) opens(text string, j int, h hit, tried *gateCache) bool {
	key := &g.keys[j]
	follow, needs := key.follow, key.needs
	for i := range key.at {
		p := &key.at[i]
		o, q := p.o, h.Start-p.o
		if q < 0 || !p.after(text, h.Start) || o == 0 && follow != nil && h.End < len(text) && !follow[text[h.End]] ||
			o == 0 && !needs.met(text, h.End) || !g.afterTail(text, q) {
			continue
		}
		// The gate reads one character past the longest match: an
		// assertion where a match ends (\b, \B) looks at the character after
		// it, and cut there it would see the end of the text (a gate that
		// consumes nothing, \A\b, could then never match). A rune is a byte
		// in ASCII text: the shorter input is cheaper to try (the
		// backtracker clears a bit per instruction and byte).
		end := min(len(text), q+g.maxLen+utf8.UTFMax)
		if ascii := min(len(text), q+g.maxLen/utf8.UTFMax+1); isASCII(text[q:ascii]) {
			end = ascii
		}
		if tried.match(g, text[q:end]) {
			return true
		}
	}
	return false
}

// gateCacheSize is how many tries of gates a gateCache remembers.
const gateCacheSize = 64

// gateCache remembers the last tries of gates in one scan, one per slot
// of a hash of the input: a fixed array, so a text whose inputs never
// repeat (source code) pays a hash per try and nothing grows.
type gateCache struct {
	seed  maphash.Seed
	tries [gateCacheSize]struct {
		g       *gate
		text    string
		set, ok bool
	}
}

func newGateCache() *gateCache { return &gateCache{seed: maphash.MakeSeed()} }

// match reports whether g's regex matches text, from the cache when it
// was tried there last; a nil cache tries it.
func (c *gateCache) match(g *gate, text string) bool {
	if c == nil {
		return g.re.MatchString(text)
	}
	t := &c.tries[maphash.String(c.seed, text)%gateCacheSize]
	if t.set && t.g == g && t.text == text {
		return t.ok
	}
	t.g, t.text, t.set, t.ok = g, text, true, g.re.MatchString(text)
	return t.ok
}

// followOf returns the bytes that can follow the (ASCII, lower-case)
// keyword k, in either case, at the start of a match of re: the first
// bytes of re's derivative by k. ok is false when no such set bounds a
// match: one may end within k or right after it, or k is not ASCII.
func followOf(re *syntax.Regexp, k string) (set [256]bool, ok bool) {
	if re, ok = deriveBy(re, k); !ok {
		return set, false
	}
	set, empty := firstBytes(re)
	return set, !empty
}

// needsOf returns what every match of re that starts with the (ASCII,
// lower-case) keyword k, in either case, needs right after it: the needs
// of the parts of re's derivative by k, in order, while the parts before
// each take a bounded number of characters (see needsIn). None when no
// part bounds a match.
func needsOf(re *syntax.Regexp, k string) needs {
	re, ok := deriveBy(re, k)
	if !ok {
		return nil
	}
	return needsIn(re)
}

// deriveBy returns re's derivative by the keyword k in either case: what
// follows k in the matches of re that start with it. ok is false when a
// match may end within k, k is not ASCII, or the derivative grows past
// maxDerived.
func deriveBy(re *syntax.Regexp, k string) (*syntax.Regexp, bool) {
	for i := 0; i < len(k); i++ {
		if k[i] >= utf8.RuneSelf || nullable(re) {
			return nil, false
		}
		c := rune(k[i])
		if re = derive(re, c, unicode.ToUpper(c)); size(re) > maxDerived {
			return nil, false
		}
	}
	return re, true
}

// maxNeeds bounds the needs of a keyword: the assignment and the run of
// secret characters of a generic rule are the selective ones.
const maxNeeds = 3

// needsIn returns needs every match of re meets from its start: the need
// of each part of its (flattened) concatenation that cannot match empty,
// after as many characters as the parts before it take at most, while
// that is bounded; for anything else its one need (needIn).
func needsIn(re *syntax.Regexp) needs {
	var out needs
	runes := 0
	for _, part := range flatConcat(re, nil) {
		if !nullable(part) {
			if n, ok := needIn(part); ok {
				n.runes += runes
				if out = append(out, n); len(out) == maxNeeds {
					break
				}
			}
		}
		m := maxRunes(part)
		if m < 0 {
			break
		}
		runes += m
	}
	return out
}

// flatConcat appends the parts of re, a concatenation's nested in one
// another as derive builds them (or re alone), to out.
func flatConcat(re *syntax.Regexp, out []*syntax.Regexp) []*syntax.Regexp {
	for re.Op == syntax.OpCapture {
		re = re.Sub[0]
	}
	if re.Op != syntax.OpConcat {
		return append(out, re)
	}
	for _, s := range re.Sub {
		out = flatConcat(s, out)
	}
	return out
}

// needIn returns a need every match of re meets from its start: a
// literal or class needs its first bytes at once, a repetition of a class
// a run as long as its least count, a concatenation of such a run of
// them all, or else the first of its needs (needsIn); an alternation the
// union of its branches' needs (the shortest run, the latest start).
func needIn(re *syntax.Regexp) (n need, ok bool) {
	if set, run, ok := runOf(re); ok && run > 0 {
		return need{set: set, run: run}, true
	}
	switch re.Op {
	case syntax.OpCapture, syntax.OpPlus:
		return needIn(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min > 0 {
			return needIn(re.Sub[0])
		}
	case syntax.OpConcat:
		if ns := needsIn(re); len(ns) > 0 {
			return ns[0], true
		}
	case syntax.OpAlternate:
		for i, s := range re.Sub {
			b, ok := needIn(s)
			if !ok {
				return n, false
			}
			if i == 0 {
				n = b
				continue
			}
			for c, in := range b.set {
				n.set[c] = n.set[c] || in
			}
			n.runes, n.run = max(n.runes, b.runes), min(n.run, b.run)
		}
		return n, len(re.Sub) > 0
	}
	return n, false
}

// runOf reports whether every match of re starts with a run of
// characters each starting with a byte of set, at least run long: a
// single character (a class, a one-rune literal), a repetition of one at
// least Min times, a concatenation of such runs. ok is false for
// anything else.
func runOf(re *syntax.Regexp) (set [256]bool, run int, ok bool) {
	switch re.Op {
	case syntax.OpCharClass:
		set, _ = firstBytes(re)
		return set, 1, len(re.Rune) > 0
	case syntax.OpLiteral:
		if len(re.Rune) != 1 {
			return set, 0, false
		}
		set, _ = firstBytes(re)
		return set, 1, true
	case syntax.OpCapture:
		return runOf(re.Sub[0])
	case syntax.OpRepeat, syntax.OpPlus:
		least := 1
		if re.Op == syntax.OpRepeat {
			least = re.Min
		}
		set, run, ok = runOf(re.Sub[0])
		return set, run * least, ok && least > 0
	case syntax.OpConcat:
		for _, s := range re.Sub {
			sub, n, ok := runOf(s)
			if !ok {
				return set, 0, false
			}
			for c, in := range sub {
				set[c] = set[c] || in
			}
			run += n
		}
		return set, run, len(re.Sub) > 0
	}
	return set, 0, false
}

// maxDerived bounds the nodes of a derivative: past it, a gate has no
// follow (a derivative of nested optional parts can grow quickly).
const maxDerived = 4096

// size is the number of nodes of re.
func size(re *syntax.Regexp) int {
	n := 1
	for _, s := range re.Sub {
		n += size(s)
	}
	return n
}

// derive returns a regex matching what follows c or its upper case u in
// the matches of re that start with it (Brzozowski's derivative), or
// more: an assertion (\b, ^, $) is taken to hold, so the derivative errs
// toward matching more.
func derive(re *syntax.Regexp, c, u rune) *syntax.Regexp {
	none := &syntax.Regexp{Op: syntax.OpNoMatch}
	empty := &syntax.Regexp{Op: syntax.OpEmptyMatch}
	switch re.Op {
	case syntax.OpLiteral:
		if len(re.Rune) == 0 || !sameRune(re.Rune[0], c, re.Flags&syntax.FoldCase != 0) && !sameRune(re.Rune[0], u, re.Flags&syntax.FoldCase != 0) {
			return none
		}
		if len(re.Rune) == 1 {
			return empty
		}
		cp := *re
		cp.Rune = re.Rune[1:]
		return &cp
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			if re.Rune[i] <= c && c <= re.Rune[i+1] || re.Rune[i] <= u && u <= re.Rune[i+1] {
				return empty
			}
		}
		return none
	case syntax.OpAnyChar:
		return empty
	case syntax.OpAnyCharNotNL:
		if c == '\n' && u == '\n' {
			return none
		}
		return empty
	case syntax.OpCapture:
		return derive(re.Sub[0], c, u)
	case syntax.OpStar, syntax.OpPlus:
		star := &syntax.Regexp{Op: syntax.OpStar, Flags: re.Flags, Sub: re.Sub[:1]}
		return concat2(derive(re.Sub[0], c, u), star)
	case syntax.OpQuest:
		return derive(re.Sub[0], c, u)
	case syntax.OpRepeat:
		if re.Max == 0 {
			return none
		}
		rest := &syntax.Regexp{Op: syntax.OpRepeat, Flags: re.Flags, Sub: re.Sub[:1], Min: max(re.Min-1, 0), Max: re.Max}
		if re.Max > 0 {
			rest.Max = re.Max - 1
		}
		return concat2(derive(re.Sub[0], c, u), rest)
	case syntax.OpConcat:
		if len(re.Sub) == 0 {
			return none
		}
		tail := &syntax.Regexp{Op: syntax.OpConcat, Flags: re.Flags, Sub: re.Sub[1:]}
		d := concat2(derive(re.Sub[0], c, u), tail)
		if nullable(re.Sub[0]) {
			d = alternate(d, derive(tail, c, u))
		}
		return d
	case syntax.OpAlternate:
		d := none
		for _, s := range re.Sub {
			d = alternate(d, derive(s, c, u))
		}
		return d
	case syntax.OpNoMatch, syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine,
		syntax.OpBeginText, syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return none // they consume no character
	}
	// What is not known matches anything after c.
	return &syntax.Regexp{Op: syntax.OpStar, Sub: []*syntax.Regexp{{Op: syntax.OpAnyChar}}}
}

// sameRune reports whether the literal rune r matches c.
func sameRune(r, c rune, fold bool) bool {
	if r == c {
		return true
	}
	if fold {
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f == c {
				return true
			}
		}
	}
	return false
}

// nullable reports whether re can match the empty string, its assertions
// taken to hold.
func nullable(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpLiteral:
		return len(re.Rune) == 0
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL, syntax.OpNoMatch:
		return false
	case syntax.OpCapture, syntax.OpPlus:
		return nullable(re.Sub[0])
	case syntax.OpStar, syntax.OpQuest:
		return true
	case syntax.OpRepeat:
		return re.Min == 0 || nullable(re.Sub[0])
	case syntax.OpConcat:
		for _, s := range re.Sub {
			if !nullable(s) {
				return false
			}
		}
		return true
	case syntax.OpAlternate:
		for _, s := range re.Sub {
			if nullable(s) {
				return true
			}
		}
		return false
	}
	return true // the empty match, assertions, what is not known
}

// concat2 is a followed by b, no match when either cannot match.
func concat2(a, b *syntax.Regexp) *syntax.Regexp {
	if a.Op == syntax.OpNoMatch || b.Op == syntax.OpNoMatch {
		return &syntax.Regexp{Op: syntax.OpNoMatch}
	}
	if a.Op == syntax.OpEmptyMatch {
		return b
	}
	return &syntax.Regexp{Op: syntax.OpConcat, Sub: []*syntax.Regexp{a, b}}
}

// alternate is a or b, dropping what cannot match.
func alternate(a, b *syntax.Regexp) *syntax.Regexp {
	switch {
	case a.Op == syntax.OpNoMatch:
		return b
	case b.Op == syntax.OpNoMatch:
		return a
	}
	return &syntax.Regexp{Op: syntax.OpAlternate, Sub: []*syntax.Regexp{a, b}}
}

// firstBytes returns the bytes a match of re can start with, and whether
// re can match empty (then what follows it may start the match too). It
// errs on the side of more: every byte from 0x80 when a rune outside
// ASCII can start it, every byte for what it does not know.
func firstBytes(re *syntax.Regexp) (set [256]bool, empty bool) {
	high := func() {
		for c := utf8.RuneSelf; c < 256; c++ {
			set[c] = true
		}
	}
	addRune := func(r rune) {
		if r >= 0 && r < utf8.RuneSelf {
			set[r] = true
		} else {
			high()
		}
	}
	switch re.Op {
	case syntax.OpNoMatch:
		return set, false
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText,
		syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return set, true
	case syntax.OpLiteral:
		if len(re.Rune) == 0 {
			return set, true
		}
		r := re.Rune[0]
		addRune(r)
		if re.Flags&syntax.FoldCase != 0 {
			for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
				addRune(f)
			}
		}
		return set, false
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for c := max(re.Rune[i], 0); c <= min(re.Rune[i+1], utf8.RuneSelf-1); c++ {
				set[c] = true
			}
			if re.Rune[i+1] >= utf8.RuneSelf {
				high()
			}
		}
		return set, false
	case syntax.OpAnyCharNotNL:
		for c := range set {
			set[c] = c != '\n'
		}
		return set, false
	case syntax.OpCapture, syntax.OpPlus:
		return firstBytes(re.Sub[0])
	case syntax.OpStar, syntax.OpQuest:
		set, _ = firstBytes(re.Sub[0])
		return set, true
	case syntax.OpRepeat:
		set, empty = firstBytes(re.Sub[0])
		return set, empty || re.Min == 0
	case syntax.OpConcat:
		for _, s := range re.Sub {
			first, e := firstBytes(s)
			for c, ok := range first {
				set[c] = set[c] || ok
			}
			if !e {
				return set, false
			}
		}
		return set, true
	case syntax.OpAlternate:
		for _, s := range re.Sub {
			first, e := firstBytes(s)
			for c, ok := range first {
				set[c] = set[c] || ok
			}
			empty = empty || e
		}
		return set, empty
	}
	for c := range set { // any character, and what is not known
		set[c] = true
	}
	return set, true
}

// maxRunes returns how many runes a match of re spans at most, or -1 when
// there is no bound.
func maxRunes(re *syntax.Regexp) int {
	return most(re, func(leaf *syntax.Regexp) int {
		if leaf.Op == syntax.OpLiteral {
			return len(leaf.Rune)
		}
		return 1
	})
}

// gateRunes is how long a gate's parts may get before the rest is cut to
// its shortest start.
const gateRunes = 64

// minPrefix returns a regex matching a prefix of every match of re, of
// bounded length: optional parts dropped, repetitions cut to their
// minimum, a concatenation cut after its first part of varying length
// that does not fit the budget. Parts of a concatenation that span at most
// budget runes between them are kept whole, optional or not: a gate cut at
// the first optional part (the quote that may close a key's name) would
// test the keyword alone and open on every occurrence.
func minPrefix(re *syntax.Regexp, budget int) *syntax.Regexp {
	empty := &syntax.Regexp{Op: syntax.OpEmptyMatch, Flags: re.Flags}
	switch re.Op {
	case syntax.OpCapture, syntax.OpPlus:
		return minPrefix(re.Sub[0], budget)
	case syntax.OpQuest, syntax.OpStar:
		return empty
	case syntax.OpRepeat:
		if re.Min == 0 {
			return empty
		}
		if !fixed(re.Sub[0]) {
			return minPrefix(re.Sub[0], budget)
		}
		cp := *re
		cp.Max = re.Min
		return &cp
	case syntax.OpAlternate:
		cp := *re
		cp.Sub = make([]*syntax.Regexp, len(re.Sub))
		for i, s := range re.Sub {
			cp.Sub[i] = minPrefix(s, budget)
		}
		return &cp
	case syntax.OpConcat:
		cp := *re
		cp.Sub = nil
		for _, s := range re.Sub {
			if n := maxRunes(s); fixed(s) || n >= 0 && n <= budget {
				cp.Sub = append(cp.Sub, s)
				budget -= max(n, 0)
				continue
			}
			cp.Sub = append(cp.Sub, minPrefix(s, budget))
			break
		}
		return &cp
	}
	return re // literals, classes, anchors: one way to match
}

// fixed reports whether every match of re has the same number of runes
// and re is a plain run of them (literals, classes, exact repetitions).
func fixed(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpLiteral, syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return true
	case syntax.OpRepeat:
		return re.Min == re.Max && fixed(re.Sub[0])
	case syntax.OpConcat:
		for _, s := range re.Sub {
			if !fixed(s) {
				return false
			}
		}
		return true
	}
	return false
}

// maxReach bounds how far before or after an occurrence of its keyword a
// match is looked for when the regex does not bound it itself (a run of
// secret characters of unbounded length): in a text without newlines,
// minified JSON say, a line is the whole text. A credential longer than
// this is found and redacted from its start up to the bound.
const maxReach = 8 << 10

// reach bounds a rule's window around an occurrence of its keyword:
// before its start and after its end, in bytes and in stop bytes (-1: no
// bound).
type reach struct {
	bytes, stops [2]int
	// barrier holds, for each side, the bytes no part of the regex on
	// that side can match: a match never reaches over one. A rule whose
	// classes are negated ([^\s:/?#@'"]) can take hundreds of stop bytes
	// (\v is not \s), so counting stops bounds its window only at the
	// byte bound, kilobytes around each "@" of an e-mail address; the
	// space before the address bounds it at once.
	barrier [2][256]bool
}

// planReach returns how far a match containing an occurrence of a keyword
// can reach before its start and after its end: in bytes (from the
// lengths of the regex's parts before and after the part holding the
// keyword, 4 bytes a rune, at most maxReach), and in stop bytes (spaces,
// quotes, newlines: how many the parts can match, -1 for no bound). The
// second bound is the tight one: a generic rule's key, assignment and
// secret hold a few spaces or quotes at most however long its secret, so
// its window ends a few words after the keyword, where a byte bound would
// have to allow for the longest secret.
func planReach(expr string, keywords []string) reach {
	_, parts, i, err := keywordPart(expr, keywords)
	if err != nil {
		return reach{bytes: [2]int{maxReach, maxReach}, stops: [2]int{-1, -1}}
	}
	bytes := func(parts []*syntax.Regexp) int {
		n := maxRunes(concat(parts))
		if n < 0 {
			return maxReach
		}
		return min(n*utf8.UTFMax, maxReach)
	}
	stops := func(parts []*syntax.Regexp) int { return maxStops(concat(parts)) }
	return reach{bytes: [2]int{bytes(parts[:i+1]), bytes(parts[i:])}, stops: [2]int{stops(parts[:i+1]), stops(parts[i:])},
		barrier: [2][256]bool{barrierOf(concat(parts[:i+1])), barrierOf(concat(parts[i:]))}}
}

// barrierOf returns the bytes no leaf of re (a literal, a class, any
// character) can match: for a byte from 0x80, no character outside ASCII.
func barrierOf(re *syntax.Regexp) [256]bool {
	var can [256]bool
	var walk func(re *syntax.Regexp)
	walk = func(re *syntax.Regexp) {
		switch re.Op {
		case syntax.OpLiteral, syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
			for c := range 256 {
				can[c] = can[c] || leafMatches(re, c)
			}
		}
		for _, sub := range re.Sub {
			walk(sub)
		}
	}
	walk(re)
	var b [256]bool
	for c, ok := range can {
		b[c] = !ok
	}
	return b
}

// leafMatches reports whether a leaf can match the byte c: the ASCII
// character c, or for c from 0x80 any character outside ASCII.
func leafMatches(leaf *syntax.Regexp, c int) bool {
	in := func(r rune) bool {
		if c >= utf8.RuneSelf {
			return r >= utf8.RuneSelf
		}
		return r == rune(c)
	}
	switch leaf.Op {
	case syntax.OpAnyChar:
		return true
	case syntax.OpAnyCharNotNL:
		return c != '\n'
	case syntax.OpLiteral:
		for _, r := range leaf.Rune {
			if in(r) {
				return true
			}
			if leaf.Flags&syntax.FoldCase != 0 {
				for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
					if in(f) {
						return true
					}
				}
			}
		}
	case syntax.OpCharClass:
		for i := 0; i+1 < len(leaf.Rune); i += 2 {
			lo, hi := leaf.Rune[i], leaf.Rune[i+1]
			if c >= utf8.RuneSelf && hi >= utf8.RuneSelf || c < utf8.RuneSelf && lo <= rune(c) && rune(c) <= hi {
				return true
			}
		}
	}
	return false
}

// isStop reports whether c is a stop byte: ASCII white space or a quote.
func isStop(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '\f', '\v', '"', '\'', '`':
		return true
	}
	return false
}

// maxStops returns how many stop bytes a match of re can hold at most, or
// -1 when there is no bound.
func maxStops(re *syntax.Regexp) int {
	return most(re, func(leaf *syntax.Regexp) int {
		switch leaf.Op {
		case syntax.OpLiteral:
			n := 0
			for _, r := range leaf.Rune {
				if r < utf8.RuneSelf && isStop(byte(r)) {
					n++
				}
			}
			return n
		case syntax.OpCharClass:
			if classHas(leaf, isStop) {
				return 1
			}
			return 0
		}
		return 1 // any character
	})
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
