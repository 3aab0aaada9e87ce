// Package clientconfig writes a hub into an MCP client's own configuration
// file (Claude Code, Claude Desktop, VS Code, Cursor, Windsurf, Zed, Codex,
// Gemini CLI) at the path the client reads, or shows the snippet to paste.
// A file is merged, never replaced: only the hub's entry, under its name,
// is added or replaced; every other byte stays as it was (JSON files are
// edited as text, so order, indentation and JSONC comments survive). A
// file that cannot be read as the client's format is refused, naming the
// file and where it stops, and left alone. The web console shows the same
// snippets (Plan with a placeholder token), so the two never disagree.
package clientconfig

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
)

// Hub is what a client needs to reach the hub.
type Hub struct {
	// Name is the entry's name in the client's file: letters, digits, _
	// and -, starting with a letter (mcp-hub when empty).
	Name string
	// URL is the hub's MCP endpoint (Streamable HTTP), e.g.
	// http://127.0.0.1:8080/mcp.
	URL string
	// Token, when the hub takes a bearer token, is written as an
	// Authorization header where the client cannot read it from
	// elsewhere. Never in an error.
	Token string
	// TokenEnv names an environment variable holding the token: clients
	// that read variables in their config get a reference to it instead of
	// the token (VS Code without it asks for the token and keeps it in
	// its secret storage).
	TokenEnv string
	// OAuth: the hub is an OAuth resource server; the client runs the
	// flow itself, so no header is written.
	OAuth bool
}

// Env is where the standard paths are: the user's home, the OS (GOOS) and
// the environment variables that move them (APPDATA, XDG_CONFIG_HOME,
// CODEX_HOME).
type Env struct {
	Home   string
	GOOS   string
	Getenv func(string) string
}

// LocalEnv is this machine's Env.
func LocalEnv() (Env, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return Env{}, fmt.Errorf("finding the home directory: %w", err)
	}
	return Env{Home: home, GOOS: runtime.GOOS, Getenv: os.Getenv}, nil
}

func (e Env) get(k string) string {
	if e.Getenv == nil {
		return ""
	}
	return e.Getenv(k)
}

// Change is a client's file before and after the hub's entry is merged in.
type Change struct {
	Client string
	Path   string
	// Exists says the file was there; Before is its content.
	Exists bool
	Before []byte
	After  []byte
	// Replaced says the file already had an entry under the hub's name.
	Replaced bool
	// Snippet is the hub's entry as a file of its own: what to paste.
	Snippet string
	// Note is what the user still has to do, if anything (set a variable,
	// sign in).
	Note string
}

// Unchanged says the file already holds the entry as it would be written.
func (c Change) Unchanged() bool { return c.Exists && bytes.Equal(c.Before, c.After) }

var nameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,63}$`)

// Clients lists the clients' ids, in the order the console shows them.
func Clients() []string {
	all := specs()
	ids := make([]string, len(all))
	for i, c := range all {
		ids[i] = c.id
	}
	return ids
}

// Title is a client's name as people write it ("" for an unknown id).
func Title(client string) string {
	if c, ok := lookup(client); ok {
		return c.title
	}
	return ""
}

func lookup(id string) (spec, bool) {
	all := specs()
	i := slices.IndexFunc(all, func(c spec) bool { return c.id == id })
	if i < 0 {
		return spec{}, false
	}
	return all[i], true
}

func (h Hub) check() (Hub, error) {
	if h.Name == "" {
		h.Name = "mcp-hub"
	}
	if !nameRE.MatchString(h.Name) {
		return h, fmt.Errorf("name %q: use letters, digits, _ and -, starting with a letter (at most 64)", h.Name)
	}
	u, err := url.Parse(h.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return h, fmt.Errorf("hub URL %q: want http:// or https:// with a host, e.g. http://127.0.0.1:8080/mcp", h.URL)
	}
	if h.OAuth && (h.Token != "" || h.TokenEnv != "") {
		return h, errors.New("a hub is connected with a token or with OAuth, not both")
	}
	if h.TokenEnv != "" && !envRE.MatchString(h.TokenEnv) {
		return h, fmt.Errorf("token variable %q: not an environment variable name", h.TokenEnv)
	}
	return h, nil
}

var envRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Plan reads the client's file at its standard path and merges the hub's
// entry into it, writing nothing. On an error about the file, the Change
// still has Path and Snippet, so the entry can be added by hand.
func Plan(client string, hub Hub, env Env) (Change, error) {
	c, ok := lookup(client)
	if !ok {
		return Change{}, fmt.Errorf("unknown client %q: one of %v", client, Clients())
	}
	hub, err := hub.check()
	if err != nil {
		return Change{}, err
	}
	e, err := c.entry(hub)
	if err != nil {
		return Change{}, fmt.Errorf("%s: %w", c.title, err)
	}
	ch := Change{Client: c.id, Note: e.note}
	if ch.Snippet, err = c.merge(nil, hub.Name, e); err != nil {
		return Change{}, fmt.Errorf("%s: writing the snippet: %w", c.title, err)
	}
	if env.Home == "" {
		return ch, errors.New("no home directory to find the client's file in")
	}
	ch.Path = c.path(env)
	before, err := os.ReadFile(ch.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return ch, fmt.Errorf("reading %s: %w", ch.Path, err)
	default:
		ch.Exists, ch.Before = true, before
	}
	after, err := c.merge(before, hub.Name, e)
	if err != nil {
		return ch, fmt.Errorf("%s: %w (the file is left as it is)", ch.Path, err)
	}
	ch.After = []byte(after)
	ch.Replaced, err = c.had(before, hub.Name)
	if err != nil {
		return ch, fmt.Errorf("%s: %w (the file is left as it is)", ch.Path, err)
	}
	return ch, nil
}

// Apply writes After to Path atomically (a temporary file beside it,
// renamed over it), keeping the file's mode (0600 for a new file) and
// creating its directories. A file changed since Plan read it is refused.
// A symlinked file is written where the link points.
func (c Change) Apply() error {
	if c.Path == "" || c.After == nil {
		return errors.New("nothing planned to write")
	}
	target := c.Path
	if resolved, err := filepath.EvalSymlinks(c.Path); err == nil {
		target = resolved
	}
	mode := fs.FileMode(0o600)
	now, err := os.ReadFile(target)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if c.Exists {
			return fmt.Errorf("%s was removed since it was read: run again", c.Path)
		}
	case err != nil:
		return fmt.Errorf("reading %s: %w", c.Path, err)
	default:
		if !c.Exists || !bytes.Equal(now, c.Before) {
			return fmt.Errorf("%s changed since it was read: run again", c.Path)
		}
		info, err := os.Stat(target)
		if err != nil {
			return fmt.Errorf("reading %s: %w", c.Path, err)
		}
		mode = info.Mode().Perm()
	}
	dir := filepath.Dir(target)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(target)+".*.tmp")
	if err != nil {
		return fmt.Errorf("writing %s: %w", c.Path, err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename there is nothing to remove
	if err := tmp.Chmod(mode); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("writing %s: %w", c.Path, err)
	}
	if _, err := tmp.Write(c.After); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("writing %s: %w", c.Path, err)
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("writing %s: %w", c.Path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", c.Path, err)
	}
	if err := os.Rename(tmp.Name(), target); err != nil {
		return fmt.Errorf("writing %s: %w", c.Path, err)
	}
	return nil
}

// Connect is `mcp-hub connect CLIENT`: it merges the hub into the client's
// file and says what it did, or, with print, writes the snippet and where
// it goes without touching the file. When the file cannot be merged, the
// snippet is printed for adding by hand and the error returned.
func Connect(w io.Writer, client string, hub Hub, env Env, print bool) error {
	ch, err := Plan(client, hub, env)
	if ch.Snippet == "" {
		return err
	}
	name := hub.Name
	if name == "" {
		name = "mcp-hub"
	}
	if print || err != nil {
		where := ch.Path
		if where == "" {
			where = "the client's configuration"
		}
		if print {
			fmt.Fprintf(w, "# %s: %s\n", Title(client), where)
		} else {
			fmt.Fprintf(w, "add this by hand to %s:\n\n", where)
		}
		fmt.Fprint(w, ch.Snippet)
		if ch.Note != "" {
			fmt.Fprintf(w, "\n%s\n", ch.Note)
		}
		if print {
			return nil // the file is not touched, whatever it holds
		}
		return err
	}
	switch {
	case ch.Unchanged():
		fmt.Fprintf(w, "%s already has %s\n", ch.Path, name)
	default:
		if err := ch.Apply(); err != nil {
			return err
		}
		verb := "added"
		if ch.Replaced {
			verb = "replaced"
		}
		fmt.Fprintf(w, "wrote %s (%s %s)\n", ch.Path, verb, name)
	}
	if ch.Note != "" {
		fmt.Fprintln(w, ch.Note)
	}
	return nil
}
