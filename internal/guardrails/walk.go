package guardrails

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/go-json-experiment/json/jsontext"
)

// binaryMembers hold base64 (an image's or audio's data, a blob
// resource's blob): base64 of binary data is no text a model reads, so the
// filters skip it, but only when it is (binary says so): base64 of text
// in them is read like any other string.
var binaryMembers = [...]string{"data", "blob"}

// textMember is the member that holds the text of an MCP content part.
const textMember = "text"

// rewriteStrings calls edit with the strings of the JSON document raw,
// unescaped, in groups that read as one text, and returns raw with each
// string edit changed put in its place, still valid JSON, or raw itself
// when nothing changed. Only the changed strings are encoded again: the
// rest of the document is copied as it came. edit returns nil when it
// changes nothing, else a replacement for each string of the group.
//
// A group is one string (an object name, a value), or the text parts of
// one array in order: its string elements and the "text" members of its
// object elements. A reader joins those (an MCP result's content parts, a
// list of strings in arguments), so a credential split over two of them
// must be read joined. A "data" or "blob" member whose value binary calls
// base64 of binary data is not offered.
//
// Object names are offered too, each alone: a credential used as a key is
// still a credential. A changed name is made unique in its object: when it
// equals another name of the object (the one of another redacted key, or
// one that was there), " (2)", " (3)", ... is appended, so no object
// holds one name twice, which strict decoders (this one among them) refuse.
//
// texts, when not nil, lends the buffers strings are unquoted into; they
// go back to it when rewriteStrings returns, so nothing edit was given may
// be kept past it (the result copies what it keeps).
func rewriteStrings(raw []byte, e editor, texts *sync.Pool) ([]byte, error) {
	w := walker{raw: raw, e: e, lender: texts}
	w.names, w.objects = w.nameBuf[:0], w.objectBuf[:0]
	defer w.giveBack()
	if err := w.walk(); err != nil {
		return nil, err
	}
	return w.spliced()
}

// maxLentText is the largest unquoting buffer given back to the pool: one
// 50 MB text would otherwise be held for good.
const maxLentText = 4 << 20

// buffer returns a buffer of at least n bytes to unquote a string into,
// lent by the pool when there is one.
func (w *walker) buffer(n int) []byte {
	if w.lender != nil && n <= maxLentText {
		b := w.lender.Get().(*[]byte)
		if cap(*b) < n {
			*b = make([]byte, 0, max(n, min(2*cap(*b), maxLentText)))
		}
		w.lent = append(w.lent, b)
		return (*b)[:0]
	}
	return make([]byte, 0, n)
}

// giveBack returns the buffers lent for this pass's strings.
func (w *walker) giveBack() {
	for _, b := range w.lent {
		if cap(*b) <= maxLentText {
			w.lender.Put(b)
		}
	}
	w.lent = nil
}

// An editor is what rewriteStrings offers the strings of a document to.
type editor interface {
	// edit returns nil when it changes none of texts, else the cuts
	// made in each (none for a text it leaves as it is).
	edit(texts []string) ([][]cut, error)
	// binary reports whether the value of a "data" or "blob" member is
	// base64 of binary data, not to be offered.
	binary(s string) bool
}

// walker is one pass of rewriteStrings.
type walker struct {
	raw []byte
	e   editor
	// lender lends unquoting buffers (rewriteStrings); lent are those of
	// this pass.
	lender *sync.Pool
	lent   []*[]byte

	splices []splice
	groups  []group  // the open arrays whose text parts are being read, innermost last
	parts   []part   // the text parts of the groups, in order
	texts   []string // of a group, for edit
	names   []string // the last name read at each depth
	objects []object // the object open at each depth
	one     [1]string

	nameBuf   [8]string
	objectBuf [8]object
}

// splice makes cuts in the encoded string raw[start:end], old unquoted.
type splice struct {
	start, end int
	old        string
	cuts       []cut
}

// cut replaces text[from:to] by with. A text's cuts are sorted and do not
// overlap.
type cut struct {
	from, to int
	with     string
}

// applyCuts returns s with cuts made.
func applyCuts(s string, cuts []cut) string {
	var b strings.Builder
	last := 0
	for _, c := range cuts {
		b.WriteString(s[last:c.from])
		b.WriteString(c.with)
		last = c.to
	}
	b.WriteString(s[last:])
	return b.String()
}

// part is one string of a group, and where it is in the document.
type part struct {
	s          string
	start, end int
}

type group struct {
	depth int // the array's
	start int // its first part in walker.parts
}

// object is an object being read: where it begins and, once one of its
// names changed, all of its names (those there and those written).
type object struct {
	start int
	names map[string]bool
}

func (w *walker) walk() error {
	// A bytes.Buffer is read where it is: a bytes.Reader would be copied
	// into the decoder's buffer, a second copy of the document.
	dec := jsontext.NewDecoder(bytes.NewBuffer(w.raw))
	for {
		depth := dec.StackDepth()
		kind, n := dec.StackIndex(depth)
		k := dec.PeekKind()
		switch k {
		case 0: // the end of the input, or an error ReadToken reports
			if _, err := dec.ReadToken(); err != nil && !errors.Is(err, io.EOF) {
				return fmt.Errorf("read the JSON document: %w", err)
			}
			return nil
		case ']':
			if err := w.flush(depth); err != nil {
				return err
			}
		}
		if k != '"' {
			if _, err := dec.ReadToken(); err != nil {
				return fmt.Errorf("read the JSON document: %w", err)
			}
			if k == '{' {
				w.opened(dec.StackDepth(), int(dec.InputOffset())-1)
			}
			continue
		}
		v, err := dec.ReadValue()
		if err != nil {
			return fmt.Errorf("read the JSON document: %w", err)
		}
		end := int(dec.InputOffset())
		p := part{start: end - len(v), end: end}
		if p.s, err = unquote(v, w.buffer); err != nil {
			return err
		}
		if kind == '{' && n%2 == 0 {
			for len(w.names) <= depth {
				w.names = append(w.names, "")
			}
			w.names[depth] = p.s
			if err := w.name(depth, p); err != nil {
				return err
			}
			continue
		}
		switch {
		case kind == '{' && isBinary(w.names[depth]) && w.e.binary(p.s):
		case kind == '[':
			w.add(depth, p)
		case kind == '{' && w.names[depth] == textMember && depth > 1 && parentKind(dec, depth) == '[':
			w.add(depth-1, p)
		default:
			w.one[0] = p.s
			if err := w.edited(w.one[:], []part{p}); err != nil {
				return err
			}
		}
	}
}

func parentKind(dec *jsontext.Decoder, depth int) jsontext.Kind {
	k, _ := dec.StackIndex(depth - 1)
	return k
}

// unquote is the text of v, a JSON string the decoder has read and so
// validated: the runs between escapes are copied whole and each escape
// decoded, as jsontext.AppendUnquote does, but without validating the
// string a second time (on a 100 KB text the two passes cost alike). An
// escape it does not expect leaves the string to jsontext.AppendUnquote.
// buffer gives the bytes a string with escapes is unquoted into.
func unquote(v jsontext.Value, buffer func(n int) []byte) (string, error) {
	s := v[1 : len(v)-1]
	i := bytes.IndexByte(s, '\\')
	if i < 0 {
		return string(s), nil
	}
	// A string unquoted is never longer than quoted; u is not written
	// after, so the string can be it rather than a copy of it.
	u := buffer(len(s))
	for ; i >= 0; i = bytes.IndexByte(s, '\\') {
		u = append(u, s[:i]...)
		r, n := escape(s[i:])
		if n == 0 {
			return unquoteStrict(v)
		}
		u = utf8.AppendRune(u, r)
		s = s[i+n:]
	}
	u = append(u, s...)
	return unsafe.String(unsafe.SliceData(u), len(u)), nil
}

// escape decodes the escape that s begins with: what it writes and its
// length, 0 for one unquote leaves to jsontext.
func escape(s []byte) (rune, int) {
	if len(s) < 2 {
		return 0, 0
	}
	switch c := s[1]; c {
	case '"', '\\', '/':
		return rune(c), 2
	case 'b':
		return '\b', 2
	case 'f':
		return '\f', 2
	case 'n':
		return '\n', 2
	case 'r':
		return '\r', 2
	case 't':
		return '\t', 2
	case 'u':
		r, ok := hexRune(s, 2)
		if !ok {
			return 0, 0
		}
		if !utf16.IsSurrogate(r) {
			return r, 6
		}
		if len(s) < 12 || s[6] != '\\' || s[7] != 'u' {
			return 0, 0
		}
		r2, ok := hexRune(s, 8)
		if r = utf16.DecodeRune(r, r2); !ok || r == utf8.RuneError {
			return 0, 0
		}
		return r, 12
	}
	return 0, 0
}

// unquoteStrict is the text of v as jsontext reads it.
func unquoteStrict(v jsontext.Value) (string, error) {
	u, err := jsontext.AppendUnquote(make([]byte, 0, len(v)), v)
	if err != nil {
		return "", fmt.Errorf("read a JSON string: %w", err)
	}
	return unsafe.String(unsafe.SliceData(u), len(u)), nil
}

// add adds a text part to the group of the array at depth.
func (w *walker) add(depth int, p part) {
	if n := len(w.groups); n == 0 || w.groups[n-1].depth != depth {
		w.groups = append(w.groups, group{depth: depth, start: len(w.parts)})
	}
	w.parts = append(w.parts, p)
}

// flush offers the text parts of the array at depth, which ends.
func (w *walker) flush(depth int) error {
	n := len(w.groups)
	if n == 0 || w.groups[n-1].depth != depth {
		return nil
	}
	parts := w.parts[w.groups[n-1].start:]
	w.groups = w.groups[:n-1]
	w.texts = w.texts[:0]
	for _, p := range parts {
		w.texts = append(w.texts, p.s)
	}
	err := w.edited(w.texts, parts)
	w.parts = w.parts[:len(w.parts)-len(parts)]
	return err
}

// edited offers texts, the strings of parts, to edit and keeps what it
// changed.
func (w *walker) edited(texts []string, parts []part) error {
	out, err := w.e.edit(texts)
	if err != nil || out == nil {
		return err
	}
	for i, cuts := range out {
		if len(cuts) > 0 {
			w.splices = append(w.splices, splice{start: parts[i].start, end: parts[i].end, old: texts[i], cuts: cuts})
		}
	}
	return nil
}

// opened notes the object that begins at raw[start], at depth.
func (w *walker) opened(depth, start int) {
	for len(w.objects) <= depth {
		w.objects = append(w.objects, object{})
	}
	w.objects[depth] = object{start: start}
}

// name offers an object name and makes what edit changes it to unique
// among the object's names.
func (w *walker) name(depth int, p part) error {
	w.one[0] = p.s
	out, err := w.e.edit(w.one[:])
	if err != nil || out == nil || len(out[0]) == 0 {
		return err
	}
	edited := applyCuts(p.s, out[0])
	if edited == p.s {
		return nil
	}
	o := &w.objects[depth]
	if o.names == nil {
		if o.names, err = objectNames(w.raw[o.start:]); err != nil {
			return err
		}
	}
	name := edited
	for i := 2; o.names[name]; i++ {
		name = fmt.Sprintf("%s (%d)", edited, i)
	}
	o.names[name] = true
	w.splices = append(w.splices, splice{start: p.start, end: p.end, old: p.s, cuts: []cut{{0, len(p.s), name}}})
	return nil
}

// objectNames returns the names of the object raw begins with.
func objectNames(raw []byte) (map[string]bool, error) {
	dec := jsontext.NewDecoder(bytes.NewBuffer(raw))
	if _, err := dec.ReadToken(); err != nil {
		return nil, fmt.Errorf("read an object's names: %w", err)
	}
	names := map[string]bool{}
	for dec.PeekKind() == '"' {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, fmt.Errorf("read an object's names: %w", err)
		}
		names[tok.String()] = true
		if err := dec.SkipValue(); err != nil {
			return nil, fmt.Errorf("read an object's names: %w", err)
		}
	}
	return names, nil
}

// spliced returns raw with the splices made, or raw itself when there are
// none.
func (w *walker) spliced() ([]byte, error) {
	if len(w.splices) == 0 {
		return w.raw, nil
	}
	sort.Slice(w.splices, func(i, j int) bool { return w.splices[i].start < w.splices[j].start })
	out := make([]byte, 0, len(w.raw)+64)
	last := 0
	for _, s := range w.splices {
		out = append(out, w.raw[last:s.start]...)
		var err error
		if out, err = appendCuts(out, w.raw[s.start:s.end], s.old, s.cuts); err != nil {
			return nil, fmt.Errorf("write a JSON string: %w", err)
		}
		last = s.end
	}
	return append(out, w.raw[last:]...), nil
}

// appendCuts appends the JSON string of old with cuts made, old's string
// having been quoted: the bytes between the cuts are copied from quoted as
// the upstream escaped them, and only what a cut puts in is encoded. A
// redaction in a 100 KB text encodes its marker, and the text is copied
// once, into the document written (it was built redacted, compared with
// the original and then copied).
func appendCuts(out, quoted []byte, old string, cuts []cut) ([]byte, error) {
	start := len(out)
	cur := rawCursor{quoted: quoted, i: 1}
	last := 0 // quoted[:last] is written
	for _, c := range cuts {
		if !cur.seek(c.from) {
			return jsontext.AppendQuote(out[:start], applyCuts(old, cuts))
		}
		out = append(out, quoted[last:cur.i]...) // the opening quote first
		at := len(out)
		var err error
		if out, err = jsontext.AppendQuote(out, c.with); err != nil {
			return nil, err
		}
		out = append(out[:at], out[at+1:len(out)-1]...) // its quotes dropped
		if !cur.seek(c.to) {
			return jsontext.AppendQuote(out[:start], applyCuts(old, cuts))
		}
		last = cur.i
	}
	return append(out, quoted[last:]...), nil
}

// rawCursor reads a JSON string as it came, quoted, to find where bytes of
// its unquoted text begin, moving forward only.
type rawCursor struct {
	quoted []byte
	i, n   int // in quoted, in the text
}

// seek moves the cursor to where byte p of the text begins (p at or after
// where it is); false when p is inside what one escape writes, beyond the
// text, or the escapes are not read the way the decoder read them.
func (c *rawCursor) seek(p int) bool {
	for c.n < p {
		j := bytes.IndexByte(c.quoted[c.i:], '\\')
		if j < 0 || c.n+j >= p {
			if c.i+p-c.n >= len(c.quoted) {
				return false
			}
			c.i, c.n = c.i+p-c.n, p
			return true
		}
		c.i, c.n = c.i+j, c.n+j
		if c.i+1 >= len(c.quoted) {
			return false
		}
		if c.quoted[c.i+1] != 'u' {
			c.i, c.n = c.i+2, c.n+1
			continue
		}
		r, ok := hexRune(c.quoted, c.i+2)
		if !ok {
			return false
		}
		c.i += 6
		if utf16.IsSurrogate(r) {
			r2, ok := hexRune(c.quoted, c.i+2)
			if !ok || c.i+1 >= len(c.quoted) || c.quoted[c.i] != '\\' || c.quoted[c.i+1] != 'u' {
				return false
			}
			if r = utf16.DecodeRune(r, r2); r == utf8.RuneError {
				return false
			}
			c.i += 6
		}
		c.n += utf8.RuneLen(r)
	}
	return c.n == p
}

// hexRune reads the four hex digits of a \u escape at quoted[at:].
func hexRune(quoted []byte, at int) (rune, bool) {
	if at+4 > len(quoted) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(quoted[at:at+4]), 16, 32)
	return rune(v), err == nil
}

func isBinary(name string) bool {
	for _, b := range binaryMembers {
		if name == b {
			return true
		}
	}
	return false
}

// mayJoin reports whether raw may hold a group of two texts or more (see
// rewriteStrings): two strings among the "text" members and the strings
// that are array elements. It looks at the bytes only: true more often
// than needed, never false for a document that has such a group.
func mayJoin(raw []byte) bool {
	n := 0
	for i := 0; i < len(raw); {
		j := bytes.IndexByte(raw[i:], '"')
		if j < 0 {
			return false
		}
		start := i + j
		end := stringEnd(raw, start)
		if end < 0 {
			return true // not JSON: the walk will say so
		}
		k := skipSpace(raw, end+1)
		switch {
		case k == len(raw):
		case raw[k] == ':':
			if string(raw[start+1:end]) == textMember {
				n++
			}
		case raw[k] == ',' || raw[k] == ']':
			// An element, not a member's value (which follows a colon).
			if b := bytes.TrimRight(raw[:start], " \t\n\r"); len(b) > 0 && (b[len(b)-1] == '[' || b[len(b)-1] == ',') {
				n++
			}
		}
		if n >= 2 {
			return true
		}
		i = end + 1
	}
	return false
}

// stringEnd returns the index of the quote that ends the string raw[start]
// begins, -1 if none does.
func stringEnd(raw []byte, start int) int {
	for p := start + 1; ; {
		q := bytes.IndexByte(raw[p:], '"')
		if q < 0 {
			return -1
		}
		e := p + q
		n := 0 // backslashes before it
		for e-1-n > start && raw[e-1-n] == '\\' {
			n++
		}
		if n%2 == 0 {
			return e
		}
		p = e + 1
	}
}

func skipSpace(raw []byte, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
		i++
	}
	return i
}
