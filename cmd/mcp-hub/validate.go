package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/config/lint"
	envsource "github.com/purko-io/mcp-hub/internal/discovery/env"
	"github.com/purko-io/mcp-hub/internal/hub"
)

const validateLong = `Check a config file as the hub would read it at start, like a linter: every
mistake in one run, each as FILE:LINE:COLUMN: FIELD: what is wrong (with a
suggestion for a misspelt field). Every token, secret and file the config
names is read (never printed); a stdio server's command must be on PATH, a
URL must have a scheme. MCP_SERVERS, when set, is checked too. Exit 0: the
hub would start with it; 1: it would not.`

// newValidateCommand is `mcp-hub validate FILE`: the start-up's checks,
// without starting.
func newValidateCommand(stdout, stderr io.Writer) *cobra.Command {
	var path string
	c := &cobra.Command{
		Use:     "validate FILE",
		Short:   "Check a config file (every mistake, with line and column) without starting",
		Long:    validateLong,
		Example: "  mcp-hub validate hub.yaml",
		Args:    argsBetween(0, 1, "FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) == 1 && path != "" && path != args[0]:
				return usagef("give the file once: %s or --config %s", args[0], path)
			case len(args) == 1:
				path = args[0]
			case path == "":
				return usagef("FILE is required")
			}
			if n := validate(cmd.Context(), path, stderr); n > 0 {
				fmt.Fprintf(stderr, "%s: %d %s\n", path, n, map[bool]string{true: "problem", false: "problems"}[n == 1])
				return exitStatus(1)
			}
			cfg, _ := config.Load(path)
			fmt.Fprintf(stdout, "%s: valid (%d servers, %d api tools, %d OpenAPI imports)\n", path, len(cfg.Servers), len(cfg.APITools), len(cfg.OpenAPI))
			return nil
		},
	}
	c.Flags().StringVar(&path, "config", "", "the config file to check (the same as FILE)")
	return c
}

// validate prints every problem of the file at path to w and returns how
// many there are. What start-up builds from the file besides the catalog
// (api tools, OpenAPI imports, the authenticators) is checked once the
// file itself is clean.
func validate(ctx context.Context, path string, w io.Writer) int {
	problems, err := lint.File(path, lint.Options{})
	if err != nil {
		fmt.Fprintln(w, err)
		return 1
	}
	for _, p := range problems {
		fmt.Fprintln(w, p.Format(path))
	}
	n := len(problems)
	if v, ok := os.LookupEnv("MCP_SERVERS"); ok && strings.TrimSpace(v) != "" {
		if _, errs := envsource.Parse(v); len(errs) > 0 {
			for _, err := range errs {
				fmt.Fprintf(w, "$MCP_SERVERS: %v\n", err)
			}
			n += len(errs)
		}
	}
	if n > 0 {
		return n
	}
	cfg, err := config.Load(path)
	if err != nil {
		fmt.Fprintln(w, err) // a mistake the linter missed: never say valid
		return 1
	}
	// The work Check starts in the background (OAuth discovery) ends with ctx.
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := hub.Check(ctx, cfg, hub.Options{ConfigPath: path}); err != nil {
		fmt.Fprintf(w, "%s: %v\n", path, err)
		return 1
	}
	return 0
}
