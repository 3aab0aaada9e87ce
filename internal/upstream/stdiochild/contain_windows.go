package stdiochild

import (
	"os/exec"
	"syscall"
)

// contain starts the child in a process group of its own (so a Ctrl+C at
// the hub's console is not also the child's) and stops it by terminating
// it: Windows has no SIGTERM to ask first. What the child itself started
// (npx's node) is not stopped with it; a job object would be needed.
func contain(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
	cmd.Cancel = func() error { return cmd.Process.Kill() }
}
