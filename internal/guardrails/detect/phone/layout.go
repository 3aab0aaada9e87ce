package phone

import "regexp/syntax"

// maxGroup bounds an unbounded repetition in a format's pattern: no
// national significant number is longer.
const maxGroup = maxNSN

// layoutsOf returns, for each count of digits n < 32, the bit set of the
// first group's lengths the formats can write a number of n digits with
// (the national prefix their rules add included). It reads each pattern's
// capture groups for the lengths they match and walks the format with the
// national prefix rule in place: "0$1 $2" over (\d{2})(\d{6,8}) writes 3
// digits, then 6 to 8. A format it cannot read opens every layout, so the
// result never rules out a number Format would write.
func layoutsOf(formats []phoneFormat) (out [32]uint32) {
	for _, f := range formats {
		rule := f.format
		if f.nationalPrefixRule != "" {
			rule = replaceFirstGroup(f.format, f.nationalPrefixRule)
		}
		groups, ok := writtenGroups(f.pattern, rule)
		if !ok {
			for n := range out {
				out[n] = ^uint32(0)
			}
			return out
		}
		rest := [2]int{}
		for _, g := range groups[1:] {
			rest[0] += g[0]
			rest[1] += g[1]
		}
		for first := groups[0][0]; first <= groups[0][1] && first < 32; first++ {
			for n := first + rest[0]; n <= first+rest[1] && n < 32; n++ {
				out[n] |= 1 << first
			}
		}
	}
	return out
}

// writtenGroups returns the [min, max] digit count of each group of digits
// rule writes ("$1 $2-$3", "($1)", "0$1") from pattern's captures.
func writtenGroups(pattern, rule string) ([][2]int, bool) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil, false
	}
	caps := map[int][2]int{}
	var walk func(*syntax.Regexp)
	walk = func(r *syntax.Regexp) {
		if r.Op == syntax.OpCapture {
			lo, hi := lengthRange(r.Sub[0])
			caps[r.Cap] = [2]int{lo, hi}
		}
		for _, s := range r.Sub {
			walk(s)
		}
	}
	walk(re)
	var groups [][2]int
	in := false
	add := func(lo, hi int) {
		if !in {
			groups = append(groups, [2]int{})
			in = true
		}
		groups[len(groups)-1][0] += lo
		groups[len(groups)-1][1] += hi
	}
	for i := 0; i < len(rule); i++ {
		switch c := rule[i]; {
		case c == '$' && i+1 < len(rule) && isDigit(rule[i+1]):
			g, ok := caps[int(rule[i+1]-'0')]
			if !ok {
				return nil, false
			}
			add(g[0], g[1])
			i++
		case isDigit(c):
			add(1, 1)
		default:
			in = false
		}
	}
	return groups, len(groups) > 0
}

// lengthRange returns the least and greatest number of characters r
// matches, the greatest capped at maxGroup.
func lengthRange(r *syntax.Regexp) (lo, hi int) {
	switch r.Op {
	case syntax.OpLiteral:
		return len(r.Rune), len(r.Rune)
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return 1, 1
	case syntax.OpCapture:
		return lengthRange(r.Sub[0])
	case syntax.OpConcat:
		for _, s := range r.Sub {
			a, b := lengthRange(s)
			lo, hi = lo+a, min(hi+b, maxGroup)
		}
		return lo, hi
	case syntax.OpAlternate:
		lo, hi = maxGroup, 0
		for _, s := range r.Sub {
			a, b := lengthRange(s)
			lo, hi = min(lo, a), max(hi, b)
		}
		return lo, hi
	case syntax.OpQuest:
		_, b := lengthRange(r.Sub[0])
		return 0, b
	case syntax.OpStar:
		return 0, maxGroup
	case syntax.OpPlus:
		a, _ := lengthRange(r.Sub[0])
		return a, maxGroup
	case syntax.OpRepeat:
		a, b := lengthRange(r.Sub[0])
		hi = maxGroup
		if r.Max >= 0 {
			hi = min(b*r.Max, maxGroup)
		}
		return min(a*r.Min, maxGroup), hi
	}
	return 0, 0 // anchors, empty matches
}
