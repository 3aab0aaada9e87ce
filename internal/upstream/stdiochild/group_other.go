//go:build unix && !linux

package stdiochild

import "syscall"

// groupAttr: a process group of its own. macOS and the BSDs have no
// Pdeathsig: a child outlives a hub that is killed (a hub that stops
// stops its children).
func groupAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
