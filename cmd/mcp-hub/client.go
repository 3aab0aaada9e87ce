package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// hubClient is the CLI's client of a running hub's REST API (mcp-hub pins,
// mcp-hub servers): the base URL from --url, the caller's token from
// MCP_HUB_TOKEN in the Authorization header.
type hubClient struct {
	base, token string
	http        *http.Client
}

// do sends one request; an answer other than 200 is an error with the
// hub's message.
func (c hubClient) do(ctx context.Context, method, path string, body []byte) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		rd = strings.NewReader(string(body))
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error any `json:"error"`
		}
		msg := strings.TrimSpace(string(b))
		if json.Unmarshal(b, &e) == nil && e.Error != nil {
			switch v := e.Error.(type) {
			case string:
				msg = v
			case map[string]any: // a JSON-RPC error from the auth or guard layer
				msg = fmt.Sprint(v["message"])
			}
		}
		return nil, fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, msg)
	}
	return b, nil
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
