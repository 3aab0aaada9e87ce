// Package resultcap cuts a tool result to what a model can take. Purko's
// executor keeps the first 100,000 characters of a result and drops the
// rest without a word; a model handed such a stump cannot tell that it was
// cut, nor that it could ask for less. The hub cuts first, on every face
// and for every backend, keeps the start, and says what was cut.
//
// What counts: the characters (Unicode code points, as the executor counts
// them) of the text a model reads: text parts and the text of embedded
// resources. Images, audio and blob resources are not text; they are kept
// and bounded only by the byte limit on upstream answers. Structured
// content is counted on its own, by the characters of its JSON. A JSON
// value cut in the middle is no longer valid, and one cut at a member may
// break the tool's output schema, so structured content over the cap is
// dropped whole; the result then says so and is marked as an error result,
// which clients do not hold to the output schema, so it stays valid MCP.
//
// The package imports nothing of the hub's.
package resultcap

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Report says what Apply cut.
type Report struct {
	// TextTotal is the characters of text the result had; TextKept those
	// kept (the notice not included).
	TextTotal, TextKept int
	// StructuredChars is the size of structured content that was dropped
	// (0: none was).
	StructuredChars int
}

// Apply returns raw, a tools/call result, with at most limit characters of
// text (the notice of the cut included) and structured content of at most
// limit characters. raw is returned as it is when nothing needs cutting,
// with a nil Report; limit <= 0 cuts nothing. hint is the setting that
// decided limit, named in the notice. A result that is not a JSON object
// with content is returned unchanged: there is nothing a model reads in it
// to cut.
func Apply(raw json.RawMessage, limit int, hint string) (json.RawMessage, *Report, error) {
	// Every character takes at least one byte of JSON, so a result of at
	// most limit bytes has at most limit characters: the common case costs a
	// length check.
	if limit <= 0 || len(raw) <= limit {
		return raw, nil, nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, nil, fmt.Errorf("read the result to cut it: %w", err)
	}
	var parts []json.RawMessage
	if c, ok := top["content"]; ok {
		if err := json.Unmarshal(c, &parts); err != nil {
			return nil, nil, fmt.Errorf("read the result's content to cut it: %w", err)
		}
	}
	texts := make([]textPart, len(parts))
	total := 0
	for i, p := range parts {
		tp, err := readPart(p)
		if err != nil {
			return nil, nil, fmt.Errorf("read content[%d] to cut it: %w", i, err)
		}
		texts[i] = tp
		total += tp.chars
	}
	rep := Report{TextTotal: total, TextKept: total}
	sc, hasSC := top["structuredContent"]
	if hasSC && string(sc) != "null" {
		if n := utf8.RuneCount(sc); n > limit {
			rep.StructuredChars = n
		}
	}
	if total <= limit && rep.StructuredChars == 0 {
		return raw, nil, nil
	}
	parts, rep.TextKept = cutParts(parts, texts, limit, func(kept int) string {
		return notice(rep.with(kept), limit, hint)
	})
	top["content"], _ = json.Marshal(parts)
	if rep.StructuredChars > 0 {
		delete(top, "structuredContent")
		top["isError"] = json.RawMessage("true")
	}
	out, err := json.Marshal(top)
	if err != nil {
		return nil, nil, fmt.Errorf("encode the cut result: %w", err)
	}
	return out, &rep, nil
}

func (r Report) with(kept int) Report {
	r.TextKept = kept
	return r
}

// notice is the text part that ends a cut result. It never starts with
// "ERROR:", which Purko's executor would take for a failure of the tool.
func notice(r Report, limit int, hint string) string {
	s := "[mcp-hub: "
	if r.TextKept < r.TextTotal {
		s += fmt.Sprintf("result cut to its first %d of %d characters (%d cut)", r.TextKept, r.TextTotal, r.TextTotal-r.TextKept)
	}
	if r.StructuredChars > 0 {
		if r.TextKept < r.TextTotal {
			s += "; "
		}
		s += fmt.Sprintf("structured content of %d characters dropped", r.StructuredChars)
	}
	return s + fmt.Sprintf(", over the limit of %d (%s). Ask for less: a narrower query, a smaller range or page, fewer fields.]", limit, hint)
}

// textPart is what a content part holds of text.
type textPart struct {
	kind  string // "text", "resource" (embedded, with text), "" other
	chars int
	text  string
	// obj is the decoded part, resource the decoded embedded resource, for
	// re-encoding with a shorter text.
	obj, resource map[string]json.RawMessage
}

func readPart(p json.RawMessage) (textPart, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(p, &obj); err != nil {
		return textPart{}, err
	}
	var typ string
	_ = json.Unmarshal(obj["type"], &typ)
	switch typ {
	case "text":
		var text string
		if err := json.Unmarshal(obj["text"], &text); err != nil {
			return textPart{}, fmt.Errorf("text: %w", err)
		}
		return textPart{kind: "text", chars: utf8.RuneCountInString(text), text: text, obj: obj}, nil
	case "resource":
		var res map[string]json.RawMessage
		if err := json.Unmarshal(obj["resource"], &res); err != nil {
			return textPart{}, fmt.Errorf("resource: %w", err)
		}
		raw, ok := res["text"]
		if !ok {
			return textPart{}, nil // a blob: not text
		}
		var text string
		if err := json.Unmarshal(raw, &text); err != nil {
			return textPart{}, fmt.Errorf("resource.text: %w", err)
		}
		return textPart{kind: "resource", chars: utf8.RuneCountInString(text), text: text, obj: obj, resource: res}, nil
	}
	return textPart{}, nil
}

// cutParts keeps the parts in order while their text fits limit less the
// notice, cuts the text of the part where it runs out, drops the text parts
// after it (parts without text are kept), and appends the notice. It
// returns the new parts and the characters of text kept.
func cutParts(parts []json.RawMessage, texts []textPart, limit int, noticeFor func(kept int) string) ([]json.RawMessage, int) {
	keep, kept := plan(texts, limit, noticeFor)
	out := make([]json.RawMessage, 0, len(parts)+1)
	for i, p := range parts {
		switch n := keep[i]; {
		case n < 0:
			out = append(out, p)
		case n > 0:
			out = append(out, texts[i].withText(prefix(texts[i].text, n)))
		}
	}
	note, _ := json.Marshal(map[string]string{"type": "text", "text": noticeFor(kept)})
	return append(out, note), kept
}

// plan decides the cut of texts: for each, -1 to keep it whole (it fits,
// or holds no text), 0 to drop it, n > 0 to keep its first n characters;
// and the characters of text kept. What is kept and the notice of the
// kept count fit limit.
func plan(texts []textPart, limit int, noticeFor func(kept int) string) ([]int, int) {
	// The notice names the number kept and the number cut, so its length
	// depends on what it leaves room for: fewer kept can mean more digits
	// cut. Start from the room the notice leaves at the full limit and step
	// down until what is kept and its notice fit; the digits change at most
	// a few times, so this takes a few steps.
	total := 0
	for _, tp := range texts {
		total += tp.chars
	}
	fits := func(budget int) bool {
		kept := min(budget, total)
		return kept+utf8.RuneCountInString(noticeFor(kept)) <= limit
	}
	budget := limit - utf8.RuneCountInString(noticeFor(min(limit, total)))
	for budget > 0 && !fits(budget) {
		budget--
	}
	budget = max(budget, 0) // nothing but the notice fits: keep no text
	keep := make([]int, len(texts))
	kept := 0
	for i, tp := range texts {
		left := budget - kept
		switch {
		case tp.kind == "" || tp.chars <= left:
			keep[i] = -1
			kept += tp.chars
		case left > 0:
			keep[i] = left
			kept += left
		}
	}
	return keep, kept
}

// withText is the part with its text replaced.
func (tp textPart) withText(text string) json.RawMessage {
	enc, _ := json.Marshal(text)
	if tp.kind == "resource" {
		tp.resource["text"] = enc
		tp.obj["resource"], _ = json.Marshal(tp.resource)
	} else {
		tp.obj["text"] = enc
	}
	b, _ := json.Marshal(tp.obj)
	return b
}

// prefix returns the first n characters of s.
func prefix(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}
