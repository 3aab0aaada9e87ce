package clientconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// The JSON files are edited as text: the hub's entry is spliced in where
// it belongs and every other byte of the file (order, indentation,
// comments, trailing commas of JSONC) stays as the user left it.

// member is one "key": value of an object, by byte offsets.
type member struct {
	key                string
	keyStart, valStart int
	valEnd             int
}

// jsonText is a JSON or JSONC document being read.
type jsonText struct {
	b []byte
}

// posError names where in the file reading stopped.
func (t jsonText) posError(i int, format string, args ...any) error {
	line := 1 + bytes.Count(t.b[:min(i, len(t.b))], []byte("\n"))
	col := i - bytes.LastIndexByte(t.b[:min(i, len(t.b))], '\n')
	return fmt.Errorf("line %d, column %d: %s", line, col, fmt.Sprintf(format, args...))
}

// skip returns the offset of the next byte that is neither blank nor in a
// comment.
func (t jsonText) skip(i int) (int, error) {
	b := t.b
	for i < len(b) {
		switch {
		case b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r':
			i++
		case b[i] == '/' && i+1 < len(b) && b[i+1] == '/':
			for i < len(b) && b[i] != '\n' {
				i++
			}
		case b[i] == '/' && i+1 < len(b) && b[i+1] == '*':
			j := bytes.Index(b[i+2:], []byte("*/"))
			if j < 0 {
				return 0, t.posError(i, "comment not closed")
			}
			i += j + 4
		default:
			return i, nil
		}
	}
	return i, nil
}

// value reads the value starting at i (no blank before it) and returns
// where it ends.
func (t jsonText) value(i int) (int, error) {
	if i >= len(t.b) {
		return 0, t.posError(i, "a value is missing")
	}
	switch t.b[i] {
	case '{':
		_, end, err := t.object(i)
		return end, err
	case '[':
		_, end, err := t.array(i)
		return end, err
	case '"':
		_, end, err := t.str(i)
		return end, err
	}
	j := i
	for j < len(t.b) && strings.IndexByte("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+-.", t.b[j]) >= 0 {
		j++
	}
	if j == i || !json.Valid(t.b[i:j]) {
		return 0, t.posError(i, "not a JSON value")
	}
	return j, nil
}

// str reads the string starting at i.
func (t jsonText) str(i int) (string, int, error) {
	j := i + 1
	for j < len(t.b) && t.b[j] != '"' {
		if t.b[j] == '\\' {
			j++
		}
		if j < len(t.b) && t.b[j] == '\n' {
			break
		}
		j++
	}
	if j >= len(t.b) || t.b[j] != '"' {
		return "", 0, t.posError(i, "string not closed")
	}
	var s string
	if err := json.Unmarshal(t.b[i:j+1], &s); err != nil {
		return "", 0, t.posError(i, "bad string: %v", err)
	}
	return s, j + 1, nil
}

// object reads the object whose '{' is at i.
func (t jsonText) object(i int) ([]member, int, error) {
	var ms []member
	i++
	for {
		j, err := t.skip(i)
		if err != nil {
			return nil, 0, err
		}
		if j < len(t.b) && t.b[j] == '}' {
			return ms, j + 1, nil
		}
		if j >= len(t.b) || t.b[j] != '"' {
			return nil, 0, t.posError(j, "expected a key or '}'")
		}
		m := member{keyStart: j}
		if m.key, j, err = t.str(j); err != nil {
			return nil, 0, err
		}
		if j, err = t.skip(j); err != nil {
			return nil, 0, err
		}
		if j >= len(t.b) || t.b[j] != ':' {
			return nil, 0, t.posError(j, "expected ':' after %q", m.key)
		}
		if m.valStart, err = t.skip(j + 1); err != nil {
			return nil, 0, err
		}
		if m.valEnd, err = t.value(m.valStart); err != nil {
			return nil, 0, err
		}
		ms = append(ms, m)
		if j, err = t.skip(m.valEnd); err != nil {
			return nil, 0, err
		}
		switch {
		case j < len(t.b) && t.b[j] == ',':
			i = j + 1
		case j < len(t.b) && t.b[j] == '}':
			return ms, j + 1, nil
		default:
			return nil, 0, t.posError(j, "expected ',' or '}' after the value of %q", m.key)
		}
	}
}

// array reads the array whose '[' is at i: the span of each element.
func (t jsonText) array(i int) ([][2]int, int, error) {
	var es [][2]int
	i++
	for {
		j, err := t.skip(i)
		if err != nil {
			return nil, 0, err
		}
		if j < len(t.b) && t.b[j] == ']' {
			return es, j + 1, nil
		}
		end, err := t.value(j)
		if err != nil {
			return nil, 0, err
		}
		es = append(es, [2]int{j, end})
		if j, err = t.skip(end); err != nil {
			return nil, 0, err
		}
		switch {
		case j < len(t.b) && t.b[j] == ',':
			i = j + 1
		case j < len(t.b) && t.b[j] == ']':
			return es, j + 1, nil
		default:
			return nil, 0, t.posError(j, "expected ',' or ']'")
		}
	}
}

// root reads the whole document: one object and nothing after it. An
// empty document is read as {}.
func (t *jsonText) root() (int, error) {
	i, err := t.skip(0)
	if err != nil {
		return 0, err
	}
	if i == len(t.b) {
		t.b = append(t.b[:len(t.b):len(t.b)], "{}\n"...)
		return len(t.b) - 3, nil
	}
	if t.b[i] != '{' {
		return 0, t.posError(i, "the file is not a JSON object")
	}
	end, err := t.value(i)
	if err != nil {
		return 0, err
	}
	if rest, err := t.skip(end); err != nil {
		return 0, err
	} else if rest != len(t.b) {
		return 0, t.posError(rest, "text after the top-level object")
	}
	return i, nil
}

// indentAt is the blank text between the start of the line and i, when
// only blanks precede i on its line.
func (t jsonText) indentAt(i int) (string, bool) {
	start := bytes.LastIndexByte(t.b[:i], '\n') + 1
	pre := t.b[start:i]
	if len(bytes.Trim(pre, " \t")) != 0 {
		return "", false
	}
	return string(pre), true
}

// unit is the file's own indentation step: its first indented line's
// blanks, two spaces when nothing is indented.
func (t jsonText) unit() string {
	for _, line := range bytes.Split(t.b, []byte("\n")) {
		trimmed := bytes.TrimLeft(line, " \t")
		if n := len(line) - len(trimmed); n > 0 && len(trimmed) > 0 {
			return string(line[:n])
		}
	}
	return "  "
}

// encode writes v indented to sit at indent, with < > & as they are.
func encode(v any, indent, unit string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err) // only the package's own values are encoded
	}
	var out bytes.Buffer
	_ = json.Indent(&out, bytes.TrimSpace(buf.Bytes()), indent, unit)
	return out.Bytes()
}

// splice puts text in place of b[at:end], with b's line endings.
func splice(b []byte, at, end int, text []byte) []byte {
	if bytes.Contains(b, []byte("\r\n")) {
		text = bytes.ReplaceAll(text, []byte("\n"), []byte("\r\n"))
	}
	out := make([]byte, 0, len(b)+len(text))
	out = append(out, b[:at]...)
	out = append(out, text...)
	return append(out, b[end:]...)
}

// setMember sets the member at path (objects created as needed) to v and
// returns the new document.
func setMember(doc []byte, path []string, v any) ([]byte, error) {
	t := jsonText{b: doc}
	at, err := t.root()
	if err != nil {
		return nil, err
	}
	parentIndent := ""
	for depth := 0; ; depth++ {
		ms, _, err := t.object(at)
		if err != nil {
			return nil, err
		}
		var found *member
		for k := range ms {
			if ms[k].key == path[depth] {
				found = &ms[k] // the last one wins, as in every decoder
			}
		}
		indent := parentIndent + t.unit()
		if len(ms) > 0 {
			if in, ok := t.indentAt(ms[0].keyStart); ok {
				indent = in
			}
		}
		if found == nil {
			var val any = v
			for k := len(path) - 1; k > depth; k-- {
				val = obj{{path[k], val}}
			}
			text := append(encode(path[depth], "", ""), ": "...)
			text = append(text, encode(val, indent, t.unit())...)
			if len(ms) == 0 {
				// Into an empty object: after its '{', on lines of its own.
				text = append(append([]byte("\n"+indent), text...), "\n"+parentIndent...)
				return splice(t.b, at+1, at+1, text), nil
			}
			last := ms[len(ms)-1].valEnd
			return splice(t.b, last, last, append([]byte(",\n"+indent), text...)), nil
		}
		if depth == len(path)-1 {
			return splice(t.b, found.valStart, found.valEnd, encode(v, indent, t.unit())), nil
		}
		if t.b[found.valStart] != '{' {
			return nil, t.posError(found.valStart, "%q is not an object", strings.Join(path[:depth+1], "."))
		}
		at, parentIndent = found.valStart, indent
	}
}

// upsertElem puts v into the top-level array key: in place of the element
// whose "id" is id, or at its end. The array is created if missing.
func upsertElem(doc []byte, key, id string, v any) ([]byte, error) {
	t := jsonText{b: doc}
	at, err := t.root()
	if err != nil {
		return nil, err
	}
	ms, _, err := t.object(at)
	if err != nil {
		return nil, err
	}
	var found *member
	for k := range ms {
		if ms[k].key == key {
			found = &ms[k]
		}
	}
	if found == nil {
		return setMember(t.b, []string{key}, []any{v})
	}
	if t.b[found.valStart] != '[' {
		return nil, t.posError(found.valStart, "%q is not an array", key)
	}
	es, _, err := t.array(found.valStart)
	if err != nil {
		return nil, err
	}
	outer, _ := t.indentAt(found.keyStart)
	indent := outer + t.unit()
	if len(es) > 0 {
		if in, ok := t.indentAt(es[0][0]); ok {
			indent = in
		}
	}
	for _, e := range es {
		if t.b[e[0]] != '{' {
			continue
		}
		fields, _, err := t.object(e[0])
		if err != nil {
			return nil, err
		}
		for _, f := range fields {
			if f.key == "id" && t.b[f.valStart] == '"' {
				if s, _, _ := t.str(f.valStart); s == id {
					return splice(t.b, e[0], e[1], encode(v, indent, t.unit())), nil
				}
			}
		}
	}
	text := encode(v, indent, t.unit())
	if len(es) == 0 {
		text = append(append([]byte("\n"+indent), text...), "\n"+outer...)
		return splice(t.b, found.valStart+1, found.valStart+1, text), nil
	}
	last := es[len(es)-1][1]
	return splice(t.b, last, last, append([]byte(",\n"+indent), text...)), nil
}

// plain is doc as strict JSON: comments blanked, trailing commas dropped.
func plain(doc []byte) []byte {
	t := jsonText{b: doc}
	out := make([]byte, 0, len(doc))
	for i := 0; i < len(doc); {
		switch c := doc[i]; {
		case c == '"':
			j := i + 1
			for j < len(doc) && doc[j] != '"' {
				if doc[j] == '\\' {
					j++
				}
				j++
			}
			j = min(j+1, len(doc))
			out = append(out, doc[i:j]...)
			i = j
		case c == '/' && i+1 < len(doc) && (doc[i+1] == '/' || doc[i+1] == '*'):
			j, err := t.skip(i)
			if err != nil {
				return append(out, doc[i:]...)
			}
			out = append(out, ' ')
			i = j
		case c == ',':
			j, err := t.skip(i + 1)
			if err == nil && j < len(doc) && (doc[j] == '}' || doc[j] == ']') {
				i++
				continue
			}
			out = append(out, c)
			i++
		default:
			out = append(out, c)
			i++
		}
	}
	return out
}

// obj is a JSON object whose keys keep the order they are written in.
type obj []field

type field struct {
	k string
	v any
}

func (o obj) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(encode(f.k, "", ""))
		b.WriteByte(':')
		b.Write(encode(f.v, "", ""))
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
