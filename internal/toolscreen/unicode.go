package toolscreen

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Characters that hide text. The rules fire on what has no place in a
// tool's description, and leave alone what real text uses: a zero-width
// joiner inside an emoji or between letters of a script that joins (it is
// flagged beside ASCII or at an edge), a left-to-right or right-to-left
// mark in text that holds right-to-left letters, one variation selector
// after its character, a byte order mark at the very start.

// unicodeOnly screens v for invisible and bidirectional characters.
func (s *screener) unicodeOnly(where, v string) {
	if isASCII(v) {
		s.controls(where, v)
		return
	}
	runes := []rune(v)
	var tags []rune
	var invisible, bidi rune = -1, -1
	rtl := hasRTL(runes)
	stacked := 0
	for i, r := range runes {
		if isVariationSelector(r) {
			stacked++
			if stacked >= 2 && invisible < 0 {
				invisible = r
			}
		} else {
			stacked = 0
		}
		switch {
		case r >= 0xE0000 && r <= 0xE007F:
			tags = append(tags, r)
		case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
			if bidi < 0 {
				bidi = r
			}
		case r == 0x200E || r == 0x200F || r == 0x061C:
			if !rtl && bidi < 0 {
				bidi = r
			}
		case r == 0x200B, r >= 0x2060 && r <= 0x2064, r == 0x180E:
			if invisible < 0 {
				invisible = r
			}
		case r == 0x115F, r == 0x1160, r == 0x3164, r == 0xFFA0: // Hangul fillers: blank letters
			if invisible < 0 && !hasHangul(runes) {
				invisible = r
			}
		case r == 0xFEFF && i > 0:
			if invisible < 0 {
				invisible = r
			}
		case r < 0x20 && r != '\t' && r != '\n' && r != '\r', r == 0x7F, r >= 0x80 && r <= 0x9F:
			if invisible < 0 {
				invisible = r // a control character: ANSI escapes hide text in a terminal
			}
		case r == 0x200C || r == 0x200D:
			if invisible < 0 && (i == 0 || i == len(runes)-1 || runes[i-1] < utf8.RuneSelf || runes[i+1] < utf8.RuneSelf) {
				invisible = r
			}
		}
	}
	if len(tags) > 0 {
		s.add(InvisibleUnicode, where, fmt.Sprintf("%d Unicode tag characters (%s...)%s", len(tags), codePoint(tags[0]), tagText(tags)))
	}
	if invisible >= 0 {
		s.add(InvisibleUnicode, where, "invisible character "+codePoint(invisible)+" "+context(runes, invisible))
	}
	if bidi >= 0 {
		what := "bidirectional control "
		if bidi == 0x200E || bidi == 0x200F || bidi == 0x061C {
			what = "direction mark in text with no right-to-left letters "
		}
		s.add(BidiControl, where, what+codePoint(bidi)+" "+context(runes, bidi))
	}
}

// controls screens ASCII text for control characters: an ANSI escape
// sequence (ESC [8m) hides the text after it from a person reading it in
// a terminal, and a model reads it all.
func (s *screener) controls(where, v string) {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0x7F {
			s.add(InvisibleUnicode, where, "control character "+codePoint(rune(c))+" "+context([]rune(v), rune(c)))
			return
		}
	}
}

// tagText spells the ASCII that tag characters hide, cut to a few words.
func tagText(tags []rune) string {
	var b strings.Builder
	for _, r := range tags {
		if c := r - 0xE0000; c >= 0x20 && c < 0x7F {
			b.WriteRune(c)
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return " spelling " + quote(b.String())
}

// context quotes a few visible characters around the first r, with the
// invisible ones written as code points.
func context(runes []rune, r rune) string {
	i := 0
	for i < len(runes) && runes[i] != r {
		i++
	}
	lo, hi := max(0, i-12), min(len(runes), i+13)
	var b strings.Builder
	for _, c := range runes[lo:hi] {
		if isHidden(c) || unicode.IsControl(c) && c != '\n' && c != '\t' {
			b.WriteString("<" + codePoint(c) + ">")
		} else if c == '\n' || c == '\t' {
			b.WriteByte(' ')
		} else {
			b.WriteRune(c)
		}
	}
	return fmt.Sprintf("in %q", b.String())
}

func codePoint(r rune) string { return fmt.Sprintf("U+%04X", r) }

// isHidden is a character that shows nothing.
func isHidden(r rune) bool {
	return unicode.Is(unicode.Cf, r) || isVariationSelector(r) || r == 0x115F || r == 0x1160 || r == 0x3164 || r == 0xFFA0
}

func isVariationSelector(r rune) bool {
	return r >= 0xFE00 && r <= 0xFE0F || r >= 0xE0100 && r <= 0xE01EF
}

func hasRTL(runes []rune) bool {
	for _, r := range runes {
		if unicode.In(r, unicode.Hebrew, unicode.Arabic, unicode.Syriac, unicode.Thaana, unicode.Nko) {
			return true
		}
	}
	return false
}

func hasHangul(runes []rune) bool {
	for _, r := range runes {
		if unicode.Is(unicode.Hangul, r) && r != 0x115F && r != 0x1160 && r != 0x3164 && r != 0xFFA0 {
			return true
		}
	}
	return false
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
