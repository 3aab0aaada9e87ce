package normalize

import "unicode/utf8"

// MayHide reports whether a raw JSON document (bytes as received, strings
// still escaped) may hold a string whose readings are more than the string
// itself: false means Views of each of its strings is that string alone,
// Verbatim. The detectors' prefilters read the raw bytes, so a document
// they pass over must still be read when this is true: what an encoding
// hides from them is not in the raw bytes.
//
// It is one pass over the bytes with the document's escapes decoded; true
// at the first character that fold changes, escape that unescape decodes,
// base64 or hex run that decodes to text or spaced-out run. A base64 run
// written with JSON escapes in it (\/) is not decoded here: true.
func (r *Reader) MayHide(raw []byte) bool {
	var sp spacing
	run, escaped := -1, false // the base64 run being read, and whether an escape wrote part of it
	word, chars := -1, 0      // the word being read: where it began, its characters
	gap, before := 0, 0       // white space since the last word, and before the word being read
	for i := 0; i <= len(raw); {
		c, w := rune(' '), 1 // the end reads as white space
		if i < len(raw) {
			c, w = jsonChar(raw[i:])
		}
		delim := c == '"' && w == 1 // a string begins or ends
		switch {
		case c < 0:
			return true // a control character, or not JSON: let the reading decide
		case c >= utf8.RuneSelf:
			if changesRune(c) {
				return true
			}
		case c == '\\' || c == '%' || c == '&':
			if escapeNext(c, raw[i+w:]) {
				return true
			}
		}
		k := uint8(cSpace) // a delimiter ends words and runs as white space does
		if c < utf8.RuneSelf && !delim {
			k = class[c]
		} else if c >= utf8.RuneSelf {
			k = 0
		}
		switch {
		case k&cB64 != 0:
			if run < 0 {
				run, escaped = i, false
			}
			escaped = escaped || w > 1
		case run >= 0:
			if i-run >= minRun && (escaped || r.anyText(raw[run:i])) {
				return true
			}
			run = -1
		}
		switch {
		case k&cSpace == 0:
			if word < 0 {
				word, chars, before, gap = i, 0, gap, 0
			}
			chars++
		case word >= 0:
			if lo, hi := sp.word(word, i, before, chars == 1); hi > lo {
				return true
			}
			word = -1
			fallthrough
		default:
			gap++
		}
		if delim {
			if lo, hi := sp.flush(); hi > lo {
				return true
			}
			gap = 0
		}
		i += w
	}
	lo, hi := sp.flush()
	return hi > lo
}

// anyText reports whether a base64 or hex run holds text.
func (r *Reader) anyText(run []byte) bool {
	found := false
	r.textRuns(string(run), func(int, int, []byte) { found = true })
	return found
}

// jsonChar returns the character b begins with, a JSON escape decoded, and
// its length in b; a negative character for a control character or what
// is not JSON.
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

// changesRune is changes for a rune.
func changesRune(r rune) bool {
	var b [utf8.UTFMax]byte
	return changes(string(utf8.AppendRune(b[:0], r)))
}
