package normalize

import (
	"bytes"
	"unicode/utf8"
)

// MayHide reports whether a raw JSON document (bytes as received, strings
// still escaped) may hold a string whose readings are more than the string
// itself: false means Views of each of its strings is that string alone,
// Verbatim. The detectors' prefilters read the raw bytes, so a document
// they pass over must still be read when this is true: what an encoding
// hides from them is not in the raw bytes.
//
// It looks for what each reading needs, in as many quick passes over the
// bytes: a character fold changes, an escape unescape decodes (the
// document's own escapes decoded first), a base64 or hex run that decodes
// to text, a spaced-out run. It may say true of a document whose strings
// read as themselves, never false of one that has more readings.
func (r *Reader) MayHide(raw []byte) bool {
	return hidesChar(raw) || hidesEscape(raw) || r.hidesRun(raw) || hidesSpaced(raw)
}

// hidesChar reports whether raw holds a character, as it is or as a JSON
// escape, that fold changes or unescape begins an escape with.
func hidesChar(raw []byte) bool {
	for i := 0; i < len(raw); {
		j := nextNonASCII(raw, i)
		if j < 0 {
			break
		}
		r, size := utf8.DecodeRune(raw[j:])
		if changes(r) {
			return true
		}
		i = j + size
	}
	for i := bytes.IndexByte(raw, '\\'); i >= 0; {
		c, w := jsonChar(raw[i:])
		switch {
		case c < 0:
			return true // a control character, or not JSON: let the reading decide
		case c >= utf8.RuneSelf && changes(c):
			return true
		case c == '\\' || c == '%' || c == '&':
			if escapeNext(c, raw[i+w:]) {
				return true
			}
		}
		j := bytes.IndexByte(raw[i+w:], '\\')
		if j < 0 {
			break
		}
		i += w + j
	}
	return false
}

// hidesEscape reports whether a percent sign or an ampersand in raw may
// begin an escape.
func hidesEscape(raw []byte) bool {
	for _, c := range [...]byte{'%', '&'} {
		for i := bytes.IndexByte(raw, c); i >= 0; {
			if escapeNext(rune(c), raw[i+1:]) {
				return true
			}
			j := bytes.IndexByte(raw[i+1:], c)
			if j < 0 {
				break
			}
			i += 1 + j
		}
	}
	return false
}

// nextNonASCII returns the index of the first byte of b at or after i
// that is not ASCII, -1 if none; eight bytes at a time.
func nextNonASCII(b []byte, i int) int {
	for ; i+8 <= len(b); i += 8 {
		w := b[i : i+8]
		if (w[0]|w[1]|w[2]|w[3]|w[4]|w[5]|w[6]|w[7])&0x80 != 0 {
			break
		}
	}
	for ; i < len(b); i++ {
		if b[i] >= utf8.RuneSelf {
			return i
		}
	}
	return -1
}

// hidesRun reports whether raw holds a base64 or hex run that decodes to
// text (runs finds them the same way). A run may be written with \/ for
// its slashes.
func (r *Reader) hidesRun(raw []byte) bool {
	in := func(i int) bool {
		return class[raw[i]]&cB64 != 0 || raw[i] == '\\' && i+1 < len(raw) && raw[i+1] == '/'
	}
	for j := minRun - 1; j < len(raw); {
		if !in(j) {
			j += minRun
			continue
		}
		lo, hi := j, j+1
		for lo > 0 && in(lo-1) {
			lo--
		}
		for hi < len(raw) && in(hi) {
			hi++
		}
		if n := backslashesBefore(raw, lo); n%2 == 1 { // the run begins in an escape: \n, \u00e9
			if raw[lo] == 'u' {
				lo = min(lo+5, hi)
			} else {
				lo++
			}
		}
		end := hi // and the padding
		for end < len(raw) && end-hi < 2 && raw[end] == '=' {
			end++
		}
		if hi-lo >= minRun {
			run := raw[lo:end]
			if bytes.IndexByte(run, '\\') >= 0 {
				run = bytes.ReplaceAll(run, []byte(`\/`), []byte("/"))
			}
			if len(run) >= minRun && r.anyText(run) {
				return true
			}
		}
		j = hi + minRun
	}
	return false
}

// backslashesBefore counts the backslashes right before raw[i].
func backslashesBefore(raw []byte, i int) int {
	n := 0
	for i-n > 0 && raw[i-n-1] == '\\' {
		n++
	}
	return n
}

// anyText reports whether a base64 or hex run holds text.
func (r *Reader) anyText(run []byte) bool {
	found := false
	textRuns(r, run, func(int, int, []byte) { found = true })
	return found
}

// hidesSpaced reports whether a string of raw may hold spaced-out text, as
// spacedOut reads it. Like spacedOut it looks at every minSpan-th byte, and
// reads the bytes around it (spacedIn) only where two one-character words
// in a row may be.
func hidesSpaced(raw []byte) bool {
	for j := minSpan - 1; j < len(raw); j += minSpan {
		if maySpaceRaw(raw, j) && spacedIn(raw, max(0, j-spacedWindow), min(len(raw), j+spacedWindow)) {
			return true
		}
	}
	return false
}

// spacedWindow bytes on each side of a byte of a spaced-out run hold
// minSpaced of its words: a word is at most 12 bytes (a surrogate pair
// escaped), a gap 3 white spaces of at most 6 (\u000a), and an escape cut
// at the window's start reads right again within 12.
const spacedWindow = minSpaced*(12+3*6) + 12

// maySpaceRaw reports whether raw[j] may be in a spaced-out run: it is in
// a one-character word next to another, or in a gap between two.
func maySpaceRaw(raw []byte, j int) bool {
	if j >= 8 && j+8 <= len(raw) && (raw[j-2]|raw[j-1]|raw[j]|raw[j+1]|raw[j+2]) < utf8.RuneSelf &&
		!backslash8(raw[j-8:j]) && !backslash8(raw[j:j+8]) {
		// The common case: raw[j-2:j+3] is ASCII and no escape reaches
		// it, so each of its bytes is a character of its own.
		edge := func(c byte) bool { return c == ' ' || c == '"' }
		l, r := raw[j-1], raw[j+1]
		switch {
		case raw[j] != ' ':
			if !edge(l) || !edge(r) {
				return false // in a word of two characters or more
			}
		case l != ' ' && r != ' ' && r != '"' && l != '"':
			if !edge(raw[j-2]) || !edge(raw[j+2]) {
				return false // a space between two words, one longer
			}
		}
	}
	lo, hi, space := rawToken(raw, j)
	switch {
	case space:
		l, r := gapEnds(raw, lo, hi)
		return l >= 0 && r >= 0 && oneCharAt(raw, charBefore(raw, l), l) && oneCharAt(raw, r, charAfter(raw, r))
	case lo < 0 || !oneCharAt(raw, lo, hi):
		return false
	}
	if l, _ := gapEnds(raw, lo, lo); l >= 0 && l < lo && oneCharAt(raw, charBefore(raw, l), l) {
		return true
	}
	_, r := gapEnds(raw, hi, hi)
	return r > hi && oneCharAt(raw, r, charAfter(raw, r))
}

// backslash8 reports whether the 8 bytes of b hold a backslash.
func backslash8(b []byte) bool {
	b = b[:8]
	x := uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
	y := x ^ 0x5c5c5c5c5c5c5c5c
	return (y-0x0101010101010101)&^y&0x8080808080808080 != 0
}

// rawToken returns the character raw[j] is part of, or the white space
// unit it is part of (space); lo < 0 for a string delimiter.
func rawToken(raw []byte, j int) (lo, hi int, space bool) {
	c := raw[j]
	switch {
	case c == ' ':
		return j, j + 1, true
	case c == '"' && (j == 0 || raw[j-1] != '\\'):
		return -1, -1, false
	case c >= 0xc0:
		return j, charAfter(raw, j), false
	case c >= utf8.RuneSelf:
		lo = j
		for lo > 0 && j-lo < utf8.UTFMax-1 && raw[lo]&0xc0 == 0x80 {
			lo--
		}
		return lo, charAfter(raw, lo), false
	}
	if bytes.IndexByte(raw[max(0, j-5):j+1], '\\') < 0 {
		return j, j + 1, false
	}
	for k := 0; k < 6 && k <= j; k++ { // an escape that holds j
		if i := j - k; raw[i] == '\\' && (k < 2 || raw[min(i+1, len(raw)-1)] == 'u') {
			if w := spaceEscape(raw[i:]); w > k {
				return i, i + w, true
			}
			if _, w := jsonChar(raw[i:]); w > k {
				return i, i + w, false
			}
		}
	}
	return j, j + 1, false
}

// gapEnds returns the ends of the white space around raw[lo:hi] (white
// space, or a word's character when lo == hi is one of its ends): where
// the character before it ends and the one after it begins, -1 for either
// when the gap is wider than maxGap or a string delimiter or the end of
// raw is there instead.
func gapEnds(raw []byte, lo, hi int) (l, r int) {
	units := 0
	if hi > lo {
		units = 1
	}
	for l = lo; l > 0; units++ {
		w := 1
		if raw[l-1] != ' ' {
			if w = spaceEscapeBefore(raw, l); w == 0 {
				break
			}
		}
		l -= w
	}
	for r = hi; r < len(raw); units++ {
		w := 1
		if raw[r] != ' ' {
			if w = spaceEscape(raw[r:]); w == 0 {
				break
			}
		}
		r += w
	}
	if units > maxGap {
		return -1, -1
	}
	if l == 0 || raw[l-1] == '"' && (l < 2 || raw[l-2] != '\\') {
		l = -1
	}
	if r == len(raw) || raw[r] == '"' {
		r = -1
	}
	return l, r
}

// oneCharAt reports whether the character raw[lo:hi] is a word of its own:
// white space, a string delimiter or an end on both sides.
func oneCharAt(raw []byte, lo, hi int) bool {
	if hi < len(raw) && raw[hi] != ' ' && raw[hi] != '"' && (raw[hi] != '\\' || spaceEscape(raw[hi:]) == 0) {
		return false
	}
	return lo == 0 || raw[lo-1] == ' ' || raw[lo-1] == '"' || spaceEscapeBefore(raw, lo) > 0
}

// charAfter returns where the character that begins at raw[i] ends.
func charAfter(raw []byte, i int) int {
	if raw[i] == '\\' {
		_, w := jsonChar(raw[i:])
		return i + w
	}
	_, w := utf8.DecodeRune(raw[i:])
	return i + w
}

// charBefore returns where the character that ends at raw[i] begins.
func charBefore(raw []byte, i int) int {
	switch {
	case i >= 6 && raw[i-6] == '\\' && raw[i-5] == 'u':
		return i - 6
	case i >= 2 && raw[i-2] == '\\':
		return i - 2
	}
	lo := i - 1
	for lo > 0 && i-lo < utf8.UTFMax && raw[lo]&0xc0 == 0x80 {
		lo--
	}
	return lo
}

// spaceEscapeBefore returns the length of the JSON escape of white space
// that ends at raw[i], 0 if none.
func spaceEscapeBefore(raw []byte, i int) int {
	if i < 2 {
		return 0
	}
	switch raw[i-1] {
	case 'n', 't', 'r':
		if raw[i-2] == '\\' {
			return 2
		}
	case '0', '9', 'a', 'A', 'd', 'D': // \u0020, \u0009, \u000a, \u000d
		if i >= 6 && raw[i-6] == '\\' && spaceEscape(raw[i-6:i]) == 6 {
			return 6
		}
	}
	return 0
}

// spacedIn reports whether raw[lo:hi], read as JSON from lo on (an escape
// cut at lo reads as what follows it), holds spaced-out text.
func spacedIn(raw []byte, lo, hi int) bool {
	var sp spacing
	raw = raw[:hi]
	n := len(raw)
	for i := lo; i < n; {
		gap := 0
		for i < n {
			if raw[i] == ' ' {
				gap, i = gap+1, i+1
			} else if w := spaceEscape(raw[i:]); w > 0 {
				gap, i = gap+1, i+w
			} else {
				break
			}
		}
		if i == n {
			break
		}
		if raw[i] == '"' { // a string begins or ends
			if lo, hi := sp.flush(); hi > lo {
				return true
			}
			i++
			continue
		}
		start, chars := i, 0
		for i < n && raw[i] != ' ' && raw[i] != '"' {
			if raw[i] == '\\' {
				if spaceEscape(raw[i:]) > 0 {
					break
				}
				_, w := jsonChar(raw[i:])
				i, chars = i+w, chars+1
				continue
			}
			if raw[i] < 0x80 || raw[i] >= 0xc0 {
				chars++
			}
			i++
		}
		if lo, hi := sp.word(start, i, gap, chars == 1); hi > lo {
			return true
		}
	}
	lo, hi = sp.flush()
	return hi > lo
}

// spaceEscape returns the length of the JSON escape of white space that b
// begins with, 0 if none.
func spaceEscape(b []byte) int {
	if len(b) < 2 || b[0] != '\\' {
		return 0
	}
	switch b[1] {
	case 'n', 't', 'r':
		return 2
	case 'u':
		if c, w := jsonChar(b); c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			return w
		}
	}
	return 0
}

// jsonChar returns the character b begins with (b[0] is a backslash: the
// JSON escape decoded) and its length in b; a negative character for a
// control character or what is not JSON.
func jsonChar(b []byte) (rune, int) {
	if b[0] != '\\' {
		if b[0] < utf8.RuneSelf {
			return rune(b[0]), 1
		}
		return utf8.DecodeRune(b)
	}
	if len(b) < 2 {
		return -1, 1
	}
	switch b[1] {
	case '"', '\\', '/':
		return rune(b[1]), 2
	case 'n':
		return '\n', 2
	case 't':
		return '\t', 2
	case 'r':
		return '\r', 2
	case 'u':
		r, ok := hexRune(string(cutBytes(b, 2, 6)))
		if !ok {
			return -1, 1
		}
		if 0xD800 <= r && r < 0xDC00 && len(b) >= 12 && b[6] == '\\' && b[7] == 'u' {
			if lo, ok := hexRune(string(b[8:12])); ok && 0xDC00 <= lo && lo < 0xE000 {
				return 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00), 12
			}
		}
		if r < utf8.RuneSelf && control(r) {
			return -1, 6
		}
		return r, 6
	}
	return -1, 2 // \b, \f, or not JSON
}

func cutBytes(b []byte, i, j int) []byte {
	if len(b) < j {
		return nil
	}
	return b[i:j]
}

// escapeNext reports whether c (a backslash, percent sign or ampersand, as
// the text reads) and the raw bytes after it may begin an escape that
// unescape decodes.
func escapeNext(c rune, next []byte) bool {
	if len(next) == 0 {
		return false
	}
	switch c {
	case '\\':
		n, w := jsonChar(next)
		if w > 1 {
			return n == 'u' || n == 'U' || n == 'x' // escaped twice: let the reading decide
		}
		return n == 'u' && (len(next) > 1 && next[1] == '{' || hexDigits(next[1:], 4)) ||
			n == 'U' && hexDigits(next[1:], 8) || n == 'x' && hexDigits(next[1:], 2)
	case '%':
		return hexDigits(next, 2) || next[0] == 'u' && hexDigits(next[1:], 4)
	}
	if next[0] == '#' {
		return true
	}
	n := 0
	for n < len(next) && n <= 32 && isAlnum(next[n]) {
		n++
	}
	return n >= 2 && n < len(next) && next[n] == ';'
}

// hexDigits reports whether b begins with n hex digits, or may (an escape
// among them).
func hexDigits(b []byte, n int) bool {
	if len(b) < n {
		return false
	}
	for _, c := range b[:n] {
		if digitValue(c) < 0 && c != '\\' {
			return false
		}
	}
	return true
}
