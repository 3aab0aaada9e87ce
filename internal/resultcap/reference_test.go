package resultcap

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// The cut as it was done before the results were spliced: decoded into
// maps with encoding/json and encoded again. It is kept as the reference
// the splicing cut is held to: the same report, an error for the same
// results, and the same JSON once decoded (the reference sorts members by
// name; the splicing cut keeps their order).

func refApply(raw json.RawMessage, limit int, hint string) (json.RawMessage, *Report, error) {
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
	texts := make([]refPart, len(parts))
	total := 0
	for i, p := range parts {
		tp, err := refReadPart(p)
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
	keep, kept := refPlan(texts, limit, func(kept int) string { return notice(rep.with(kept), limit, hint) })
	rep.TextKept = kept
	out := make([]json.RawMessage, 0, len(parts)+1)
	for i, p := range parts {
		switch n := keep[i]; {
		case n < 0:
			out = append(out, p)
		case n > 0:
			out = append(out, texts[i].withText(refPrefix(texts[i].text, n)))
		}
	}
	note, _ := json.Marshal(map[string]string{"type": "text", "text": notice(rep, limit, hint)})
	top["content"], _ = json.Marshal(append(out, note))
	if rep.StructuredChars > 0 {
		delete(top, "structuredContent")
		top["isError"] = json.RawMessage("true")
	}
	b, err := json.Marshal(top)
	if err != nil {
		return nil, nil, fmt.Errorf("encode the cut result: %w", err)
	}
	return b, &rep, nil
}

type refPart struct {
	kind          string
	chars         int
	text          string
	obj, resource map[string]json.RawMessage
}

func refPlan(texts []refPart, limit int, noticeFor func(kept int) string) ([]int, int) {
	tps := make([]textPart, len(texts))
	for i, tp := range texts {
		tps[i] = textPart{kind: tp.kind, chars: tp.chars}
	}
	return plan(tps, limit, noticeFor)
}

func refReadPart(p json.RawMessage) (refPart, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(p, &obj); err != nil {
		return refPart{}, err
	}
	var typ string
	_ = json.Unmarshal(obj["type"], &typ)
	switch typ {
	case "text":
		var text string
		if err := json.Unmarshal(obj["text"], &text); err != nil {
			return refPart{}, fmt.Errorf("text: %w", err)
		}
		return refPart{kind: "text", chars: utf8.RuneCountInString(text), text: text, obj: obj}, nil
	case "resource":
		var res map[string]json.RawMessage
		if err := json.Unmarshal(obj["resource"], &res); err != nil {
			return refPart{}, fmt.Errorf("resource: %w", err)
		}
		raw, ok := res["text"]
		if !ok {
			return refPart{}, nil
		}
		var text string
		if err := json.Unmarshal(raw, &text); err != nil {
			return refPart{}, fmt.Errorf("resource.text: %w", err)
		}
		return refPart{kind: "resource", chars: utf8.RuneCountInString(text), text: text, obj: obj, resource: res}, nil
	}
	return refPart{}, nil
}

func (tp refPart) withText(text string) json.RawMessage {
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

func refPrefix(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}

func refApplyShape(shape Shape, raw json.RawMessage, limit int, hint string) (json.RawMessage, *Report, error) {
	if shape == Tool {
		return refApply(raw, limit, hint)
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
	texts := make([]refPart, len(items))
	total := 0
	for i, it := range items {
		tp, err := refReadItem(shape, it)
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
	keep, kept := refPlan(texts, limit, func(kept int) string { return notice(rep.with(kept), limit, hint) })
	rep.TextKept = kept
	out := make([]json.RawMessage, 0, len(items)+1)
	uri := json.RawMessage(`""`)
	for i, it := range items {
		if keep[i] == 0 {
			continue
		}
		if keep[i] > 0 {
			it = texts[i].itemWithText(shape, it, refPrefix(texts[i].text, keep[i]))
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

func refReadItem(shape Shape, it map[string]json.RawMessage) (refPart, error) {
	if shape == Prompt {
		c, ok := it["content"]
		if !ok {
			return refPart{}, nil
		}
		tp, err := refReadPart(c)
		if err != nil {
			return refPart{}, fmt.Errorf("content: %w", err)
		}
		return tp, nil
	}
	raw, ok := it["text"]
	if !ok {
		return refPart{}, nil
	}
	var text string
	if err := json.Unmarshal(raw, &text); err != nil {
		return refPart{}, fmt.Errorf("text: %w", err)
	}
	return refPart{kind: "text", chars: utf8.RuneCountInString(text), text: text, obj: it}, nil
}

func (tp refPart) itemWithText(shape Shape, it map[string]json.RawMessage, text string) map[string]json.RawMessage {
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
