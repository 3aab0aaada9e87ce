// Package interop tests mcp-hub against real third-party MCP software: the
// official reference server (@modelcontextprotocol/server-everything) as the
// upstream over Streamable HTTP, legacy SSE and stdio, and the official
// TypeScript SDK client (@modelcontextprotocol/sdk, driven by client.mjs) as
// the downstream over /mcp, /sse and /ws. Both npm packages are pinned in
// package-lock.json; `make test-deps` installs them.
//
// Every process is started by internal/hubtest in its own process group and
// stopped by its PID in t.Cleanup; all traffic stays on 127.0.0.1 (the
// reference server binds all interfaces, but nothing outside the machine
// talks to it).
package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/purko-io/mcp-hub/internal/hubtest"
	"github.com/purko-io/mcp-hub/internal/secrets"
)

// Bounds for the polls below. They are generous because `make test` runs
// every package at once under -race on small CI machines, where a node
// process alone takes a second or two to start.
const (
	startTimeout   = hubtest.StartTimeout // hub connected to every upstream
	changeTimeout  = 30 * time.Second     // a status or catalog change shows up
	clientTimeout  = 90 * time.Second     // one run of client.mjs
	exitTimeout    = 10 * time.Second     // hub exits after SIGTERM ("a few seconds")
	pollInterval   = 150 * time.Millisecond
	markerEnvKey   = "MCP_HUB_INTEROP_MARKER"
	upstreamEnvKey = "EV_UPSTREAM" // which upstream a get-env answer came from
	instanceEnvKey = "EV_INSTANCE" // which start of that upstream
	depsHint       = "run `make test-deps` (npm ci in test/interop) first"
)

var (
	testDir      string   // test/interop, the working directory of go test
	hubBin       string   // the hub binary built by TestMain
	everything   string   // server-everything's dist/index.js, absolute
	clientScript string   // client.mjs, absolute
	wsNodeFlags  []string // node flags that give client.mjs a global WebSocket
)

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "interop: "+format+"\n", args...)
		return 1
	}
	var err error
	// go test runs a package's tests in its source directory.
	if testDir, err = os.Getwd(); err != nil {
		return fail("%v", err)
	}
	if everything, err = hubtest.EverythingScript(); err != nil {
		return fail("%v", err)
	}
	clientScript = filepath.Join(testDir, "client.mjs")
	if _, err := os.Stat(filepath.Join(testDir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		return fail("npm dependencies missing (%v): %s", err, depsHint)
	}
	// Node 20 has WebSocket only behind a flag; Node >= 22 has it built in
	// (and may one day drop the flag), so ask node rather than guess.
	if out, err := exec.Command("node", "-p", "typeof WebSocket").Output(); err != nil || strings.TrimSpace(string(out)) != "function" {
		wsNodeFlags = []string{"--experimental-websocket"}
	}
	if hubBin, err = hubtest.Build(context.Background()); err != nil {
		return fail("%v", err)
	}
	return m.Run()
}

// TestThroughHub puts the reference server behind the hub three times (one
// upstream per upstream transport) and talks to the hub with the official
// SDK client over each of its MCP transports.
func TestThroughHub(t *testing.T) {
	e := newEnv(t)
	e.addHTTP(t, "ev-http")
	e.addSSE(t, "ev-sse")
	e.addStdio(t, "ev-stdio", newMarker(t))
	e.startHub(t)
	all := []string{"ev-http", "ev-sse", "ev-stdio"}
	e.waitConnected(t, all...)

	t.Run("healthz and readyz", func(t *testing.T) {
		for _, path := range []string{"/healthz", "/readyz"} {
			code, body, err := httpGet(e.base + path)
			if err != nil || code != http.StatusOK {
				t.Errorf("GET %s = %d %q, %v; want 200", path, code, body, err)
			}
		}
	})

	t.Run("listing", func(t *testing.T) {
		l := e.listing(t)
		sum := 0
		for _, name := range all {
			sv, ok := l.Server(name)
			if !ok {
				t.Fatalf("listing has no server %s: %s", name, l.Summary())
			}
			wantTransport := map[string]string{"ev-http": "streamable-http", "ev-sse": "sse", "ev-stdio": "stdio"}[name]
			if sv.Status != "connected" || sv.Error != "" || sv.Transport != wantTransport {
				t.Errorf("%s: status %q error %q transport %q; want connected, no error, %s", name, sv.Status, sv.Error, sv.Transport, wantTransport)
			}
			tools, err := sv.ToolObjects()
			if err != nil {
				t.Fatalf("%s: tools are not objects: %v", name, err)
			}
			if sv.ToolCount <= 0 || sv.ToolCount != len(tools) {
				t.Errorf("%s: toolCount %d with %d tools; want the same number > 0", name, sv.ToolCount, len(tools))
			}
			sum += sv.ToolCount
			// The jq '.servers[].tools[].name' shape: every tool is an object
			// with its published name, server and (prefixed here) original name.
			for _, tl := range tools {
				if tl.Name != name+"__"+tl.OriginalName || tl.Server != name || tl.OriginalName == "" {
					t.Errorf("%s: tool {name %q server %q originalName %q}; want name %s__<originalName>", name, tl.Name, tl.Server, tl.OriginalName, name)
				}
			}
			for _, want := range []string{"echo", "get-sum", "get-env"} {
				if !slices.ContainsFunc(tools, func(tl hubtest.ListedTool) bool { return tl.Name == name+"__"+want }) {
					t.Errorf("%s: no tool %s__%s in the listing", name, name, want)
				}
			}
		}
		if l.TotalTools != sum {
			t.Errorf("totalTools = %d; want %d, the sum of toolCount of the connected servers", l.TotalTools, sum)
		}
	})

	t.Run("listing format=names", func(t *testing.T) {
		full, names := e.listing(t), e.listingNames(t)
		for _, name := range all {
			fsv, _ := full.Server(name)
			nsv, ok := names.Server(name)
			if !ok {
				t.Fatalf("?format=names has no server %s: %s", name, names.Summary())
			}
			got, err := nsv.ToolNames()
			if err != nil {
				t.Fatalf("%s: ?format=names tools are not a list of strings: %v: %s", name, err, nsv.Tools)
			}
			objs, _ := fsv.ToolObjects()
			want := make([]string, len(objs))
			for i, tl := range objs {
				want[i] = tl.Name
			}
			if !slices.Equal(got, want) || nsv.ToolCount != len(got) {
				t.Errorf("%s: ?format=names tools %q (toolCount %d); want %q as in the full listing", name, got, nsv.ToolCount, want)
			}
		}
	})

	for _, tc := range hubTransports {
		t.Run("sdk client over "+tc.path, func(t *testing.T) {
			url := tc.url(e.base)
			ops := [][]string{opList()}
			for _, up := range all {
				ops = append(ops,
					opCall(up+"__echo", map[string]any{"message": fmt.Sprintf("hello %s over %s", up, tc.kind)}),
					opCall(up+"__get-env", map[string]any{}))
			}
			ops = append(ops,
				opCall("ev-sse__get-sum", map[string]any{"a": 2, "b": 40}),
				opCall("no-such-server__echo", map[string]any{"message": "x"}),
				// The SDK checks structuredContent against the outputSchema
				// it got from tools/list, so both must pass the hub intact.
				opCall("ev-stdio__get-structured-content", map[string]any{"location": "Chicago"}))
			out := runClient(t, tc.kind, url, ops...)
			if out.Server.Name != "mcp-hub" {
				t.Errorf("initialize serverInfo.name = %q; want mcp-hub", out.Server.Name)
			}

			listed := out.list(t, 0)
			suffixes := map[string][]string{}
			for _, n := range listed {
				up, orig, ok := strings.Cut(n, "__")
				if !ok || !slices.Contains(all, up) {
					t.Errorf("tools/list has %q; want only <upstream>__<tool> names of %v (identical tools conflict)", n, all)
					continue
				}
				suffixes[up] = append(suffixes[up], orig)
			}
			for _, up := range all {
				for _, want := range []string{"echo", "get-sum", "get-env"} {
					if !slices.Contains(listed, up+"__"+want) {
						t.Errorf("tools/list lacks %s__%s; got %q", up, want, listed)
					}
				}
				sort.Strings(suffixes[up])
				if !slices.Equal(suffixes[up], suffixes[all[0]]) {
					t.Errorf("tools of %s %q differ from those of %s %q; all three run the same server", up, suffixes[up], all[0], suffixes[all[0]])
				}
			}

			for i, up := range all {
				echo := out.call(t, 1+2*i)
				if want := fmt.Sprintf("Echo: hello %s over %s", up, tc.kind); echo.text() != want || echo.failed() {
					t.Errorf("%s__echo answered %s; want text %q", up, echo, want)
				}
				if got := out.call(t, 2+2*i).env(t)[upstreamEnvKey]; got != up {
					t.Errorf("%s__get-env ran on the upstream with %s=%q; want %q (call routed to the wrong upstream)", up, upstreamEnvKey, got, up)
				}
			}
			if sum := out.call(t, 1+2*len(all)); sum.text() != "The sum of 2 and 40 is 42." {
				t.Errorf("ev-sse__get-sum answered %s; want \"The sum of 2 and 40 is 42.\"", sum)
			}
			if unknown := out.call(t, 2+2*len(all)); !unknown.failed() {
				t.Errorf("no-such-server__echo answered %s; want an error", unknown)
			}
			if sc := out.call(t, 3+2*len(all)); sc.failed() || sc.Structured["conditions"] == nil || sc.Structured["temperature"] == nil {
				t.Errorf("ev-stdio__get-structured-content answered %s; want structuredContent with conditions and temperature", sc)
			}
		})
	}
}

// hubTransports are the hub's MCP endpoints with client.mjs's name for them.
var hubTransports = []hubTransport{
	{"http", "/mcp"},
	{"sse", "/sse"},
	{"ws", "/ws"},
}

type hubTransport struct{ kind, path string }

// url is the endpoint's URL on the hub at base (http://host:port).
func (tr hubTransport) url(base string) string {
	if tr.kind == "ws" {
		return "ws" + strings.TrimPrefix(base, "http") + tr.path
	}
	return base + tr.path
}

// TestUpstreamRestart kills the Streamable HTTP reference server while the
// hub runs and starts it again on the same port.
func TestUpstreamRestart(t *testing.T) {
	e := newEnv(t)
	e.addHTTP(t, "ev-http")
	e.addSSE(t, "ev-sse")
	e.startHub(t)
	e.waitConnected(t, "ev-http", "ev-sse")
	mcpURL := e.base + "/mcp"

	start := time.Now()
	e.ups["ev-http"].Kill()
	e.waitListing(t, changeTimeout, "ev-http in error with a message, ev-sse connected", func(l *hubtest.Listing) bool {
		h, _ := l.Server("ev-http")
		s, _ := l.Server("ev-sse")
		return h.Status == "error" && h.Error != "" && s.Status == "connected"
	})
	t.Logf("ev-http shown in error %s after it was killed", time.Since(start).Round(time.Millisecond))
	l := e.listing(t)
	h, _ := l.Server("ev-http")
	s, _ := l.Server("ev-sse")
	if l.TotalTools != s.ToolCount {
		t.Errorf("totalTools = %d while ev-http is down; want %d, the tools of ev-sse alone", l.TotalTools, s.ToolCount)
	}
	t.Logf("listing while ev-http is down: error %q, toolCount %d", h.Error, h.ToolCount)

	out := runClient(t, "http", mcpURL,
		opCall("ev-sse__echo", map[string]any{"message": "still here"}),
		opCall("ev-http__echo", map[string]any{"message": "anyone?"}),
		opList())
	if r := out.call(t, 0); r.text() != "Echo: still here" || r.failed() {
		t.Errorf("ev-sse__echo while ev-http is down answered %s; want text \"Echo: still here\"", r)
	}
	if r := out.call(t, 1); !r.failed() {
		t.Errorf("ev-http__echo while ev-http is down answered %s; want an error", r)
	} else {
		t.Logf("ev-http__echo while ev-http is down answered %s", r)
	}
	// Published names stay stable while a server is down: ev-sse keeps its
	// prefix although its tools conflict with nothing callable right now.
	listed := out.list(t, 2)
	if !slices.Contains(listed, "ev-sse__echo") || slices.ContainsFunc(listed, func(n string) bool { return strings.HasPrefix(n, "ev-http__") }) {
		t.Errorf("tools/list while ev-http is down = %q; want ev-sse__* names only", listed)
	}

	// Same port, so the hub must find it again without a config change.
	start = time.Now()
	e.restartHTTP(t, "ev-http", "2")
	e.waitConnected(t, "ev-http", "ev-sse")
	t.Logf("ev-http connected again %s after its restart began", time.Since(start).Round(time.Millisecond))
	out = runClient(t, "http", mcpURL,
		opCall("ev-http__echo", map[string]any{"message": "back"}),
		opCall("ev-http__get-env", map[string]any{}))
	if r := out.call(t, 0); r.text() != "Echo: back" || r.failed() {
		t.Errorf("ev-http__echo after the restart answered %s; want text \"Echo: back\"", r)
	}
	if env := out.call(t, 1).env(t); env[upstreamEnvKey] != "ev-http" || env[instanceEnvKey] != "2" {
		t.Errorf("ev-http__get-env after the restart ran with %s=%q %s=%q; want ev-http, 2 (the restarted server)",
			upstreamEnvKey, env[upstreamEnvKey], instanceEnvKey, env[instanceEnvKey])
	}
}

// TestReloadAndShutdown edits the config file under a running hub to drop
// and re-add a stdio upstream, then stops the hub with SIGTERM; no stdio
// child may outlive its upstream or the hub.
func TestReloadAndShutdown(t *testing.T) {
	e := newEnv(t)
	e.addSSE(t, "ev-sse")
	first := newMarker(t)
	e.addStdio(t, "ev-stdio", first)
	e.startHub(t)
	e.waitConnected(t, "ev-sse", "ev-stdio")
	if pids := markedPIDs(first); len(pids) == 0 {
		t.Fatalf("no process carries %s although ev-stdio is connected", first)
	}

	t.Run("remove stdio upstream", func(t *testing.T) {
		// SDK clients connected meanwhile must learn of the change through
		// notifications/tools/list_changed, over every transport.
		var watchers []*clientRun
		for _, tr := range hubTransports {
			watchers = append(watchers, startClient(t, tr.kind, tr.url(e.base), opUntilGone("ev-stdio__echo")))
		}
		for _, w := range watchers {
			w.waitReady(t)
		}

		e.removeServer(t, "ev-stdio")
		e.waitListing(t, changeTimeout, "ev-stdio gone, ev-sse connected", func(l *hubtest.Listing) bool {
			_, has := l.Server("ev-stdio")
			s, _ := l.Server("ev-sse")
			return !has && s.Status == "connected"
		})
		hubtest.Eventually(t, changeTimeout, pollInterval, "the ev-stdio child ("+first+") to exit", func() error {
			return noneRunning(markedPIDs(first))
		})
		// Names are stable: ev-sse's tools keep the prefixed names they
		// were published under, though the conflict is gone.
		for _, w := range watchers {
			listed, n := w.wait(t).watched(t, 0)
			if !slices.Contains(listed, "ev-sse__echo") || slices.ContainsFunc(listed, func(n string) bool { return strings.HasPrefix(n, "ev-stdio__") }) {
				t.Errorf("%s: tools/list after removing ev-stdio = %q; want ev-sse's tools as before (ev-sse__echo, ...)", w.desc, listed)
			}
			t.Logf("%s: ev-stdio__echo gone after %d notifications/tools/list_changed", w.desc, n)
		}
	})

	second := newMarker(t)
	t.Run("re-add stdio upstream", func(t *testing.T) {
		e.addStdio(t, "ev-stdio", second)
		e.writeConfig(t)
		e.waitConnected(t, "ev-sse", "ev-stdio")
		out := runClient(t, "http", e.base+"/mcp", opCall("ev-stdio__get-env", map[string]any{}))
		// The child's environment is a credential the hub holds for it:
		// the value comes back redacted from the result, and only the
		// re-added child (the first one exited above) carries it.
		env := out.call(t, 0).env(t)
		if got := env[markerEnvKey]; got != secrets.Marker {
			t.Errorf("ev-stdio__get-env showed %s=%q; want %q (a value of the server's env is redacted from its results)", markerEnvKey, got, secrets.Marker)
		}
		if pids := markedPIDs(second); len(pids) == 0 {
			t.Errorf("no process carries %s although ev-stdio is connected", second)
		}
	})

	t.Run("SIGTERM", func(t *testing.T) {
		// Clients holding open streams (SSE GET, WebSocket) must not keep
		// the hub from stopping.
		for _, tr := range hubTransports {
			startClient(t, tr.kind, tr.url(e.base), opUntilGone("ev-sse__echo")).waitReady(t)
		}
		start := time.Now()
		if err := e.hub.Signal(syscall.SIGTERM); err != nil {
			t.Fatalf("SIGTERM hub: %v", err)
		}
		select {
		case <-e.hub.Done():
		case <-time.After(exitTimeout):
			t.Fatalf("hub still running %s after SIGTERM", exitTimeout)
		}
		t.Logf("hub exited %s after SIGTERM", time.Since(start).Round(time.Millisecond))
		if code := e.hub.ExitCode(); code != 0 {
			t.Errorf("hub exit code after SIGTERM = %d (%v); want 0", code, e.hub.Err())
		}
		// The hub says it waits for its children; allow only for the kernel
		// to finish reaping.
		hubtest.Eventually(t, 5*time.Second, pollInterval, "no stdio child to outlive the hub", func() error {
			return noneRunning(append(markedPIDs(first), markedPIDs(second)...))
		})
	})
}

// ---------------------------------------------------------------------------
// Test environment: reference servers, config file, hub.

type env struct {
	dir     string
	cfgPath string
	servers []serverCfg
	markers []string
	ups     map[string]*upstreamProc
	hub     *hubtest.Hub
	base    string // http://127.0.0.1:PORT
}

// serverCfg is one entry of the hub config's servers list.
type serverCfg struct {
	Name      string            `json:"name"`
	URL       string            `json:"url,omitempty"`
	Transport string            `json:"transport"`
	Command   string            `json:"command,omitempty"`
	Args      []string          `json:"args,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
	// ProtocolVersion pins the revision the hub speaks to the server.
	ProtocolVersion string `json:"protocolVersion,omitempty"`
}

type upstreamProc struct {
	*hubtest.Process
	mode string
	port int
}

func newEnv(t *testing.T) *env {
	e := &env{dir: t.TempDir(), ups: map[string]*upstreamProc{}}
	e.cfgPath = filepath.Join(e.dir, "hub.yaml")
	t.Cleanup(func() {
		// After the hub's own cleanup (registered later, run earlier): no
		// stdio child of this test may survive it, whatever went wrong.
		// A child of a SIGKILLed hub gets a moment to take its Pdeathsig.
		deadline := time.Now().Add(5 * time.Second)
		for _, m := range e.markers {
			pids := markedPIDs(m)
			for len(pids) > 0 && time.Now().Before(deadline) {
				time.Sleep(pollInterval)
				pids = markedPIDs(m)
			}
			for _, pid := range pids {
				t.Errorf("stdio child %d (%s) outlived the hub; killing it", pid, m)
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	return e
}

func (e *env) addHTTP(t *testing.T, name string) {
	u := startEverything(t, name, "streamableHttp", 0, "1")
	e.ups[name] = u
	e.servers = append(e.servers, serverCfg{Name: name, Transport: "streamable-http", URL: fmt.Sprintf("http://127.0.0.1:%d/mcp", u.port)})
}

func (e *env) addSSE(t *testing.T, name string) {
	u := startEverything(t, name, "sse", 0, "1")
	e.ups[name] = u
	e.servers = append(e.servers, serverCfg{Name: name, Transport: "sse", URL: fmt.Sprintf("http://127.0.0.1:%d/sse", u.port)})
}

// addStdio adds an upstream the hub launches itself; marker ("KEY=VALUE")
// goes into its environment so the test can find the child in /proc.
func (e *env) addStdio(t *testing.T, name, marker string) {
	k, v, _ := strings.Cut(marker, "=")
	e.markers = append(e.markers, marker)
	e.servers = append(e.servers, serverCfg{
		Name: name, Transport: "stdio", Command: "node", Args: []string{everything, "stdio"},
		Env: map[string]string{k: v, upstreamEnvKey: name, instanceEnvKey: "1"},
	})
}

func (e *env) restartHTTP(t *testing.T, name, instance string) {
	old := e.ups[name]
	e.ups[name] = startEverything(t, name, old.mode, old.port, instance)
}

func (e *env) removeServer(t *testing.T, name string) {
	e.servers = slices.DeleteFunc(e.servers, func(s serverCfg) bool { return s.Name == name })
	e.writeConfig(t)
}

// writeConfig writes the config file in place, as an operator editing it
// would; the hub watches it.
func (e *env) writeConfig(t *testing.T) {
	t.Helper()
	cfg := map[string]any{
		"naming": map[string]any{"prefix": "on-conflict", "separator": "__"},
		// Only the upstreams' tools: these tests measure transparency.
		"builtins": map[string]any{"staticAnalysis": map[string]any{"enabled": false}},
		// Fast health checks and reconnects keep the lifecycle tests short.
		"upstream": map[string]any{
			"pingInterval":   "1s",
			"backoffMin":     "100ms",
			"backoffMax":     "1s",
			"breakerOpenFor": "1s",
			"connectTimeout": "20s",
		},
		"shutdownGrace": "5s",
		"servers":       e.servers,
	}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.cfgPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func (e *env) startHub(t *testing.T) {
	t.Helper()
	e.writeConfig(t)
	e.hub = hubtest.StartHub(t, hubtest.HubOptions{Bin: hubBin, ConfigFile: e.cfgPath, LogLevel: "warn", Dir: e.dir})
	e.base = e.hub.Base
}

func (e *env) waitConnected(t *testing.T, names ...string) {
	t.Helper()
	e.waitListing(t, startTimeout, fmt.Sprintf("%v connected with tools", names), func(l *hubtest.Listing) bool {
		for _, n := range names {
			if sv, ok := l.Server(n); !ok || sv.Status != "connected" || sv.ToolCount == 0 {
				return false
			}
		}
		return true
	})
}

func (e *env) waitListing(t *testing.T, timeout time.Duration, what string, ok func(*hubtest.Listing) bool) {
	t.Helper()
	hubtest.Eventually(t, timeout, pollInterval, what, func() error {
		if e.hub.Exited() {
			t.Fatalf("hub exited while waiting for %s: %v", what, e.hub.Err())
		}
		l, err := e.hub.Listing("?format=names")
		if err != nil {
			return err
		}
		if !ok(l) {
			return errors.New(l.Summary())
		}
		return nil
	})
}

func (e *env) listing(t *testing.T) *hubtest.Listing {
	t.Helper()
	l, err := e.hub.Listing("")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func (e *env) listingNames(t *testing.T) *hubtest.Listing {
	t.Helper()
	l, err := e.hub.Listing("?format=names")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// startEverything starts the reference server in mode (streamableHttp or
// sse) on port, or on a free port when port is 0, and waits until it
// accepts connections.
func startEverything(t *testing.T, name, mode string, port int, instance string) *upstreamProc {
	t.Helper()
	p, port := hubtest.StartServer(t, fmt.Sprintf("%s (%s #%s)", name, mode, instance), port, func(port int) *exec.Cmd {
		cmd := hubtest.EverythingCommand(everything, mode, port, upstreamEnvKey+"="+name, instanceEnvKey+"="+instance)
		cmd.Dir = testDir
		return cmd
	})
	return &upstreamProc{Process: p, mode: mode, port: port}
}

func newMarker(t *testing.T) string {
	return fmt.Sprintf("%s=%d-%d-%s", markerEnvKey, os.Getpid(), time.Now().UnixNano(), strings.NewReplacer("/", "-", " ", "_").Replace(t.Name()))
}

// markedPIDs lists the live processes whose environment holds marker
// ("KEY=VALUE"). Zombies have an empty environ and do not count.
func markedPIDs(marker string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, de := range entries {
		pid, err := strconv.Atoi(de.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", de.Name(), "environ"))
		if err != nil {
			continue
		}
		for kv := range bytes.SplitSeq(data, []byte{0}) {
			if string(kv) == marker {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// noneRunning is nil for no PIDs, and names them otherwise.
func noneRunning(pids []int) error {
	if len(pids) == 0 {
		return nil
	}
	return fmt.Errorf("still running: pids %v", pids)
}

// ---------------------------------------------------------------------------
// HTTP.

func httpGet(url string) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// ---------------------------------------------------------------------------
// The SDK client (client.mjs).

func opList() []string { return []string{"list"} }

func opUntilGone(tool string) []string { return []string{"until-gone", tool} }

func opCall(tool string, args map[string]any) []string {
	b, err := json.Marshal(args)
	if err != nil {
		panic(err)
	}
	return []string{"call", tool, string(b)}
}

type clientOut struct {
	Server struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"server"`
	Results []json.RawMessage `json:"results"`
}

// clientRun is one run of client.mjs.
type clientRun struct {
	desc   string
	p      *hubtest.Process
	cancel context.CancelFunc
	nOps   int
}

// startClient starts client.mjs with every op in order, over one session;
// it is killed when it has not finished within clientTimeout.
func startClient(t *testing.T, kind, url string, ops ...[]string) *clientRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
	t.Cleanup(cancel)
	args := []string{clientScript, kind, url}
	if kind == "ws" {
		args = append(slices.Clone(wsNodeFlags), args...)
	}
	for _, op := range ops {
		args = append(args, op...)
	}
	r := &clientRun{desc: "client.mjs " + kind + " " + url, cancel: cancel, nOps: len(ops)}
	cmd := hubtest.Command(ctx, "node", args...)
	cmd.Dir = testDir
	r.p = hubtest.StartProcess(t, r.desc, cmd)
	return r
}

// runClient runs client.mjs once with every op in order, over one session.
func runClient(t *testing.T, kind, url string, ops ...[]string) clientOut {
	t.Helper()
	return startClient(t, kind, url, ops...).wait(t)
}

// waitReady waits until the client printed {"ready":true}: until-gone
// has listed once and is watching.
func (r *clientRun) waitReady(t *testing.T) {
	t.Helper()
	if _, err := r.p.WaitLine(context.Background(), func(l string) bool { return l == `{"ready":true}` }); err != nil {
		t.Fatalf("%s ended before it was ready: %v\noutput: %s", r.desc, err, r.p.Output())
	}
}

// wait waits for the client to finish and decodes its last output line.
func (r *clientRun) wait(t *testing.T) clientOut {
	t.Helper()
	<-r.p.Done()
	r.cancel()
	if err := r.p.Err(); err != nil {
		t.Fatalf("%s: %v\noutput: %s", r.desc, err, r.p.Output())
	}
	lines := strings.Split(strings.TrimSpace(r.p.Stdout()), "\n")
	var out clientOut
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &out); err != nil {
		t.Fatalf("%s: bad output: %v\n%s", r.desc, err, r.p.Stdout())
	}
	if len(out.Results) != r.nOps {
		t.Fatalf("%s: %d results for %d ops", r.desc, len(out.Results), r.nOps)
	}
	return out
}

func (o clientOut) list(t *testing.T, i int) []string {
	t.Helper()
	tools, _ := o.watched(t, i)
	return tools
}

// watched decodes a list or until-gone result: the tools last listed and
// how many notifications/tools/list_changed came before.
func (o clientOut) watched(t *testing.T, i int) ([]string, int) {
	t.Helper()
	var r struct {
		Tools         []string `json:"tools"`
		Notifications int      `json:"notifications"`
	}
	if err := json.Unmarshal(o.Results[i], &r); err != nil || r.Tools == nil {
		t.Fatalf("result %d is not a tools list: %v: %s", i, err, o.Results[i])
	}
	return r.Tools, r.Notifications
}

func (o clientOut) call(t *testing.T, i int) callResult {
	t.Helper()
	var r callResult
	if err := json.Unmarshal(o.Results[i], &r); err != nil {
		t.Fatalf("result %d is not a tools/call result: %v: %s", i, err, o.Results[i])
	}
	r.raw = o.Results[i]
	return r
}

type callResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	Structured map[string]any `json:"structuredContent"`
	IsError    bool           `json:"isError"`
	Progress   int            `json:"progressNotifications"`
	// Elicitations are the elicitation/create params a call-elicit op got.
	Elicitations []elicitParams `json:"elicitations"`
	Error        *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
	raw json.RawMessage
}

// failed reports a JSON-RPC error or a tool error.
func (r callResult) failed() bool { return r.Error != nil || r.IsError }

func (r callResult) text() string {
	var parts []string
	for _, c := range r.Content {
		if c.Type == "text" {
			parts = append(parts, c.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func (r callResult) String() string {
	s := string(r.raw)
	if len(s) > 400 {
		s = s[:400] + "…"
	}
	return s
}

// env decodes get-env's answer: the upstream process's environment.
func (r callResult) env(t *testing.T) map[string]string {
	t.Helper()
	var m map[string]string
	if r.failed() {
		t.Fatalf("get-env failed: %s", r)
	}
	if err := json.Unmarshal([]byte(r.text()), &m); err != nil {
		t.Fatalf("get-env answer is not a JSON object: %v: %s", err, r)
	}
	return m
}
