package main

import (
	"io"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// docFlagRE is a flag as docs/cli.md writes it in a command line, maybe
// inside [optional] brackets: --hub, -o.
var docFlagRE = regexp.MustCompile(`^\[?(--?[a-z][a-z0-9-]*)`)

// TestDocsCommandLines holds docs/cli.md and docs/connect.md to the
// command tree: every command line in their code blocks names a command
// that exists and only flags that command has.
func TestDocsCommandLines(t *testing.T) {
	for _, tc := range []struct {
		page     string
		minLines int
	}{{"docs/cli.md", 20}, {"docs/connect.md", 3}} {
		t.Run(tc.page, func(t *testing.T) { checkDocCommandLines(t, tc.page, tc.minLines) })
	}
}

// checkDocCommandLines checks the command lines of one page.
func checkDocCommandLines(t *testing.T, page string, minLines int) {
	b, err := os.ReadFile("../../" + page)
	if err != nil {
		t.Fatal(err)
	}
	root := newRootCommand(io.Discard, io.Discard)
	root.InitDefaultHelpFlag()
	root.InitDefaultVersionFlag()
	inBlock, lines := false, 0
	for n, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "```") {
			inBlock = !inBlock
			continue
		}
		if !inBlock || !strings.HasPrefix(line, "mcp-hub ") {
			continue
		}
		lines++
		line, _, _ = strings.Cut(line, " #")
		cmd, fields := root, strings.Fields(line)[1:]
		for len(fields) > 0 {
			sub := findSub(cmd, strings.Trim(fields[0], "[]"))
			if sub == nil {
				break
			}
			cmd, fields = sub, fields[1:]
		}
		cmd.InitDefaultHelpFlag()
		for _, f := range fields {
			m := docFlagRE.FindStringSubmatch(f)
			if m == nil {
				continue
			}
			name := strings.TrimLeft(m[1], "-")
			known := cmd.Flags().Lookup(name) != nil || (cmd == root && name == "version")
			if len(name) == 1 {
				known = cmd.Flags().ShorthandLookup(name) != nil
			}
			if !known {
				t.Errorf("%s:%d: %s has no flag %s: %s", page, n+1, cmd.CommandPath(), m[1], line)
			}
		}
	}
	if lines < minLines {
		t.Fatalf("%s: only %d command lines found", page, lines)
	}
}

func findSub(c *cobra.Command, name string) *cobra.Command {
	for _, s := range c.Commands() {
		if s.Name() == name {
			return s
		}
	}
	return nil
}
