package hubtest

import "syscall"

// groupAttr puts a child in a process group of its own, so that it can be
// stopped with what it started, and has the kernel kill it when the thread
// that started it dies: a test binary killed by its timeout leaves no
// server behind.
func groupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
