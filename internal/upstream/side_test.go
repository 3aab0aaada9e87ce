package upstream

import (
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/jsonrpc"
)

// TestTakesInput: only a call whose caller takes or answers input requests
// needs a 2026-07-28 upstream; the rest go over the 2025-11-25 session.
func TestTakesInput(t *testing.T) {
	caps := func(v string) map[string]json.RawMessage {
		return map[string]json.RawMessage{mcp.MetaKeyClientCapabilities: json.RawMessage(v)}
	}
	for _, tc := range []struct {
		name string
		call jsonrpc.ToolCall
		want bool
	}{
		{"a 2025-11-25 caller", jsonrpc.ToolCall{Name: "t"}, false},
		{"no capabilities", jsonrpc.ToolCall{Meta: caps(` {} `)}, false},
		{"other capabilities", jsonrpc.ToolCall{Meta: caps(`{"experimental":{}}`)}, false},
		{"sampling null", jsonrpc.ToolCall{Meta: caps(`{"sampling":null}`)}, false},
		{"sampling", jsonrpc.ToolCall{Meta: caps(`{"sampling":{}}`)}, true},
		{"elicitation", jsonrpc.ToolCall{Meta: caps(`{"elicitation":{"form":{}}}`)}, true},
		{"roots", jsonrpc.ToolCall{Meta: caps(`{"roots":{"listChanged":true}}`)}, true},
		{"answers to input requests", jsonrpc.ToolCall{InputResponses: json.RawMessage(`{}`)}, true},
		{"a request state", jsonrpc.ToolCall{RequestState: json.RawMessage(`"s"`)}, true},
		{"unreadable capabilities", jsonrpc.ToolCall{Meta: caps(`[1]`)}, false},
	} {
		if got := takesInput(tc.call); got != tc.want {
			t.Errorf("%s: takesInput = %v, want %v", tc.name, got, tc.want)
		}
	}
}
