package normalize

import (
	"sort"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// needsFold reports whether fold would change s: whether s holds a control
// character or a non-ASCII character that it folds or drops. ASCII text
// (most of it) is read eight bytes at a time.
func needsFold(s string) bool {
	const hi, lo, del = 0x8080808080808080, 0x0101010101010101, 0x7f7f7f7f7f7f7f7f
	for i := 0; i < len(s); {
		if i+8 <= len(s) {
			b := s[i : i+8]
			x := uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
				uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
			// No byte >= 0x80, none < 0x20 and none 0x7f (bytes that make
			// the subtractions borrow).
			if x&hi == 0 && (x-0x20*lo)&^x&hi == 0 && ((x^del)-lo)&^(x^del)&hi == 0 {
				i += 8
				continue
			}
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if control(rune(c)) {
				return true
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if changes(r) {
			return true
		}
		i += size
	}
	return false
}

// changes reports whether fold changes r (not ASCII): NFKC maps it, it has
// a canonical decomposition (a letter with a diacritic), it is dropped, or
// it is a confusable.
func changes(r rune) bool {
	var b [utf8.UTFMax]byte
	n := utf8.EncodeRune(b[:], r)
	return len(norm.NFKC.Properties(b[:n]).Decomposition()) > 0 || dropped(r) || folded(r) != ""
}

// control reports whether an ASCII character is a control character other
// than tab, line feed and carriage return.
func control(r rune) bool {
	return r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0x7f
}

// dropped reports whether r is read as nothing: a control or format
// character, a mark, a variation selector or another default-ignorable
// character (the zero-width ones among them).
func dropped(r rune) bool {
	if r < utf8.RuneSelf {
		return control(r)
	}
	return r < 0xa0 || unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf,
		unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point)
}

// folded returns the ASCII that r passes for ("" for none).
func folded(r rune) string {
	i := sort.Search(len(folds), func(k int) bool { return folds[k].r >= r })
	if i < len(folds) && folds[i].r == r {
		return folds[i].to
	}
	return ""
}

// fold returns t in NFKC with the dropped characters dropped and letters
// and confusables folded to ASCII (see foldSegment). Each normalization
// segment (a character and the marks that go with it) maps to its own
// bytes; ASCII is kept as it is.
func (r *Reader) fold(t Text) Text {
	s := t.S
	w := &builder{src: &t, b: make([]byte, 0, len(s))}
	last := 0 // s[:last] is written
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf && !control(rune(c)) {
			i++
			continue
		}
		j := i + 1 // the run of non-ASCII and control bytes s[i:j]
		for j < len(s) && (s[j] >= utf8.RuneSelf || control(rune(s[j]))) {
			j++
		}
		start := i
		if i > last {
			start = i - 1 // an ASCII letter composes with a mark after it
		}
		w.keep(last, start)
		for p := start; p < j; {
			n := norm.NFKC.NextBoundaryInString(s[p:j], true)
			if n <= 0 {
				n = j - p
			}
			seg := s[p : p+n]
			if out := r.foldSegment(seg); string(out) == seg {
				w.keep(p, p+n)
			} else {
				w.put(out, p, p+n)
			}
			p += n
		}
		last, i = j, j
	}
	return w.text(last)
}

// foldSegment returns a normalization segment in NFKC, without what
// dropped drops, with each letter with a diacritic as its ASCII base
// letter and each confusable as the ASCII it passes for.
func (r *Reader) foldSegment(seg string) []byte {
	r.nf = norm.NFKC.AppendString(r.nf[:0], seg)
	out := r.out[:0]
	for k := 0; k < len(r.nf); {
		c, size := utf8.DecodeRune(r.nf[k:])
		switch {
		case c == utf8.RuneError && size == 1:
			out = append(out, r.nf[k]) // not UTF-8: left as it is
		case dropped(c):
		case c < utf8.RuneSelf:
			out = append(out, byte(c))
		case folded(c) != "":
			out = append(out, folded(c)...)
		default:
			out = append(out, base(r.nf[k:k+size])...)
		}
		k += size
	}
	r.out = out
	return out
}

// base returns the letter a character with diacritics is written on, when
// that is ASCII or passes for it (é, ǵ, Ǻ); else the character.
func base(ch []byte) []byte {
	d := norm.NFD.Properties(ch).Decomposition()
	if len(d) == 0 {
		return ch
	}
	b, _ := utf8.DecodeRune(d)
	switch {
	case b < utf8.RuneSelf && b > ' ':
		return d[:1]
	case folded(b) != "":
		return []byte(folded(b))
	}
	return ch
}
