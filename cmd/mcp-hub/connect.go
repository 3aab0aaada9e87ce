package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/purko-io/mcp-hub/internal/clientconfig"
	"github.com/purko-io/mcp-hub/internal/oauth"
)

const connectLong = `Write the hub into an MCP client's own config file, at the path the client
reads (merged: every other server and setting is kept; a file that cannot be
merged is left alone and the entry printed to add by hand). --print shows the
entry and its path and writes nothing.

CLIENT is one of: ` + "%s" + `.

How the client authenticates (--auth): oauth when the hub publishes OAuth
metadata (the client signs in itself), token when --token-env names a
variable or $MCP_HUB_TOKEN is set (clients that can read a variable get a
reference to it, the others the token itself: see docs/connect.md), else
none. The token never comes from a flag: flags show in ps and shell history.`

// connectOptions are the flags of `mcp-hub connect`.
type connectOptions struct {
	hub, name, tokenEnv, auth string
	print                     bool
}

// newConnectCommand is `mcp-hub connect CLIENT`.
func newConnectCommand(stdout, _ io.Writer) *cobra.Command {
	var o connectOptions
	c := &cobra.Command{
		Use:   "connect CLIENT",
		Short: "Write the hub into an MCP client's config file (Claude Code, VS Code, Cursor, ...)",
		Long:  fmt.Sprintf(connectLong, strings.Join(clientconfig.Clients(), ", ")),
		Example: `  mcp-hub connect cursor
  mcp-hub connect vscode --hub https://hub.example.com
  MCP_HUB_TOKEN=... mcp-hub connect claude-code --token-env MCP_HUB_TOKEN
  mcp-hub connect codex --print`,
		Args:      argsBetween(1, 1, "CLIENT"),
		ValidArgs: clientconfig.Clients(),
		RunE: func(cmd *cobra.Command, args []string) error {
			hub, err := o.hubEntry(cmd.Context())
			if err != nil {
				return err
			}
			env, err := clientconfig.LocalEnv()
			if err != nil {
				return fmt.Errorf("find the client's config file: %w", err)
			}
			return clientconfig.Connect(stdout, args[0], hub, env, o.print)
		},
	}
	fs := c.Flags()
	fs.StringVar(&o.hub, "hub", hubDefault(), "the hub's base URL (also $MCP_HUB_URL); the entry points at its /mcp")
	fs.StringVar(&o.name, "name", "mcp-hub", "the entry's name in the client's file")
	fs.StringVar(&o.tokenEnv, "token-env", "", "environment variable holding the hub's token: clients that can read it get a reference, not the token")
	fs.StringVar(&o.auth, "auth", "auto", "how the client authenticates: auto, token, oauth or none")
	fs.BoolVar(&o.print, "print", false, "show the entry and its path; write nothing")
	return c
}

// hubEntry is the hub as the client's entry names it: its MCP endpoint and
// how to authenticate, --auth auto asking the hub.
func (o connectOptions) hubEntry(ctx context.Context) (clientconfig.Hub, error) {
	base := strings.TrimSuffix(strings.TrimRight(o.hub, "/"), "/mcp")
	if _, err := newHubClient("hub", base); err != nil {
		return clientconfig.Hub{}, usageError{err}
	}
	h := clientconfig.Hub{Name: o.name, URL: base + "/mcp"}
	token := os.Getenv("MCP_HUB_TOKEN")
	if o.tokenEnv != "" {
		token = os.Getenv(o.tokenEnv)
	}
	auth := o.auth
	if auth == "auto" {
		switch {
		case publishesOAuth(ctx, base):
			auth = "oauth"
		case o.tokenEnv != "" || token != "":
			auth = "token"
		default:
			auth = "none"
		}
	}
	switch auth {
	case "oauth":
		h.OAuth = true
	case "token":
		if o.tokenEnv == "" && token == "" {
			return h, usagef("--auth token: set MCP_HUB_TOKEN to the hub's token, or name the variable that holds it with --token-env")
		}
		h.Token, h.TokenEnv = token, o.tokenEnv
	case "none":
	default:
		return h, usagef("unknown --auth %q: want auto, token, oauth or none", o.auth)
	}
	return h, nil
}

// publishesOAuth reports whether the hub at base serves OAuth protected
// resource metadata (RFC 9728): then it wants its clients to sign in. An
// unreachable hub (one not started yet, a --print for elsewhere) does not.
func publishesOAuth(ctx context.Context, base string) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for _, path := range []string{oauth.WellKnown + "/mcp", oauth.WellKnown} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		if err != nil {
			return false
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return true
		}
	}
	return false
}
