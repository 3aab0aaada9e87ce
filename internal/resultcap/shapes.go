package resultcap

import (
	"encoding/json"
	"fmt"
)

// Shape is the kind of result a cap applies to: what a model reads of it
// sits in a different place in each.
type Shape int

// The shapes of results the hub caps.
const (
	// Tool is a tools/call result: content parts and structured content.
	Tool Shape = iota
	// Resource is a resources/read result: contents[], each with a uri and
	// a text or a blob.
	Resource
	// Prompt is a prompts/get result: messages[], each with a role and one
	// content part.
	Prompt
)

// ApplyShape is Apply for a result of shape. A resources/read result cut
// ends with one more contents item of the notice, under the URI of the
// last item kept; a prompts/get result with one more user message of the
// notice. Blobs, images and audio are kept, as in Apply.
func ApplyShape(shape Shape, raw json.RawMessage, limit int, hint string) (json.RawMessage, *Report, error) {
	// Every character takes at least one byte of JSON, so a result of at
	// most limit bytes has at most limit characters: the common case costs a
	// length check.
	if limit <= 0 || len(raw) <= limit {
		return raw, nil, nil
	}
	member, item := "content", (*cutter).part
	switch shape {
	case Resource:
		member, item = "contents", (*cutter).contentsItem
	case Prompt:
		member, item = "messages", (*cutter).message
	}
	c := newCutter(raw)
	res, err := c.readResult(member, item)
	if err != nil {
		return nil, nil, err
	}
	total := res.total()
	rep := Report{TextTotal: total, TextKept: total}
	if shape == Tool && res.hasSC {
		if n := runeCount(raw[res.sc.start:res.sc.end]); n > limit {
			rep.StructuredChars = n
		}
	}
	if total <= limit && rep.StructuredChars == 0 {
		return raw, nil, nil
	}
	keep, kept := plan(res.parts, limit, func(kept int) string { return notice(rep.with(kept), limit, hint) })
	rep.TextKept = kept
	note := c.shapeNotice(shape, &res, keep, notice(rep, limit, hint))
	return c.write(&res, keep, note, rep.StructuredChars > 0), &rep, nil
}

// shapeNotice is the item of a result of shape that says text: a text
// part, a user message, or a contents item under the URI of the last item
// kept.
func (c *cutter) shapeNotice(shape Shape, res *doc, keep []int, text string) []byte {
	switch shape {
	case Tool:
		return append(appendString([]byte(`{"type":"text","text":`), text), '}')
	case Prompt:
		note := appendString([]byte(`{"role":"user","content":{"type":"text","text":`), text)
		return append(note, "}}"...)
	}
	uri := []byte(`""`)
	for i, tp := range res.parts {
		if keep[i] != 0 && tp.uri != (span{}) {
			uri = c.raw[tp.uri.start:tp.uri.end]
		}
	}
	note := append(append([]byte(`{"uri":`), uri...), `,"mimeType":"text/plain","text":`...)
	return append(appendString(note, text), '}')
}

// contentsItem reads an item of a resources/read result: an object with
// a uri and a text or a blob, or null, an item without text.
func (c *cutter) contentsItem() (textPart, error) {
	if c.dec.PeekKind() != '{' {
		return c.notObject()
	}
	var text, uri last
	s, err := c.object(func(name []byte, at int) error {
		text.begin(at)
		uri.begin(at)
		switch string(name) {
		case "text":
			return c.read(&text, at)
		case "uri":
			return c.read(&uri, at)
		}
		return c.dec.SkipValue()
	})
	tp := textPart{part: s}
	if err != nil {
		return tp, err
	}
	if uri.found {
		tp.uri = uri.value
	}
	if text.found { // else a blob
		tp.kind = "text"
		c.take(&tp, &text, "text")
	}
	return tp, nil
}

// message reads a message of a prompts/get result: an object whose
// content member is one content part, or null, a message without text.
func (c *cutter) message() (textPart, error) {
	if c.dec.PeekKind() != '{' {
		return c.notObject()
	}
	var content last
	var tp textPart
	s, err := c.object(func(name []byte, at int) error {
		content.begin(at)
		if string(name) != "content" {
			return c.dec.SkipValue()
		}
		content.again(at)
		var err error
		tp, err = c.part()
		return err
	})
	if err != nil || !content.found {
		return textPart{part: s}, err
	}
	if tp.err != nil {
		tp.err = fmt.Errorf("content: %w", tp.err)
	}
	tp.part, tp.drops = s, append(content.drops, tp.drops...)
	return tp, nil
}
