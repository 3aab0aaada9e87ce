package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/purko-io/mcp-hub/internal/config"
	envsource "github.com/purko-io/mcp-hub/internal/discovery/env"
	"github.com/purko-io/mcp-hub/internal/hub"
)

const validateUsage = `mcp-hub validate checks a config file as the hub would read it at start:
every field, and every token, secret and file it names (read, never printed).
MCP_SERVERS, when set, is checked too. Exit 0: the hub would start with it.

Usage:
  mcp-hub validate --config FILE

Flags:
`

// runValidate is `mcp-hub validate`: the start-up's checks, without
// starting. It builds what start-up builds from the file (api tools and
// OpenAPI imports, the authenticators) so that a config it accepts is one
// the hub accepts, and stops at the first error, which names the field.
func runValidate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcp-hub validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, validateUsage); fs.PrintDefaults() }
	path := fs.String("config", "", "the config file to check (required)")
	if err := fs.Parse(args); err != nil {
		return parseExit(err)
	}
	if *path == "" || fs.NArg() > 0 {
		fs.Usage()
		return 2
	}
	if err := validate(*path); err != nil {
		fmt.Fprintf(stderr, "mcp-hub validate: %v\n", err)
		return 1
	}
	cfg, _ := config.Load(*path)
	fmt.Fprintf(stdout, "%s: valid (%d servers, %d api tools, %d OpenAPI imports)\n", *path, len(cfg.Servers), len(cfg.APITools), len(cfg.OpenAPI))
	return 0
}

func validate(path string) error {
	cfg, err := config.Load(path)
	if err != nil {
		return err
	}
	if v, ok := os.LookupEnv("MCP_SERVERS"); ok && strings.TrimSpace(v) != "" {
		if _, errs := envsource.Parse(v); len(errs) > 0 {
			return errors.Join(errs...)
		}
	}
	// What start-up builds from the file besides the catalog; the work it
	// starts in the background (OAuth discovery) ends with ctx.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := hub.Check(ctx, cfg, hub.Options{ConfigPath: path}); err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	return nil
}
