package approvals

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/identity"
	"github.com/purko-io/mcp-hub/internal/toolspec"
)

// Call is a tool call the pipeline holds, with what the caller's session
// offers while it waits.
type Call struct {
	Caller       callers.Caller
	Session      string
	Tool, Server string
	// Arguments are the call's, after the caller's content filters.
	Arguments json.RawMessage
	// ProgressToken is the caller's, nil when it gave none: with Notify,
	// the caller hears that its call waits.
	ProgressToken json.RawMessage
	// Notify sends a notification to the caller; nil: none can be sent.
	Notify func(method string, params map[string]any)
	// Elicit asks the caller's client (approvalMode: elicit); nil: none.
	Elicit Elicit
}

// Wait holds c until it is decided. Approved: it returns the approval's
// summary for the call's record ("approval ID approved by ops after 12s")
// and blocked "". Otherwise blocked is the BLOCKED text the caller reads
// (denied with the reason, expired with the approvers, ended before a
// decision) and summary what the record says of it. A nil Gate holds
// nothing and refuses every call: a hub that cannot ask anyone does not
// run a call that needs a person.
func (g *Gate) Wait(ctx context.Context, c Call) (summary, blocked string) {
	if g == nil {
		return "approval unavailable", fmt.Sprintf("BLOCKED: tool '%s' needs a person's approval, and this hub has no way to ask for one.", c.Tool)
	}
	req := Request{Caller: c.Caller, Session: c.Session, Tool: c.Tool, Server: c.Server, Arguments: c.Arguments}
	if c.ProgressToken != nil && c.Notify != nil {
		req.Progress = func(waited time.Duration, p Pending) {
			c.Notify("notifications/progress", map[string]any{
				"progressToken": c.ProgressToken,
				"progress":      waited.Seconds(),
				"message": fmt.Sprintf("waiting for a person to approve %s (approval %s; approvers: %s; until %s)",
					c.Tool, p.ID, p.Approvers, p.Expires.UTC().Format(time.RFC3339)),
			})
		}
	}
	// In band only for a person at a client: never a ServiceAccount.
	if c.Caller.Guardrails != nil && c.Caller.Guardrails.ApprovalMode == toolspec.ApprovalElicit && c.Elicit != nil &&
		c.Caller.Subject.Kind() != identity.ServiceAccount {
		req.Ask = AskByElicitation(c.Elicit)
	}
	d := g.Hold(ctx, req)
	summary = "approval " + d.ID + " " + d.Summary()
	if d.Verdict == Approved {
		return summary, ""
	}
	where := fmt.Sprintf("tool '%s' on server '%s'", c.Tool, c.Server)
	switch {
	case d.Verdict == Denied && d.By == "":
		blocked = fmt.Sprintf("BLOCKED: %s needs a person's approval, and the call could not be held for one: %s", where, reasonOf(d))
	case d.Verdict == Denied:
		blocked = fmt.Sprintf("BLOCKED: %s needs a person's approval (approval %s), and %s denied it: %s", where, d.ID, d.By, reasonOf(d))
	case d.Verdict == Expired:
		blocked = fmt.Sprintf("BLOCKED: %s needs a person's approval (approval %s), and none came within %s (approvers: %s). Ask your user to approve it in the hub's console, then call again.",
			where, d.ID, g.timeout, g.approverNames())
	default:
		blocked = fmt.Sprintf("BLOCKED: %s waited for a person's approval (approval %s) and did not run: %s", where, d.ID, reasonOf(d))
	}
	return summary, blocked
}

func reasonOf(d Decision) string {
	if d.Reason == "" {
		return "no reason given."
	}
	return d.Reason
}
