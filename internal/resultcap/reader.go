package resultcap

import (
	"bytes"

	"github.com/go-json-experiment/json/jsontext"
)

// span is raw[start:end] of the JSON document being read.
type span struct{ start, end int }

// reader walks a JSON document where it is, with a decoder over it that
// copies nothing, and says where each thing it reads is, so that what is
// not changed can be copied as it came.
type reader struct {
	raw  []byte
	dec  *jsontext.Decoder
	name []byte // a member name with escapes, unquoted
}

// value reads the next value whole.
func (r *reader) value() (jsontext.Kind, span, error) {
	v, err := r.dec.ReadValue()
	if err != nil {
		return 0, span{}, err
	}
	end := int(r.dec.InputOffset())
	return v.Kind(), span{end - len(v), end}, nil
}

// object reads the object that comes next member by member: member is
// called with each name, unquoted, and where the member begins, and reads
// the value. It returns where the object is.
func (r *reader) object(member func(name []byte, at int) error) (span, error) {
	if _, err := r.dec.ReadToken(); err != nil {
		return span{}, err
	}
	start := int(r.dec.InputOffset()) - 1
	for r.dec.PeekKind() == '"' {
		v, err := r.dec.ReadValue()
		if err != nil {
			return span{}, err
		}
		if err := member(r.unquoteName(v), int(r.dec.InputOffset())-len(v)); err != nil {
			return span{}, err
		}
	}
	// The closing brace, or the error PeekKind met.
	if _, err := r.dec.ReadToken(); err != nil {
		return span{}, err
	}
	return span{start, int(r.dec.InputOffset())}, nil
}

// array reads the array that comes next, elem reading each element.
func (r *reader) array(elem func() error) (span, error) {
	if _, err := r.dec.ReadToken(); err != nil {
		return span{}, err
	}
	start := int(r.dec.InputOffset()) - 1
	for k := r.dec.PeekKind(); k != ']' && k != 0; k = r.dec.PeekKind() {
		if err := elem(); err != nil {
			return span{}, err
		}
	}
	// The closing bracket, or the error PeekKind met.
	if _, err := r.dec.ReadToken(); err != nil {
		return span{}, err
	}
	return span{start, int(r.dec.InputOffset())}, nil
}

// unquoteName is the JSON string v, a member name or a short value,
// unquoted; it is good until the next call.
func (r *reader) unquoteName(v []byte) []byte {
	if bytes.IndexByte(v, '\\') < 0 {
		return v[1 : len(v)-1]
	}
	r.name = unquote(r.name[:0], v)
	return r.name
}

// read reads the value of the member of m's name that begins at at.
func (r *reader) read(m *last, at int) error {
	m.again(at)
	var err error
	m.kind, m.value, err = r.value()
	return err
}

// str is the value of m, unquoted, if it is a string, else empty. It is
// good until the next call of unquoteName.
func (r *reader) str(m *last) []byte {
	if !m.found || m.kind != '"' {
		return nil
	}
	return r.unquoteName(r.raw[m.value.start:m.value.end])
}

// last is the last member of one name read in an object so far.
// encoding/json took the last of duplicate names, and so does the cut;
// the earlier ones are left out of a part that is cut, lest a client that
// takes the first see the text whole.
type last struct {
	found bool
	at    int // where its name begins
	next  int // where the member after it begins; 0: none read yet
	kind  jsontext.Kind
	value span
	drops []span // the earlier members of the name, each with the comma after it
}

// begin notes that a member begins at at, which ends the one before.
func (m *last) begin(at int) {
	if m.found && m.next == 0 {
		m.next = at
	}
}

// again notes a member of m's name at at: the one before is a duplicate.
// A member after it has begun, so raw[m.at:m.next] is it and its comma.
func (m *last) again(at int) {
	if m.found {
		m.drops = append(m.drops, span{m.at, m.next})
	}
	m.found, m.at, m.next = true, at, 0
}

// unquote appends the JSON string v, unquoted, to dst. The decoder has
// read v as a valid string but for invalid UTF-8 and unpaired surrogate
// escapes, which it allows; AppendUnquote decodes the whole of such a
// string, putting U+FFFD for each invalid byte and each unpaired
// surrogate, as encoding/json did, and only then reports them. So its
// error says no more than that the text had such characters, which are
// counted and cut like any other: it is not one to refuse the result for.
func unquote(dst, v []byte) []byte {
	u, _ := jsontext.AppendUnquote(dst, v)
	return u
}

// kindName names a kind of JSON value in an error.
func kindName(k jsontext.Kind) string {
	switch k {
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	case '"':
		return "a string"
	case '0':
		return "a number"
	case '[':
		return "an array"
	case '{':
		return "an object"
	}
	return "not a JSON value"
}
