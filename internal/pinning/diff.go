package pinning

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// Bounds of a diff: it goes into error results a model reads, audit
// lines, Kubernetes Events and listings, so it says what changed without
// repeating a schema of megabytes.
const (
	maxDiffLen  = 1000 // the whole text, in bytes
	maxValueLen = 160  // one quoted value, in runes
	diffContext = 24   // runes kept around a change in a long text
)

// Diff says in words what changed from the pinned definition old to cur,
// e.g. `description changed: "Get a file" -> "Get a file. Also send ..."`,
// `inputSchema: property "url" added`, `annotations.readOnlyHint: true ->
// false`. It is "" when nothing did.
func Diff(old, cur Definition) string {
	var parts []string
	if old.Title != cur.Title {
		a, b := textChange(old.Title, cur.Title)
		parts = append(parts, fmt.Sprintf("title changed: %s -> %s", a, b))
	}
	if old.Description != cur.Description {
		a, b := textChange(old.Description, cur.Description)
		parts = append(parts, fmt.Sprintf("description changed: %s -> %s", a, b))
	}
	parts = append(parts, objectDiff("inputSchema", old.InputSchema, cur.InputSchema, schemaDiff)...)
	parts = append(parts, objectDiff("outputSchema", old.OutputSchema, cur.OutputSchema, schemaDiff)...)
	parts = append(parts, objectDiff("annotations", old.Annotations, cur.Annotations, keyDiff)...)
	parts = append(parts, objectDiff("_meta", old.Meta, cur.Meta, keyDiff)...)
	parts = append(parts, objectDiff("icons", old.Icons, cur.Icons, keyDiff)...)
	parts = append(parts, objectDiff("execution", old.Execution, cur.Execution, keyDiff)...)
	parts = append(parts, objectDiff("extra", old.Extra, cur.Extra, keyDiff)...)
	return bound(parts)
}

// bound joins parts, stopping before maxDiffLen with a count of the rest.
func bound(parts []string) string {
	var b strings.Builder
	for i, p := range parts {
		if b.Len()+len(p)+2 > maxDiffLen {
			fmt.Fprintf(&b, "; and %d more changes", len(parts)-i)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p)
	}
	return b.String()
}

// textChange quotes both sides of a changed text. Long texts keep only the
// part around the change (the common start and end become "..."), so an
// instruction appended to a long description shows.
func textChange(a, b string) (string, string) {
	ra, rb := []rune(a), []rune(b)
	if len(ra) <= maxValueLen && len(rb) <= maxValueLen {
		return quote(a), quote(b)
	}
	pre := 0
	for pre < len(ra) && pre < len(rb) && ra[pre] == rb[pre] {
		pre++
	}
	suf := 0
	for suf < len(ra)-pre && suf < len(rb)-pre && ra[len(ra)-1-suf] == rb[len(rb)-1-suf] {
		suf++
	}
	cut := func(r []rune) string {
		start, end := 0, len(r)
		head, tail := "", ""
		if pre > diffContext {
			start, head = pre-diffContext, "..."
		}
		if suf > diffContext {
			end, tail = len(r)-suf+diffContext, "..."
		}
		return quote(head + string(r[start:end]) + tail)
	}
	return cut(ra), cut(rb)
}

// quote quotes s, cut to maxValueLen runes.
func quote(s string) string {
	if utf8.RuneCountInString(s) > maxValueLen {
		s = string([]rune(s)[:maxValueLen]) + "..."
	}
	return fmt.Sprintf("%q", s)
}

// schemaDiff names added, removed and changed properties, changes to the
// required list, and any other keyword that changed.
func schemaDiff(field string, ma, mb map[string]json.RawMessage) []string {
	var out []string
	pa, _ := asObject(ma["properties"])
	pb, _ := asObject(mb["properties"])
	for _, k := range unionKeys(pa, pb) {
		va, inA := pa[k]
		vb, inB := pb[k]
		switch {
		case !inA:
			out = append(out, fmt.Sprintf("%s: property %q added: %s", field, k, short(vb)))
		case !inB:
			out = append(out, fmt.Sprintf("%s: property %q removed", field, k))
		case !bytes.Equal(va, vb):
			out = append(out, fmt.Sprintf("%s: property %q changed: %s -> %s", field, k, short(va), short(vb)))
		}
	}
	ra, rb := stringSet(ma["required"]), stringSet(mb["required"])
	for _, k := range sortedKeys(rb) {
		if !ra[k] {
			out = append(out, fmt.Sprintf("%s: %q now required", field, k))
		}
	}
	for _, k := range sortedKeys(ra) {
		if !rb[k] {
			out = append(out, fmt.Sprintf("%s: %q no longer required", field, k))
		}
	}
	delete(ma, "properties")
	delete(mb, "properties")
	delete(ma, "required")
	delete(mb, "required")
	out = append(out, keyDiff(field, ma, mb)...)
	if len(out) == 0 { // the same content written differently cannot reach here; be safe
		out = append(out, field+" changed")
	}
	return out
}

// objectDiff compares two JSON objects with keys (key by key, or as
// schemas); what is not an object is compared whole.
func objectDiff(field string, a, b json.RawMessage, keys func(field string, ma, mb map[string]json.RawMessage) []string) []string {
	if bytes.Equal(a, b) {
		return nil
	}
	ma, okA := asObject(a)
	mb, okB := asObject(b)
	if !okA || !okB {
		return []string{fmt.Sprintf("%s changed: %s -> %s", field, short(a), short(b))}
	}
	return keys(field, ma, mb)
}

func keyDiff(field string, ma, mb map[string]json.RawMessage) []string {
	var out []string
	for _, k := range unionKeys(ma, mb) {
		if !bytes.Equal(ma[k], mb[k]) {
			out = append(out, fmt.Sprintf("%s.%s: %s -> %s", field, k, short(ma[k]), short(mb[k])))
		}
	}
	return out
}

// asObject reads a canonical JSON object; absent is an empty one.
func asObject(raw json.RawMessage) (map[string]json.RawMessage, bool) {
	m := map[string]json.RawMessage{}
	if len(raw) == 0 {
		return m, true
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, false
	}
	for k, v := range m {
		if c, err := canonical(v); err == nil {
			m[k] = c
		}
	}
	return m, true
}

func stringSet(raw json.RawMessage) map[string]bool {
	var list []string
	_ = json.Unmarshal(raw, &list)
	set := make(map[string]bool, len(list))
	for _, s := range list {
		set[s] = true
	}
	return set
}

func unionKeys(a, b map[string]json.RawMessage) []string {
	seen := map[string]bool{}
	for k := range a {
		seen[k] = true
	}
	for k := range b {
		seen[k] = true
	}
	return sortedKeys(seen)
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// short is a JSON value as text, cut to maxValueLen runes; absent is
// "(none)".
func short(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "(none)"
	}
	s := string(raw)
	if utf8.RuneCountInString(s) > maxValueLen {
		s = string([]rune(s)[:maxValueLen]) + "..."
	}
	return s
}
