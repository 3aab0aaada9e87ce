// Package stdiochild starts a stdio MCP server as a contained child of
// the hub: a process group that is stopped whole (SIGTERM, then SIGKILL),
// dies with the hub, and sees none of the hub's environment but a few
// harmless variables, because the hub's environment holds tokens.
package stdiochild

import (
	"context"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// childKillDelay is how long a stdio child gets between SIGTERM and SIGKILL.
const childKillDelay = 2 * time.Second

// inheritedEnv are the only variables of the hub's environment a stdio child
// sees besides its own env: the hub's environment holds tokens.
var inheritedEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "TMPDIR", "TZ", "NODE_PATH", "NODE_OPTIONS", "npm_config_cache"}

// Command is the command of a stdio server (mcp-go's
// transport.WithCommandFunc): in its own process group, so that stopping
// it also stops what it spawned (npx starts node, uvx starts python), and
// so that it dies with the hub (Pdeathsig); with env and only the
// harmless variables of the hub's environment.
func Command(ctx context.Context, command string, env []string, args []string) (*exec.Cmd, error) {
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
