package secretscan

import (
	"math"
	"regexp/syntax"
	"unicode/utf8"
)

// A rule with an entropy drops every match whose secret's Shannon entropy
// (over its characters) is at most the rule's. A string of k distinct
// characters has an entropy of at most log2(k) (equal counts), so a secret
// that passes holds more than 2^entropy distinct characters: twelve for
// generic-api-key's 3.5. The secret is a run of the characters its regex
// can put in it, so a window without such a run of that many distinct
// characters holds no finding of the rule, and its regex does not run.
// In prose and JSON, where "key" or "token" opens a window whose regex
// does match ("token after this, and" reads as an assignment), the value
// is a word ("created_at": 9 distinct): Go's NFA took 12 µs for each such
// window of 50 bytes.

// distinctRun is a rule's condition on a window: a run of class bytes with
// at least least distinct characters.
type distinctRun struct {
	// class holds the ASCII bytes a secret can hold; other: it can hold a
	// character outside ASCII, each of whose leading bytes counts as new.
	class [128]bool
	other bool
	least int
}

// planDistinct returns the condition for a rule's regex and entropy, nil
// when the entropy is below 1.1 bits or the regex does not parse.
func planDistinct(expr string, secretGroup int, entropy float64) *distinctRun {
	// shannonEntropy counts a character's probability over the secret's
	// bytes: with characters outside ASCII they add up to q < 1, and k
	// characters reach q*log2(k/q), which is above log2(k) only for k <= 2
	// (at most 1.062 bits for two). From 1.1 bits the bound holds.
	if entropy < 1.1 {
		return nil
	}
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil
	}
	secret := re // the whole match, unless a group always holds the secret
	switch {
	case secretGroup > 0:
		secret = captureOf(re, secretGroup)
	case mandatory(re, 1):
		// secretOf takes the first non-empty group: group 1 when every
		// match holds it, not empty.
		secret = captureOf(re, 1)
	}
	if secret == nil {
		return nil
	}
	// The secret's characters: the bytes some leaf of it can match
	// (barrierOf's complement), 0x80 standing for every one outside ASCII.
	barrier := barrierOf(secret)
	d := &distinctRun{least: int(math.Floor(math.Exp2(entropy))) + 1, other: !barrier[utf8.RuneSelf]}
	for c := range d.class {
		d.class[c] = !barrier[c]
	}
	return d
}

// met reports whether text holds a run of d's class with d.least distinct
// characters.
func (d *distinctRun) met(text string) bool {
	var seen [2]uint64
	n := 0
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case c < utf8.RuneSelf && d.class[c]:
			if seen[c>>6]&(1<<(c&63)) == 0 {
				seen[c>>6] |= 1 << (c & 63)
				n++
			}
		case c >= utf8.RuneSelf && d.other:
			if utf8.RuneStart(c) {
				n++
			}
		default:
			seen, n = [2]uint64{}, 0
			continue
		}
		if n >= d.least {
			return true
		}
	}
	return false
}

// captureOf returns group n of re, nil when there is none.
func captureOf(re *syntax.Regexp, n int) *syntax.Regexp {
	if re.Op == syntax.OpCapture && re.Cap == n {
		return re
	}
	for _, sub := range re.Sub {
		if c := captureOf(sub, n); c != nil {
			return c
		}
	}
	return nil
}

// mandatory reports whether every match of re holds group n, not empty:
// the group is reached through concatenations, captures and repetitions
// of at least one only, and matches no empty string.
func mandatory(re *syntax.Regexp, n int) bool {
	switch {
	case re.Op == syntax.OpCapture && re.Cap == n:
		return !nullable(re)
	case re.Op == syntax.OpConcat:
		for _, sub := range re.Sub {
			if mandatory(sub, n) {
				return true
			}
		}
	case re.Op == syntax.OpCapture || re.Op == syntax.OpPlus || re.Op == syntax.OpRepeat && re.Min >= 1:
		return mandatory(re.Sub[0], n)
	}
	return false
}
