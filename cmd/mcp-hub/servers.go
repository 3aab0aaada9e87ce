package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"
	"text/tabwriter"

	"github.com/purko-io/mcp-hub/internal/registrations"
)

const serversUsage = `mcp-hub servers: list, register and remove the servers of a running hub.

Usage:
  mcp-hub servers list [--url URL] [-o table|json]
  mcp-hub servers add NAME --url SERVER_URL [--auth bearer --secret-ref REF] [--category C] [--icon I] [--hub URL]
  mcp-hub servers add NAME --image IMAGE [--port N] [--auth bearer --secret-ref SECRET] [--hub URL]
  mcp-hub servers rm NAME [--url URL]
  mcp-hub servers import SOURCE [--secret-ref REF] [--var KEY=VALUE]... [--name NAME] [--hub URL] [--dry-run]

add and rm need an admin caller: the token in MCP_HUB_TOKEN must be an
auth.tokens entry with admin: true (a hub without auth on loopback needs
none). --secret-ref names a Secret (key token) labelled
mcp-hub.purko.io/upstream-credential: "true" in Kubernetes, an environment
variable of the hub listed in its registrations.credentialRefs on a laptop;
the token itself is never sent, and any other name is refused (400). The hub's
address is --url for list and rm, --hub for add (where --url is the
server's) and import. import registers the remote servers of an MCP Registry
server.json file or registry URL (mcp-hub servers import --help).

Flags:
`

// runServers is `mcp-hub servers`: a client of the hub's /api/mcp/servers.
func runServers(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "import" {
		return runServersImport(args[1:], stdout, stderr)
	}
	sub, args, fs, ok := subcommand("servers", serversUsage, []string{"list", "add", "rm", "import"}, args, stderr)
	if !ok {
		return 2
	}
	var name string
	if sub != "list" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
			fmt.Fprint(stdout, serversUsage)
			return 0
		}
		if len(args) == 0 || strings.HasPrefix(args[0], "-") {
			fmt.Fprintf(stderr, "mcp-hub servers %s: NAME is required\n", sub)
			return 2
		}
		name, args = args[0], args[1:]
	}
	hubFlag := "url"
	var e registrations.Entry
	if sub == "add" {
		hubFlag = "hub"
		fs.StringVar(&e.URL, "url", "", "URL of the running MCP server to connect")
		fs.StringVar(&e.Image, "image", "", "container image to deploy as an MCPServer (Kubernetes)")
		fs.IntVar(&e.Port, "port", 0, "the image's port (default 8000)")
		fs.StringVar(&e.Auth, "auth", "", "none or bearer")
		fs.StringVar(&e.SecretRef, "secret-ref", "", "with --auth bearer: the labelled Secret (Kubernetes) or listed environment variable (laptop) holding the token")
		fs.StringVar(&e.Category, "category", "", "category shown by Purko's dashboard")
		fs.StringVar(&e.Icon, "icon", "", "icon shown by Purko's dashboard")
	}
	base := fs.String(hubFlag, defaultHubURL, "the hub's base URL")
	out := fs.String("o", "table", "output: table or json")
	if err := fs.Parse(args); err != nil {
		return parseExit(err)
	}
	if fs.NArg() > 0 || (*out != "table" && *out != "json") {
		fs.Usage()
		return 2
	}
	c, err := newHubClient(hubFlag, *base)
	if err != nil {
		fmt.Fprintf(stderr, "mcp-hub servers: %v\n", err)
		return 2
	}
	ctx := context.Background()
	var body []byte
	switch sub {
	case "list":
		body, err = c.do(ctx, "GET", "/api/mcp/servers", nil)
	case "add":
		e.Name = name
		req, _ := json.Marshal(e)
		body, err = c.do(ctx, "POST", "/api/mcp/server", req)
	case "rm":
		body, err = c.do(ctx, "DELETE", "/api/mcp/server/"+url.PathEscape(name), nil)
	}
	return answer(stdout, stderr, "servers "+sub, *out, body, err, func(w io.Writer, b []byte) error { return printServers(w, sub, b) })
}

func printServers(w io.Writer, sub string, body []byte) error {
	if sub != "list" {
		var v struct{ Status, Name string }
		if err := json.Unmarshal(body, &v); err != nil {
			return fmt.Errorf("read the hub's answer: %w", err)
		}
		fmt.Fprintf(w, "%s %s\n", v.Name, v.Status)
		return nil
	}
	var v struct {
		Servers []struct {
			Metadata struct{ Name string }
			Spec     struct{ Transport string }
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
	fmt.Fprintf(tw, "NAME\tSTATUS\tTRANSPORT\tTOOLS\tSOURCE\tERROR\n")
	for _, s := range v.Servers {
		src := s.Source
		if s.Registered {
			src += " (api)"
		}
		msg := strings.ReplaceAll(s.Status.Message, "\n", " ")
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", s.Metadata.Name, s.Status.Phase, s.Spec.Transport, s.Status.ToolCount, src, cmp.Or(msg, "-"))
	}
	return tw.Flush()
}
