package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/purko-io/mcp-hub/internal/hubtest"
)

// hubBin is the binary of this package, built once by TestMain.
var hubBin string

func TestMain(m *testing.M) {
	bin, err := hubtest.Build(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "build mcp-hub:", err)
		os.Exit(1)
	}
	hubBin = bin
	os.Exit(m.Run())
}

// startHub runs `mcp-hub serve` with env added to its environment, and
// returns once it has said where it listens.
func startHub(t *testing.T, env []string, args ...string) *hubtest.Hub {
	t.Helper()
	return hubtest.StartHub(t, hubtest.HubOptions{Bin: hubBin, Env: env, Args: args, Timeout: 10 * time.Second})
}

// waitStatus waits until the hub lists server with status.
func waitStatus(t *testing.T, h *hubtest.Hub, server, status string) hubtest.ListedServer {
	t.Helper()
	var sv hubtest.ListedServer
	hubtest.Eventually(t, 15*time.Second, 20*time.Millisecond, server+" "+status, func() error {
		l, err := h.Listing("")
		if err != nil {
			return err
		}
		s, ok := l.Server(server)
		if !ok || s.Status != status {
			return errors.New(l.Summary())
		}
		sv = s
		return nil
	})
	return sv
}

// terminate stops the hub with SIGTERM and fails t unless it exits 0
// within 10 s.
func terminate(t *testing.T, h *hubtest.Hub) {
	t.Helper()
	if err := h.Stop(10 * time.Second); err != nil {
		t.Fatalf("hub after SIGTERM: %v\n%s", err, h.Output())
	}
}

// startUpstream serves an MCP server with an echo tool on a loopback port
// and returns its URL and the Authorization header it last received.
func startUpstream(t *testing.T) (url string, auth func() string) {
	t.Helper()
	u := hubtest.StartUpstream(t, "up", mcpserver.ServerTool{Tool: mcp.NewTool("echo", mcp.WithString("text")),
		Handler: func(_ context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("echo:" + r.GetString("text", "")), nil
		}})
	return u.URL, u.Authorization
}

func TestVersionAndUsage(t *testing.T) {
	// hubtest stamps the binary as `make build` does: a semver
	// (hack/version.sh) and the checkout's commit.
	out, err := exec.Command(hubBin, "version").Output()
	m := regexp.MustCompile(`^mcp-hub (v\S+) \(commit ([0-9a-f]{7})(, built \d{4}-\d{2}-\d{2})?\)\n$`).FindStringSubmatch(string(out))
	if err != nil || m == nil || !semverRE.MatchString(m[1]) {
		t.Fatalf("version = %q, %v; want mcp-hub <semver> (commit <hash>)", out, err)
	}
	if head, err := exec.Command("git", "rev-parse", "--short=7", "HEAD").Output(); err == nil && strings.TrimSpace(string(head)) != m[2] {
		t.Errorf("version names commit %s, HEAD is %s", m[2], head)
	}
	cmd := exec.Command(hubBin, "frobnicate")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	if code := exitCode(err); code != 2 || !strings.Contains(stderr.String(), `unknown command "frobnicate"`) {
		t.Fatalf("unknown command: exit %d, %q", code, stderr.String())
	}
	// Asking for help is not a failure; a bad flag is.
	for _, tc := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"--help"}, 0, "-listen"},
		{[]string{"-h"}, 0, "-listen"},
		{[]string{"help"}, 0, "mcp-hub stdio"},
		{[]string{"stdio", "--help"}, 0, "-config"},
		{[]string{"pins", "list", "-h"}, 0, "--hub"},
		{[]string{"tools", "call", "--help"}, 0, "-o, --output"},
		{[]string{"tools", "--help"}, 0, "mcp-hub tools [command]"},
		{[]string{"tools"}, 0, "mcp-hub tools [command]"},
		{[]string{"tools", "frob"}, 2, `unknown command "frob" for "mcp-hub tools"`},
		{[]string{"servers", "add", "--help"}, 0, "--secret-ref"},
		{[]string{"servers", "add"}, 2, "NAME is required"},
		{[]string{"--version"}, 0, "mcp-hub v"},
		{[]string{"completion", "bash"}, 0, "bash completion"},
		{[]string{"completion", "zsh"}, 0, "zsh completion"},
		{[]string{"completion", "fish"}, 0, "fish completion"},
		{[]string{"completion", "powershell"}, 0, "powershell completion"},
		{[]string{"tools", "list", "-o", "xml"}, 2, `unknown output format "xml": want table, json, yaml or wide`},
		{[]string{"tools", "list", "--hub", "http://127.0.0.1:1"}, 1, "no hub at http://127.0.0.1:1: is `mcp-hub serve` running?"},
		{[]string{"servers", "import", "--help"}, 0, "servers import SOURCE"},
		{[]string{"servers", "import"}, 2, "servers import SOURCE"},
		{[]string{"--no-such-flag"}, 2, "unknown flag: --no-such-flag"},
		{[]string{"pins", "list", "--no-such-flag"}, 2, "unknown flag: --no-such-flag"},
	} {
		// Help and what was asked for on stdout, mistakes on stderr.
		cmd := exec.Command(hubBin, tc.args...)
		cmd.Env = append(os.Environ(), "MCP_HUB_URL=")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		code := exitCode(cmd.Run())
		out := stdout.String()
		if tc.code != 0 {
			out = stderr.String()
		}
		if code != tc.code || !strings.Contains(out, tc.says) {
			t.Errorf("mcp-hub %s: exit %d, want %d with %q in:\n%s", strings.Join(tc.args, " "), code, tc.code, tc.says, out)
		}
	}
	// MCP_HUB_URL is the hub of every client command.
	cmd = exec.Command(hubBin, "servers", "list")
	cmd.Env = append(os.Environ(), "MCP_HUB_URL=http://127.0.0.1:1")
	if out, err := cmd.CombinedOutput(); exitCode(err) != 1 || !strings.Contains(string(out), "no hub at http://127.0.0.1:1") {
		t.Errorf("servers list with MCP_HUB_URL: exit %d\n%s", exitCode(err), out)
	}
}

// jsonSaid returns the message and error of every line of a JSON-mode
// log, failing t for a line that is not JSON (JSON mode, the default,
// writes nothing else).
func jsonSaid(t *testing.T, log string) string {
	t.Helper()
	var said strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Errorf("a log line is not JSON: %q", line)
		}
		fmt.Fprintf(&said, "%v %v\n", m["message"], m["error"])
	}
	return said.String()
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}

func TestInvalidConfigFailsStartWithFileAndField(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(path, []byte("servers:\n- name: gh\n  url: http://127.0.0.1:1/mcp\n  transport: grpc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"serve", "--config", path}, []string{path, `servers[0] (gh).transport: "grpc"`}},
		{[]string{"stdio", "--config", path}, []string{path, "servers[0] (gh).transport"}},
		{[]string{"serve", "--config", filepath.Join(t.TempDir(), "missing.yaml")}, []string{"missing.yaml", "no such file"}},
		{[]string{"serve", "--log-level", "loud"}, []string{`--log-level: "loud"`}},
		{[]string{"serve", "--listen", "0.0.0.0:0"}, []string{"not a loopback address", "no credentials configured"}},
		{[]string{"serve", "MCP_SERVERS=" + `[{"name":"a","url":"http://127.0.0.1:1/mcp","auth":"basic"}]`}, []string{`MCP_SERVERS[0] (a).auth: "basic" is not one of none, bearer`}},
		{[]string{"stdio", "MCP_SERVERS=" + `[{"name":"a","url":"http://127.0.0.1:1/mcp"`}, []string{"MCP_SERVERS: not a JSON list"}},
	}
	for _, tc := range cases {
		var env []string
		if last := tc.args[len(tc.args)-1]; strings.HasPrefix(last, "MCP_SERVERS=") {
			tc.args, env = tc.args[:len(tc.args)-1], []string{last}
		}
		cmd := exec.Command(hubBin, tc.args...)
		cmd.Env = append(os.Environ(), env...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		if exitCode(err) == 0 {
			t.Errorf("%v: exit 0, want failure", tc.args)
		}
		said := jsonSaid(t, stderr.String())
		for _, w := range tc.want {
			if !strings.Contains(said, w) {
				t.Errorf("%v: stderr %q lacks %q", tc.args, stderr.String(), w)
			}
		}
	}
}

func TestServeDefaultAndGracefulShutdown(t *testing.T) {
	h := startHub(t, nil)
	// Ready follows the listening line as soon as the (empty) set of
	// sources has synced.
	status := 0
	for deadline := time.Now().Add(10 * time.Second); status != 200 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		resp, err := http.Get(h.Base + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		status = resp.StatusCode
	}
	if status != 200 {
		t.Fatalf("/readyz = %d on the embedded default", status)
	}
	// The embedded default has no upstreams; the hub's own static-analysis
	// builtin is there (trigger-workflow needs a dashboard, which a laptop
	// has not).
	l, err := h.Listing("")
	if err != nil {
		t.Fatal(err)
	}
	if l.TotalTools != 1 || len(l.Servers) != 1 || l.Servers[0].Name != "hub" {
		t.Fatalf("default listing = %s", l.Summary())
	}
	terminate(t, h)
}

func TestStdioFace(t *testing.T) {
	upURL, _ := startUpstream(t)
	tr := transport.NewStdio(hubBin, []string{`MCP_SERVERS=[{"name":"up","url":"` + upURL + `"}]`}, "stdio", "--log-level", "warn")
	c := client.NewClient(tr)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatalf("initialize over stdio: %v", err)
	}
	var res *mcp.CallToolResult
	for {
		req := mcp.CallToolRequest{}
		req.Params.Name = "echo"
		req.Params.Arguments = map[string]any{"text": "stdio"}
		var err error
		res, err = c.CallTool(ctx, req)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("echo never became callable over stdio: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if tc, ok := res.Content[0].(mcp.TextContent); !ok || tc.Text != "echo:stdio" {
		t.Fatalf("echo over stdio = %+v", res.Content)
	}
}

// TestValidate: `mcp-hub validate` accepts what the hub would start with
// and names the field of what it would not, tokens and files included.
func TestValidate(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("file-token-123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, doc string
		env       []string
		code      int
		says      string
	}{
		{"valid", "servers:\n- name: a\n  url: http://127.0.0.1:1/mcp\n  token: {file: " + tokenFile + "}\n", nil, 0, "valid (1 servers"},
		{"missing token file", "servers:\n- name: a\n  url: http://127.0.0.1:1/mcp\n  token: {file: " + filepath.Join(dir, "nope") + "}\n", nil, 1, "servers[0] (a).token: file:"},
		{"unset token variable", "servers: []\nauth:\n  tokens:\n  - {name: ci, token: {env: MCPHUB_TEST_UNSET_9}, maxLevel: full}\n", nil, 1, "auth.tokens[0] (ci).token: env: variable MCPHUB_TEST_UNSET_9 is not set"},
		{"bad transport", "servers:\n- name: a\n  url: http://127.0.0.1:1/mcp\n  transport: htttp\n", nil, 1, `servers[0] (a).transport: "htttp"`},
		{"bad api tool credential", "servers: []\napiTools:\n- name: w\n  url: https://api.example.com/w\n  method: GET\n  authScheme: Bearer\n  credentials: {env: MCPHUB_TEST_UNSET_9}\n", nil, 1, "MCPHUB_TEST_UNSET_9"},
		{"bad MCP_SERVERS", "servers: []\n", []string{`MCP_SERVERS=[{"name":"e","url":"ftp://x"}]`}, 1, "MCP_SERVERS[0] (e)"},
		{"every mistake, placed", "servers:\n- name: a\n  comand: npx\n- name: b\n  command: npx-typo-36\n- name: c\n  url: localhost:3000/mcp\n", nil, 1,
			"every-mistake,-placed.yaml:3:3: servers[0] (a).comand: unknown field; did you mean \"command\"?\n" +
				"every-mistake,-placed.yaml:5:12: servers[1] (b).command: \"npx-typo-36\" not found on PATH\n" +
				"every-mistake,-placed.yaml:7:8: servers[2] (c).url: \"localhost:3000/mcp\" has no scheme"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".yaml")
			if err := os.WriteFile(path, []byte(tc.doc), 0o600); err != nil {
				t.Fatal(err)
			}
			args := []string{"validate", path} // the form of before: --config FILE
			if tc.code == 0 {
				args = []string{"validate", "--config", path}
			}
			cmd := exec.Command(hubBin, args...)
			cmd.Env = append(os.Environ(), tc.env...)
			out, err := cmd.CombinedOutput()
			for w := range strings.SplitSeq(tc.says, "\n") {
				if code := exitCode(err); code != tc.code || !strings.Contains(string(out), w) {
					t.Fatalf("exit %d, want %d with %q:\n%s", code, tc.code, w, out)
				}
			}
			if strings.Contains(string(out), "file-token-123") {
				t.Fatal("validate printed a token")
			}
		})
	}
}
