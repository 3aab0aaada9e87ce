package detect

import "bytes"

// Maybe reports whether a raw JSON document (bytes as received, strings
// still escaped) could hold personal data: false means Find on every
// (unescaped) string of it finds nothing.
//
// It is one pass over the bytes that looks for what every finding needs:
// an '@' between address characters (bytes from 0x80 are letters of a
// Unicode address), two upper-case letters and two digits at the start of
// a word, a national id that holds letters (Find's own readers, run on the
// raw bytes: an id's characters are never escaped), or a run of digits,
// spaces and - . ( ) + (joined over a slash as Find joins it) with seven
// digits or more, 13 to 19 if they are bare (JSON ids), not glued to a
// word (hashes, timestamps), or fewer bare digits under a label Find would
// read (a phone word; an id's name when the digits pass its check).
// Escapes are read as what they stand for: \n, \t, \", \\ and \/ are
// characters that end a word and are never in a run; \uXXXX is decoded and
// an ASCII letter, digit or one of @ + ( ) - . _ % space makes Maybe true
// at once (encoders write < > & and non-ASCII so, not these), and one in a
// label's window may write any label.
func (p *PII) Maybe(raw []byte) bool {
	n := len(raw)
	prevWord := false // the character before i, decoded, is a letter, digit or '_'
	for i := 0; i < n; i++ {
		c := raw[i]
		k := class[c]
		switch {
		case k&cQuiet != 0:
			for i+1 < n && class[raw[i+1]]&cQuiet != 0 {
				i++
			}
			prevWord = isWordByte(raw[i])
			continue
		case c == '\\':
			if i+1 < n && raw[i+1] == 'u' {
				if i+5 >= n {
					return true
				}
				r, ok := hex4(raw[i+2 : i+6])
				if !ok || r < 0x80 && relevantEscaped(byte(r)) {
					return true
				}
				i += 5
			} else {
				i++
			}
			prevWord = false
			continue
		case c == '@':
			// Bytes from 0x80 are letters of a Unicode address (RFC 6531).
			if i > 0 && i+1 < n && (class[raw[i-1]]&cLocal != 0 || raw[i-1] >= 0x80) && (isAlnum(raw[i+1]) || raw[i+1] == '\\' || raw[i+1] >= 0x80) {
				return true
			}
		case k&cDigit != 0 || (k&cRun != 0 && i+1 < n && class[raw[i+1]]&cRun != 0):
			end := i
			digits := 0
			first, last := -1, -1
			marks := false // a '+', parenthesis or joining slash: phone formatting
			for joined := false; ; {
				for end < n && class[raw[end]]&cRun != 0 {
					switch {
					case class[raw[end]]&cDigit != 0:
						digits++
						if first < 0 {
							first = end
						}
						last = end
					case raw[end] == '+' || raw[end] == '(' || raw[end] == ')':
						marks = true
					}
					end++
				}
				// "030/901820": Find joins the run over the slash, a mark.
				if joined || end >= n || raw[end] != '/' || slashJoin(raw, i, end) == end {
					break
				}
				joined, marks = true, true
				end++
			}
			// An id that holds letters (12345678Z) starts at a word's first digit.
			if end < n && (class[raw[end]]&cUpper != 0 || raw[end] == 'x') && first >= 0 && (first > i || !prevWord) && mayHoldLetter(raw, first, end) {
				if _, rule := digitLetterID(raw, first); rule != "" {
					return true
				}
			}
			bare := !marks && last-first+1 == digits
			switch {
			case bare && digits >= 13 && digits <= 19 || !bare && digits >= 7:
				if !glued(raw, i, end, marks) {
					return true
				}
			case bare && digits >= 7:
				if !glued(raw, i, end, marks) && p.maybeLabelled(raw[:last+1], first) {
					return true
				}
			}
			// A bare number is no phone or SSN (no formatting) and a card
			// only with 13 to 19 digits, whatever surrounds it.
			prevWord = class[raw[end-1]]&cDigit != 0
			i = end - 1
			continue
		case k&cUpper != 0:
			if !prevWord {
				if i+3 < n && class[raw[i+1]]&cUpper != 0 && class[raw[i+2]]&cDigit != 0 && class[raw[i+3]]&cDigit != 0 {
					return true
				}
				if _, rule := letterID(raw, i, true); rule != "" {
					return true
				}
			}
		}
		prevWord = isWordByte(c)
	}
	return false
}

// maybeLabelled reports whether the bare digits raw[first:] could be a
// labelled phone number or national id (Find's phoneNumber and writtenID):
// a phone word right before them, or an id's label when they pass its
// check.
func (p *PII) maybeLabelled(raw []byte, first int) bool {
	d := raw[first:]
	if len(d) <= 15 && labelsBefore(raw, first, phoneLabelWindow, phoneLabelWords, true)&labelPhone != 0 {
		return true
	}
	is := bareIDs(d)
	return is != 0 && labelsBefore(raw, first, idLabelWindow, idLabelWords, true)&is != 0
}

// glued reports whether the run raw[start:end] is one number that Find
// rejects for what touches it: a run of digits and lone - . or space
// separators (Find does not split it) that begins with a digit right after
// a letter, digit or '_', or ends with one right before such a byte: a hex
// hash, "2026-12-02T10:00", "build-1234567". A backslash in the six bytes
// before the run may be an escape whose last byte is no letter once
// decoded, so the start is then not judged.
func glued(raw []byte, start, end int, marks bool) bool {
	if marks {
		return false
	}
	for i := start + 1; i < end; i++ {
		if class[raw[i]]&cDigit == 0 && class[raw[i-1]]&cDigit == 0 {
			return false // two separators in a row: Find may split here
		}
	}
	if end < len(raw) && class[raw[end-1]]&cDigit != 0 && isWordByte(raw[end]) {
		return true
	}
	if start > 0 && class[raw[start]]&cDigit != 0 && isWordByte(raw[start-1]) &&
		bytes.IndexByte(raw[max(0, start-6):start], '\\') < 0 {
		return true
	}
	return false
}

// relevantEscaped reports whether an ASCII character written as \uXXXX
// could be part of a finding: a letter, a digit, or @ + ( ) - . _ % space.
func relevantEscaped(c byte) bool {
	return isAlnum(c) || bytes.IndexByte([]byte("@+()-._% "), c) >= 0
}

func hex4(b []byte) (rune, bool) {
	var r rune
	for _, c := range b {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// Maybe reports whether a raw JSON document (bytes as received, strings
// still escaped) could hold a credential: false means Find on every
// (unescaped) string of it finds nothing. It looks for the rules' keywords
// in the raw bytes: an escape other than \uXXXX stands for a control
// character, '"', '\' or '/', none of which is in a keyword
// (secretscan's TestKeywordsSurviveJSONEscapes), so a keyword in a string
// is in the raw bytes unless a \uXXXX escape writes one of its characters:
// an escape of an ASCII character other than '>' and '&' (which encoders
// escape and no keyword holds; '<' is in one) makes Maybe true.
func (s *Secrets) Maybe(raw []byte) bool {
	if s.scanner.MayMatch(raw) {
		return true // escapes can only hide a keyword, not make one
	}
	for i := bytes.IndexByte(raw, '\\'); i >= 0 && i+1 < len(raw); {
		if raw[i+1] == 'u' {
			if i+5 >= len(raw) {
				return true
			}
			r, ok := hex4(raw[i+2 : i+6])
			if !ok || (r >= 0x20 && r < 0x80 && r != '>' && r != '&') || r == 0x212a || r == 0x17f || r == 0x130 {
				return true
			}
		}
		j := bytes.IndexByte(raw[i+2:], '\\')
		if j < 0 {
			break
		}
		i += 2 + j
	}
	return false
}
