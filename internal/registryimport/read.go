// Package registryimport turns what an MCP Registry publishes into the
// hub's registrations: Read reads the documents (a server.json file, a
// registry's answer for one server, or its list pages), Plan makes each
// server.json the entry to register or says why it cannot become one.
// It registers nothing: `mcp-hub servers import` posts the entries
// through the hub's own API, so the hub runs the checks it runs for any
// registration and the import never decides what the hub would refuse.
// Its messages name the import's flags (--name, --var, --secret-ref,
// --max-pages), since they tell the user what to give it.
package registryimport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/purko-io/mcp-hub/internal/httpjson"
	"github.com/purko-io/mcp-hub/internal/secrets"
)

// Bounds of reading a document: a registry is someone else's server.
const (
	maxDocument     = 4 << 20 // bytes of one file or page
	registryTimeout = 30 * time.Second
	maxRedirects    = 5
)

// officialMeta is the key of the official registry's _meta block of a
// listed server (status, isLatest).
const officialMeta = "io.modelcontextprotocol.registry/official"

// Doc is one server.json of a source, checked as far as Plan relies on
// it: its remotes and packages decode, each with its JSON path in the
// error when not.
type Doc struct {
	// deleted is the official registry's status "deleted".
	deleted  bool
	Name     string            `json:"name"`
	Remotes  []json.RawMessage `json:"remotes"`
	Packages []json.RawMessage `json:"packages"`
}

// Read reads source, a file or an http(s) URL, and every page a registry
// list links to, at most maxPages; of a server listed in several versions
// only the first (the newest) is kept. Nothing is returned from a
// document any page of which is unreadable, so an import is not cut short
// by its reader. A file whose list goes on (nextCursor) is an error: its
// other pages are the registry's to give.
func Read(ctx context.Context, source string, maxPages int) ([]Doc, error) {
	u, err := url.Parse(source)
	if err != nil || u.Scheme == "" || len(u.Scheme) == 1 { // C:\ is a file
		b, err := readBounded(fileReader(source))
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", source, err)
		}
		docs, next, err := parseDocument(source, b)
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
	var all []Doc
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
		docs, next, err := parseDocument(where, b)
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
		return nil, fmt.Errorf("%d %s: %s", status, http.StatusText(status), httpjson.ErrorText(b))
	}
	return b, nil
}

// parseDocument reads one document: a server.json, a registry's answer
// for one server ({"server": ...}) or a list page ({"servers": [...]},
// whose metadata.nextCursor is returned). where names the document in
// errors, which also give the JSON path.
func parseDocument(where string, b []byte) (docs []Doc, next string, err error) {
	var top map[string]json.RawMessage
	if err := decodeAt(b, "$", &top); err != nil {
		return nil, "", fmt.Errorf("%s: %w", where, err)
	}
	fail := func(err error) ([]Doc, string, error) { return nil, "", fmt.Errorf("%s: %w", where, err) }
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
		return []Doc{*d}, "", nil
	case top["name"] != nil:
		d, err := parseServer("$", b)
		if err != nil {
			return fail(err)
		}
		return []Doc{d}, "", nil
	}
	return fail(errors.New("$: not a server.json (no name), a registry answer {\"server\": ...} or a list {\"servers\": [...]}"))
}

// parseListed reads a registry's ServerResponse, {"server", "_meta"}: nil
// when the registry says it is not the latest version and older is false
// (a list of every version names a server more than once; an answer for
// one version is what was asked for).
func parseListed(path string, b []byte, older bool) (*Doc, error) {
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
func parseServer(path string, b []byte) (Doc, error) {
	var d Doc
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
func latestOnly(docs []Doc) []Doc {
	seen := map[string]bool{}
	return slices.DeleteFunc(docs, func(d Doc) bool {
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
