package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/purko-io/mcp-hub/internal/httpjson"
	"github.com/purko-io/mcp-hub/internal/registryimport"
	"github.com/purko-io/mcp-hub/internal/secrets"
)

// `mcp-hub servers import` registers the remote servers an MCP Registry
// server.json lists (a file, or a registry's answer) through the hub's own
// POST /api/mcp/server, one entry per server: the hub runs the checks it
// runs for any registration (name, URL, credential reference) and the dial
// policy when it connects, so the import never decides what the hub would
// refuse. registryimport reads the document and turns it into entries, or
// says why a server could not become one; this file registers them, waits
// for the hub's connections and prints what became of each.

// importResult is what became of one server of the document; the rows of
// the table and the items of -o json (servers add prints one too).
type importResult = registryimport.Result

// Statuses of an importResult past registryimport's plan: registered,
// then what the hub lists (connected, connecting, error) after --wait.
const (
	statusRegistered = "registered"
	statusError      = "error"
)

const importLong = `Register the remote servers of an MCP Registry server.json.

SOURCE is a server.json file, a registry's list or version document (a file,
or an http(s) URL such as
https://registry.modelcontextprotocol.io/v0.1/servers?search=weather&version=latest),
whose nextCursor pages are followed, at most --max-pages. Each server's
streamable-http (else sse) remote is registered (POST /api/mcp/server) with
the hub at --hub, which checks it as any registration; packages (npm, pypi,
oci) are listed as skipped, with how to run them. A remote whose
Authorization header is required needs --secret-ref (registered as auth
bearer); {variables} in a remote URL take --var, else their default. The
hub's name of a server is the last part of its server.json name
(io.github.acme/weather -> weather), or --name when the source holds one
server. A server that fails does not stop the others; the exit code is 1
when any failed or lists error after --wait.`

// newServersImportCommand is `mcp-hub servers import SOURCE`.
func newServersImportCommand(stdout, stderr io.Writer) *cobra.Command {
	o := registryimport.Options{Vars: map[string]string{}}
	var co clientOptions
	var dryRun bool
	var wait time.Duration
	var maxPages int
	var vars []string
	c := &cobra.Command{
		Use:     "import SOURCE",
		Short:   "Register the remote servers of an MCP Registry server.json (a file or a registry URL)",
		Long:    importLong,
		Example: "  mcp-hub servers import server.json --var port=8001 --secret-ref GITHUB_MCP_TOKEN --dry-run\n  mcp-hub servers import 'https://registry.modelcontextprotocol.io/v0.1/servers?search=weather&version=latest&limit=100'",
		Args:    argsBetween(1, 1, "SOURCE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, kv := range vars {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return usagef("--var %q is not KEY=VALUE", kv)
				}
				o.Vars[k] = v
			}
			if maxPages < 1 {
				return usagef("--max-pages %d: want at least 1", maxPages)
			}
			c, err := co.client(cmd)
			if err != nil {
				return err
			}
			return runServersImport(cmd.Context(), c, args[0], o, importRun{dryRun, wait, maxPages, co.output}, stdout, stderr)
		},
	}
	fs := c.Flags()
	fs.StringVar(&o.Name, "name", "", "the hub's name for the server, when SOURCE holds one")
	fs.StringVar(&o.SecretRef, "secret-ref", "", "for servers whose Authorization header is required: the labelled Secret (Kubernetes) or listed environment variable (laptop) holding the token")
	fs.StringArrayVar(&vars, "var", nil, "KEY=VALUE for a {KEY} of a remote URL (repeat for more)")
	fs.BoolVar(&dryRun, "dry-run", false, "print what would be registered; the hub is not asked")
	fs.DurationVar(&wait, "wait", 10*time.Second, "after registering, wait this long for the hub to connect and print what it lists (0: do not wait)")
	fs.IntVar(&maxPages, "max-pages", 20, "most pages of a registry list to read")
	clientFlags(fs, &co, false)
	return c
}

// importRun are the flags of an import besides what to register.
type importRun struct {
	dryRun   bool
	wait     time.Duration
	maxPages int
	output   string
}

// runServersImport reads source, registers what it can with the hub of c
// and prints what became of each server.
func runServersImport(ctx context.Context, c hubClient, source string, o registryimport.Options, r importRun, stdout, stderr io.Writer) error {
	docs, err := registryimport.Read(ctx, source, r.maxPages)
	if err != nil {
		return err
	}
	if o.Name != "" && len(docs) != 1 {
		return usagef("--name names one server; %s holds %d", secrets.URLForMessage(source), len(docs))
	}
	results := registryimport.Plan(docs, o)
	if !r.dryRun {
		if err := registerAll(ctx, c, results); err != nil {
			fmt.Fprintf(stderr, "mcp-hub servers import: %v\n", err)
		}
		if r.wait > 0 {
			if err := awaitConnections(ctx, c, results, r.wait); err != nil {
				fmt.Fprintf(stderr, "mcp-hub servers import: %v\n", err)
			}
		}
	}
	if err := printImport(stdout, r.output, results); err != nil {
		return err
	}
	failed := 0
	for _, r := range results {
		if r.Status == registryimport.StatusFailed || r.Status == statusError {
			failed++
		}
	}
	if failed > 0 {
		fmt.Fprintf(stderr, "mcp-hub servers import: %d of %d servers failed\n", failed, len(results))
		return exitStatus(1)
	}
	return nil
}

// registerAll posts each planned entry. The hub's refusal of one entry
// (400, 409) is that server's and the others go on; any other refusal is
// about the caller or the hub (401, 403, no store), so the rest are not
// sent and the error says so.
func registerAll(ctx context.Context, c hubClient, results []importResult) error {
	for i := range results {
		r := &results[i]
		if r.Status != registryimport.StatusReady {
			continue
		}
		body, _ := json.Marshal(r.Entry)
		status, b, err := c.send(ctx, http.MethodPost, "/api/mcp/server", body, nil)
		switch {
		case err != nil:
			if ue := (*url.Error)(nil); errors.As(err, &ue) {
				err = ue.Err // its URL is the hub's, which the user gave
			}
			r.Status, r.Reason = registryimport.StatusFailed, "POST /api/mcp/server: "+err.Error()
		case status == http.StatusOK:
			r.Status = statusRegistered
			continue
		default:
			r.Status, r.Reason = registryimport.StatusFailed, fmt.Sprintf("the hub refused: %d %s: %s", status, http.StatusText(status), httpjson.ErrorText(b))
			if status == http.StatusBadRequest || status == http.StatusConflict {
				continue
			}
		}
		for j := i + 1; j < len(results); j++ {
			if results[j].Status == registryimport.StatusReady {
				results[j].Status, results[j].Reason = registryimport.StatusFailed, "not sent: "+r.Name+" failed first"
			}
		}
		return fmt.Errorf("stopped at %s: %s", r.Name, r.Reason)
	}
	return nil
}

// awaitConnections polls the hub's listing until every registered server
// is listed past connecting, or for wait, and takes its phase and message:
// the dial policy, a registration loop or an unset credential show there,
// not in the answer to the registration.
func awaitConnections(ctx context.Context, c hubClient, results []importResult, wait time.Duration) error {
	pending := func() bool {
		return slices.ContainsFunc(results, func(r importResult) bool { return r.Status == statusRegistered || r.Status == "connecting" })
	}
	if !pending() {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		b, err := c.do(ctx, http.MethodGet, "/api/mcp/servers", nil)
		if err == nil {
			err = takePhases(b, results)
		}
		if err != nil && ctx.Err() == nil {
			return fmt.Errorf("read what the hub connected: %w", err)
		}
		if !pending() {
			return nil
		}
		select {
		case <-ctx.Done():
			for i := range results {
				if r := &results[i]; r.Status == statusRegistered || r.Status == "connecting" {
					r.Reason = cmp.Or(r.Reason, fmt.Sprintf("not connected within --wait %s", wait))
				}
			}
			return nil
		case <-tick.C:
		}
	}
}

// takePhases sets the status of each registered result to the phase the
// hub's listing (GET /api/mcp/servers) gives its name, when it is listed.
func takePhases(listing []byte, results []importResult) error {
	var v struct {
		Servers []struct {
			Metadata struct{ Name string }
			Status   struct{ Phase, Message string }
		}
	}
	if err := json.Unmarshal(listing, &v); err != nil {
		return fmt.Errorf("read the hub's listing: %w", err)
	}
	for i := range results {
		r := &results[i]
		if r.Status != statusRegistered && r.Status != "connecting" {
			continue
		}
		for _, s := range v.Servers {
			if s.Metadata.Name == r.Name && s.Status.Phase != "" {
				r.Status, r.Reason = s.Status.Phase, strings.ReplaceAll(s.Status.Message, "\n", " ")
			}
		}
	}
	return nil
}

// printImport prints the results as a table, or as {"servers": [...]}
// in JSON or YAML.
func printImport(w io.Writer, format string, results []importResult) error {
	b, err := json.MarshalIndent(map[string][]importResult{"servers": results}, "", "  ")
	if err != nil {
		return err
	}
	return writeOutput(w, format, append(b, '\n'), func(w io.Writer, _ []byte, _ bool) error { return printImportTable(w, results) })
}

// printImportTable prints the results as a table.
func printImportTable(w io.Writer, results []importResult) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "SERVER\tNAME\tSTATUS\tURL\tDETAIL\n")
	for _, r := range results {
		detail := r.Reason
		if detail == "" && r.URL != "" {
			detail = r.Transport
			if r.SecretRef != "" {
				detail += ", bearer from " + r.SecretRef
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Server, cmp.Or(r.Name, "-"), r.Status, cmp.Or(r.URL, "-"), cmp.Or(detail, "-"))
	}
	return tw.Flush()
}
