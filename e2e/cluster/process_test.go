package cluster

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// A restarted process runs its command again as a new process; the old one is gone.
func TestProcessRestart(t *testing.T) {
	p := StartProcess(t, "sleep", "/bin/sh", "-c", "echo started; exec sleep 60")
	waitOutput(t, p, 1)
	old := p.Cmd.Process.Pid
	p.Restart(t)
	if p.Cmd.Process.Pid == old || p.Exited() {
		t.Fatalf("after the restart: pid %d (was %d), exited %v", p.Cmd.Process.Pid, old, p.Exited())
	}
	if err := syscall.Kill(old, 0); err == nil {
		t.Errorf("the old process %d still runs", old)
	}
	if p.Cmd.Args[0] != "/bin/sh" || len(p.Cmd.Args) != 3 || p.Cmd.Args[2] != "echo started; exec sleep 60" {
		t.Errorf("restarted as %q", p.Cmd.Args)
	}
	waitOutput(t, p, 2) // the restarted process writes to the same output
	p.Kill()
	if !p.Exited() {
		t.Error("the restarted process did not end when killed")
	}
}

// waitOutput waits until p has written "started" n times.
func waitOutput(t *testing.T, p *Process, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); strings.Count(p.Out.String(), "started") < n; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("output %q, want %d lines \"started\"", p.Out.String(), n)
		}
	}
}
