package resultcap

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/go-json-experiment/json/jsontext"
)

// cutter reads one result in one pass and writes it cut. It decodes
// nothing it need not: it records where the members, the parts and their
// texts are, so that the cut result can be spliced from the bytes that
// came, and decodes a text only to count its characters and to cut it.
type cutter struct {
	reader
	scratch []byte // the JSON string raw[decoded], unquoted
	decoded span
}

func newCutter(raw []byte) *cutter {
	// A bytes.Buffer is read where it is: a bytes.Reader would be copied
	// into the decoder's buffer, a second copy of the result.
	// encoding/json, which the hub used before, took duplicate names (the
	// last wins) and invalid UTF-8 in strings: so does the cutter, which
	// is no place to refuse a result a backend sent.
	return &cutter{reader: reader{raw: raw, dec: jsontext.NewDecoder(bytes.NewBuffer(raw),
		jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))}}
}

// doc is a result as read: its members, and the items (content parts,
// contents, messages) of the last member that holds them.
type doc struct {
	top    list   // the result object; its items are its members, name to value
	values []span // the value of each member
	roles  []role // of each member

	member    string // the name of the member of the items
	hasItems  bool   // whether an items member was read
	itemsList bool   // whether the last one is an array (not null)
	items     list   // the array of the last one
	parts     []textPart
	itemsErr  error // the first item that cannot be cut, or items not an array
	hasSC     bool  // whether the last structuredContent member is not null
	sc        span  // the value of the last structuredContent member
}

// list is an object or an array as read.
type list struct {
	span         // from its opening bracket to past its closing one
	items []span // its elements; its members, from name to value
}

// role is what a member of a result is to the cut.
type role uint8

const (
	roleOther role = iota
	roleItems
	roleStructured
	roleIsError
)

// readResult reads a whole result: an object whose member named member
// holds an array of items, each read by item. A JSON null is read as a
// result without items. Items that are not as they should be do not stop
// the reading: encoding/json took the last of duplicate members, so only
// the items of the last such member are refused; the first of those is
// doc.itemsErr, returned as the error once the whole result is read, as
// encoding/json found invalid JSON before anything else.
func (c *cutter) readResult(member string, item func(*cutter) (textPart, error)) (doc, error) {
	res := doc{member: member}
	err := c.document(&res, member, item)
	if err != nil {
		return res, fmt.Errorf("read the result to cut it: %w", err)
	}
	return res, res.itemsErr
}

// document reads the result and makes sure nothing follows it.
func (c *cutter) document(res *doc, member string, item func(*cutter) (textPart, error)) error {
	switch k := c.dec.PeekKind(); k {
	case '{':
		var err error
		res.top.span, err = c.object(func(name []byte, at int) error {
			return c.topMember(res, name, at, member, item)
		})
		if err != nil {
			return err
		}
	default:
		k, _, err := c.value()
		if errors.Is(err, io.EOF) {
			return io.ErrUnexpectedEOF // nothing but spaces
		}
		if err != nil {
			return err
		}
		if k != 'n' {
			return fmt.Errorf("%s, not an object", kindName(k))
		}
	}
	switch _, err := c.dec.ReadToken(); {
	case err == nil:
		return errors.New("more JSON after the result")
	case !errors.Is(err, io.EOF):
		return err
	}
	return nil
}

// topMember reads a member of the result.
func (c *cutter) topMember(res *doc, name []byte, at int, member string, item func(*cutter) (textPart, error)) error {
	r := roleOther
	switch string(name) {
	case member:
		r = roleItems
	case "structuredContent":
		r = roleStructured
	case "isError":
		r = roleIsError
	}
	var v span
	var err error
	if r == roleItems {
		v, err = c.itemsOf(res, member, item)
	} else {
		var k jsontext.Kind
		k, v, err = c.value()
		if r == roleStructured {
			res.hasSC, res.sc = k != 'n', v
		}
	}
	if err != nil {
		return err
	}
	res.top.items = append(res.top.items, span{at, v.end})
	res.values = append(res.values, v)
	res.roles = append(res.roles, r)
	return nil
}

// itemsOf reads the value of the member that holds the items, putting
// them in res in place of any read before.
func (c *cutter) itemsOf(res *doc, member string, item func(*cutter) (textPart, error)) (span, error) {
	res.hasItems, res.itemsList, res.itemsErr = true, false, nil
	res.items.items, res.parts = res.items.items[:0], res.parts[:0]
	if k := c.dec.PeekKind(); k != '[' {
		k, v, err := c.value()
		if err == nil && k != 'n' {
			res.itemsErr = fmt.Errorf("read the result's %s to cut it: %s, not an array", member, kindName(k))
		}
		return v, err
	}
	res.itemsList = true
	var err error
	res.items.span, err = c.array(func() error {
		tp, err := item(c)
		if err != nil {
			return err
		}
		if tp.err != nil && res.itemsErr == nil {
			res.itemsErr = fmt.Errorf("read %s[%d] to cut it: %w", member, len(res.parts), tp.err)
		}
		res.parts = append(res.parts, tp)
		res.items.items = append(res.items.items, tp.part)
		return nil
	})
	return res.items.span, err
}

// total is the characters of text of the items.
func (res *doc) total() int {
	n := 0
	for _, tp := range res.parts {
		n += tp.chars
	}
	return n
}

// part reads a content part: an object, or null, a part without text as
// encoding/json read it.
func (c *cutter) part() (textPart, error) {
	if k := c.dec.PeekKind(); k != '{' {
		return c.notObject()
	}
	var typ, text, res, resText last
	s, err := c.object(func(name []byte, at int) error {
		typ.begin(at)
		text.begin(at)
		res.begin(at)
		switch string(name) {
		case "type":
			return c.read(&typ, at)
		case "text":
			return c.read(&text, at)
		case "resource":
			resText = last{}
			return c.resource(&res, &resText, at)
		}
		return c.dec.SkipValue()
	})
	tp := textPart{part: s}
	if err != nil {
		return tp, err
	}
	switch string(c.str(&typ)) {
	case "text":
		tp.kind = "text"
		c.take(&tp, &text, "text")
	case "resource":
		c.embedded(&tp, &res, &resText)
	}
	return tp, nil
}

// embedded makes the text of a resource part tp's: res is its last
// resource member, text the last text member of that.
func (c *cutter) embedded(tp *textPart, res, text *last) {
	switch {
	case !res.found:
		tp.err = errors.New("resource: missing")
	case res.kind == 'n' || res.kind == '{' && !text.found:
		// A blob, or nothing: no text.
	case res.kind != '{':
		tp.err = fmt.Errorf("resource: %s, not an object", kindName(res.kind))
	default:
		tp.kind = "resource"
		tp.drops = append(tp.drops, res.drops...)
		c.take(tp, text, "resource.text")
	}
}

// resource reads the value of a resource member into res, and of its
// text member into text.
func (c *cutter) resource(res, text *last, at int) error {
	if c.dec.PeekKind() != '{' {
		return c.read(res, at)
	}
	res.again(at)
	s, err := c.object(func(name []byte, at int) error {
		text.begin(at)
		if string(name) != "text" {
			return c.dec.SkipValue()
		}
		return c.read(text, at)
	})
	res.kind, res.value = '{', s
	return err
}

// notObject reads an item that is no object: null is an item without
// text, anything else one that cannot be cut.
func (c *cutter) notObject() (textPart, error) {
	k, s, err := c.value()
	tp := textPart{part: s}
	if k != 'n' {
		tp.err = fmt.Errorf("%s, not an object", kindName(k))
	}
	return tp, err
}

// take makes m, the last member named name, the text of tp: a string is
// counted; null is no text (encoding/json decoded it as ""); anything
// else, or no member, cannot be cut.
func (c *cutter) take(tp *textPart, m *last, name string) {
	switch {
	case !m.found:
		tp.err = fmt.Errorf("%s: missing", name)
	case m.kind == 'n':
	case m.kind != '"':
		tp.err = fmt.Errorf("%s: %s, not a string", name, kindName(m.kind))
	default:
		tp.text = m.value
		tp.chars = c.chars(m.value)
		tp.drops = append(tp.drops, m.drops...)
	}
}

// chars is the number of characters of the JSON string raw[s], counted
// in its text as encoding/json decoded it.
func (c *cutter) chars(s span) int {
	v := c.raw[s.start:s.end]
	if bytes.IndexByte(v, '\\') < 0 {
		// Without escapes the text is what is between the quotes; an
		// invalid byte in it counts one, as the U+FFFD it decodes to.
		return runeCount(v[1 : len(v)-1])
	}
	return runeCount(c.text(s))
}

// text is the JSON string raw[s] unquoted. It is good until the next
// call for another string; the last is kept, as the text counted last is
// often the one cut.
func (c *cutter) text(s span) []byte {
	if c.decoded != s || c.scratch == nil {
		c.scratch, c.decoded = unquote(c.scratch[:0], c.raw[s.start:s.end]), s
	}
	return c.scratch
}
