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
var docFlagRE = regexp.MustCompile(`^\[?(--?[a-z][a-z-]*)`)

// TestDocsCommandLines holds docs/cli.md to the command tree: every
// command line in its code blocks names a command that exists and only
// flags that command has.
func TestDocsCommandLines(t *testing.T) {
	b, err := os.ReadFile("../../docs/cli.md")
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
				t.Errorf("docs/cli.md:%d: %s has no flag %s: %s", n+1, cmd.CommandPath(), m[1], line)
			}
		}
	}
	if lines < 20 {
		t.Fatalf("docs/cli.md: only %d command lines found", lines)
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
