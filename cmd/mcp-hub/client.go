package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/purko-io/mcp-hub/internal/httpjson"
)

// The subcommands that talk to a running hub (pins, servers, tools) share one
// client: the hub's base URL from --hub (or $MCP_HUB_URL), the caller's token from
// MCP_HUB_TOKEN (never a flag: flags show in ps and shell history), and the
// hub's own error text when it refuses.

// defaultHubURL is where a hub on the same machine listens by default.
const defaultHubURL = "http://127.0.0.1:8080"

// hubClient is a client of a running hub's REST API.
type hubClient struct {
	base, token string
	http        *http.Client
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
		hint := ""
		if status == http.StatusUnauthorized && c.token == "" {
			hint = " (set MCP_HUB_TOKEN to a token of the hub's auth.tokens)"
		}
		return nil, fmt.Errorf("%s %s: %d %s: %s%s", method, path, status, http.StatusText(status), httpjson.ErrorText(b), hint)
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
	if errors.Is(err, syscall.ECONNREFUSED) {
		return 0, nil, fmt.Errorf("no hub at %s: is `mcp-hub serve` running? (or give its address with --hub or $MCP_HUB_URL)", c.base)
	}
	if ue := (*url.Error)(nil); errors.As(err, &ue) {
		return 0, nil, fmt.Errorf("cannot reach the hub at %s: %w", c.base, ue.Err)
	}
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

// answer ends a CLI request: the request's error, or the hub's body
// written as format asks (see writeOutput).
func answer(stdout io.Writer, format string, body []byte, err error, table func(io.Writer, []byte, bool) error) error {
	if err != nil {
		return err
	}
	return writeOutput(stdout, format, body, table)
}
