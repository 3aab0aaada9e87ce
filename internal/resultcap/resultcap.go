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
//
// The result is read once, as it is, and a cut one is spliced from its
// bytes: a result of 100,000 characters is read at the speed of a copy,
// not decoded into maps and encoded again, and keeps its members in their
// order.
func Apply(raw json.RawMessage, limit int, hint string) (json.RawMessage, *Report, error) {
	return ApplyShape(Tool, raw, limit, hint)
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

// textPart is what a content part (or an item of another shape of
// result) holds of text, and where.
type textPart struct {
	kind  string // "text", "resource" (embedded, with text), "" other
	chars int
	part  span   // the part, whole
	text  span   // its text, the JSON string a cut replaces
	drops []span // what a cut leaves out of it (see last), in order
	uri   span   // a resources/read item's uri value; empty: none
	err   error  // why it cannot be cut; the reading goes on
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
