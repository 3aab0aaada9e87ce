package adminapi

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/registry"
)

// The console's tool bench searches a tool's title and builds its Try it
// form from the input schema: both are in the listing, the schema as the
// upstream gave it (a raw one included) and the title only when there is
// one.
func TestToolListingsCarryTitleAndSchema(t *testing.T) {
	withTitle := mcp.NewTool("lookup", mcp.WithTitleAnnotation("Look it up"), mcp.WithString("query", mcp.Required()))
	withTitle.Title = "Look something up"
	raw := mcp.NewToolWithRawSchema("raw", "", json.RawMessage(`{"type":"object","properties":{"ids":{"type":"array"}}}`))
	got, err := json.Marshal(toolListings([]registry.Tool{
		{Name: "a_lookup", Server: "a", Def: withTitle},
		{Name: "a_raw", Server: "a", Def: raw},
	}))
	if err != nil {
		t.Fatal(err)
	}
	var tools []map[string]any
	if err := json.Unmarshal(got, &tools); err != nil {
		t.Fatal(err)
	}
	if tools[0]["title"] != "Look something up" {
		t.Errorf("title %v, want the tool's own", tools[0]["title"])
	}
	if _, ok := tools[1]["title"]; ok {
		t.Errorf("a tool without a title is listed with one: %s", got)
	}
	for i, want := range []string{`"properties":{"query":{"type":"string"}},"required":["query"]`, `"properties":{"ids":{"type":"array"}}`} {
		schema, _ := json.Marshal(tools[i]["inputSchema"])
		if !strings.Contains(string(schema), want) {
			t.Errorf("%s: inputSchema %s, want %s", tools[i]["name"], schema, want)
		}
	}
}
