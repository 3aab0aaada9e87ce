package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"
)

// The command tree follows kubectl's and helm's conventions (spf13/cobra):
// help on stdout with exit 0, a mistake in the command line on stderr with
// the command's usage and exit 2, a failure exit 1. Every command that
// talks to a running hub takes --hub (default $MCP_HUB_URL, else
// http://127.0.0.1:8080) and -o table|json|yaml|wide.
//
// A subcommand is one file: a func newXCommand(stdout, stderr io.Writer)
// *cobra.Command, added in newRootCommand.

// usageError is a mistake in the command line: exit 2, the command's usage
// after the message.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

// exitStatus ends a command whose failure is already reported (a log line,
// a table with an error in it): the exit code, nothing more printed.
type exitStatus int

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// run executes the command line args and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	root := newRootCommand(stdout, stderr)
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	if err == nil {
		return 0
	}
	if st := exitStatus(0); errors.As(err, &st) {
		return int(st)
	}
	if cmd == nil {
		cmd = root
	}
	fmt.Fprintf(stderr, "%s: %v\n", cmd.CommandPath(), err)
	if ue := (usageError{}); errors.As(err, &ue) || strings.HasPrefix(err.Error(), "unknown command") {
		fmt.Fprintf(stderr, "\n%s", cmd.UsageString())
		return 2
	}
	return 1
}

// newRootCommand is `mcp-hub`: with no subcommand it serves, as
// `mcp-hub serve` does.
func newRootCommand(stdout, stderr io.Writer) *cobra.Command {
	var o options
	root := &cobra.Command{
		Use:   "mcp-hub",
		Short: "mcp-hub puts many MCP servers behind one MCP endpoint",
		Long: `mcp-hub puts many MCP servers behind one MCP endpoint.

With no command it serves, as "mcp-hub serve" does. The commands that talk to a
running hub (approvals, connections, pins, servers, tools) find it at --hub, default $MCP_HUB_URL, else
` + defaultHubURL + `, with the token in $MCP_HUB_TOKEN.`,
		Example: `  mcp-hub serve --config hub.yaml
  mcp-hub stdio --server github
  mcp-hub servers add github --url http://127.0.0.1:8001/mcp
  mcp-hub tools call get_issue number=13
  mcp-hub validate hub.yaml`,
		Version:       currentBuild().String(),
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serve(cmd, "serve", &o, stdout, stderr)
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetVersionTemplate("mcp-hub {{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	serveFlags(root.Flags(), &o, "serve")
	root.AddCommand(
		newServeCommand("serve", stdout, stderr),
		newServeCommand("stdio", stdout, stderr),
		newPinsCommand(stdout, stderr),
		newApprovalsCommand(stdout, stderr),
		newConnectionsCommand(stdout, stderr),
		newToolsCommand(stdout, stderr),
		newServersCommand(stdout, stderr),
		newValidateCommand(stdout, stderr),
		newConnectCommand(stdout, stderr),
		&cobra.Command{
			Use:   "version",
			Short: "Print the version, commit and build date",
			Args:  noArgs,
			Run:   func(*cobra.Command, []string) { fmt.Fprintf(stdout, "mcp-hub %s\n", currentBuild()) },
		},
	)
	return root
}

// noArgs refuses positional arguments; on a command with subcommands the
// first is taken for a mistyped subcommand.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if cmd.HasSubCommands() {
		return usagef("unknown command %q for %q", args[0], cmd.CommandPath())
	}
	return usagef("unexpected arguments %q", args)
}

// argsBetween takes at least lo and at most hi positional arguments, named
// by what in the error.
func argsBetween(lo, hi int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) < lo:
			return usagef("%s is required", what)
		case len(args) > hi:
			return usagef("unexpected arguments %q after %s", args[hi:], what)
		}
		return nil
	}
}

// newGroupCommand is a command that only holds subcommands: alone it prints
// its help, with an unknown subcommand it is a usage error.
func newGroupCommand(use, short string, subs ...*cobra.Command) *cobra.Command {
	c := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	c.AddCommand(subs...)
	return c
}

// clientOptions are the flags of every command that talks to a running hub.
type clientOptions struct {
	hub    string
	output string
	// legacyURL is the hub's address as --url, its name before --hub:
	// hidden and deprecated; hasLegacy says the command has it (not where
	// --url is an upstream server's).
	legacyURL string
	hasLegacy bool
}

// outputs are the values of -o, in the order the error lists them.
var outputs = []string{"table", "json", "yaml", "wide"}

// clientFlags adds --hub and -o to fs; withLegacyURL adds the old spelling
// of --hub, --url, hidden and deprecated (not where --url is a server's).
func clientFlags(fs *pflag.FlagSet, o *clientOptions, withLegacyURL bool) {
	fs.StringVar(&o.hub, "hub", hubDefault(), "the hub's base URL (also $MCP_HUB_URL)")
	fs.StringVarP(&o.output, "output", "o", "table", "output format: table, json, yaml or wide")
	o.hasLegacy = withLegacyURL
	if withLegacyURL {
		fs.StringVar(&o.legacyURL, "url", "", "the hub's base URL (deprecated: --hub)")
		_ = fs.MarkHidden("url")
	}
}

// hubDefault is $MCP_HUB_URL, else where a hub on this machine listens.
func hubDefault() string {
	if v := os.Getenv("MCP_HUB_URL"); v != "" {
		return v
	}
	return defaultHubURL
}

// client checks -o against allowed (outputs when nil) and returns a client
// of the hub the flags name.
func (o clientOptions) client(cmd *cobra.Command, allowed ...string) (hubClient, error) {
	if err := checkOutput(o.output, allowed...); err != nil {
		return hubClient{}, err
	}
	base, flag := o.hub, "hub"
	if o.hasLegacy && cmd.Flags().Changed("url") {
		fmt.Fprintln(cmd.ErrOrStderr(), "Flag --url has been deprecated, use --hub (or $MCP_HUB_URL)")
		if !cmd.Flags().Changed("hub") {
			base, flag = o.legacyURL, "url"
		}
	}
	c, err := newHubClient(flag, base)
	if err != nil {
		return hubClient{}, usageError{err}
	}
	return c, nil
}

// checkOutput is nil when format is one of outputs or of extra.
func checkOutput(format string, extra ...string) error {
	if slices.Contains(outputs, format) || slices.Contains(extra, format) {
		return nil
	}
	return usagef("unknown output format %q: want table, json, yaml or wide", format)
}

// writeOutput writes the hub's JSON answer as format asks: as it is (json),
// as YAML, or through table (table and wide; wide with more columns).
func writeOutput(w io.Writer, format string, body []byte, table func(w io.Writer, body []byte, wide bool) error) error {
	switch format {
	case "json":
		_, err := w.Write(body)
		return err
	case "yaml":
		y, err := yaml.JSONToYAML(body)
		if err != nil {
			return fmt.Errorf("read the hub's answer: %w", err)
		}
		_, err = w.Write(y)
		return err
	}
	return table(w, body, format == "wide")
}
