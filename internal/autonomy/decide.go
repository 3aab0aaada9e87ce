package autonomy

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Allowed reports whether a caller at level may see and call a tool of
// class c. Manual allows nothing, Restricted only read-only tools,
// Supervised and Full everything; a value outside the four levels allows
// nothing, so a corrupted level fails closed.
func Allowed(level Level, c Class) bool {
	switch level {
	case Restricted:
		return c.ReadOnly
	case Supervised, Full:
		return true
	}
	return false
}

// Denial is the text a refused tools/call returns, in the wording of
// Purko's executor so that agents see the same message whichever side
// refused. It is meant for the case where Allowed returned false; for other
// levels it returns a generic refusal naming the level.
func Denial(level Level, tool string) string {
	switch level {
	case Manual:
		return "BLOCKED: Manual autonomy — no tools allowed."
	case Restricted:
		return fmt.Sprintf("BLOCKED: Restricted autonomy — write tool '%s' not allowed.", tool)
	}
	return fmt.Sprintf("BLOCKED: %s autonomy — tool '%s' not allowed.", level, tool)
}

// Normalize is the form in which tool names are compared by Allowlist: trimmed,
// lower case, with '-' read as '_'. Callers that index tool names should use
// it too, so that a name cannot slip past a list through case or separator.
func Normalize(name string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimSpace(name)), "-", "_")
}

// Allowlist is a caller's tool allowlist (an agent's spec.tools). It limits
// which tools the caller may see and call on top of its autonomy level.
// A nil *Allowlist, or one built from no names, permits every tool.
type Allowlist struct {
	names map[string]bool
	// key is what the list permits as one string (see Key).
	key string
}

// Key says what the list permits: equal keys, equal lists, however they
// were built (a caller authenticated anew on every request gets a new
// Allowlist each time). "" for a list that permits every tool, nil
// included. It lets views of the catalog be cached by content.
func (a *Allowlist) Key() string {
	if a == nil {
		return ""
	}
	return a.key
}

// NewAllowlist builds an Allowlist from the caller's tool names. An empty
// list means "all tools", as in Purko; blank entries are dropped but still
// make the list restrictive, so a list of blanks permits nothing rather
// than everything.
func NewAllowlist(names []string) *Allowlist {
	if len(names) == 0 {
		return &Allowlist{}
	}
	a := &Allowlist{names: make(map[string]bool, len(names))}
	for _, n := range names {
		if k := Normalize(n); k != "" {
			a.names[k] = true
		}
	}
	// A list that permits nothing (blanks only) is "=", never "".
	a.key = "=" + strings.Join(slices.Sorted(maps.Keys(a.names)), "\x00")
	return a
}

// Permits reports whether the tool published by the hub under published,
// whose upstream name is original, is on the list. Either name may appear
// there, because agents list tools by the name they were written against,
// which may be the upstream one; both are compared in Normalize form.
func (a *Allowlist) Permits(published, original string) bool {
	if a == nil || a.names == nil {
		return true
	}
	for _, n := range [2]string{published, original} {
		if k := Normalize(n); k != "" && a.names[k] {
			return true
		}
	}
	return false
}
