package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"
)

// The subcommands that talk to a running hub (pins, servers, tools) share one
// client: the hub's base URL from --url, the caller's token from
// MCP_HUB_TOKEN (never a flag: flags show in ps and shell history), and the
// hub's own error text when it refuses.

// defaultHubURL is where a hub on the same machine listens by default.
const defaultHubURL = "http://127.0.0.1:8080"

// hubClient is a client of a running hub's REST API.
type hubClient struct {
	base, token string
	http        *http.Client
}

// subcommand reads the first of args as one of cmd's subcommands (subs)
// and returns it, the arguments after it, and its flag set, which prints
// usage on a bad flag. ok is false, with usage printed, when args do not
// start with one of subs.
func subcommand(cmd, usage string, subs []string, args []string, stderr io.Writer) (sub string, rest []string, fs *flag.FlagSet, ok bool) {
	if len(args) == 0 || !slices.Contains(subs, args[0]) {
		fmt.Fprint(stderr, usage)
		return "", nil, nil, false
	}
	fs = flag.NewFlagSet("mcp-hub "+cmd+" "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	return args[0], args[1:], fs, true
}

// parseExit is the exit code of a flag set's Parse error: 0 when the user
// asked for help (-h, --help), which is not a failure, else 2.
func parseExit(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	return 2
}

// clientFlags adds the flags every client subcommand has: --url and -o.
func clientFlags(fs *flag.FlagSet) (base, out *string) {
	return fs.String("url", defaultHubURL, "the hub's base URL"), fs.String("o", "table", "output: table or json")
}

// newHubClient is a client of the hub at base, the value of the flag
// named flagName; an error when it is not an http(s) URL.
func newHubClient(flagName, base string) (hubClient, error) {
	u, err := url.Parse(strings.TrimRight(base, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return hubClient{}, fmt.Errorf("--%s %q is not an http(s) URL", flagName, base)
	}
	return hubClient{base: u.String(), token: os.Getenv("MCP_HUB_TOKEN"), http: &http.Client{Timeout: 60 * time.Second}}, nil
}

// do sends one request; an answer other than 200 is an error with the
// hub's message.
func (c hubClient) do(ctx context.Context, method, path string, body []byte) ([]byte, error) {
	status, b, err := c.send(ctx, method, path, body, nil)
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("%s %s: %d %s: %s", method, path, status, http.StatusText(status), errorText(b))
	}
	return b, nil
}

// send sends one request with header added and returns the answer
// whatever its status.
func (c hubClient) send(ctx context.Context, method, path string, body []byte, header http.Header) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = strings.NewReader(string(body))
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return 0, nil, fmt.Errorf("read %s: %w", path, err)
	}
	return resp.StatusCode, b, nil
}

// errorText is the message of a refusal the hub answered with: its REST
// error ({"error": "..."}), a JSON-RPC error of the auth or guard layer,
// or the body as it is.
func errorText(b []byte) string {
	var e struct {
		Error any `json:"error"`
	}
	msg := strings.TrimSpace(string(b))
	if json.Unmarshal(b, &e) == nil && e.Error != nil {
		switch v := e.Error.(type) {
		case string:
			msg = v
		case map[string]any:
			msg = fmt.Sprint(v["message"])
		}
	}
	return msg
}

// answer ends a CLI request of `mcp-hub <cmd>`: the error, or the hub's
// body as it came with -o json, or print's human form; the exit code.
func answer(stdout, stderr io.Writer, cmd, format string, body []byte, err error, print func(io.Writer, []byte) error) int {
	if err == nil && format != "json" {
		err = print(stdout, body)
	} else if err == nil {
		_, err = stdout.Write(body)
	}
	if err != nil {
		fmt.Fprintf(stderr, "mcp-hub %s: %v\n", cmd, err)
		return 1
	}
	return 0
}
