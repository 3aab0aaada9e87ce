//go:build unix

package stdiochild

import (
	"os/exec"
	"syscall"
	"time"
)

// contain puts the child in a process group of its own (groupAttr) and
// stops the whole group: SIGTERM, then SIGKILL.
func contain(cmd *exec.Cmd) {
	cmd.SysProcAttr = groupAttr()
	cmd.Cancel = func() error {
		pgid := -cmd.Process.Pid
		_ = syscall.Kill(pgid, syscall.SIGTERM)
		time.AfterFunc(childKillDelay, func() { _ = syscall.Kill(pgid, syscall.SIGKILL) })
		return nil
	}
}
