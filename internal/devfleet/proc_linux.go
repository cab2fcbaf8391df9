package devfleet

import "syscall"

// procAttr puts a child in its own process group, so a terminal's Ctrl-C
// reaches only the parent, which then stops the fleet in order, and makes it
// die with its parent.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
