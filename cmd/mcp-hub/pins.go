package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

const pinsLong = `List and approve the pinned tool definitions of a running hub.

approve re-pins what the server offers now: one tool, or with no --tool every
tool of the server (after an upgrade). A prompt, resource or resource template
the screening held is approved by its name or URI as --tool, the server's
instructions by --tool instructions; with no --tool, all of them are. It needs
an admin caller: the token in MCP_HUB_TOKEN must be an auth.tokens entry with
admin: true (a hub without auth on loopback needs none).`

// newPinsCommand is `mcp-hub pins`: a client of the hub's /api/mcp/pins.
func newPinsCommand(stdout, _ io.Writer) *cobra.Command {
	list := func() *cobra.Command {
		var o clientOptions
		c := &cobra.Command{
			Use:   "list",
			Short: "List the pinned tool definitions and what changed",
			Args:  noArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				c, err := o.client(cmd)
				if err != nil {
					return err
				}
				body, err := c.do(cmd.Context(), http.MethodGet, "/api/mcp/pins", nil)
				return answer(stdout, o.output, body, err, func(w io.Writer, b []byte, _ bool) error { return printPins(w, "list", b) })
			},
		}
		clientFlags(c.Flags(), &o, true)
		return c
	}()
	approve := func() *cobra.Command {
		var o clientOptions
		var server, tool string
		c := &cobra.Command{
			Use:     "approve --server NAME [--tool NAME]",
			Short:   "Approve what a server offers now (one tool, or all of the server's)",
			Example: "  mcp-hub pins approve --server fs --tool read_file\n  mcp-hub pins approve --server github",
			Args:    noArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				if server == "" {
					return usagef("--server is required")
				}
				c, err := o.client(cmd)
				if err != nil {
					return err
				}
				req, _ := json.Marshal(map[string]string{"server": server, "tool": tool})
				body, err := c.do(cmd.Context(), http.MethodPost, "/api/mcp/pins/approve", req)
				return answer(stdout, o.output, body, err, func(w io.Writer, b []byte, _ bool) error { return printPins(w, "approve", b) })
			},
		}
		c.Flags().StringVar(&server, "server", "", "server whose tools to approve (required)")
		c.Flags().StringVar(&tool, "tool", "", "tool to approve (original or published name); empty: every tool of the server")
		clientFlags(c.Flags(), &o, true)
		return c
	}()
	g := newGroupCommand("pins", "List or approve pinned tool definitions of a running hub", list, approve)
	g.Long = pinsLong
	return g
}

// listedPin is a pin as /api/mcp/pins and the approval list it.
type listedPin struct {
	Server, Tool, Kind, SHA256, Approved, Diff string
	FirstSeen                                  time.Time
	Quarantined, Changed                       bool
	CurrentSHA256                              string
	// Screened are the screening's hits (rule ids suffice here); Reason
	// says why the tool is held.
	Screened []struct{ Rule string }
	Reason   string
}

// name is the pinned tool's name, or what a pin of another kind approves
// ("prompt:summarize", "instructions").
func (p listedPin) name() string {
	switch {
	case p.Kind == "":
		return p.Tool
	case p.Tool == "":
		return p.Kind
	}
	return p.Kind + ":" + p.Tool
}

func printPins(w io.Writer, sub string, body []byte) error {
	var v struct {
		Mode     string      `json:"mode"`
		Pins     []listedPin `json:"pins"`
		Approved []listedPin `json:"approved"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("read the hub's answer: %w", err)
	}
	if sub == "approve" {
		if len(v.Approved) == 0 {
			fmt.Fprintln(w, "nothing to approve: every tool already has its current definition pinned")
			return nil
		}
		for _, p := range v.Approved {
			fmt.Fprintf(w, "approved %s/%s sha256 %s\n", p.Server, p.name(), p.SHA256)
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "SERVER\tTOOL\tSTATE\tSHA256\tFIRST SEEN\tAPPROVED\n")
	var changed []listedPin
	for _, p := range v.Pins {
		state := "pinned"
		switch {
		case p.Quarantined:
			state = "QUARANTINED"
		case p.Changed:
			state = "changed"
		case len(p.Screened) > 0:
			state = "screened"
		}
		if p.Changed || len(p.Screened) > 0 {
			changed = append(changed, p)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.12s\t%s\t%s\n", p.Server, p.name(), state, p.SHA256, p.FirstSeen.Format(time.RFC3339), cmp.Or(p.Approved, "-"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nmode %s, %d pins, %d changed or screened\n", v.Mode, len(v.Pins), len(changed))
	for _, p := range changed {
		fmt.Fprintf(w, "\n%s/%s: %s\n  approve: mcp-hub pins approve --server %s --tool %s\n", p.Server, p.name(), cmp.Or(p.Reason, p.Diff), p.Server, cmp.Or(p.Tool, p.Kind))
	}
	return nil
}
