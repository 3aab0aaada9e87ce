package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"text/tabwriter"
	"time"
)

const pinsUsage = `mcp-hub pins: list and approve pinned tool definitions of a running hub.

Usage:
  mcp-hub pins list [--url URL] [-o table|json]
  mcp-hub pins approve --server NAME [--tool NAME] [--url URL] [-o table|json]

approve re-pins what the server offers now: one tool, or with no --tool every
tool of the server (after an upgrade). A prompt, resource or resource template
the screening held is approved by its name or URI as --tool, the server's
instructions by --tool instructions; with no --tool, all of them are. It needs
an admin caller: the token in
MCP_HUB_TOKEN must be an auth.tokens entry with admin: true (a hub without
auth on loopback needs none).

Flags:
`

// runPins is `mcp-hub pins`: a client of the hub's /api/mcp/pins.
func runPins(args []string, stdout, stderr io.Writer) int {
	sub, args, fs, ok := subcommand("pins", pinsUsage, []string{"list", "approve"}, args, stderr)
	if !ok {
		return 2
	}
	base, out := clientFlags(fs)
	var server, tool string
	if sub == "approve" {
		fs.StringVar(&server, "server", "", "server whose tools to approve (required)")
		fs.StringVar(&tool, "tool", "", "tool to approve (original or published name); empty: every tool of the server")
	}
	if err := fs.Parse(args); err != nil {
		return parseExit(err)
	}
	if fs.NArg() > 0 || (*out != "table" && *out != "json") || (sub == "approve" && server == "") {
		fs.Usage()
		return 2
	}
	c, err := newHubClient("url", *base)
	if err != nil {
		fmt.Fprintf(stderr, "mcp-hub pins: %v\n", err)
		return 2
	}
	ctx := context.Background()
	var body []byte
	if sub == "list" {
		body, err = c.do(ctx, http.MethodGet, "/api/mcp/pins", nil)
	} else {
		req, _ := json.Marshal(map[string]string{"server": server, "tool": tool})
		body, err = c.do(ctx, http.MethodPost, "/api/mcp/pins/approve", req)
	}
	return answer(stdout, stderr, "pins "+sub, *out, body, err, func(w io.Writer, b []byte) error { return printPins(w, sub, b) })
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
