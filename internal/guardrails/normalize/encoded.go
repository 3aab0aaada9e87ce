package normalize

import (
	"encoding/base64"
	"encoding/hex"
	"slices"
	"strings"
	"unicode/utf8"
)

const (
	// minRun is the shortest base64 or hex run decoded: 12 or 8 bytes,
	// a short e-mail address; every credential rule needs more.
	minRun = 16
	// minSpaced one-character words in a row are spaced-out text, each
	// gap at most maxGap white spaces; closeUp keeps spacedContext bytes
	// before them (a rule's keyword: "token: g h p _ ...").
	minSpaced     = 8
	maxGap        = 3
	spacedContext = 32
	// binaryMin is the shortest string Binary calls binary: a shorter one
	// is read as text whatever it decodes to.
	binaryMin = 256
)

// Byte classes.
const (
	cB64   = 1 << iota // in either base64 alphabet
	cHex               // a hex digit
	cSpace             // white space
	cCont              // a UTF-8 continuation byte
)

var class = func() (t [256]uint8) {
	for c := range 256 {
		switch {
		case isAlnum(byte(c)) || strings.IndexByte("+/-_", byte(c)) >= 0:
			t[c] |= cB64
			if digitValue(byte(c)) >= 0 {
				t[c] |= cHex
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			t[c] |= cSpace
		case c >= 0x80 && c < 0xc0:
			t[c] |= cCont
		}
	}
	return t
}()

// encoded appends the readings of what t.S encodes: its base64 and hex
// runs that decode to text (while depth allows) and its spaced-out runs.
func (r *Reader) encoded(t Text, depth int, out []Text) []Text {
	if depth < maxDepth {
		out = r.runs(t, depth, out)
	}
	return spacedOut(t, out)
}

// runs appends the readings of the base64 and hex runs of t.S (minRun
// characters or more) that decode to text. It looks at every minRun-th
// byte, and around it only when it may be in a run: a run that long holds
// one of them, and most bytes are in no run.
func (r *Reader) runs(t Text, depth int, out []Text) []Text {
	s := t.S
	for j := minRun - 1; j < len(s); {
		if class[s[j]]&cB64 == 0 {
			j += minRun
			continue
		}
		lo, hi := j, j+1
		for lo > 0 && class[s[lo-1]]&cB64 != 0 {
			lo--
		}
		for hi < len(s) && class[s[hi]]&cB64 != 0 {
			hi++
		}
		if hi-lo >= minRun {
			out = r.decodeRun(t, lo, hi, depth, out)
		}
		j = hi + minRun
	}
	return out
}

// decodeRun appends the readings of the base64 or hex run t.S[lo:hi] (and
// the padding after it) where it decodes to text.
func (r *Reader) decodeRun(t Text, lo, hi, depth int, out []Text) []Text {
	for end := hi; hi < len(t.S) && hi-end < 2 && t.S[hi] == '='; {
		hi++
	}
	textRuns(r, t.S[lo:hi], func(a, b int, text []byte) {
		from, to := t.Span(lo+a, lo+b)
		out = r.views(Text{S: string(text), segs: []seg{{from: from, to: to}}}, depth+1, out)
	})
	return out
}

// minSpan is the fewest bytes a spaced-out run spans.
const minSpan = 2*minSpaced - 1

// spacedOut appends the spaced-out runs of t.S closed up (closeUp). It
// looks at every minSpan-th byte, and reads the words around it only when
// it is white space or a word of one character: a run that long holds one
// of them, and most bytes are in longer words.
func spacedOut(t Text, out []Text) []Text {
	s := t.S
	for j := minSpan - 1; j < len(s); {
		if !maySpace(s, j) {
			j += minSpan
			continue
		}
		lo, _ := token(s, j)
		// From where a run holding j may begin up to the first word of
		// more than one character, which no run holds.
		var sp spacing
		i := chainStart(s, lo)
		for i < len(s) {
			gap := i
			for i < len(s) && class[s[i]]&cSpace != 0 {
				i++
			}
			word := i
			for i < len(s) && class[s[i]]&cSpace == 0 {
				i++
			}
			if word == i {
				break
			}
			one := oneChar(s[word:i])
			if clo, chi := sp.word(word, i, word-gap, one); chi > clo {
				out = append(out, closeUp(t, clo, chi))
			}
			if !one {
				break
			}
		}
		if clo, chi := sp.flush(); chi > clo {
			out = append(out, closeUp(t, clo, chi))
		}
		j = i + minSpan - 1
	}
	return out
}

// maySpace reports whether s[j] may be in a spaced-out run: it is an ASCII
// character with white space on both sides, or white space with such a
// character on both sides within maxGap; what is not ASCII is looked at
// closer.
func maySpace(s string, j int) bool {
	isSpace := func(i int) bool { return i < 0 || i >= len(s) || class[s[i]]&cSpace != 0 }
	single := func(i int) bool { return s[i] >= utf8.RuneSelf || isSpace(i-1) && isSpace(i+1) }
	if s[j] >= utf8.RuneSelf { // the character's neighbours, not its word's (which may be the whole text)
		lo := j
		for lo > 0 && j-lo < utf8.UTFMax-1 && !utf8.RuneStart(s[lo]) {
			lo--
		}
		_, size := utf8.DecodeRuneInString(s[lo:])
		return isSpace(lo-1) && isSpace(lo+size)
	}
	if !isSpace(j) {
		return single(j)
	}
	lo, hi := j, j
	for lo >= 0 && j-lo <= maxGap && isSpace(lo) {
		lo--
	}
	for hi < len(s) && hi-j <= maxGap && isSpace(hi) {
		hi++
	}
	return lo >= 0 && hi < len(s) && hi-lo-1 <= maxGap && single(lo) && single(hi)
}

// token returns the word or the white space that holds s[j].
func token(s string, j int) (lo, hi int) {
	space := class[s[j]]&cSpace != 0
	lo, hi = j, j+1
	for lo > 0 && (class[s[lo-1]]&cSpace != 0) == space {
		lo--
	}
	for hi < len(s) && (class[s[hi]]&cSpace != 0) == space {
		hi++
	}
	return lo, hi
}

// chainStart returns where the words of one character and the gaps of at
// most maxGap white spaces before s[i:] begin.
func chainStart(s string, i int) int {
	for i > 0 {
		space := class[s[i-1]]&cSpace != 0
		k := i - 1
		for k > 0 && (class[s[k-1]]&cSpace != 0) == space {
			k--
		}
		if space && i-k > maxGap || !space && !oneChar(s[k:i]) {
			break
		}
		i = k
	}
	return i
}

// oneChar reports whether a word is one character.
func oneChar(w string) bool {
	return len(w) == 1 || len(w) <= utf8.UTFMax && utf8.RuneCountInString(w) == 1
}

// textRuns calls visit with each part of run, a base64 or hex run, that
// decodes to text: the run, or when it does not, each of its parts between
// slashes (a path before an encoded value reads as part of the run:
// "/v1/files/Z2hw..."). run is a string or, in a raw document, bytes.
func textRuns[T string | []byte](r *Reader, run T, visit func(lo, hi int, text []byte)) {
	if d, k := decode(r, run); k == textData {
		visit(0, len(run), d)
		return
	}
	for lo := 0; lo < len(run); {
		hi := lo
		for hi < len(run) && run[hi] != '/' {
			hi++
		}
		if hi == len(run) && lo == 0 {
			return // no slash
		}
		if hi-lo >= minRun {
			if d, k := decode(r, run[lo:hi]); k == textData {
				visit(lo, hi, d)
			}
		}
		lo = hi + 1
	}
}

// Binary reports whether s is base64 of what is not text (an image, audio,
// an archive), which the filters leave unread: what it holds is no text a
// model reads. A string shorter than binaryMin is never binary.
func (r *Reader) Binary(s string) bool {
	if len(s) < binaryMin {
		return false
	}
	for i := 0; i < len(s); i++ {
		if class[s[i]]&cB64 == 0 && (s[i] != '=' || i < len(s)-2) {
			return false
		}
	}
	_, k := decode(r, s)
	return k == binaryData
}

// What a run decodes to.
const (
	notEncoded = iota // it does not decode
	binaryData
	textData
)

// decode decodes a base64 (either alphabet, padded or not) or hex run and
// says what it holds. The bytes are r's, valid until its next decode. A
// run of hex digits is read as hex only: base64 of text is never that.
func decode[T string | []byte](r *Reader, run T) ([]byte, int) {
	for len(run) > 0 && run[len(run)-1] == '=' {
		run = run[:len(run)-1]
	}
	h := run
	if len(h) > 2 && h[0] == '0' && h[1]|0x20 == 'x' {
		h = h[2:] // 0x6f6c...
	}
	var std, url bool // the run holds characters of the standard, the URL alphabet only
	hexOnly := true
	for i := 0; i < len(run); i++ {
		switch c := run[i]; {
		case c == '+' || c == '/':
			std = true
		case c == '-' || c == '_':
			url = true
		case class[c]&cHex == 0 && (i > 1 || len(h) == len(run)):
			hexOnly = false
		}
	}
	if hexOnly && !std && !url {
		if len(h)%2 != 0 {
			return nil, notEncoded
		}
		load(r, h)
		return r.decodeWith(hex.Decode, len(h)/2)
	}
	enc := base64.RawStdEncoding
	switch {
	case std && url:
		return nil, notEncoded
	case url:
		enc = base64.RawURLEncoding
	}
	if len(run)%4 == 1 {
		run = run[:len(run)-1] // a character glued to the end
	}
	load(r, run)
	return r.decodeWith(enc.Decode, enc.DecodedLen(len(run)))
}

// load puts a run in r.src.
func load[T string | []byte](r *Reader, run T) {
	if r.src == nil {
		r.src, r.dst = r.srcBuf[:0], r.dstBuf[:0]
	}
	r.src = append(r.src[:0], run...)
}

// decodeWith decodes r.src with dec, a chunk at a time, and stops as soon
// as what it decoded is no text: more than a tenth of it control
// characters or bytes that are not UTF-8 (an image's base64 stops within
// its first fifth).
func (r *Reader) decodeWith(dec func(dst, src []byte) (int, error), n int) ([]byte, int) {
	const chunk = 4096 // whole base64 quanta and hex pairs
	r.dst = slices.Grow(r.dst[:0], n)[:n]
	budget := n / 10
	var tc textCheck
	w := 0
	for i := 0; i < len(r.src); i += chunk {
		j := min(i+chunk, len(r.src))
		m, err := dec(r.dst[w:], r.src[i:j])
		if err != nil {
			return nil, notEncoded
		}
		w += m
		if tc.bad(r.dst[:w], j == len(r.src)) > budget {
			return nil, binaryData
		}
	}
	if w == 0 {
		return nil, notEncoded
	}
	return r.dst[:w], textData
}

// textCheck counts the bytes of a growing buffer that are no text.
type textCheck struct{ done, n int }

// bad returns the count of control characters and bytes that are not
// UTF-8 in d; an incomplete character at its end waits for the next call
// unless final.
func (tc *textCheck) bad(d []byte, final bool) int {
	for tc.done < len(d) {
		c := d[tc.done]
		if c < utf8.RuneSelf {
			if control(rune(c)) {
				tc.n++
			}
			tc.done++
			continue
		}
		if !final && !utf8.FullRune(d[tc.done:]) {
			break
		}
		ch, size := utf8.DecodeRune(d[tc.done:])
		if ch == utf8.RuneError && size == 1 || ch < 0xa0 {
			tc.n++
		}
		tc.done += size
	}
	return tc.n
}

// spacing finds spaced-out text, fed a word at a time: minSpaced or more
// one-character words in a row, no gap wider than maxGap.
type spacing struct {
	n     int // one-character words in the current chain
	first int // where the chain's first word began
	last  int // where the chain's last word ended
}

// word feeds the word [lo, hi) that gap white spaces precede; when it ends
// a chain of spaced-out words, it returns the chain's bytes [clo, chi).
func (sp *spacing) word(lo, hi, gap int, one bool) (clo, chi int) {
	if one && sp.n > 0 && gap <= maxGap {
		sp.n++
		sp.last = hi
		return 0, 0
	}
	clo, chi = sp.flush()
	if one {
		sp.n, sp.first, sp.last = 1, lo, hi
	}
	return clo, chi
}

// flush ends the current chain and returns it if it is long enough.
func (sp *spacing) flush() (lo, hi int) {
	n := sp.n
	sp.n = 0
	if n >= minSpaced {
		return sp.first, sp.last
	}
	return 0, 0
}

// closeUp returns t.S[lo:hi], a spaced-out run, without its white space,
// after the spacedContext bytes before it.
func closeUp(t Text, lo, hi int) Text {
	s := t.S
	from := max(0, lo-spacedContext)
	for from > 0 && class[s[from]]&cCont != 0 {
		from--
	}
	w := &builder{src: &t}
	w.keep(from, lo)
	for i := lo; i < hi; {
		j := i
		for j < hi && class[s[j]]&cSpace == 0 {
			j++
		}
		w.keep(i, j)
		for j < hi && class[s[j]]&cSpace != 0 {
			j++
		}
		i = j
	}
	return Text{S: string(w.b), segs: w.segs}
}
