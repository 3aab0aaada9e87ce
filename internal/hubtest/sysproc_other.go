//go:build unix && !linux

package hubtest

import "syscall"

// groupAttr puts a child in a process group of its own, so that it can be
// stopped with what it started. (Only Linux can also tie its life to ours.)
func groupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
