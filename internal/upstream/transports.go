package upstream

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/mcpws"
)

// childKillDelay is how long a stdio child gets between SIGTERM and SIGKILL.
const childKillDelay = 2 * time.Second

// inheritedEnv are the only variables of the hub's environment a stdio child
// sees besides its own env: the hub's environment holds tokens.
var inheritedEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "TMPDIR", "TZ", "NODE_PATH", "NODE_OPTIONS", "npm_config_cache"}

func (c *Client) newTransport(legacy bool) (transport.Interface, error) {
	switch c.spec.Transport {
	case config.TransportStreamableHTTP:
		opts := []transport.StreamableHTTPCOption{
			transport.WithHTTPHeaders(c.cred.headers()),
			transport.WithHTTPLogger(c.cred.transportLog(c.log)),
		}
		if c.opts.HTTPClient != nil {
			opts = append(opts, transport.WithHTTPBasicClient(c.opts.HTTPClient))
		}
		if legacy {
			opts = append(opts, transport.WithContinuousListening())
		}
		tr, err := transport.NewStreamableHTTP(c.spec.URL, opts...)
		if err != nil {
			return nil, fmt.Errorf("streamable HTTP transport: %w", err)
		}
		return tr, nil
	case config.TransportSSE:
		opts := []transport.ClientOption{transport.WithHeaders(c.cred.headers()), transport.WithSSELogger(c.cred.transportLog(c.log))}
		if c.opts.HTTPClient != nil {
			opts = append(opts, transport.WithHTTPClient(c.opts.HTTPClient))
		}
		tr, err := transport.NewSSE(c.spec.URL, opts...)
		if err != nil {
			return nil, fmt.Errorf("SSE transport: %w", err)
		}
		return tr, nil
	case config.TransportWebSocket:
		h := http.Header{}
		for k, v := range c.cred.headers() {
			h.Set(k, v)
		}
		if c.cred.oauth != nil {
			// The handshake is the one HTTP request of a WebSocket: the
			// token goes in its headers, fetched (or reused) at dial time.
			tok, err := c.cred.oauth.Token()
			if err != nil {
				return nil, err
			}
			h.Set("Authorization", "Bearer "+tok.AccessToken)
		}
		return mcpws.NewClientTransport(c.spec.URL, h, wsOptions(&c.opts, c.loops)...), nil
	case config.TransportStdio:
		env := make([]string, 0, len(c.spec.Env))
		for k, v := range c.spec.Env {
			env = append(env, k+"="+v)
		}
		return transport.NewStdioWithOptions(c.spec.Command, env, c.spec.Args,
			transport.WithCommandFunc(childCommand),
			transport.WithCommandStderrWriter(stderrLogger{c}),
			transport.WithCommandLogger(c.cred.transportLog(c.log)),
		), nil
	}
	return nil, fmt.Errorf("transport %q is not supported", c.spec.Transport)
}

// childCommand starts a stdio server in its own process group, so that
// stopping it also stops what it spawned (npx starts node, uvx starts
// python), and so that it dies with the hub (Pdeathsig).
func childCommand(ctx context.Context, command string, env []string, args []string) (*exec.Cmd, error) {
	cmd := exec.CommandContext(ctx, command, args...)
	base := make([]string, 0, len(inheritedEnv)+len(env))
	for _, k := range inheritedEnv {
		if v, ok := os.LookupEnv(k); ok {
			base = append(base, k+"="+v)
		}
	}
	cmd.Env = append(base, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error {
		pgid := -cmd.Process.Pid
		_ = syscall.Kill(pgid, syscall.SIGTERM)
		time.AfterFunc(childKillDelay, func() { _ = syscall.Kill(pgid, syscall.SIGKILL) })
		return nil
	}
	cmd.WaitDelay = childKillDelay + time.Second
	return cmd, nil
}

// stderrLogger forwards a stdio child's stderr to the hub's log at debug
// level, line by line, redacted: a child may print the token it was given
// in its environment.
type stderrLogger struct{ c *Client }

func (w stderrLogger) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		if line != "" {
			w.c.log.Debug().Str("stderr", w.c.cred.text(line)).Msg("upstream stderr")
		}
	}
	return len(p), nil
}
