package resultcap

import "github.com/go-json-experiment/json/jsontext"

// write returns the result res, read from c.raw, cut: the items as keep
// says (see plan), then note, an encoded item that says what was cut.
// When dropSC, the structured content is left out and the result marked
// an error result. The rest is the bytes that came, spliced: members and
// items kept whole are copied as they are, with the spaces and commas
// between them, so members keep their order and nothing unknown to the
// cut is lost. Of members of one name, encoding/json kept the last: the
// earlier ones of the names the cut changes are left out.
func (c *cutter) write(res *doc, keep []int, note []byte, dropSC bool) []byte {
	out := make([]byte, 0, len(c.raw)+len(note)+64)
	out = append(out, c.raw[:res.top.start]...)
	lastItems, lastIsError := lastOf(res.roles, roleItems), lastOf(res.roles, roleIsError)
	var extra [][]byte
	if !res.hasItems {
		extra = append(extra, append(append([]byte(`"`+res.member+`":[`), note...), ']'))
	}
	if dropSC && lastIsError < 0 {
		extra = append(extra, []byte(`"isError":true`))
	}
	out = c.rebuild(out, res.top, func(out []byte, i int) ([]byte, bool) {
		m, v := res.top.items[i], res.values[i]
		switch res.roles[i] {
		case roleItems:
			if i != lastItems {
				return out, false
			}
			out = append(out, c.raw[m.start:v.start]...)
			return c.writeItems(out, res, keep, note), true
		case roleStructured:
			if dropSC {
				return out, false
			}
		case roleIsError:
			if dropSC {
				if i != lastIsError {
					return out, false
				}
				return append(append(out, c.raw[m.start:v.start]...), "true"...), true
			}
		}
		return append(out, c.raw[m.start:m.end]...), true
	}, extra...)
	return append(out, c.raw[res.top.end:]...)
}

// lastOf is the index of the last member of role r, -1 if none.
func lastOf(roles []role, r role) int {
	for i := len(roles) - 1; i >= 0; i-- {
		if roles[i] == r {
			return i
		}
	}
	return -1
}

// writeItems appends the array of items, cut as keep says, with note at
// its end; items that were null are an array of note alone.
func (c *cutter) writeItems(out []byte, res *doc, keep []int, note []byte) []byte {
	if !res.itemsList {
		return append(append(append(out, '['), note...), ']')
	}
	return c.rebuild(out, res.items, func(out []byte, i int) ([]byte, bool) {
		tp := res.parts[i]
		switch n := keep[i]; {
		case n < 0:
			return append(out, c.raw[tp.part.start:tp.part.end]...), true
		case n == 0:
			return out, false
		}
		return c.cutPart(out, tp, keep[i]), true
	}, note)
}

// cutPart appends the part tp with its text cut to its first n characters:
// the part as it came, but for its text and the earlier duplicates of the
// members on the way to the text.
func (c *cutter) cutPart(out []byte, tp textPart, n int) []byte {
	from := tp.part.start
	for _, d := range tp.drops {
		out = append(out, c.raw[from:d.start]...)
		from = d.end
	}
	out = append(out, c.raw[from:tp.text.start]...)
	out = appendString(out, prefix(c.text(tp.text), n))
	return append(out, c.raw[tp.text.end:tp.part.end]...)
}

// rebuild appends the object or array l to out, each item i as write
// appends it, or left out when write says so, and then extra, encoded
// items to add. An item written follows the comma and spaces that came
// before it, or, first, the spaces after the opening bracket: so an item
// left out takes its comma with it, and the list stays valid JSON.
func (c *cutter) rebuild(out []byte, l list, write func(out []byte, i int) ([]byte, bool), extra ...[]byte) []byte {
	out = append(out, c.raw[l.start])
	wrote := false
	for i, it := range l.items {
		mark := len(out)
		if wrote {
			out = append(out, c.raw[l.items[i-1].end:it.start]...)
		} else {
			out = append(out, c.raw[l.start+1:l.items[0].start]...)
		}
		var ok bool
		if out, ok = write(out, i); !ok {
			out = out[:mark]
			continue
		}
		wrote = true
	}
	for _, e := range extra {
		if wrote {
			out = append(out, ',')
		}
		out, wrote = append(out, e...), true
	}
	rest := l.start + 1
	if n := len(l.items); n > 0 {
		rest = l.items[n-1].end
	}
	return append(out, c.raw[rest:l.end]...)
}

// appendString appends s as a JSON string. AppendQuote's one complaint is
// invalid UTF-8, which it has written as U+FFFD, one per invalid byte, as
// encoding/json did: the string is still written whole.
func appendString[T ~string | ~[]byte](out []byte, s T) []byte {
	out, _ = jsontext.AppendQuote(out, s)
	return out
}
