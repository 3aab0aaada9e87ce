package pipeline

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/registry"
	"github.com/purko-io/mcp-hub/internal/toolspec"
)

// TestRunResultTakesTheResultSteps: a task's result (tasks/result) is
// filtered, cut and audited as a direct result of its tool, is not
// decided again (the tools/call was), and never calls the tool itself.
func TestRunResultTakesTheResultSteps(t *testing.T) {
	long := "key " + awsKey + " " + strings.Repeat("x", 1000)
	result, _ := json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "text": long}}})
	write := autonomy.Class{ReadOnly: false, Reason: "writes"}
	restricted := callers.Caller{Name: "ro", Ceiling: autonomy.Restricted, Level: autonomy.Restricted}
	filtered := fullCaller
	filtered.Guardrails = &toolspec.Guardrails{ContentFilters: []string{"secrets"}}
	for _, tc := range []struct {
		name     string
		caller   callers.Caller
		want     Outcome
		wantText []string
		wantNot  []string
	}{
		{"cut to the cap", fullCaller, OK, []string{"result cut to its first"}, nil},
		{"content filters", filtered, OK, []string{"[redacted: aws-access-token]"}, []string{awsKey}},
		// A restricted caller could not have called the write tool; the
		// result of a task it holds is not decided again.
		{"no second decision", restricted, OK, []string{"key "}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := backendFunc(func(context.Context, registry.Call) (json.RawMessage, error) {
				t.Error("the tool was called again")
				return nil, nil
			})
			rt := registry.HubRoute(b, "t", write)
			rt.ResultCap = registry.ResultCap{Chars: 400, Setting: "upstream.maxResultChars"}
			tp := newTestPipeline(t, Options{}, rt, nil)
			fetched := 0
			out := tp.RunResult(context.Background(), tc.caller, "s1", jsonrpc.ToolCall{Name: "t"},
				func(context.Context, registry.Route) (json.RawMessage, error) { fetched++; return result, nil })
			if out.Outcome != tc.want || fetched != 1 || out.Server != registry.ServerBuiltin {
				t.Fatalf("outcome %q, fetched %d, server %q; want %q, 1, %q", out.Outcome, fetched, out.Server, tc.want, registry.ServerBuiltin)
			}
			for _, s := range tc.wantText {
				if !strings.Contains(string(out.Result), s) {
					t.Errorf("result %s; want %q in it", out.Result, s)
				}
			}
			for _, s := range tc.wantNot {
				if strings.Contains(string(out.Result), s) {
					t.Errorf("result %s; want no %q in it", out.Result, s)
				}
			}
			if a := tp.audit(t); a["tool"] != "t" || a["outcome"] != "ok" {
				t.Errorf("audit line %v; want tool t, outcome ok", a)
			}
		})
	}
}
