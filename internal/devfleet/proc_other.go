//go:build !linux

package devfleet

import "syscall"

// procAttr puts a child in its own process group (no parent-death signal
// outside Linux).
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
