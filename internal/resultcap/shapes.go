package resultcap

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
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
	if shape == Tool {
		return Apply(raw, limit, hint)
	}
	if limit <= 0 || len(raw) <= limit {
		return raw, nil, nil
	}
	member := "contents"
	if shape == Prompt {
		member = "messages"
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, nil, fmt.Errorf("read the result to cut it: %w", err)
	}
	var items []map[string]json.RawMessage
	if m, ok := top[member]; ok {
		if err := json.Unmarshal(m, &items); err != nil {
			return nil, nil, fmt.Errorf("read the result's %s to cut it: %w", member, err)
		}
	}
	texts := make([]textPart, len(items))
	total := 0
	for i, it := range items {
		tp, err := readItem(shape, it)
		if err != nil {
			return nil, nil, fmt.Errorf("read %s[%d] to cut it: %w", member, i, err)
		}
		texts[i] = tp
		total += tp.chars
	}
	if total <= limit {
		return raw, nil, nil
	}
	rep := Report{TextTotal: total}
	keep, kept := plan(texts, limit, func(kept int) string { return notice(rep.with(kept), limit, hint) })
	rep.TextKept = kept
	out := make([]json.RawMessage, 0, len(items)+1)
	uri := json.RawMessage(`""`)
	for i, it := range items {
		if keep[i] == 0 {
			continue
		}
		if keep[i] > 0 {
			it = texts[i].itemWithText(shape, it, prefix(texts[i].text, keep[i]))
		}
		if u, ok := it["uri"]; ok {
			uri = u
		}
		b, err := json.Marshal(it)
		if err != nil {
			return nil, nil, fmt.Errorf("encode the cut result: %w", err)
		}
		out = append(out, b)
	}
	text, _ := json.Marshal(notice(rep, limit, hint))
	var note json.RawMessage
	if shape == Prompt {
		note = json.RawMessage(`{"role":"user","content":{"type":"text","text":` + string(text) + `}}`)
	} else {
		note = json.RawMessage(`{"uri":` + string(uri) + `,"mimeType":"text/plain","text":` + string(text) + `}`)
	}
	top[member], _ = json.Marshal(append(out, note))
	b, err := json.Marshal(top)
	if err != nil {
		return nil, nil, fmt.Errorf("encode the cut result: %w", err)
	}
	return b, &rep, nil
}

// readItem reads the text of one item of a result of shape: a resource's
// contents item holds it itself, a prompt's message in its content part.
func readItem(shape Shape, it map[string]json.RawMessage) (textPart, error) {
	if shape == Prompt {
		c, ok := it["content"]
		if !ok {
			return textPart{}, nil
		}
		tp, err := readPart(c)
		if err != nil {
			return textPart{}, fmt.Errorf("content: %w", err)
		}
		return tp, nil
	}
	raw, ok := it["text"]
	if !ok {
		return textPart{}, nil // a blob
	}
	var text string
	if err := json.Unmarshal(raw, &text); err != nil {
		return textPart{}, fmt.Errorf("text: %w", err)
	}
	return textPart{kind: "text", chars: utf8.RuneCountInString(text), text: text, obj: it}, nil
}

// itemWithText is the item it of a result of shape with its text replaced.
func (tp textPart) itemWithText(shape Shape, it map[string]json.RawMessage, text string) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(it))
	for k, v := range it {
		out[k] = v
	}
	if shape == Prompt {
		out["content"] = tp.withText(text)
		return out
	}
	out["text"], _ = json.Marshal(text)
	return out
}
