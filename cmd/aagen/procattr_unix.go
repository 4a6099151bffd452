//go:build unix && !linux

package main

import "syscall"

// serverProcAttr puts the server in a process group of its own (see procattr_linux.go).
func serverProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
