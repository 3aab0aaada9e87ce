package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/purko-io/mcp-hub/internal/callers"
)

const toolsUsage = `mcp-hub tools: list and run the tools of a running hub.

Usage:
  mcp-hub tools list [--autonomy LEVEL] [--url URL] [-o table|json]
  mcp-hub tools call NAME [ARGUMENTS] [--autonomy LEVEL] [--url URL] [-o text|json]

list shows every tool the hub publishes (GET /api/mcp/tools), with --autonomy
only those a caller at that level sees (manual, restricted, supervised, full).

call runs one tool (POST /api/mcp/tools/NAME/run) with ARGUMENTS, a JSON
object ({} when left out), as the caller whose token is in MCP_HUB_TOKEN, at
--autonomy if given (X-Autonomy-Level: at most the token's level). It prints
the result's text, or with -o json the whole result. A call the hub denies
(BLOCKED: ...) or that fails (an error result, an unknown tool, a rate limit)
exits 1 with the reason on stderr; a usage error exits 2.

Flags:
`

// runTools is `mcp-hub tools`: a client of the hub's tool listing and
// REST runs, for scripts and people at a shell.
func runTools(args []string, stdout, stderr io.Writer) int {
	sub, args, fs, ok := subcommand("tools", toolsUsage, []string{"list", "call"}, args, stderr)
	if !ok {
		return 2
	}
	base, out := clientFlags(fs)
	level := fs.String("autonomy", "", "autonomy level: manual, restricted, supervised or full (also shu, ha, ri)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return parseExit(err)
	}
	outputs := map[string][]string{"list": {"table", "json"}, "call": {"table", "text", "json"}}[sub]
	nargs := map[string][2]int{"list": {0, 0}, "call": {1, 2}}[sub]
	if len(pos) < nargs[0] || len(pos) > nargs[1] || !slices.Contains(outputs, *out) {
		fs.Usage()
		return 2
	}
	c, err := newHubClient("url", *base)
	if err != nil {
		fmt.Fprintf(stderr, "mcp-hub tools: %v\n", err)
		return 2
	}
	ctx := context.Background()
	if sub == "list" {
		return toolsList(ctx, c, *level, *out == "json", stdout, stderr)
	}
	arguments := "{}"
	if len(pos) == 2 {
		arguments = pos[1]
	}
	return toolsCall(ctx, c, pos[0], arguments, *level, *out == "json", stdout, stderr)
}

// parseInterspersed parses fs from args with flags before, between and
// after the positional arguments (`tools call NAME '{}' -o json`), which
// flag.Parse alone stops at; "--" ends the flags.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

// toolRow is a tool as /api/mcp/tools lists it.
type toolRow struct {
	Name        string `json:"name"`
	Server      string `json:"server"`
	ReadOnly    bool   `json:"readOnly"`
	Reason      string `json:"readOnlyReason"`
	Quarantined bool   `json:"quarantined"`
}

func toolsList(ctx context.Context, c hubClient, level string, asJSON bool, stdout, stderr io.Writer) int {
	path := "/api/mcp/tools"
	if level != "" {
		path += "?autonomy=" + url.QueryEscape(level)
	}
	body, err := c.do(ctx, http.MethodGet, path, nil)
	if err != nil {
		fmt.Fprintf(stderr, "mcp-hub tools list: %v\n", err)
		return 1
	}
	if asJSON {
		_, _ = stdout.Write(body)
		return 0
	}
	var v struct {
		Servers []struct {
			Name   string    `json:"name"`
			Status string    `json:"status"`
			Error  string    `json:"error"`
			Tools  []toolRow `json:"tools"`
		} `json:"servers"`
		TotalTools int `json:"totalTools"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		fmt.Fprintf(stderr, "mcp-hub tools list: read the hub's answer: %v\n", err)
		return 1
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "NAME\tSERVER\tREAD-ONLY\tREASON\n")
	for _, sv := range v.Servers {
		for _, t := range sv.Tools {
			ro := map[bool]string{true: "yes", false: "no"}[t.ReadOnly]
			reason := t.Reason
			if t.Quarantined {
				reason = "QUARANTINED (definition changed; see mcp-hub pins list): " + reason
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Name, t.Server, ro, reason)
		}
	}
	if err := tw.Flush(); err != nil {
		fmt.Fprintf(stderr, "mcp-hub tools list: %v\n", err)
		return 1
	}
	summary := fmt.Sprintf("\n%d tools from %d servers", v.TotalTools, len(v.Servers))
	if level != "" {
		summary += ", as seen at autonomy " + level
	}
	fmt.Fprintln(stdout, summary)
	for _, sv := range v.Servers {
		if sv.Status != "connected" {
			fmt.Fprintf(stdout, "server %s: %s %s\n", sv.Name, sv.Status, sv.Error)
		}
	}
	return 0
}

// toolResult is the part of a CallToolResult the CLI reads.
type toolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError bool `json:"isError"`
}

func (r toolResult) text() string {
	var parts []string
	for _, c := range r.Content {
		if c.Type == "text" {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func toolsCall(ctx context.Context, c hubClient, name, arguments, level string, asJSON bool, stdout, stderr io.Writer) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(stderr, "mcp-hub tools call %s: %s\n", name, fmt.Sprintf(format, args...))
		return 1
	}
	var header http.Header
	if level != "" {
		header = http.Header{callers.HeaderAutonomyLevel: {level}}
	}
	path := "/api/mcp/tools/" + url.PathEscape(name) + "/run"
	status, body, err := c.send(ctx, http.MethodPost, path, []byte(arguments), header)
	if err != nil {
		return fail("%v", err)
	}
	if asJSON {
		_, _ = stdout.Write(body)
	}
	var res toolResult
	isResult := json.Unmarshal(body, &res) == nil && (res.Content != nil || status == http.StatusOK)
	switch {
	case !isResult:
		// A refusal before the tool: unknown tool, rate limit, bad
		// arguments, credentials; the hub's error says which.
		return fail("%d %s: %s", status, http.StatusText(status), errorText(body))
	case status != http.StatusOK || res.IsError:
		// Denied (403, BLOCKED: ...) or failed (ERROR: ...).
		return fail("%s", res.text())
	}
	if !asJSON {
		fmt.Fprintln(stdout, res.text())
	}
	return 0
}
