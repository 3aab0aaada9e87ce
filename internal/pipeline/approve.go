package pipeline

import (
	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/registry"
	"github.com/purko-io/mcp-hub/internal/toolspec"
)

// Human approval (internal/approvals): a write call of a caller whose
// guardrails say humanApprovalRequired waits in run, after the decision
// and the content filters (what waits is what the upstream would get),
// until a person approves it; then it takes the rest of the way like any
// call, and its audit line and feed entry say who approved it. Read tools
// never wait, and a caller without the guardrail pays one boolean test.

// needsApproval reports whether call must wait for a person: a write tool
// (one the restricted level refuses) the caller's guardrails hold.
func needsApproval(g *toolspec.Guardrails, call jsonrpc.ToolCall, rt registry.Route) bool {
	return g.HumanApprovalRequired && !autonomy.Allowed(autonomy.Restricted, rt.Class) && g.NeedsApproval(call.Name, rt.Original)
}
