package secretscan

import (
	"regexp/syntax"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/coregx/ahocorasick"
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
}

// planWindow decides how a rule's regex may be windowed.
func planWindow(expr string, keywords []string) windowPlan {
	if len(keywords) == 0 {
		return windowPlan{}
	}
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return windowPlan{}
	}
	n := maxNewlines(re)
	if n < 0 || n > 20 || !mustContain(re, keywords) {
		return windowPlan{}
	}
	plan := windowPlan{windowed: true, before: n, after: n}
	// Where the keyword sits in a concatenation, the newlines of the parts
	// before it can only come before it, and those after it after it: the
	// generic rules' newlines are all after their keyword.
	top := re
	for top.Op == syntax.OpCapture {
		top = top.Sub[0]
	}
	if top.Op == syntax.OpConcat {
		for i, s := range top.Sub {
			if !mustContain(s, keywords) {
				continue
			}
			plan.before, plan.after = maxNewlines(s), maxNewlines(s)
			for _, t := range top.Sub[:i] {
				plan.before += maxNewlines(t)
			}
			for _, t := range top.Sub[i+1:] {
				plan.after += maxNewlines(t)
			}
			break
		}
	}
	return plan
}

// maxNewlines returns how many '\n' a match of re can hold at most, or -1
// when there is no bound.
func maxNewlines(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpLiteral:
		n := 0
		for _, r := range re.Rune {
			if r == '\n' {
				n++
			}
		}
		return n
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			if re.Rune[i] <= '\n' && '\n' <= re.Rune[i+1] {
				return 1
			}
		}
		return 0
	case syntax.OpAnyChar:
		return 1
	case syntax.OpCapture, syntax.OpQuest:
		return maxNewlines(re.Sub[0])
	case syntax.OpStar, syntax.OpPlus:
		if maxNewlines(re.Sub[0]) != 0 {
			return -1
		}
		return 0
	case syntax.OpRepeat:
		n := maxNewlines(re.Sub[0])
		switch {
		case n == 0:
			return 0
		case n < 0 || re.Max < 0:
			return -1
		}
		return min(n*re.Max, 1<<20)
	case syntax.OpConcat:
		total := 0
		for _, s := range re.Sub {
			n := maxNewlines(s)
			if n < 0 {
				return -1
			}
			total += n
		}
		return total
	case syntax.OpAlternate:
		most := 0
		for _, s := range re.Sub {
			n := maxNewlines(s)
			if n < 0 {
				return -1
			}
			most = max(most, n)
		}
		return most
	}
	return 0 // empty matches, anchors, word boundaries
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

// keywordIndex finds the rules' keywords in a text, ignoring ASCII case.
type keywordIndex struct {
	ac     *ahocorasick.Automaton
	maxLen int
}

func newKeywordIndex(keywords []string) (*keywordIndex, error) {
	if len(keywords) == 0 || slices.Contains(keywords, "") {
		return nil, nil // an empty keyword is in every text: scan whole
	}
	ac, err := ahocorasick.NewBuilder().AddStrings(keywords).Build()
	if err != nil {
		return nil, err
	}
	k := &keywordIndex{ac: ac}
	for _, w := range keywords {
		k.maxLen = max(k.maxLen, len(w))
	}
	return k, nil
}

// chunk is how much text is lower-cased at a time for the automaton: small
// enough to stay in the L1 cache, large enough to pay for the calls.
const chunk = 8 << 10

// foldTraps are the UTF-8 encodings of the three characters outside ASCII
// that case-fold to or lower-case to ASCII letters (Kelvin sign K, long s
// ſ, dotted capital İ): a rule's (?i) regex matches them where an ASCII
// lower-casing sees no keyword, and gitleaks' strings.ToLower turns K and İ
// into k and i. A text holding one is scanned whole.
var foldTraps = [...]string{"\u212a", "\u017f", "\u0130"}

func hasFoldTrap[T string | []byte](text T) bool {
	s := string(text) // no copy for a string; compiler-elided in Contains for []byte
	for _, t := range foldTraps {
		if strings.Contains(s, t) {
			return true
		}
	}
	return false
}

// lowerInto writes text lower-cased (ASCII) into buf, which is as long.
func lowerInto[T string | []byte](buf []byte, text T) {
	for i := range len(text) {
		c := text[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
}

// buffers holds the chunk buffers of scans: a scan of a short string, the
// common call, must not allocate and clear 8 KiB.
var buffers = sync.Pool{New: func() any { return new([chunk]byte) }}

// any reports whether one of the keywords occurs in text. (The automaton's
// IsMatch is not used: its prefilter searches the rest of the text for each
// of the keywords' ~30 first bytes every time it is back at its start
// state, quadratic on a chunk without keywords.)
func (k *keywordIndex) any(text []byte) bool {
	buf := buffers.Get().(*[chunk]byte)
	defer buffers.Put(buf)
	for off := 0; off < len(text); off += chunk - k.maxLen {
		end := min(off+chunk, len(text))
		b := buf[:end-off]
		lowerInto(b, text[off:end])
		if len(k.ac.FindAllOverlapping(b)) > 0 {
			return true
		}
		if end == len(text) {
			break
		}
	}
	return false
}

// hit is one occurrence of a keyword: text[start:end].
type hit struct{ keyword, start, end int }

// hits returns every occurrence of every keyword, overlapping ones too.
func (k *keywordIndex) hits(text string, out []hit) []hit {
	buf := buffers.Get().(*[chunk]byte)
	defer buffers.Put(buf)
	step := chunk - k.maxLen
	for off := 0; off < len(text); off += step {
		end := min(off+chunk, len(text))
		b := buf[:end-off]
		lowerInto(b, text[off:end])
		for _, m := range k.ac.FindAllOverlapping(b) {
			// An occurrence that starts in the overlap with the next chunk
			// is left to that chunk, unless this is the last one.
			if m.Start >= step && end < len(text) {
				continue
			}
			out = append(out, hit{m.PatternID, off + m.Start, off + m.End})
		}
		if end == len(text) {
			break
		}
	}
	return out
}
