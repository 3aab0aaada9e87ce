package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/purko-io/mcp-hub/internal/httpjson"
	"github.com/purko-io/mcp-hub/internal/usergrants"
)

const connectionsLong = `List and revoke your own connections: the grants the hub keeps for you at
servers reached as each caller's own account (servers with userOAuth).

A caller without a grant at such a server gets a sign-in link at its first
call; the hub keeps the grant under the caller's name and never shows its
tokens. revoke forgets one, and revokes it at the server's authorization server
too when that offers revocation (RFC 7009); the next call signs in again.
An admin caller may list everyone's (--all) and revoke another's (--user).`

// errNoGrants is a hub that serves no /api/mcp/connections.
var errNoGrants = errors.New("this hub keeps no user grants (servers with userOAuth)")

// newConnectionsCommand is mcp-hub connections: a client of the hub's
// /api/mcp/connections (internal/usergrants).
func newConnectionsCommand(stdout, _ io.Writer) *cobra.Command {
	list := func() *cobra.Command {
		var o clientOptions
		var all bool
		c := &cobra.Command{
			Use:     "list",
			Short:   "List your connections (--all: everyone's, for admins)",
			Example: "  mcp-hub connections list\n  mcp-hub connections list --all -o wide",
			Args:    noArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				c, err := o.client(cmd)
				if err != nil {
					return err
				}
				path := "/api/mcp/connections"
				if all {
					path += "?all=true"
				}
				body, err := connectionsRequest(cmd.Context(), c, http.MethodGet, path, true)
				return answer(stdout, o.output, body, err, func(w io.Writer, b []byte, wide bool) error {
					return printConnections(w, b, all, wide, time.Now())
				})
			},
		}
		c.Flags().BoolVar(&all, "all", false, "everyone's connections (an admin caller)")
		clientFlags(c.Flags(), &o, false)
		return c
	}()
	revoke := func() *cobra.Command {
		var o clientOptions
		var user string
		c := &cobra.Command{
			Use:     "revoke SERVER",
			Short:   "Forget your connection to a server, and revoke it at its authorization server",
			Example: "  mcp-hub connections revoke github\n  mcp-hub connections revoke github --user alice",
			Args:    argsBetween(1, 1, "the server (mcp-hub connections list)"),
			RunE: func(cmd *cobra.Command, args []string) error {
				c, err := o.client(cmd)
				if err != nil {
					return err
				}
				path := "/api/mcp/connections/" + url.PathEscape(args[0])
				if user != "" {
					path += "?" + url.Values{"user": {user}}.Encode()
				}
				body, err := connectionsRequest(cmd.Context(), c, http.MethodDelete, path, false)
				return answer(stdout, o.output, body, err, func(w io.Writer, b []byte, _ bool) error {
					return printRevoked(w, b, args[0], user)
				})
			},
		}
		c.Flags().StringVar(&user, "user", "", "another caller's connection (an admin caller; its name as connections list --all shows it)")
		clientFlags(c.Flags(), &o, false)
		return c
	}()
	connect := func() *cobra.Command {
		var o clientOptions
		c := &cobra.Command{
			Use:     "connect SERVER",
			Short:   "Print your sign-in link for a server (the first sign-in, or another account there)",
			Example: "  mcp-hub connections connect github",
			Args:    argsBetween(1, 1, "the server (a server with userOAuth)"),
			RunE: func(cmd *cobra.Command, args []string) error {
				c, err := o.client(cmd)
				if err != nil {
					return err
				}
				body, err := connectionsRequest(cmd.Context(), c, http.MethodPost, "/api/mcp/connections/"+url.PathEscape(args[0]), false)
				return answer(stdout, o.output, body, err, func(w io.Writer, b []byte, _ bool) error {
					var l struct {
						URL       string  `json:"url"`
						ExpiresIn float64 `json:"expiresInSeconds"`
					}
					if err := json.Unmarshal(b, &l); err != nil {
						return fmt.Errorf("the hub's answer: %w", err)
					}
					_, err := fmt.Fprintf(w, "Open this link in your browser and sign in to %s (it works once, within %s):\n%s\n",
						args[0], time.Duration(l.ExpiresIn*float64(time.Second)).Round(time.Second), l.URL)
					return err
				})
			},
		}
		clientFlags(c.Flags(), &o, false)
		return c
	}()
	g := newGroupCommand("connections", "List, make or revoke your connections to servers reached as your own account (userOAuth)", list, connect, revoke)
	g.Long = connectionsLong
	return g
}

// connectionsRequest is c.do for /api/mcp/connections, which a hub serves
// only when it keeps user grants: a 404 of the list, or a 404 that is not
// the API's own answer (a JSON error), says this hub keeps none.
func connectionsRequest(ctx context.Context, c hubClient, method, path string, listing bool) ([]byte, error) {
	status, body, err := c.send(ctx, method, path, nil, nil)
	switch {
	case err != nil:
		return nil, err
	case status == http.StatusOK:
		return body, nil
	case status == http.StatusNotFound && (listing || !isJSONError(body)):
		return nil, errNoGrants
	}
	hint := ""
	if status == http.StatusUnauthorized && c.token == "" {
		hint = " (set MCP_HUB_TOKEN to a token of the hub's auth.tokens)"
	}
	return nil, fmt.Errorf("%s %s: %d %s: %s%s", method, path, status, http.StatusText(status), httpjson.ErrorText(body), hint)
}

// isJSONError says b is a JSON object with an "error".
func isJSONError(b []byte) bool {
	var e struct {
		Error json.RawMessage `json:"error"`
	}
	return json.Unmarshal(b, &e) == nil && len(e.Error) > 0
}

// printConnections is the table of a listing; all adds the USER column,
// wide the issuer and the last refresh.
func printConnections(w io.Writer, body []byte, all, wide bool, now time.Time) error {
	var v struct {
		User        string                  `json:"user"`
		Connections []usergrants.Connection `json:"connections"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("read the hub's answer: %w", err)
	}
	if len(v.Connections) == 0 {
		if all {
			fmt.Fprintln(w, "no one has a connection")
		} else {
			fmt.Fprintln(w, "you have no connections: a server with userOAuth asks you to sign in at your first call to it")
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	cols := []string{"SERVER"}
	if all {
		cols = append(cols, "USER")
	}
	cols = append(cols, "SUBJECT", "SCOPES", "CONNECTED", "ACCESS EXPIRES", "REFRESHABLE")
	if wide {
		cols = append(cols, "REFRESHED", "ISSUER")
	}
	fmt.Fprintln(tw, strings.Join(cols, "\t"))
	for _, c := range v.Connections {
		row := []string{c.Server}
		if all {
			row = append(row, c.User)
		}
		refreshable := "no"
		if c.Refreshable {
			refreshable = "yes"
		}
		row = append(row, orDash(c.Subject), orDash(strings.Join(c.Scopes, ",")), ago(now, c.Connected), expiresIn(now, c.Expires), refreshable)
		if wide {
			row = append(row, ago(now, c.Refreshed), orDash(c.Issuer))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if all {
		fmt.Fprintf(w, "\nrevoke: mcp-hub connections revoke SERVER --user USER\n")
	} else {
		fmt.Fprintf(w, "\nrevoke: mcp-hub connections revoke SERVER\n")
	}
	return nil
}

// printRevoked says what a revocation of user's (the caller's when "")
// connection to server did.
func printRevoked(w io.Writer, body []byte, server, user string) error {
	var r struct {
		AtServer bool   `json:"revokedAtServer"`
		Note     string `json:"note"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return fmt.Errorf("read the hub's answer: %w", err)
	}
	whose := "your"
	if user != "" {
		whose = user + "'s"
	}
	fmt.Fprintf(w, "revoked %s connection to %s", whose, server)
	switch {
	case r.AtServer:
		fmt.Fprintln(w, " (also revoked at its authorization server)")
	case r.Note != "":
		fmt.Fprintf(w, "\nnote: %s\n", r.Note)
	default:
		fmt.Fprintln(w)
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// ago is how long before now t was: "3h ago"; "-" when unknown.
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return roughly(now.Sub(t)) + " ago"
}

// expiresIn is when an access token expires: "in 4m", "expired", or
// "unknown" when the authorization server did not say.
func expiresIn(now, t time.Time) string {
	if t.IsZero() {
		return "unknown"
	}
	d := t.Sub(now)
	if d <= 0 {
		return "expired"
	}
	return "in " + roughly(d)
}

// roughly is d in its largest whole unit: 45s, 4m, 5h, 3d.
func roughly(d time.Duration) string {
	switch {
	case d < 0:
		d = 0
	case d >= 48*time.Hour:
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	case d >= time.Hour:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d >= time.Minute:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return fmt.Sprintf("%ds", d/time.Second)
}
