package toolscreen

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Text is read in two forms, so that writing a phrase another way does
// not hide it.
//
// normalize is what every phrase rule reads: NFKC (fullwidth and
// mathematical letters become their ASCII letters, ligatures their
// letters), lower case, hidden characters dropped (so they cannot split a
// phrase), quotes straightened, Arabic vowel marks and the tatweel
// dropped and the Arabic and Urdu forms of one letter made one, the
// Turkish dotless i made an i, every run of white space one space, a
// blank line the end of a sentence.
//
// skeleton is normalize's text as a reader takes it for English: every
// letter that looks like a Latin one written as that letter (Cyrillic а,
// Greek ο, Armenian օ, an accented e; Unicode's confusables, UTS #39), the
// digits and signs of leetspeak inside words read as letters
// (1gn0r3 4ll pr3v10us), and a word spelled out letter by letter read as
// the word (i-g-n-o-r-e, i.g.n.o.r.e). The English rules and the hidden blocks read it
// as well when it differs; the other languages' phrases do not (folding
// their letters would make words of theirs collide).

// foldTable maps a character to the ASCII letter it is read as
// (confusableTable, generated).
func foldTable() map[rune]byte {
	m := make(map[rune]byte, 1024)
	for s := confusableTable; len(s) > 0; {
		r, n := utf8.DecodeRuneInString(s)
		m[r] = s[n]
		s = s[n+1:]
	}
	return m
}

// normalize returns v as the phrase rules read it (see above).
func (p *patterns) normalize(v string) string {
	if !isASCII(v) {
		v = norm.NFKC.String(v)
	}
	var b strings.Builder
	b.Grow(len(v))
	space, newlines := false, 0 // in a run of white space, and its line ends
	for _, r := range v {
		if unicode.IsSpace(r) {
			if !space {
				space, newlines = true, 0
			}
			if r == '\n' {
				newlines++
			}
			continue
		}
		if isHidden(r) || r == 0x00AD || r == 0x0640 || r >= 0x064B && r <= 0x065F || r == 0x0670 {
			continue // hidden, soft hyphen, tatweel, Arabic vowel marks: they split no word
		}
		if space {
			if newlines >= 2 {
				b.WriteString(". ") // a blank line ends a sentence
			} else {
				b.WriteByte(' ')
			}
			space = false
		}
		switch {
		case r == '\u2018' || r == '\u2019' || r == '\u201B' || r == '\u02BC':
			b.WriteByte('\'')
		case r == '\u201C' || r == '\u201D' || r == '\u201E':
			b.WriteByte('"')
		case r == 'ı':
			b.WriteByte('i')
		case r < utf8.RuneSelf:
			if 'A' <= r && r <= 'Z' {
				r += 'a' - 'A'
			}
			b.WriteByte(byte(r))
		default:
			if a, ok := arabicForms[r]; ok {
				r = a
			}
			b.WriteRune(unicode.ToLower(r))
		}
	}
	if space {
		b.WriteByte(' ')
	}
	return b.String()
}

// arabicForms makes one letter of the forms Arabic and Urdu writing use
// for it (alef with hamza or madda, Farsi and Urdu yeh and kaf, Urdu heh
// forms, teh marbuta), so one phrase list matches either spelling.
var arabicForms = map[rune]rune{
	'أ': 'ا', 'إ': 'ا', 'آ': 'ا', 'ٱ': 'ا',
	'ى': 'ي', 'ی': 'ي', 'ک': 'ك', 'ہ': 'ه', 'ھ': 'ه', 'ۀ': 'ه', 'ة': 'ه',
}

// skeleton returns n (normalized) with lookalike letters and leetspeak
// folded (see above); n itself when nothing folds.
func (p *patterns) skeleton(n string) string {
	var b strings.Builder
	changed := false
	for i, r := range n {
		c, ok := p.fold[r]
		if !ok {
			if changed {
				b.WriteRune(r)
			}
			continue
		}
		if !changed {
			b.Grow(len(n))
			b.WriteString(n[:i])
			changed = true
		}
		b.WriteByte(c)
	}
	out := n
	if changed {
		out = b.String()
	}
	out = unleet(out)
	if !spelledOut(out) {
		return out
	}
	return p.spelled.ReplaceAllStringFunc(out, func(m string) string {
		return strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' {
				return r
			}
			return -1
		}, m)
	})
}

// spelledOut is a quick look for a word spelled out (three letters, each
// followed by the same separator), before the regular expression that
// joins its letters: most texts have none.
func spelledOut(s string) bool {
	letter := func(i int) bool { return i < len(s) && s[i] >= 'a' && s[i] <= 'z' }
	for i := 0; i+4 < len(s); i++ {
		sep := s[i+1]
		if (sep == '-' || sep == '.' || sep == '_' || sep == '*' || sep == ' ') && letter(i) && letter(i+2) && s[i+3] == sep &&
			letter(i+4) && (i == 0 || !letter(i-1)) {
			return true
		}
	}
	return false
}

// emailAt says whether s[start:end] is the part of an email address
// before its domain's first dot.
func emailAt(s string, start, end int) bool {
	return end+1 < len(s) && s[end] == '.' && s[end+1] >= 'a' && s[end+1] <= 'z' && strings.IndexByte(s[start+1:end], '@') >= 0
}

// leet are the digits and signs leetspeak writes for letters.
var leet = [128]byte{'0': 'o', '1': 'i', '3': 'e', '4': 'a', '5': 's', '7': 't', '8': 'b', '9': 'g', '@': 'a', '$': 's'}

// unleet reads leetspeak in the words of s (lower case ASCII runs that
// hold a letter and a digit or sign of leet): "1gn0r3" is "ignore";
// numbers, words without either and the start of an email address
// (a word with an @ that a dot and a letter follow) are left alone.
func unleet(s string) string {
	var out []byte
	start := -1
	letter, sign := false, false
	flush := func(end int) {
		if start >= 0 && letter && sign && !emailAt(s, start, end) {
			if out == nil {
				out = []byte(s)
			}
			for j := start; j < end; j++ {
				if c := leet[s[j]]; c != 0 {
					out[j] = c
				}
			}
		}
		start, letter, sign = -1, false, false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		isLetter := c >= 'a' && c <= 'z'
		isSign := c < 128 && leet[c] != 0
		if !isLetter && !isSign && !(c >= '0' && c <= '9') {
			flush(i)
			continue
		}
		if start < 0 {
			start = i
		}
		letter = letter || isLetter
		sign = sign || isSign
	}
	flush(len(s))
	if out == nil {
		return s
	}
	return string(out)
}
