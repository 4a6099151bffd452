//go:build !unix

package main

import "syscall"

// serverProcAttr keeps the default: there are no process groups to separate.
func serverProcAttr() *syscall.SysProcAttr { return nil }
