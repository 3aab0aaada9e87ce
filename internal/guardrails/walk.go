package guardrails

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/go-json-experiment/json/jsontext"
)

// binaryMembers hold base64 (an image's or audio's data, a blob
// resource's blob): the filters read text, and base64 is no text a model
// reads.
var binaryMembers = [...]string{"data", "blob"}

// rewriteStrings calls edit with every string value of the JSON document
// raw (unescaped; object names and base64 members are left alone) and
// returns raw with each string edit changed put in its place, still valid
// JSON, or raw itself when nothing changed. Only the changed strings are
// encoded again: the rest of the document is copied as it came.
func rewriteStrings(raw []byte, edit func(s string) (string, bool, error)) ([]byte, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(raw))
	var out []byte
	last := 0          // raw[:last] is in out (when out is not nil)
	var names []string // the last object name read at each depth
	for {
		depth := dec.StackDepth()
		kind, n := dec.StackIndex(depth)
		isName := kind == '{' && n%2 == 0
		k := dec.PeekKind()
		if k == 0 { // the end of the input, or an error ReadToken reports
			if _, err := dec.ReadToken(); err != nil && !errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("read the JSON document: %w", err)
			}
			break
		}
		if k != '"' {
			if _, err := dec.ReadToken(); err != nil {
				return nil, fmt.Errorf("read the JSON document: %w", err)
			}
			continue
		}
		v, err := dec.ReadValue()
		if err != nil {
			return nil, fmt.Errorf("read the JSON document: %w", err)
		}
		if isName {
			for len(names) <= depth {
				names = append(names, "")
			}
			names[depth] = string(v[1 : len(v)-1])
			if bytes.IndexByte(v, '\\') >= 0 {
				names[depth] = "" // an escaped name is never one of binaryMembers
			}
			continue
		}
		if kind == '{' && depth < len(names) && isBinary(names[depth]) {
			continue
		}
		var s string
		if bytes.IndexByte(v, '\\') < 0 {
			s = string(v[1 : len(v)-1])
		} else {
			u, err := jsontext.AppendUnquote(nil, v)
			if err != nil {
				return nil, fmt.Errorf("read a JSON string: %w", err)
			}
			s = string(u)
		}
		changed, ok, err := edit(s)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		end := int(dec.InputOffset())
		start := end - len(v)
		if out == nil {
			out = make([]byte, 0, len(raw)+64)
		}
		out = append(out, raw[last:start]...)
		if out, err = jsontext.AppendQuote(out, changed); err != nil {
			return nil, fmt.Errorf("write a JSON string: %w", err)
		}
		last = end
	}
	if out == nil {
		return raw, nil
	}
	return append(out, raw[last:]...), nil
}

func isBinary(name string) bool {
	for _, b := range binaryMembers {
		if name == b {
			return true
		}
	}
	return false
}
