package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// openTerminal opens a pseudo-terminal's master side, which is a terminal
// as far as isTerminal can tell, as a hub's stderr would be in a shell.
func openTerminal(t *testing.T) *os.File {
	t.Helper()
	f, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("open a pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	if !isTerminal(f) {
		t.Fatal("/dev/ptmx is not taken for a terminal")
	}
	return f
}

func TestLogFormatAndColour(t *testing.T) {
	tty := openTerminal(t)
	pipe := &bytes.Buffer{}
	file, err := os.CreateTemp(t.TempDir(), "log")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	for _, tc := range []struct {
		name, flag string
		stderr     any
		noColor    string
		format     string
		coloured   bool
	}{
		{name: "a terminal gets console lines in colour", flag: "auto", stderr: tty, format: "console", coloured: true},
		{name: "NO_COLOR takes the colour away", flag: "auto", stderr: tty, noColor: "1", format: "console"},
		{name: "a file gets JSON", flag: "auto", stderr: file, format: "json"},
		{name: "a pipe gets JSON", flag: "auto", stderr: pipe, format: "json"},
		{name: "--log-format json on a terminal (colour would be allowed)", flag: "json", stderr: tty, format: "json", coloured: true},
		{name: "--log-format console in a file, no colour", flag: "console", stderr: file, format: "console"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := tc.stderr.(interface{ Write([]byte) (int, error) })
			if got := resolveLogFormat(tc.flag, w); got != tc.format {
				t.Errorf("format %q, want %q", got, tc.format)
			}
			if got := colour(w, env(map[string]string{"NO_COLOR": tc.noColor})); got != tc.coloured {
				t.Errorf("colour %v, want %v", got, tc.coloured)
			}
		})
	}
	if _, err := newLogger("info", "xml", pipe); err == nil || !strings.Contains(err.Error(), `--log-format: "xml" is not one of auto, json, console`) {
		t.Errorf("newLogger with format xml: %v", err)
	}
}

func TestBanner(t *testing.T) {
	for _, tc := range []struct {
		name, format, addr string
		auth               bool
		want               []string
	}{
		{name: "console, loopback", format: "console", addr: "127.0.0.1:8080", want: []string{
			"listening on http://127.0.0.1:8080/mcp (SSE: /sse",
			"\n  web console:          http://127.0.0.1:8080/\n",
			"\n  connect Claude Code:  claude mcp add --transport http mcp-hub http://127.0.0.1:8080/mcp\n"}},
		{name: "console, every interface, with auth", format: "console", addr: "0.0.0.0:9000", auth: true, want: []string{
			"listening on http://0.0.0.0:9000/mcp",
			"web console:          http://127.0.0.1:9000/",
			`claude mcp add --transport http mcp-hub http://127.0.0.1:9000/mcp --header "Authorization: Bearer $MCP_HUB_TOKEN"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			printBanner(&out, tc.format, tc.addr, tc.auth, 1)
			if !strings.HasPrefix(out.String(), "mcp-hub ") {
				t.Errorf("the banner does not start with mcp-hub VERSION: %q", out.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("banner lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
	// In JSON mode, one JSON line with the same in fields.
	var out bytes.Buffer
	printBanner(&out, "json", "[::]:8080", false, 2)
	var line map[string]any
	if err := json.Unmarshal(out.Bytes(), &line); err != nil || strings.Count(out.String(), "\n") != 1 {
		t.Fatalf("JSON banner %q: %v", out.String(), err)
	}
	if line["url"] != "http://[::]:8080/mcp" || line["console"] != "http://127.0.0.1:8080/" ||
		line["connect"] != "claude mcp add --transport http mcp-hub http://127.0.0.1:8080/mcp" ||
		!strings.Contains(line["message"].(string), "listening on http://[::]:8080/mcp") {
		t.Errorf("JSON banner fields: %v", line)
	}
}
