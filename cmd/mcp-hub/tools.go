package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/httpjson"
)

const toolsCallLong = `Run one tool of a running hub (POST /api/mcp/tools/NAME/run) as the caller
whose token is in MCP_HUB_TOKEN, at --autonomy if given (X-Autonomy-Level: at
most the token's level).

The arguments are KEY=VALUE pairs (a VALUE that parses as JSON is taken as
JSON: number=7, draft=true, labels='["bug"]'; else it is a string), a JSON
object as the one argument after NAME, or --args JSON (pairs are added to
it). It prints the result's text, or with -o json|yaml the whole result. A
call the hub denies (BLOCKED: ...) or that fails (an error result, an unknown
tool, a rate limit) exits 1 with the reason on stderr; a usage error exits 2.`

// newToolsCommand is `mcp-hub tools`: a client of the hub's tool listing
// and REST runs, for scripts and people at a shell.
func newToolsCommand(stdout, stderr io.Writer) *cobra.Command {
	var lo clientOptions
	var listLevel string
	list := &cobra.Command{
		Use:   "list",
		Short: "List the tools the hub publishes (GET /api/mcp/tools)",
		Long: `List every tool the hub publishes (GET /api/mcp/tools), with --autonomy only
those a caller at that level sees (manual, restricted, supervised, full).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := lo.client(cmd)
			if err != nil {
				return err
			}
			return toolsList(cmd.Context(), c, listLevel, lo.output, stdout)
		},
	}
	clientFlags(list.Flags(), &lo, true)
	list.Flags().StringVar(&listLevel, "autonomy", "", "autonomy level: manual, restricted, supervised or full (also shu, ha, ri)")

	var co clientOptions
	var callLevel, argsJSON string
	call := &cobra.Command{
		Use:   "call NAME [KEY=VALUE...|JSON]",
		Short: "Run one tool",
		Long:  toolsCallLong,
		Example: `  mcp-hub tools call get_issue number=13
  mcp-hub tools call search_code query="func main" limit=5 -o json
  mcp-hub tools call create_issue --args '{"title":"x","labels":["bug"]}'`,
		Args: argsBetween(1, 1<<20, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := co.client(cmd, "text")
			if err != nil {
				return err
			}
			arguments, err := toolArguments(argsJSON, args[1:])
			if err != nil {
				return usageError{err}
			}
			return toolsCall(cmd.Context(), c, args[0], arguments, callLevel, co.output, stdout, stderr)
		},
	}
	clientFlags(call.Flags(), &co, true)
	call.Flags().StringVar(&callLevel, "autonomy", "", "autonomy level: manual, restricted, supervised or full (also shu, ha, ri)")
	call.Flags().StringVar(&argsJSON, "args", "", "the arguments as one JSON object; KEY=VALUE pairs are added to it")
	return newGroupCommand("tools", "List the tools of a running hub, or run one", list, call)
}

// toolArguments is the JSON object of a call's arguments: base (--args,
// "{}" when empty) with each KEY=VALUE of pairs set in it. A lone pair
// that is a JSON object (the form before KEY=VALUE) is the whole object.
// A VALUE that parses as JSON is that value, else the string.
func toolArguments(base string, pairs []string) ([]byte, error) {
	if len(pairs) == 1 && strings.HasPrefix(strings.TrimSpace(pairs[0]), "{") {
		if base != "" {
			return nil, fmt.Errorf("give the arguments as --args or as a JSON object after NAME, not both")
		}
		// Sent as it is: the hub names what is wrong with it (a key that
		// appears twice, not an object).
		return []byte(pairs[0]), nil
	}
	obj := map[string]json.RawMessage{}
	if base != "" {
		if err := json.Unmarshal([]byte(base), &obj); err != nil {
			return nil, fmt.Errorf("--args: not a JSON object: %w", err)
		}
	}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("argument %q is not KEY=VALUE (or one JSON object)", p)
		}
		if json.Valid([]byte(v)) && strings.TrimSpace(v) != "" {
			obj[k] = json.RawMessage(v)
		} else {
			s, _ := json.Marshal(v)
			obj[k] = s
		}
	}
	return json.Marshal(obj)
}

// toolRow is a tool as /api/mcp/tools lists it.
type toolRow struct {
	Name        string `json:"name"`
	Server      string `json:"server"`
	ReadOnly    bool   `json:"readOnly"`
	Reason      string `json:"readOnlyReason"`
	Quarantined bool   `json:"quarantined"`
	Description string `json:"description"`
}

func toolsList(ctx context.Context, c hubClient, level, format string, stdout io.Writer) error {
	path := "/api/mcp/tools"
	if level != "" {
		path += "?autonomy=" + url.QueryEscape(level)
	}
	body, err := c.do(ctx, http.MethodGet, path, nil)
	return answer(stdout, format, body, err, func(w io.Writer, b []byte, wide bool) error { return printTools(w, b, level, wide) })
}

// printTools prints the tool listing as a table, with wide the servers'
// descriptions of the tools too.
func printTools(stdout io.Writer, body []byte, level string, wide bool) error {
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
		return fmt.Errorf("read the hub's answer: %w", err)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "NAME\tSERVER\tREAD-ONLY\tREASON%s\n", map[bool]string{true: "\tDESCRIPTION"}[wide])
	for _, sv := range v.Servers {
		for _, t := range sv.Tools {
			ro := map[bool]string{true: "yes", false: "no"}[t.ReadOnly]
			reason := t.Reason
			if t.Quarantined {
				reason = "QUARANTINED (definition changed; see mcp-hub pins list): " + reason
			}
			desc := ""
			if wide {
				desc = "\t" + strings.Join(strings.Fields(t.Description), " ")
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s%s\n", t.Name, t.Server, ro, reason, desc)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
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
	return nil
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

// toolsCall runs one tool; format is text or table (the result's text),
// json, yaml or wide (the whole result). A denial or a failed call is an
// error naming the tool, after the whole result in json and yaml.
func toolsCall(ctx context.Context, c hubClient, name string, arguments []byte, level, format string, stdout, stderr io.Writer) error {
	fail := func(format string, args ...any) error {
		fmt.Fprintf(stderr, "mcp-hub tools call %s: %s\n", name, fmt.Sprintf(format, args...))
		return exitStatus(1)
	}
	var header http.Header
	if level != "" {
		header = http.Header{callers.HeaderAutonomyLevel: {level}}
	}
	path := "/api/mcp/tools/" + url.PathEscape(name) + "/run"
	status, body, err := c.send(ctx, http.MethodPost, path, arguments, header)
	if err != nil {
		return fail("%v", err)
	}
	whole := format == "json" || format == "yaml"
	if whole {
		if err := writeOutput(stdout, format, body, func(w io.Writer, b []byte, _ bool) error { _, err := w.Write(b); return err }); err != nil {
			return fail("%v", err)
		}
	}
	var res toolResult
	isResult := json.Unmarshal(body, &res) == nil && (res.Content != nil || status == http.StatusOK)
	switch {
	case !isResult:
		// A refusal before the tool: unknown tool, rate limit, bad
		// arguments, credentials; the hub's error says which.
		return fail("%d %s: %s", status, http.StatusText(status), httpjson.ErrorText(body))
	case status != http.StatusOK || res.IsError:
		// Denied (403, BLOCKED: ...) or failed (ERROR: ...).
		return fail("%s", res.text())
	}
	if !whole {
		fmt.Fprintln(stdout, res.text())
	}
	return nil
}
