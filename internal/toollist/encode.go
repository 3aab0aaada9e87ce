package toollist

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
)

// How a generation's tools are encoded for the list cache (cache.go).
// mcp-go's Tool.MarshalJSON puts the members in a map and marshals it, and
// json.Marshal copies the result out: for a 5 MB catalog about 15 MB of
// garbage per generation on top of the 5 MB kept. The hub runs with
// GOGC=400, so that garbage is not collected during the build, and pages
// the runtime had given back to the OS are taken again: the hub's RSS
// grew by 2.6x the list's size after its first list, where 1.1x is kept
// (benchmark 3; 1.3x with this encoder). toolEncoder writes the same bytes
// straight into the list: the members in the order json.Marshal gives a
// map's keys (sorted),
// each value encoded by encoding/json as the map's value would be. It
// runs twice over a generation, once counting (so that the list is
// allocated once, at its size) and once writing; what it allocates is the
// boxing of each value, not the bytes.
//
// It must stay what Tool.MarshalJSON writes: TestToolEncoderMatchesMCPGo
// compares the two byte for byte on every kind of member and fails when
// mcp.Tool gains a field this does not know.

// errToolSchemas is a tool with both a structured and a raw schema of the
// same kind, which Tool.MarshalJSON refuses too.
var errToolSchemas = errors.New("both a structured and a raw schema")

// toolEncoder appends encoded tools to buf, or, counting, only adds up
// their length in n.
type toolEncoder struct {
	counting bool
	buf      []byte
	n        int
	enc      *json.Encoder // writes to the toolEncoder itself
	first    bool          // no member written yet in the current object
}

// newToolEncoder returns an encoder that appends to buf, or counts.
func newToolEncoder(buf []byte, counting bool) *toolEncoder {
	e := &toolEncoder{buf: buf, counting: counting}
	e.enc = json.NewEncoder(e) // HTML escaped, as json.Marshal
	return e
}

// Write takes what the json.Encoder writes: one value and a newline per
// Encode, of which the newline is dropped.
func (e *toolEncoder) Write(p []byte) (int, error) {
	if n := len(p); n > 0 && p[n-1] == '\n' {
		e.raw(p[:n-1])
	} else {
		e.raw(p)
	}
	return len(p), nil
}

func (e *toolEncoder) raw(p []byte) {
	if e.counting {
		e.n += len(p)
	} else {
		e.buf = append(e.buf, p...)
	}
}

func (e *toolEncoder) rawString(s string) {
	if e.counting {
		e.n += len(s)
	} else {
		e.buf = append(e.buf, s...)
	}
}

// member writes name (a quoted key and a colon) and v's encoding.
func (e *toolEncoder) member(name string, v any) error {
	if !e.first {
		e.rawString(",")
	}
	e.first = false
	e.rawString(name)
	return e.enc.Encode(v)
}

// tool writes t as Tool.MarshalJSON does. On an error, what was written of
// t is left in place; the caller drops the whole encoding.
func (e *toolEncoder) tool(t *mcp.Tool) error {
	if t.RawInputSchema != nil && t.InputSchema.Type != "" {
		return fmt.Errorf("tool %s: input schema: %w", t.Name, errToolSchemas)
	}
	if t.RawOutputSchema != nil && t.OutputSchema.Type != "" {
		return fmt.Errorf("tool %s: output schema: %w", t.Name, errToolSchemas)
	}
	e.rawString("{")
	e.first = true
	// The keys of Tool.MarshalJSON's map, sorted as json.Marshal sorts
	// them. A value is boxed only when written: a schema boxed for
	// nothing is a copy of it on the heap.
	var err error
	put := func(name string, v any) {
		if err == nil {
			if err = e.member(name, v); err != nil {
				err = fmt.Errorf("tool %s: %s %w", t.Name, name, err)
			}
		}
	}
	if t.Meta != nil {
		put(`"_meta":`, t.Meta)
	}
	put(`"annotations":`, t.Annotations)
	if t.DeferLoading {
		put(`"defer_loading":`, true)
	}
	if t.Description != "" {
		put(`"description":`, t.Description)
	}
	if t.Execution != nil {
		put(`"execution":`, t.Execution)
	}
	if t.Icons != nil {
		put(`"icons":`, t.Icons)
	}
	if t.RawInputSchema != nil {
		put(`"inputSchema":`, t.RawInputSchema)
	} else {
		put(`"inputSchema":`, t.InputSchema)
	}
	put(`"name":`, t.Name)
	if t.RawOutputSchema != nil {
		put(`"outputSchema":`, t.RawOutputSchema)
	} else if t.OutputSchema.Type != "" {
		put(`"outputSchema":`, t.OutputSchema)
	}
	if t.Title != "" {
		put(`"title":`, t.Title)
	}
	if err != nil {
		return err
	}
	e.rawString("}")
	return nil
}
