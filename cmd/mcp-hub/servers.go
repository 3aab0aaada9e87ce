package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/purko-io/mcp-hub/internal/registrations"
)

const serversLong = `List, register, remove or import the servers of a running hub.

add and rm need an admin caller: the token in MCP_HUB_TOKEN must be an
auth.tokens entry with admin: true (a hub without auth on loopback needs
none). --secret-ref names a Secret (key token) labelled
mcp-hub.purko.io/upstream-credential: "true" in Kubernetes, an environment
variable of the hub listed in its registrations.credentialRefs on a laptop;
the token itself is never sent, and any other name is refused (400).`

// newServersCommand is `mcp-hub servers`: a client of the hub's
// /api/mcp/servers.
func newServersCommand(stdout, stderr io.Writer) *cobra.Command {
	var lo clientOptions
	list := &cobra.Command{
		Use:   "list",
		Short: "List the hub's servers, their state and error",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := lo.client(cmd)
			if err != nil {
				return err
			}
			body, err := c.do(cmd.Context(), http.MethodGet, "/api/mcp/servers", nil)
			return answer(stdout, lo.output, body, err, printServers)
		},
	}
	clientFlags(list.Flags(), &lo, true)

	var ro clientOptions
	rm := &cobra.Command{
		Use:   "rm NAME",
		Short: "Remove a server registered through the API",
		Args:  argsBetween(1, 1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := ro.client(cmd)
			if err != nil {
				return err
			}
			body, err := c.do(cmd.Context(), http.MethodDelete, "/api/mcp/server/"+url.PathEscape(args[0]), nil)
			return answer(stdout, ro.output, body, err, printStatus)
		},
	}
	clientFlags(rm.Flags(), &ro, true)

	g := newGroupCommand("servers", "List, register, remove or import the servers of a running hub",
		list, newServersAddCommand(stdout, stderr), rm, newServersImportCommand(stdout, stderr))
	g.Long = serversLong
	return g
}

// newServersAddCommand is `mcp-hub servers add NAME`: it registers the
// server, waits for the hub's first connection and says how it went.
func newServersAddCommand(stdout, stderr io.Writer) *cobra.Command {
	var o clientOptions
	var e registrations.Entry
	var wait time.Duration
	c := &cobra.Command{
		Use:   "add NAME (--url SERVER_URL | --image IMAGE)",
		Short: "Register a server (by URL, or a container image on Kubernetes)",
		Long: serversLong + `

After registering, add waits up to --wait for the hub's first connection and
prints the server's state (connected, error with the reason, connecting);
it exits 1 when the server is in error.`,
		Example: `  mcp-hub servers add github --url http://127.0.0.1:8001/mcp --auth bearer --secret-ref GITHUB_MCP_TOKEN
  mcp-hub servers add k8s-tools --image ghcr.io/example/k8s-mcp:1 --port 8000 --hub http://mcp-hub.purko.svc:8080`,
		Args: argsBetween(1, 1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client(cmd)
			if err != nil {
				return err
			}
			e.Name = args[0]
			req, _ := json.Marshal(e)
			if _, err := c.do(cmd.Context(), http.MethodPost, "/api/mcp/server", req); err != nil {
				return err
			}
			r := []importResult{{Server: e.Name, Name: e.Name, Status: statusRegistered}}
			if wait > 0 {
				if err := awaitConnections(cmd.Context(), c, r, wait); err != nil {
					fmt.Fprintf(stderr, "mcp-hub servers add: %v\n", err)
				}
			}
			state := struct {
				Name   string `json:"name"`
				Status string `json:"status"`
				Error  string `json:"error,omitempty"`
			}{r[0].Name, r[0].Status, r[0].Reason}
			body, _ := json.Marshal(state)
			if err := writeOutput(stdout, o.output, body, printStatus); err != nil {
				return err
			}
			if state.Status == statusError {
				fmt.Fprintf(stderr, "mcp-hub servers add: %s is registered but in error; the hub keeps retrying it: fix the server, or remove it with mcp-hub servers rm %s\n", state.Name, state.Name)
				return exitStatus(1)
			}
			return nil
		},
	}
	fs := c.Flags()
	fs.StringVar(&e.URL, "url", "", "URL of the running MCP server to connect (the server's, not the hub's: that is --hub)")
	fs.StringVar(&e.Image, "image", "", "container image to deploy as an MCPServer (Kubernetes)")
	fs.IntVar(&e.Port, "port", 0, "the image's port (default 8000)")
	fs.StringVar(&e.Auth, "auth", "", "none or bearer")
	fs.StringVar(&e.SecretRef, "secret-ref", "", "with --auth bearer: the labelled Secret (Kubernetes) or listed environment variable (laptop) holding the token")
	fs.StringVar(&e.Category, "category", "", "category shown by Purko's dashboard")
	fs.StringVar(&e.Icon, "icon", "", "icon shown by Purko's dashboard")
	fs.DurationVar(&wait, "wait", 15*time.Second, "wait this long for the hub's first connection and print the state it reached (0: do not wait)")
	clientFlags(fs, &o, false)
	return c
}

// printStatus prints the answer of add and rm: the name, the state and
// the reason of an error.
func printStatus(w io.Writer, body []byte, _ bool) error {
	var v struct{ Status, Name, Error string }
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("read the hub's answer: %w", err)
	}
	if v.Error != "" {
		_, err := fmt.Fprintf(w, "%s %s: %s\n", v.Name, v.Status, v.Error)
		return err
	}
	_, err := fmt.Fprintf(w, "%s %s\n", v.Name, v.Status)
	return err
}

// printServers prints the servers listing as a table, with wide the URL
// or command and the category too.
func printServers(w io.Writer, body []byte, wide bool) error {
	var v struct {
		Servers []struct {
			Metadata struct{ Name string }
			Spec     struct{ Transport, URL, Auth string }
			Status   struct {
				Phase     string
				ToolCount int
				Message   string
			}
			Source     string
			Registered bool
		}
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("read the hub's answer: %w", err)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "NAME\tSTATUS\tTRANSPORT\tTOOLS\tSOURCE\t%sERROR\n", map[bool]string{true: "URL\tAUTH\t"}[wide])
	for _, s := range v.Servers {
		src := s.Source
		if s.Registered {
			src += " (api)"
		}
		msg := strings.ReplaceAll(s.Status.Message, "\n", " ")
		extra := ""
		if wide {
			extra = cmp.Or(s.Spec.URL, "-") + "\t" + cmp.Or(s.Spec.Auth, "-") + "\t"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s%s\n", s.Metadata.Name, s.Status.Phase, s.Spec.Transport, s.Status.ToolCount, src, extra, cmp.Or(msg, "-"))
	}
	return tw.Flush()
}
