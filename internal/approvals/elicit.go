package approvals

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
)

// In band: a caller configured approvalMode: elicit is a person at an MCP
// client (an IDE user), who is asked through elicitation whether the call
// may run. The call is listed and may be decided out of band meanwhile
// too; a client that cannot elicit leaves it to the approvers. The
// pipeline never asks a ServiceAccount caller: an agent would answer for
// itself.

// Ask asks the caller's own client about the held call p and returns
// whether it approved and why not; an error means it could not ask.
type Ask func(ctx context.Context, p Pending) (approve bool, reason string, err error)

// Elicit is a client's elicitation (registry.Relay's Elicit).
type Elicit func(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error)

// AskByElicitation is an Ask through elicit: a form with one checkbox
// and an optional reason.
func AskByElicitation(elicit Elicit) Ask {
	return func(ctx context.Context, p Pending) (bool, string, error) {
		args := string(p.Arguments)
		if args == "" {
			args = "{}"
		}
		res, err := elicit(ctx, mcp.ElicitationRequest{Params: mcp.ElicitationParams{
			Mode: mcp.ElicitationModeForm,
			Message: fmt.Sprintf("The agent wants to run the write tool %s on server %s with these arguments:\n%s\n\nRun it? (approval %s, waits until %s)",
				p.Tool, p.Server, args, p.ID, p.Expires.Format("15:04:05 MST")),
			RequestedSchema: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"approve": map[string]any{"type": "boolean", "title": "Run this call", "default": false},
					"reason":  map[string]any{"type": "string", "title": "Why not (told to the agent)", "maxLength": maxReason},
				},
				"required": []string{"approve"},
			},
		}})
		if err != nil {
			return false, "", err
		}
		switch res.Action {
		case mcp.ElicitationResponseActionAccept:
			content, _ := res.Content.(map[string]any)
			reason, _ := content["reason"].(string)
			if ok, _ := content["approve"].(bool); ok {
				return true, "", nil
			}
			if reason == "" {
				reason = "not approved in the caller's client"
			}
			return false, reason, nil
		case mcp.ElicitationResponseActionDecline:
			return false, "declined in the caller's client", nil
		}
		return false, "cancelled in the caller's client", nil
	}
}

// askInBand runs ask for h while it waits and decides h with the answer;
// an ask that fails leaves h to the approvers. It returns when ask has
// returned; cancel ctx to stop it.
func (g *Gate) askInBand(ctx context.Context, h *held, caller string, ask Ask) {
	approve, reason, err := ask(ctx, h.Pending)
	switch {
	case ctx.Err() != nil:
	case err != nil:
		g.log.Debug().Err(err).Str("approval", h.ID).Msg("the caller's client could not be asked: the call waits for an approver")
	default:
		d := Decision{Verdict: Denied, By: caller, Reason: reason}
		if approve {
			d.Verdict = Approved
		}
		g.decideInBand(h.ID, d)
	}
}
