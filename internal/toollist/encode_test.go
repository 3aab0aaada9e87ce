package toollist

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestToolEncoderMatchesMCPGo: the list cache's encoder writes every tool
// as mcp-go's Tool.MarshalJSON does, byte for byte, member by member, and
// refuses what it refuses; counting, it counts those bytes. mcp.Tool
// gaining a field (a new mcp-go) fails it until the encoder knows it.
func TestToolEncoderMatchesMCPGo(t *testing.T) {
	known := []string{"Meta", "Name", "Title", "Description", "InputSchema", "RawInputSchema", "OutputSchema", "RawOutputSchema",
		"Annotations", "DeferLoading", "Icons", "Execution"}
	var fields []string
	for f := range reflect.TypeFor[mcp.Tool]().Fields() {
		fields = append(fields, f.Name)
	}
	if !slices.Equal(fields, known) {
		t.Fatalf("mcp.Tool has the fields %v; the encoder (encode.go) knows %v", fields, known)
	}
	base := func(opts ...mcp.ToolOption) mcp.Tool {
		return mcp.NewTool("get_<thing>", append([]mcp.ToolOption{mcp.WithDescription("Gets a <thing> & more: \u2028 \"quoted\"."),
			mcp.WithString("id", mcp.Required(), mcp.Description("The id.")), mcp.WithNumber("limit", mcp.Min(1))}, opts...)...)
	}
	raw := json.RawMessage(`{ "type": "object", "properties": { "q": { "type": "string", "description": "<q>" } } }`)
	for _, tc := range []struct {
		name string
		tool func() mcp.Tool
	}{
		{"plain", func() mcp.Tool { return base() }},
		{"bare", func() mcp.Tool { return mcp.Tool{Name: "bare"} }},
		{"title and annotations", func() mcp.Tool {
			return base(mcp.WithTitleAnnotation("Get"), mcp.WithReadOnlyHintAnnotation(true), mcp.WithDestructiveHintAnnotation(false))
		}},
		{"every member", func() mcp.Tool {
			tl := base(mcp.WithOutputSchema[struct {
				N int `json:"n"`
			}]())
			tl.Title, tl.DeferLoading = "Get a thing", true
			tl.Meta = &mcp.Meta{ProgressToken: "p", AdditionalFields: map[string]any{"ui": map[string]any{"resourceUri": "ui://x?a=1&b=<2>"}}}
			tl.Icons = []mcp.Icon{{Src: "https://example.com/i.png", MIMEType: "image/png", Sizes: []string{"48x48"}}}
			tl.Execution = &mcp.ToolExecution{TaskSupport: mcp.TaskSupportOptional}
			return tl
		}},
		{"raw schemas", func() mcp.Tool {
			tl := mcp.NewToolWithRawSchema("raw", "Raw <schema>.", raw)
			tl.RawOutputSchema = json.RawMessage(`{"type":"object"}`)
			return tl
		}},
		{"empty icons and meta", func() mcp.Tool {
			tl := base()
			tl.Icons, tl.Meta = []mcp.Icon{}, &mcp.Meta{}
			return tl
		}},
		{"raw and structured input", func() mcp.Tool {
			tl := base()
			tl.RawInputSchema = raw
			return tl
		}},
		{"raw and structured output", func() mcp.Tool {
			tl := base(mcp.WithOutputSchema[struct{ N int }]())
			tl.RawOutputSchema = raw
			return tl
		}},
		{"raw input not JSON", func() mcp.Tool { return mcp.NewToolWithRawSchema("bad", "", json.RawMessage(`{"type":`)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl := tc.tool()
			want, wantErr := tl.MarshalJSON()
			w, c := newToolEncoder([]byte("prefix"), false), newToolEncoder(nil, true)
			err, cerr := w.tool(&tl), c.tool(&tl)
			if (err != nil) != (wantErr != nil) || (cerr != nil) != (wantErr != nil) {
				t.Fatalf("encoder: %v (counting: %v), mcp-go: %v", err, cerr, wantErr)
			}
			if wantErr != nil {
				return
			}
			got := bytes.TrimPrefix(w.buf, []byte("prefix"))
			if !bytes.Equal(got, want) {
				t.Errorf("encoder:\n%s\nmcp-go:\n%s", got, want)
			}
			if c.n != len(want) || len(c.buf) != 0 {
				t.Errorf("counted %d bytes (and kept %d), want %d", c.n, len(c.buf), len(want))
			}
		})
	}
}
