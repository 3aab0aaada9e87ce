package tasks

import (
	"encoding/json"
	"testing"

	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/pipeline"
)

// TestHeldTaskWords: how a hub task reads once its call ended without an
// upstream task, and the handle swap behind which the upstream's task
// answers once approved.
func TestHeldTaskWords(t *testing.T) {
	blocked := func(text string) pipeline.Result {
		return pipeline.Result{Result: pipeline.ErrorResult(text), Outcome: pipeline.Denied}
	}
	for _, tc := range []struct {
		name      string
		res       pipeline.Result
		cancelled bool // by tasks/cancel
		status    string
		text      string
	}{
		{"denied", blocked("BLOCKED: ... and ops denied it: no"), false, "failed", "BLOCKED: ... and ops denied it: no"},
		{"cancelled", blocked("BLOCKED: tool 'x' on server 's' waited for a person's approval (approval A) and did not run: the caller went away before a decision"), true, "cancelled", ""},
		{"ran without a task", pipeline.Result{Result: json.RawMessage(`{"content":[{"type":"text","text":"done"}]}`), Outcome: pipeline.OK}, false, "completed", "done"},
		{"an error", pipeline.Result{Error: &jsonrpc.Error{Code: -32603, Message: "upstream gone"}, Outcome: pipeline.Unavailable}, false, "failed", "upstream gone"},
	} {
		ht := &heldTask{final: tc.res}
		ht.cancelled.Store(tc.cancelled)
		if got := ht.finalStatus(); got != tc.status {
			t.Errorf("%s: status %s, want %s", tc.name, got, tc.status)
		}
		if tc.text != "" && heldText(tc.res) != tc.text {
			t.Errorf("%s: text %q", tc.name, heldText(tc.res))
		}
	}
	res := json.RawMessage(`{"taskId":"mht1.up.x","status":"working","_meta":{"io.modelcontextprotocol/related-task":{"taskId":"mht1.up.x"}},"note":"mht1.up.xy"}`)
	want := `{"taskId":"mht1.hub.z","status":"working","_meta":{"io.modelcontextprotocol/related-task":{"taskId":"mht1.hub.z"}},"note":"mht1.up.xy"}`
	if got := string(retag(res, "mht1.up.x", "mht1.hub.z")); got != want {
		t.Errorf("retag: %s", got)
	}
}
