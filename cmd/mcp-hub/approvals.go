package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

const approvalsLong = `List, approve and deny the tool calls a running hub holds for a person.

A caller whose guardrails say humanApprovalRequired: true waits at each write
call until an approver decides (docs/security.md "Human approval"). Approvers
are the hub's admin callers unless approvals.approvers names others; the token
in MCP_HUB_TOKEN must be one of theirs, and never the token that made the
call. Any other caller sees only its own held calls.`

// newApprovalsCommand is mcp-hub approvals: a client of the hub's
// /api/mcp/approvals.
func newApprovalsCommand(stdout, _ io.Writer) *cobra.Command {
	list := func() *cobra.Command {
		var o clientOptions
		c := &cobra.Command{
			Use:   "list",
			Short: "List the calls waiting for approval (every replica's)",
			Args:  noArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				c, err := o.client(cmd)
				if err != nil {
					return err
				}
				body, err := c.do(cmd.Context(), http.MethodGet, "/api/mcp/approvals", nil)
				return answer(stdout, o.output, body, err, printApprovals)
			},
		}
		clientFlags(c.Flags(), &o, false)
		return c
	}()
	decide := func(verb string) *cobra.Command {
		var o clientOptions
		var reason, sha string
		c := &cobra.Command{
			Use:   verb + " ID",
			Short: map[string]string{"approve": "Let a held call run, once", "deny": "Refuse a held call; the caller reads --reason"}[verb],
			Example: map[string]string{
				"approve": "  mcp-hub approvals approve 6MZ3DNUWWHQ4UQXGQNQZCLXJ5A",
				"deny":    `  mcp-hub approvals deny 6MZ3DNUWWHQ4UQXGQNQZCLXJ5A --reason "release freeze until Monday"`,
			}[verb],
			Args: argsBetween(1, 1, "the approval ID (mcp-hub approvals list)"),
			RunE: func(cmd *cobra.Command, args []string) error {
				c, err := o.client(cmd)
				if err != nil {
					return err
				}
				decision := map[string]string{"approve": "approve", "deny": "deny"}[verb]
				req, _ := json.Marshal(struct {
					Decision string `json:"decision"`
					Reason   string `json:"reason,omitempty"`
					SHA      string `json:"argumentsSha256,omitempty"`
				}{decision, reason, sha})
				body, err := c.do(cmd.Context(), http.MethodPost, "/api/mcp/approvals/"+url.PathEscape(args[0]), req)
				return answer(stdout, o.output, body, err, printDecision)
			},
		}
		if verb == "deny" {
			c.Flags().StringVar(&reason, "reason", "", "why, told to the caller (and so to the model)")
		}
		c.Flags().StringVar(&sha, "sha256", "", "the argumentsSha256 you were shown: refuse if the call's arguments are others")
		clientFlags(c.Flags(), &o, false)
		return c
	}
	g := newGroupCommand("approvals", "List, approve or deny tool calls held for a person's approval", list, decide("approve"), decide("deny"))
	g.Long = approvalsLong
	return g
}

// listedApproval is a held call as /api/mcp/approvals lists it.
type listedApproval struct {
	ID, Caller, Agent, Tool, Server, ArgumentsSHA256 string
	Arguments                                        json.RawMessage
	Expires                                          time.Time
	AgeSeconds                                       float64
}

func printApprovals(w io.Writer, body []byte, wide bool) error {
	var v struct {
		Approvals []listedApproval `json:"approvals"`
		Approver  bool             `json:"approver"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("read the hub's answer: %w", err)
	}
	if len(v.Approvals) == 0 {
		fmt.Fprintln(w, "no calls wait for approval")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := "ID\tCALLER\tTOOL\tSERVER\tWAITING\tEXPIRES IN\tARGUMENTS"
	if wide {
		head += "\tAGENT\tSHA256"
	}
	fmt.Fprintln(tw, head)
	for _, a := range v.Approvals {
		var compact bytes.Buffer
		args := string(a.Arguments)
		if json.Compact(&compact, a.Arguments) == nil {
			args = compact.String()
		}
		if !wide && len(args) > 60 {
			args = args[:57] + "..."
		}
		line := fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s", a.ID, a.Caller, a.Tool, a.Server,
			(time.Duration(a.AgeSeconds) * time.Second).String(), time.Until(a.Expires).Round(time.Second).String(), args)
		if wide {
			line += fmt.Sprintf("\t%s\t%s", a.Agent, a.ArgumentsSHA256)
		}
		fmt.Fprintln(tw, line)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if v.Approver {
		fmt.Fprintf(w, "\napprove: mcp-hub approvals approve ID\ndeny:    mcp-hub approvals deny ID --reason TEXT\n")
	}
	return nil
}

func printDecision(w io.Writer, body []byte, _ bool) error {
	var d struct{ ID, Verdict, By, Reason string }
	if err := json.Unmarshal(body, &d); err != nil {
		return fmt.Errorf("read the hub's answer: %w", err)
	}
	fmt.Fprintf(w, "%s %s", d.ID, d.Verdict)
	if d.Reason != "" {
		fmt.Fprintf(w, ": %s", d.Reason)
	}
	fmt.Fprintln(w)
	return nil
}
