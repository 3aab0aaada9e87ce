// Package normalize undoes what hides a text from the content filters. It
// reads a string the way the model or person it is meant for would: escapes
// decoded, compatibility forms and look-alike letters folded to the ASCII
// they pass for, invisible characters dropped, base64 and hex decoded,
// spaced-out letters closed up. Each reading is a Text that maps its bytes
// back to the bytes of the string that produced them, so a filter that
// finds something in a reading redacts all that wrote it: the whole encoded
// run, every escape, the invisible characters inside.
//
// It exists because the detectors (internal/guardrails/detect) match plain
// text, and an agent, or a tool result written by an attacker, can carry a
// credential past them by writing it some other way that the reader undoes.
//
// Readings, in order (Views):
//   - the string itself when it holds nothing to undo (the fast path: no
//     allocation);
//   - else the string with \uXXXX, \u{...}, \UXXXXXXXX, \xHH, %XX, %uXXXX and
//     HTML character references decoded (twice, for an escape escaped once
//     more), then NFKC, marks (Mn, Me), format (Cf), default-ignorable and
//     control characters dropped, letters with diacritics reduced to their
//     ASCII base, and Unicode TR39 confusables folded to the ASCII they pass
//     for (table.go);
//   - the text of each run of 16 or more base64 (standard or URL alphabet,
//     padded or not; a run that does not decode, each of its parts between
//     slashes) or hex (0x or not) characters of that reading that decodes
//     to text (no more than a tenth of it control characters or not UTF-8),
//     read the same way, and what that text encodes once more (base64 of
//     base64);
//   - each run of eight or more one-character words with at most three
//     white spaces between two (s k - l i v e), closed up, with the 32
//     bytes before it.
package normalize

import "sort"

// Text is one reading of a string: S, and where each of its bytes came
// from in the string.
type Text struct {
	S    string
	segs []seg // nil: S is the string itself
}

// seg says where S[at:next seg's at] came from.
type seg struct {
	at       int
	from, to int  // the string's bytes [from, to) wrote it
	same     bool // byte for byte: S[at+k] is the string's byte from+k
}

// Verbatim reports whether t is the string itself, unchanged.
func (t *Text) Verbatim() bool { return t.segs == nil }

// Span returns the bytes [from, to) of the string that produced
// t.S[start:end] (start < end): what a filter must replace to remove what
// it found there. A byte decoded from an escape or an encoded run maps to
// all of it; the characters dropped between two bytes of the reading are
// inside the span of what covers both.
func (t *Text) Span(start, end int) (from, to int) {
	if t.segs == nil {
		return start, end
	}
	s := t.segs[t.seg(start)]
	from = s.from
	if s.same {
		from += start - s.at
	}
	s = t.segs[t.seg(end-1)]
	to = s.to
	if s.same {
		to = s.from + end - s.at
	}
	return from, to
}

// seg returns the index of the seg that holds S[i].
func (t *Text) seg(i int) int {
	return sort.Search(len(t.segs), func(k int) bool { return t.segs[k].at > i }) - 1
}

// builder writes a reading of src, mapping it back through src to the
// string.
type builder struct {
	src  *Text
	b    []byte
	segs []seg
}

// keep copies src.S[lo:hi] unchanged.
func (w *builder) keep(lo, hi int) {
	if lo >= hi {
		return
	}
	at := len(w.b)
	w.b = append(w.b, w.src.S[lo:hi]...)
	if w.src.segs == nil {
		w.add(seg{at: at, from: lo, to: hi, same: true})
		return
	}
	segs := w.src.segs
	for k := w.src.seg(lo); k < len(segs) && segs[k].at < hi; k++ {
		s := segs[k]
		start, end := max(s.at, lo), hi
		if k+1 < len(segs) {
			end = min(end, segs[k+1].at)
		}
		n := seg{at: at + start - lo, from: s.from, to: s.to, same: s.same}
		if s.same {
			n.from += start - s.at
			n.to = n.from + end - start
		}
		w.add(n)
	}
}

// put writes out for src.S[lo:hi]; an empty out drops it.
func (w *builder) put(out []byte, lo, hi int) {
	if len(out) == 0 {
		return
	}
	from, to := w.src.Span(lo, hi)
	w.add(seg{at: len(w.b), from: from, to: to})
	w.b = append(w.b, out...)
}

func (w *builder) add(s seg) {
	if n := len(w.segs); n > 0 {
		p := &w.segs[n-1]
		if p.same && s.same && p.to == s.from && p.at+p.to-p.from == s.at {
			p.to = s.to
			return
		}
	}
	w.segs = append(w.segs, s)
}

// text returns what was written, keeping src.S[last:] unchanged.
func (w *builder) text(last int) Text {
	w.keep(last, len(w.src.S))
	if w.segs == nil {
		w.segs = []seg{} // all dropped: no longer the string itself
	}
	return Text{S: string(w.b), segs: w.segs}
}

// A Reader reads strings (Views) with buffers it reuses: one Reader per
// goroutine, so a document's many strings cost no allocation where there
// is nothing to undo.
type Reader struct {
	src, dst []byte // an encoded run and what it decodes to
	nf, out  []byte // a segment in NFKC and folded

	srcBuf, dstBuf [64]byte // a hash's hex fits
}

// Views appends the readings of s to out (see the package comment): the
// first is s itself, Verbatim. s as it is is read too when it has
// something to undo: a rule written for the encoded form (a URL's
// percent-encoded password, whose decoded '?' or '@' ends the rule's
// match) finds there what it cannot find decoded.
func (r *Reader) Views(s string, out []Text) []Text {
	n := len(out)
	out = r.views(Text{S: s}, 0, out)
	if !out[n].Verbatim() {
		out = append(out, Text{S: s})
	}
	return out
}

// maxDepth is how deep encoded runs are decoded: base64 of base64 is read,
// a third layer is not.
const maxDepth = 2

func (r *Reader) views(t Text, depth int, out []Text) []Text {
	t = unescape(t)
	if needsFold(t.S) {
		t = r.fold(t)
	}
	out = append(out, t)
	return r.encoded(t, depth, out)
}
