package main

import "syscall"

// serverProcAttr puts the server `aagen up` starts in a process group of its own: Ctrl-C on
// a terminal signals the whole foreground group, and a server that got the signal twice
// (from the terminal and forwarded by aagen) would exit at once instead of stopping etcd
// cleanly. Should aagen itself die, the kernel sends the server SIGTERM.
func serverProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
