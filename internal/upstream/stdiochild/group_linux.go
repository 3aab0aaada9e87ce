package stdiochild

import "syscall"

// groupAttr: a process group of its own, killed with the hub (Pdeathsig).
func groupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
