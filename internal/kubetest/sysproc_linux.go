package kubetest

import "syscall"

// The children get their own process group (stopped as a whole), and SIGKILL when
// the test binary dies (panic, -timeout) so that they never outlive it.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
