package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/purko-io/mcp-hub/internal/registrations"
	"github.com/purko-io/mcp-hub/internal/secrets"
)

// `mcp-hub servers import` registers the remote servers an MCP Registry
// server.json lists (a file, or a registry's answer) through the hub's own
// POST /api/mcp/server, one entry per server: the hub runs the checks it
// runs for any registration (name, URL, credential reference) and the dial
// policy when it connects, so the import never decides what the hub would
// refuse; it only turns the document into entries and says why a server
// could not become one.

// Bounds of reading a document: a registry is someone else's server.
const (
	maxDocument     = 4 << 20 // bytes of one file or page
	registryTimeout = 30 * time.Second
	maxRedirects    = 5
)

// officialMeta is the key of the official registry's _meta block of a
// listed server (status, isLatest).
const officialMeta = "io.modelcontextprotocol.registry/official"

// importOptions are the flags of `servers import` that shape entries.
type importOptions struct {
	name      string            // --name: the one server's hub name
	secretRef string            // --secret-ref: for servers whose Authorization header is required
	vars      map[string]string // --var: values of {variables} in remote URLs
}

// serverDoc is one server.json of the document.
type serverDoc struct {
	// deleted is the official registry's status "deleted".
	deleted  bool
	Name     string            `json:"name"`
	Remotes  []json.RawMessage `json:"remotes"`
	Packages []json.RawMessage `json:"packages"`
}

// remoteSpec is a server.json remote: a transport the server runs at.
type remoteSpec struct {
	Type      string               `json:"type"`
	URL       string               `json:"url"`
	Headers   []inputSpec          `json:"headers"`
	Variables map[string]inputSpec `json:"variables"`
	// TransportType is the type's name before the 2025-09-29 schema,
	// read only to say so.
	TransportType string `json:"transport_type"`
}

// inputSpec is a server.json Input: what a client must (or may) supply;
// Name is a header's.
type inputSpec struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	IsRequired  bool     `json:"isRequired"`
	IsSecret    bool     `json:"isSecret"`
	Value       string   `json:"value"`
	Default     string   `json:"default"`
	Choices     []string `json:"choices"`
}

// packageSpec is a server.json package: something a client runs itself.
type packageSpec struct {
	RegistryType string `json:"registryType"`
	Identifier   string `json:"identifier"`
	Version      string `json:"version"`
}

// importResult is what became of one server of the document; the rows of
// the table and the items of -o json.
type importResult struct {
	Server    string `json:"server"`         // its server.json name
	Name      string `json:"name,omitempty"` // the hub's name for it
	URL       string `json:"url,omitempty"`  // as a message may show it
	Transport string `json:"transport,omitempty"`
	SecretRef string `json:"secretRef,omitempty"`
	// Status: would-register (--dry-run), registered, then what the hub
	// lists (connected, connecting, error) after --wait; skipped (nothing
	// the hub can connect), failed (missing input, or the hub refused).
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`

	entry registrations.Entry
}

// Statuses of an importResult.
const (
	statusReady      = "would-register"
	statusRegistered = "registered"
	statusSkipped    = "skipped"
	statusFailed     = "failed"
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
	o := importOptions{vars: map[string]string{}}
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
				o.vars[k] = v
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
	fs.StringVar(&o.name, "name", "", "the hub's name for the server, when SOURCE holds one")
	fs.StringVar(&o.secretRef, "secret-ref", "", "for servers whose Authorization header is required: the labelled Secret (Kubernetes) or listed environment variable (laptop) holding the token")
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
func runServersImport(ctx context.Context, c hubClient, source string, o importOptions, r importRun, stdout, stderr io.Writer) error {
	docs, err := readServerDocs(ctx, source, r.maxPages)
	if err != nil {
		return err
	}
	if o.name != "" && len(docs) != 1 {
		return usagef("--name names one server; %s holds %d", secrets.URLForMessage(source), len(docs))
	}
	results := planImport(docs, o)
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
		if r.Status == statusFailed || r.Status == statusError {
			failed++
		}
	}
	if failed > 0 {
		fmt.Fprintf(stderr, "mcp-hub servers import: %d of %d servers failed\n", failed, len(results))
		return exitStatus(1)
	}
	return nil
}

// readServerDocs reads source, a file or an http(s) URL, and every page a
// registry list links to. Nothing is registered from a document any page
// of which is unreadable, so an import is not cut short by its reader.
func readServerDocs(ctx context.Context, source string, maxPages int) ([]serverDoc, error) {
	u, err := url.Parse(source)
	if err != nil || u.Scheme == "" || len(u.Scheme) == 1 { // C:\ is a file
		b, err := readBounded(fileReader(source))
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", source, err)
		}
		docs, next, err := parseServerDocs(source, b)
		if err == nil && next != "" {
			err = fmt.Errorf("%s: $.metadata.nextCursor: the list goes on; import from the registry's URL to read every page", source)
		}
		return latestOnly(docs), err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s: a registry is read over http(s) only", secrets.URLForMessage(source))
	}
	hc := &http.Client{Timeout: registryTimeout, CheckRedirect: func(r *http.Request, via []*http.Request) error {
		if len(via) >= maxRedirects {
			return fmt.Errorf("more than %d redirects", maxRedirects)
		}
		if r.URL.Scheme != "http" && r.URL.Scheme != "https" {
			return fmt.Errorf("redirect to %s: http(s) only", r.URL.Scheme)
		}
		return nil
	}}
	var all []serverDoc
	seen := map[string]bool{}
	page := *u
	for n := 1; ; n++ {
		where := secrets.URLForMessage(page.String())
		if n > 1 {
			where += fmt.Sprintf(" (page %d)", n)
		}
		b, err := fetchDocument(ctx, hc, page.String())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		docs, next, err := parseServerDocs(where, b)
		if err != nil {
			return nil, err
		}
		all = append(all, docs...)
		switch {
		case next == "":
			return latestOnly(all), nil
		case seen[next]:
			return nil, fmt.Errorf("%s: $.metadata.nextCursor %q was given before: the registry's pages go round", where, next)
		case n == maxPages:
			return nil, fmt.Errorf("%s: the list has more than %d pages (--max-pages); narrow it (?search=) or raise --max-pages", where, maxPages)
		}
		seen[next] = true
		q := page.Query()
		q.Set("cursor", next)
		page.RawQuery = q.Encode()
	}
}

// fileReader opens path lazily, so readBounded reports the error.
func fileReader(path string) func() (io.ReadCloser, error) {
	return func() (io.ReadCloser, error) { return os.Open(path) }
}

// readBounded reads what open opens, refusing more than maxDocument.
func readBounded(open func() (io.ReadCloser, error)) ([]byte, error) {
	rc, err := open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, maxDocument+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxDocument {
		return nil, fmt.Errorf("larger than %d MiB", maxDocument>>20)
	}
	return b, nil
}

// fetchDocument GETs one registry page; an answer other than 200 is an
// error with the registry's message.
func fetchDocument(ctx context.Context, hc *http.Client, rawURL string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	var status int
	b, err := readBounded(func() (io.ReadCloser, error) {
		resp, err := hc.Do(req)
		var ue *url.Error
		if errors.As(err, &ue) {
			return nil, ue.Err // without the URL, which the caller names as a message may show it
		}
		if err != nil {
			return nil, err
		}
		status = resp.StatusCode
		return resp.Body, nil
	})
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("%d %s: %s", status, http.StatusText(status), errorText(b))
	}
	return b, nil
}

// parseServerDocs reads one document: a server.json, a registry's answer
// for one server ({"server": ...}) or a list page ({"servers": [...]},
// whose metadata.nextCursor is returned). where names the document in
// errors, which also give the JSON path.
func parseServerDocs(where string, b []byte) (docs []serverDoc, next string, err error) {
	var top map[string]json.RawMessage
	if err := decodeAt(b, "$", &top); err != nil {
		return nil, "", fmt.Errorf("%s: %w", where, err)
	}
	fail := func(err error) ([]serverDoc, string, error) { return nil, "", fmt.Errorf("%s: %w", where, err) }
	switch {
	case top == nil:
		return fail(errors.New("$: null, want a server.json, a registry answer {\"server\": ...} or a list {\"servers\": [...]}"))
	case top["servers"] != nil:
		var items []json.RawMessage
		if err := decodeAt(top["servers"], "$.servers", &items); err != nil {
			return fail(err)
		}
		var meta struct {
			NextCursor string `json:"nextCursor"`
		}
		if m := top["metadata"]; m != nil {
			if err := decodeAt(m, "$.metadata", &meta); err != nil {
				return fail(err)
			}
		}
		for i, it := range items {
			d, err := parseListed(fmt.Sprintf("$.servers[%d]", i), it, false)
			if err != nil {
				return fail(err)
			}
			if d != nil {
				docs = append(docs, *d)
			}
		}
		return docs, meta.NextCursor, nil
	case top["server"] != nil:
		d, err := parseListed("$", b, true)
		if err != nil {
			return fail(err)
		}
		return []serverDoc{*d}, "", nil
	case top["name"] != nil:
		d, err := parseServer("$", b)
		if err != nil {
			return fail(err)
		}
		return []serverDoc{d}, "", nil
	}
	return fail(errors.New("$: not a server.json (no name), a registry answer {\"server\": ...} or a list {\"servers\": [...]}"))
}

// parseListed reads a registry's ServerResponse, {"server", "_meta"}: nil
// when the registry says it is not the latest version and older is false
// (a list of every version names a server more than once; an answer for
// one version is what was asked for).
func parseListed(path string, b []byte, older bool) (*serverDoc, error) {
	var item struct {
		Server json.RawMessage            `json:"server"`
		Meta   map[string]json.RawMessage `json:"_meta"`
	}
	if err := decodeAt(b, path, &item); err != nil {
		return nil, err
	}
	if item.Server == nil {
		return nil, fmt.Errorf("%s.server: is required", path)
	}
	var official struct {
		Status   string `json:"status"`
		IsLatest *bool  `json:"isLatest"`
	}
	if m := item.Meta[officialMeta]; m != nil {
		if err := decodeAt(m, fmt.Sprintf("%s._meta[%q]", path, officialMeta), &official); err != nil {
			return nil, err
		}
	}
	if official.IsLatest != nil && !*official.IsLatest && !older {
		return nil, nil
	}
	d, err := parseServer(path+".server", item.Server)
	d.deleted = official.Status == "deleted"
	return &d, err
}

// parseServer reads one server.json; its remotes and packages are read
// when planned, each with its own path.
func parseServer(path string, b []byte) (serverDoc, error) {
	var d serverDoc
	if err := decodeAt(b, path, &d); err != nil {
		return d, err
	}
	if d.Name == "" {
		return d, fmt.Errorf("%s.name: is required", path)
	}
	for i, r := range d.Remotes {
		if err := decodeAt(r, fmt.Sprintf("%s.remotes[%d]", path, i), &remoteSpec{}); err != nil {
			return d, err
		}
	}
	for i, p := range d.Packages {
		if err := decodeAt(p, fmt.Sprintf("%s.packages[%d]", path, i), &packageSpec{}); err != nil {
			return d, err
		}
	}
	return d, nil
}

// latestOnly keeps the first document of each server name: a registry's
// list of versions (newest first) names a server more than once.
func latestOnly(docs []serverDoc) []serverDoc {
	seen := map[string]bool{}
	return slices.DeleteFunc(docs, func(d serverDoc) bool {
		dup := seen[d.Name]
		seen[d.Name] = true
		return dup
	})
}

// decodeAt unmarshals b, whose JSON path is path, into v; the error names
// the path of what does not fit and what was expected there.
func decodeAt(b []byte, path string, v any) error {
	err := json.Unmarshal(b, v)
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &te):
		if te.Field != "" {
			path += "." + te.Field
		}
		return fmt.Errorf("%s: %s, want %s", path, jsonKind(te.Value), goKind(te.Type))
	case errors.As(err, &se):
		line := 1 + bytes.Count(b[:min(int(se.Offset), len(b))], []byte("\n"))
		return fmt.Errorf("%s: not JSON: line %d: %v", path, line, err)
	}
	return fmt.Errorf("%s: %w", path, err)
}

// jsonKind names a JSON value as encoding/json reports it.
func jsonKind(v string) string {
	if strings.HasPrefix(v, "number") {
		return "a number"
	}
	switch v {
	case "object", "array":
		return "an " + v
	case "bool":
		return "true or false"
	}
	return "a " + v
}

// goKind names what a Go type reads from JSON.
func goKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 { // json.RawMessage
			return "a value"
		}
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "a number"
}

// planImport turns each server.json into the entry to register, or says
// why it cannot become one.
func planImport(docs []serverDoc, o importOptions) []importResult {
	results := make([]importResult, 0, len(docs))
	taken := map[string]string{} // hub name -> server.json name
	for _, d := range docs {
		r := planServer(d, o)
		r.Name = cmp.Or(o.name, hubName(d.Name))
		if r.Status == statusReady {
			switch {
			case r.Name == "":
				r.Status, r.Reason = statusFailed, "no hub name can be made of it; import it alone with --name"
			case taken[r.Name] != "":
				r.Status, r.Reason = statusFailed, fmt.Sprintf("name %s is %s's in this import; import it alone with --name", r.Name, taken[r.Name])
			default:
				taken[r.Name] = d.Name
				r.entry.Name = r.Name
			}
		}
		results = append(results, r)
	}
	return results
}

// planServer chooses the remote of one server: streamable-http first,
// then sse. A server none of whose remotes fits is skipped when the hub
// cannot connect it whatever the flags, failed when a flag would do.
func planServer(d serverDoc, o importOptions) importResult {
	r := importResult{Server: d.Name}
	if d.deleted {
		r.Status, r.Reason = statusSkipped, "deleted in the registry"
		return r
	}
	if len(d.Remotes) == 0 {
		r.Status, r.Reason = statusSkipped, packagesReason(d.Packages)
		return r
	}
	var skips, fails reasons
	for _, want := range []string{"streamable-http", "sse"} {
		for i, raw := range d.Remotes {
			var rs remoteSpec
			_ = json.Unmarshal(raw, &rs) // checked by parseServer
			if rs.Type != want {
				continue
			}
			e, missing, why := planRemote(rs, o)
			switch {
			case missing != "":
				fails.add(i, missing)
			case why != "":
				skips.add(i, why)
			default:
				r.entry, r.URL, r.Transport, r.SecretRef = e, secrets.URLForMessage(e.URL), want, e.SecretRef
				r.Status = statusReady
				return r
			}
		}
	}
	for i, raw := range d.Remotes {
		var rs remoteSpec
		_ = json.Unmarshal(raw, &rs)
		switch {
		case rs.Type == "" && rs.TransportType != "":
			skips.add(i, "transport_type is the server.json of before the 2025-09-29 schema; this reads type (streamable-http, sse)")
		case rs.Type != "streamable-http" && rs.Type != "sse":
			skips.add(i, fmt.Sprintf("type %q: the hub connects streamable-http and sse remotes", rs.Type))
		}
	}
	if len(fails) > 0 {
		r.Status, r.Reason = statusFailed, fails.String()
	} else {
		r.Status, r.Reason = statusSkipped, skips.String()
	}
	return r
}

// reasons are why remotes were not chosen, each once with every remote it
// applies to: "remotes[1], remotes[0]: its Authorization header ...".
type reasons []struct {
	msg     string
	remotes []string
}

func (rs *reasons) add(i int, msg string) {
	at := fmt.Sprintf("remotes[%d]", i)
	for j := range *rs {
		if (*rs)[j].msg == msg {
			(*rs)[j].remotes = append((*rs)[j].remotes, at)
			return
		}
	}
	*rs = append(*rs, struct {
		msg     string
		remotes []string
	}{msg, []string{at}})
}

func (rs reasons) String() string {
	var out []string
	for _, r := range rs {
		out = append(out, strings.Join(r.remotes, ", ")+": "+r.msg)
	}
	return strings.Join(out, "; ")
}

// urlVariable is a {name} of a remote's URL template.
var urlVariable = regexp.MustCompile(`\{([^{}]+)\}`)

// planRemote makes the entry of one remote. missing says which flag the
// remote needs; why, why the hub cannot connect it at all.
func planRemote(rs remoteSpec, o importOptions) (e registrations.Entry, missing, why string) {
	var need []string
	template := rs.URL
	for _, m := range urlVariable.FindAllStringSubmatch(rs.URL, -1) {
		k := m[1]
		v, given := o.vars[k]
		in := rs.Variables[k]
		switch {
		case in.IsSecret:
			return e, "", fmt.Sprintf("URL variable {%s} is a secret, and the hub keeps a registered URL in plain text", k)
		case !given && in.Default == "":
			if in.Description != "" {
				k += " (" + in.Description + ")"
			}
			need = append(need, "--var "+k)
			continue
		case !given:
			v = in.Default
		}
		if len(in.Choices) > 0 && !slices.Contains(in.Choices, v) {
			return e, fmt.Sprintf("URL variable {%s}: %q is not one of %s", k, v, strings.Join(in.Choices, ", ")), ""
		}
		rs.URL = strings.ReplaceAll(rs.URL, m[0], v)
	}
	if len(need) > 0 {
		return e, fmt.Sprintf("its URL %s needs %s", template, strings.Join(need, ", ")), ""
	}
	// The hub takes a URL whose path ends in /sse as SSE and any other as
	// streamable HTTP (registrations carry no transport).
	if u, err := url.Parse(rs.URL); err == nil && strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/sse") != (rs.Type == "sse") {
		return e, "", fmt.Sprintf("%s remote at %s: the hub takes a URL whose path ends in /sse as SSE and any other as streamable HTTP", rs.Type, secrets.URLForMessage(rs.URL))
	}
	e.URL = rs.URL
	bearerRequired := false
	for _, h := range rs.Headers {
		if !strings.EqualFold(h.Name, "Authorization") {
			if h.IsRequired || h.Value != "" {
				return e, "", fmt.Sprintf("header %s: the hub sends an upstream no header but Authorization: Bearer (from --secret-ref)", h.Name)
			}
			continue // optional, and not sent
		}
		if h.Value != "" && !strings.HasPrefix(strings.ToLower(h.Value), "bearer ") {
			return e, "", "header Authorization: not a bearer token, the one kind the hub sends"
		}
		bearerRequired = bearerRequired || h.IsRequired
		if o.secretRef != "" {
			e.Auth, e.SecretRef = "bearer", o.secretRef
		}
	}
	if bearerRequired && o.secretRef == "" {
		return e, "its Authorization header is required: give --secret-ref, a labelled Secret (Kubernetes) or a variable of registrations.credentialRefs (laptop) holding the token", ""
	}
	return e, "", ""
}

// packagesReason says why a server that lists only packages is skipped,
// naming them. An oci package could be deployed on Kubernetes, but a
// package's arguments and environment (often required secrets) have no
// place in a registration, so the import prints the command to run instead
// of running someone's image unasked.
func packagesReason(pkgs []json.RawMessage) string {
	if len(pkgs) == 0 {
		return "no remotes and no packages: nothing to connect"
	}
	var names, hints []string
	for _, raw := range pkgs {
		var p packageSpec
		_ = json.Unmarshal(raw, &p) // checked by parseServer
		ref := strings.TrimSpace(p.Identifier + " " + p.Version)
		names = append(names, p.RegistryType+" "+ref)
		if p.RegistryType == "oci" {
			img := p.Identifier
			if p.Version != "" && !strings.Contains(img, "@") && !strings.Contains(img[strings.LastIndex(img, "/")+1:], ":") {
				img += ":" + p.Version
			}
			hints = append(hints, "on Kubernetes: mcp-hub servers add NAME --image "+img+" --port PORT")
		}
	}
	msg := "packages run on the client, the hub connects remotes: " + strings.Join(names, ", ")
	if len(hints) > 0 {
		msg += " (" + strings.Join(hints, "; ") + ")"
	}
	return msg
}

// hubName is the hub's name for a server.json name: its part after the
// slash (io.github.acme/weather -> weather), lower-case, every other
// character than a-z 0-9 - turned into -, at most 63, as a DNS label
// (the name of a Kubernetes object) must be.
func hubName(serverName string) string {
	s := strings.ToLower(serverName[strings.LastIndex(serverName, "/")+1:])
	var b strings.Builder
	for _, c := range s {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			b.WriteRune(c)
		} else if b.Len() > 0 && !strings.HasSuffix(b.String(), "-") {
			b.WriteByte('-')
		}
	}
	s = b.String()
	return strings.TrimRight(s[:min(len(s), 63)], "-")
}

// registerAll posts each planned entry. The hub's refusal of one entry
// (400, 409) is that server's and the others go on; any other refusal is
// about the caller or the hub (401, 403, no store), so the rest are not
// sent and the error says so.
func registerAll(ctx context.Context, c hubClient, results []importResult) error {
	for i := range results {
		r := &results[i]
		if r.Status != statusReady {
			continue
		}
		body, _ := json.Marshal(r.entry)
		status, b, err := c.send(ctx, http.MethodPost, "/api/mcp/server", body, nil)
		switch {
		case err != nil:
			if ue := (*url.Error)(nil); errors.As(err, &ue) {
				err = ue.Err // its URL is the hub's, which the user gave
			}
			r.Status, r.Reason = statusFailed, "POST /api/mcp/server: "+err.Error()
		case status == http.StatusOK:
			r.Status = statusRegistered
			continue
		default:
			r.Status, r.Reason = statusFailed, fmt.Sprintf("the hub refused: %d %s: %s", status, http.StatusText(status), errorText(b))
			if status == http.StatusBadRequest || status == http.StatusConflict {
				continue
			}
		}
		for j := i + 1; j < len(results); j++ {
			if results[j].Status == statusReady {
				results[j].Status, results[j].Reason = statusFailed, "not sent: "+r.Name+" failed first"
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
