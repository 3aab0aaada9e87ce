package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/purko-io/mcp-hub/internal/hubtest"
)

// toolsCLI runs `mcp-hub tools args...` with token in MCP_HUB_TOKEN.
func toolsCLI(t *testing.T, token string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(hubBin, append([]string{"tools"}, args...)...)
	cmd.Env = append(os.Environ(), "MCP_HUB_TOKEN="+token)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), exitCode(err)
}

// TestToolsCLI runs the hub binary in front of an upstream with a read
// and a write tool, and the tools CLI against it as a restricted and a
// full caller.
func TestToolsCLI(t *testing.T) {
	var writes atomic.Int32
	up := hubtest.StartUpstream(t, "gh",
		mcpserver.ServerTool{Tool: mcp.NewTool("get_issue", mcp.WithNumber("number")),
			Handler: func(_ context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText(fmt.Sprintf("issue #%d", r.GetInt("number", 0))), nil
			}},
		mcpserver.ServerTool{Tool: mcp.NewTool("create_issue"),
			Handler: func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				writes.Add(1)
				return mcp.NewToolResultText("created"), nil
			}},
		mcpserver.ServerTool{Tool: mcp.NewTool("list_failures"),
			Handler: func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultError("ERROR: the CI is down"), nil
			}},
	)
	cfg := filepath.Join(t.TempDir(), "hub.yaml")
	if err := os.WriteFile(cfg, []byte(`servers: []
auth:
  tokens:
  - {name: reader, token: {env: READER_TOKEN}, maxLevel: restricted}
  - {name: ops, token: {env: OPS_TOKEN}, maxLevel: full}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	h := startHub(t, []string{"READER_TOKEN=reader-secret", "OPS_TOKEN=ops-secret", "XDG_STATE_HOME=" + t.TempDir(),
		`MCP_SERVERS=[{"name":"gh","url":"` + up.URL + `"}]`}, "--config", cfg)
	waitStatus(t, h, "gh", "connected")

	for _, tc := range []struct {
		name  string
		token string
		args  []string
		code  int
		// stdout and stderr must hold these.
		stdout, stderr []string
		notStdout      []string
	}{
		{name: "list table", args: []string{"list"}, stdout: []string{"NAME SERVER READ-ONLY REASON", `create_issue gh no write verb "create"`,
			`get_issue gh yes read verb "get"`, "static-analysis hub yes", "4 tools from 2 servers"}},
		{name: "list restricted", args: []string{"list", "--autonomy", "restricted"}, stdout: []string{"get_issue", "3 tools from 2 servers, as seen at autonomy restricted"},
			notStdout: []string{"create_issue"}},
		{name: "list json", args: []string{"list", "-o", "json", "--hub", h.Base}, stdout: []string{`"totalTools": 4`}},
		{name: "list yaml", args: []string{"list", "-o", "yaml"}, stdout: []string{"totalTools: 4"}},
		{name: "list bad output", args: []string{"list", "-o", "xml"}, code: 2, stderr: []string{`unknown output format "xml": want table, json, yaml or wide`}},
		{name: "call key=value", token: "reader-secret", args: []string{"call", "get_issue", "number=8"}, stdout: []string{"issue #8"}},
		{name: "call --args", token: "reader-secret", args: []string{"call", "get_issue", "--args", `{"number": 9}`}, stdout: []string{"issue #9"}},
		{name: "call not key=value", token: "reader-secret", args: []string{"call", "get_issue", "number"}, code: 2, stderr: []string{`"number" is not KEY=VALUE`}},
		{name: "list bad level", args: []string{"list", "--autonomy", "godmode"}, code: 1, stderr: []string{"400"}},
		{name: "call allowed", token: "reader-secret", args: []string{"call", "get_issue", `{"number": 7}`}, stdout: []string{"issue #7"}},
		{name: "call json, flags after the arguments", token: "reader-secret", args: []string{"call", "get_issue", `{"number": 7}`, "-o", "json"},
			stdout: []string{`"content":[{"type":"text","text":"issue #7"}]`}},
		{name: "call blocked", token: "reader-secret", args: []string{"call", "create_issue"}, code: 1,
			stderr: []string{"BLOCKED: Restricted autonomy — write tool 'create_issue' not allowed."}},
		{name: "call lowered by --autonomy", token: "ops-secret", args: []string{"call", "create_issue", "{}", "--autonomy", "shu"}, code: 1,
			stderr: []string{"BLOCKED: Restricted autonomy"}},
		{name: "flags before the subcommand", token: "reader-secret", args: []string{"-o", "json", "call", "create_issue"}, code: 1,
			stdout: []string{`"isError":true`}, stderr: []string{"BLOCKED"}},
		{name: "call tool error", token: "reader-secret", args: []string{"call", "list_failures"}, code: 1, stderr: []string{"ERROR: the CI is down"}},
		{name: "call unknown", token: "ops-secret", args: []string{"call", "nope"}, code: 1, stderr: []string{"404", "tool 'nope' not found"}},
		{name: "call duplicate key", token: "ops-secret", args: []string{"call", "create_issue", `{"a":1,"a":2}`}, code: 1, stderr: []string{"400", "appears twice"}},
		{name: "call wrong token", token: "nope", args: []string{"call", "get_issue"}, code: 1, stderr: []string{"401", "bearer token refused"}},
		{name: "call without a name", args: []string{"call"}, code: 2, stderr: []string{"NAME is required", "mcp-hub tools call NAME"}},
		{name: "bad hub url", args: []string{"list", "--hub", "ftp://x"}, code: 2, stderr: []string{`--hub "ftp://x" is not an http(s) URL`}},
		{name: "call write as ops", token: "ops-secret", args: []string{"call", "create_issue", "{}"}, stdout: []string{"created"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if !slices.Contains(args, "--hub") {
				args = append(args, "--hub", h.Base)
			}
			out, errOut, code := toolsCLI(t, tc.token, args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, out, errOut)
			}
			// The table's columns, one space apart.
			flat := strings.Join(strings.Fields(out), " ")
			for _, w := range tc.notStdout {
				if strings.Contains(out, w) {
					t.Errorf("stdout holds %q:\n%s", w, out)
				}
			}
			for _, w := range tc.stdout {
				if !strings.Contains(out, w) && !strings.Contains(flat, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tc.stderr {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
		})
	}
	if n := writes.Load(); n != 1 {
		t.Fatalf("the upstream ran create_issue %d times, want 1 (the ops call)", n)
	}
	// The whole result with -o json, even for a denial, and the reason on
	// stderr.
	out, errOut, code := toolsCLI(t, "reader-secret", "call", "create_issue", "-o", "json", "--hub", h.Base)
	var res struct {
		IsError bool `json:"isError"`
	}
	if code != 1 || json.Unmarshal([]byte(out), &res) != nil || !res.IsError || !strings.Contains(errOut, "BLOCKED") {
		t.Fatalf("blocked call -o json: exit %d\n%s%s", code, out, errOut)
	}
	terminate(t, h)
	if !strings.Contains(h.Output(), `"face":"rest"`) {
		t.Fatal("no REST audit line in the hub's log")
	}
}

func TestToolArguments(t *testing.T) {
	for _, tc := range []struct {
		base  string
		pairs []string
		want  string // the JSON object, or the error's start
	}{
		{pairs: nil, want: `{}`},
		{pairs: []string{`{"a": 1}`}, want: `{"a": 1}`},
		{pairs: []string{"n=7", "s=hello", "b=true", `l=["x"]`, "o={\"k\":1}", "e=", "q=\"7\""},
			want: `{"b":true,"e":"","l":["x"],"n":7,"o":{"k":1},"q":"7","s":"hello"}`},
		{pairs: []string{"text=a=b"}, want: `{"text":"a=b"}`},
		{base: `{"n":1,"m":2}`, pairs: []string{"n=3"}, want: `{"m":2,"n":3}`},
		{pairs: []string{"novalue"}, want: `argument "novalue" is not KEY=VALUE`},
		{pairs: []string{"=1"}, want: `argument "=1" is not KEY=VALUE`},
		{base: `[1]`, want: "--args: not a JSON object"},
		{base: `{}`, pairs: []string{`{"a":1}`}, want: "give the arguments as --args or"},
	} {
		got, err := toolArguments(tc.base, tc.pairs)
		if err != nil {
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("%q %q: %v, want %s", tc.base, tc.pairs, err, tc.want)
			}
			continue
		}
		if string(got) != tc.want {
			t.Errorf("%q %q = %s, want %s", tc.base, tc.pairs, got, tc.want)
		}
	}
}
