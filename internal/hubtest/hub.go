package hubtest

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// StartTimeout bounds how long a start waits for a process to be ready when
// the caller does not say: generous, because `make test` runs every package
// at once under -race on small machines, where a node process alone takes
// a second or two to start.
const StartTimeout = 60 * time.Second

// Readiness is what LaunchHub waits for before it returns.
type Readiness int

const (
	// Listening: the hub printed where it listens. Nothing may be
	// connected yet; a test that watches the hub come up starts here.
	Listening Readiness = iota
	// Ready: and GET /readyz answers 200 (every discovery source synced and
	// every configured upstream tried once).
	Ready
	// Connected: Ready, and the listing shows at least one server, every
	// one of them connected.
	Connected
)

// HubOptions says how to run the hub.
type HubOptions struct {
	// Bin is the hub binary; empty builds it (Build).
	Bin string
	// Listen is the --listen address; empty is 127.0.0.1:0 (a free port,
	// which the hub prints).
	Listen string
	// Config is a config file's content (YAML), written to a file of its
	// own that is removed when the hub exits. ConfigFile names a file the
	// caller owns (to edit it under the running hub) instead. Neither: the
	// hub's embedded default.
	Config, ConfigFile string
	// LogLevel is the --log-level; empty leaves the hub's default.
	LogLevel string
	// Args come after the flags above (a flag given twice: the last wins).
	Args []string
	// Env is added to the hub's environment, which is this process's
	// without MCP_SERVERS, KUBECONFIG, MCP_HUB_STATE_DIR and the
	// in-cluster variables: a developer's shell must not add upstreams,
	// state or a cluster behind a test's back. XDG_STATE_HOME (under which
	// each config has its state directory) is a fresh directory unless Env
	// sets it.
	Env []string
	// Dir is the hub's working directory; empty is this process's.
	Dir string
	// Wait is what to wait for; Timeout bounds the wait (StartTimeout when
	// zero).
	Wait    Readiness
	Timeout time.Duration
}

// Hub is a running hub process.
type Hub struct {
	*Process
	// Base is the hub's base URL, http://127.0.0.1:PORT, from the line in
	// which it says where it listens.
	Base string
}

// MCPURL is the hub's Streamable HTTP endpoint.
func (h *Hub) MCPURL() string { return h.Base + "/mcp" }

// listeningRE is the line the hub prints first on stdout.
var listeningRE = regexp.MustCompile(`listening on (http://\S+)/mcp\b`)

// LaunchHub runs `mcp-hub serve` as o says and waits until it is as ready
// as o.Wait asks; ctx bounds the build and the wait, not the hub's life. On
// any failure the hub is stopped and the error carries the end of its
// output. The first line the hub prints on stdout must say where it
// listens (deployment scripts read it).
func LaunchHub(ctx context.Context, o HubOptions) (*Hub, error) {
	if o.Config != "" && o.ConfigFile != "" {
		return nil, errors.New("hubtest: HubOptions with both Config and ConfigFile")
	}
	bin := o.Bin
	if bin == "" {
		var err error
		if bin, err = Build(ctx); err != nil {
			return nil, err
		}
	}
	args := []string{"serve", "--listen", cmp.Or(o.Listen, "127.0.0.1:0")}
	var onExit func()
	if o.Config != "" {
		dir, err := os.MkdirTemp("", "mcp-hub-hubtest-")
		if err != nil {
			return nil, err
		}
		onExit = func() { _ = os.RemoveAll(dir) }
		path := filepath.Join(dir, "hub.yaml")
		if err := os.WriteFile(path, []byte(o.Config), 0o600); err != nil {
			onExit()
			return nil, err
		}
		args = append(args, "--config", path)
	}
	if o.ConfigFile != "" {
		args = append(args, "--config", o.ConfigFile)
	}
	if o.LogLevel != "" {
		args = append(args, "--log-level", o.LogLevel)
	}
	// Each hub keeps its tool pins in a state directory of its own (o.Env
	// may name another, to see pins outlive a restart): never in the
	// developer's ~/.local/state, and never shared by tests that reuse
	// server names.
	stateDir, err := os.MkdirTemp("", "mcp-hub-hubtest-state-")
	if err != nil {
		if onExit != nil {
			onExit()
		}
		return nil, err
	}
	removeConfig := onExit
	onExit = func() {
		_ = os.RemoveAll(stateDir)
		if removeConfig != nil {
			removeConfig()
		}
	}
	cmd := exec.Command(bin, append(args, o.Args...)...)
	cmd.Dir = o.Dir
	cmd.Env = append(append(hubEnv(), "XDG_STATE_HOME="+stateDir), o.Env...)
	p, err := launch("mcp-hub", cmd, onExit)
	if err != nil {
		return nil, err
	}
	h, err := waitHub(ctx, p, o)
	if err != nil {
		_ = p.Stop(StopGrace)
		return nil, fmt.Errorf("%w\n--- output of mcp-hub:\n%s", err, Tail(p.Output()))
	}
	return h, nil
}

// StartHub is LaunchHub for a test: it fails t when the hub does not come
// up, and stops the hub at t.Cleanup (logging its output when t failed).
func StartHub(t testing.TB, o HubOptions) *Hub {
	t.Helper()
	h, err := LaunchHub(context.Background(), o)
	if err != nil {
		t.Fatalf("hubtest: %v", err)
	}
	h.stopAtCleanup(t)
	return h
}

// waitHub reads where the hub listens and waits for o.Wait.
func waitHub(ctx context.Context, p *Process, o HubOptions) (*Hub, error) {
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(o.Timeout, StartTimeout))
	defer cancel()
	first, err := p.WaitLine(ctx, func(string) bool { return true })
	if err != nil {
		return nil, fmt.Errorf("mcp-hub printed no listening line: %w", err)
	}
	m := listeningRE.FindStringSubmatch(first)
	if m == nil {
		return nil, fmt.Errorf("mcp-hub's first stdout line %q does not say where it listens", first)
	}
	h := &Hub{Process: p, Base: m[1]}
	var ready func() error
	switch o.Wait {
	case Listening:
		return h, nil
	case Ready:
		ready = h.ready
	case Connected:
		ready = func() error {
			// Ready first: every configured upstream was tried once, so
			// the listing below holds them all, not only the builtins
			// of a hub whose sources have not been read yet.
			if err := h.ready(); err != nil {
				return err
			}
			l, err := h.Listing("")
			if err != nil {
				return err
			}
			if !l.Connected() {
				return fmt.Errorf("not every server connected: %s", l.Summary())
			}
			return nil
		}
	default:
		return nil, fmt.Errorf("hubtest: unknown Readiness %d", o.Wait)
	}
	if err := p.pollWhileRunning(ctx, 20*time.Millisecond, ready); err != nil {
		return nil, fmt.Errorf("mcp-hub at %s not ready: %w", h.Base, err)
	}
	return h, nil
}

// ready is nil when GET /readyz answers 200.
func (h *Hub) ready() error {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.Base+"/readyz", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/readyz: %s", resp.Status)
	}
	return nil
}

// hubEnv is this process's environment without the variables that would
// give a hub child upstreams or a cluster of the developer's rather than of
// the test.
func hubEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "MCP_SERVERS", "KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT", "MCP_HUB_STATE_DIR":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// requestTimeout bounds one request of the harness to a process it runs.
const requestTimeout = 10 * time.Second

// Listing is GET /api/mcp/tools: the servers the hub knows and their tools.
type Listing struct {
	Servers    []ListedServer `json:"servers"`
	TotalTools int            `json:"totalTools"`
}

// ListedServer is one server of a Listing. Tools are objects (ToolObjects),
// or names with ?format=names (ToolNames).
type ListedServer struct {
	Name      string          `json:"name"`
	URL       string          `json:"url"`
	Transport string          `json:"transport"`
	Status    string          `json:"status"`
	Error     string          `json:"error"`
	ToolCount int             `json:"toolCount"`
	Tools     json.RawMessage `json:"tools"`
}

// ListedTool is one tool of a full listing.
type ListedTool struct {
	Name         string `json:"name"`
	Server       string `json:"server"`
	OriginalName string `json:"originalName"`
}

// FetchListing gets the listing of the hub at base (http://host:port);
// query is "" or "?format=names" (much less to encode for a large
// catalog). hc nil is http.DefaultClient.
func FetchListing(ctx context.Context, hc *http.Client, base, query string) (*Listing, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	url := base + "/api/mcp/tools" + query
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %.300s", url, resp.Status, body)
	}
	var l Listing
	if err := json.Unmarshal(body, &l); err != nil {
		return nil, fmt.Errorf("GET %s: %w: %.300s", url, err, body)
	}
	return &l, nil
}

// Listing is FetchListing of this hub, bounded by a 10 s timeout.
func (h *Hub) Listing(query string) (*Listing, error) {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	return FetchListing(ctx, nil, h.Base, query)
}

// Server returns the listed server called name.
func (l *Listing) Server(name string) (ListedServer, bool) {
	for _, s := range l.Servers {
		if s.Name == name {
			return s, true
		}
	}
	return ListedServer{}, false
}

// Connected reports whether the listing has servers, every one connected,
// and every one of names among them.
func (l *Listing) Connected(names ...string) bool {
	if len(l.Servers) == 0 {
		return false
	}
	for _, s := range l.Servers {
		if s.Status != "connected" {
			return false
		}
	}
	for _, n := range names {
		if _, ok := l.Server(n); !ok {
			return false
		}
	}
	return true
}

// Summary is a one-line account of the listing, for failure messages.
func (l *Listing) Summary() string {
	parts := make([]string, 0, len(l.Servers))
	for _, s := range l.Servers {
		p := fmt.Sprintf("%s=%s/%d tools", s.Name, s.Status, s.ToolCount)
		if s.Error != "" {
			p += fmt.Sprintf(" (error %q)", s.Error)
		}
		parts = append(parts, p)
	}
	return fmt.Sprintf("[%s] totalTools=%d", strings.Join(parts, ", "), l.TotalTools)
}

// ToolObjects decodes the tools of a full listing.
func (s ListedServer) ToolObjects() ([]ListedTool, error) {
	var tools []ListedTool
	err := json.Unmarshal(s.Tools, &tools)
	return tools, err
}

// ToolNames decodes the tools of a ?format=names listing.
func (s ListedServer) ToolNames() ([]string, error) {
	var names []string
	err := json.Unmarshal(s.Tools, &names)
	return names, err
}
