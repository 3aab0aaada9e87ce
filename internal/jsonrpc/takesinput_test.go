package jsonrpc

import (
	"encoding/json"
	"testing"
)

// TestTakesInput: only a call whose caller takes or answers input requests
// needs a 2026-07-28 upstream; the hub sends the rest over a 2025-11-25
// session.
func TestTakesInput(t *testing.T) {
	caps := func(v string) map[string]json.RawMessage {
		return map[string]json.RawMessage{MetaClientCapabilities: json.RawMessage(v)}
	}
	for _, tc := range []struct {
		name string
		call ToolCall
		want bool
	}{
		{"a 2025-11-25 caller", ToolCall{Name: "t"}, false},
		{"no capabilities", ToolCall{Meta: caps(` {} `)}, false},
		{"other capabilities", ToolCall{Meta: caps(`{"experimental":{}}`)}, false},
		{"sampling null", ToolCall{Meta: caps(`{"sampling":null}`)}, false},
		{"sampling", ToolCall{Meta: caps(`{"sampling":{}}`)}, true},
		{"elicitation", ToolCall{Meta: caps(`{"elicitation":{"form":{}}}`)}, true},
		{"roots", ToolCall{Meta: caps(`{"roots":{"listChanged":true}}`)}, true},
		{"answers to input requests", ToolCall{InputResponses: json.RawMessage(`{}`)}, true},
		{"a request state", ToolCall{RequestState: json.RawMessage(`"s"`)}, true},
		{"unreadable capabilities", ToolCall{Meta: caps(`[1]`)}, false},
	} {
		if got := tc.call.TakesInput(); got != tc.want {
			t.Errorf("%s: TakesInput = %v, want %v", tc.name, got, tc.want)
		}
	}
}
