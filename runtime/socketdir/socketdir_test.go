//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

// Without flock (lock_other.go) Sweep removes nothing by design: these tests are for the
// platforms with it.

package socketdir

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

const pattern = "aagen-test-"

// age makes dir look older than the sweep's grace period.
func age(t *testing.T, dir string) {
	t.Helper()
	old := time.Now().Add(-2 * sweepGrace)
	if err := os.Chtimes(dir, old, old); err != nil {
		t.Fatal(err)
	}
}

func TestMakeIsPrivateAndRemoveCleansUp(t *testing.T) {
	parent := t.TempDir()
	d, err := Make(parent, pattern)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(d.Path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("mode %v, want 0700", fi.Mode().Perm())
	}
	d.Remove()
	d.Remove()
	if _, err := os.Stat(d.Path); !os.IsNotExist(err) {
		t.Errorf("%s still there after Remove: %v", d.Path, err)
	}
}

func TestSweepKeepsLiveAndYoungDirectories(t *testing.T) {
	parent := t.TempDir()
	live, err := Make(parent, pattern)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Remove()
	age(t, live.Path)
	// A directory without an owner file, created just now (another process between
	// MkdirTemp and its lock): too young to judge.
	young, err := os.MkdirTemp(parent, pattern)
	if err != nil {
		t.Fatal(err)
	}
	if removed := Sweep(parent, pattern); len(removed) != 0 {
		t.Fatalf("Sweep removed %v; the live and the young directory must stay", removed)
	}
	for _, dir := range []string{live.Path, young} {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("%s: %v", dir, err)
		}
	}
}

// TestSweepRemovesADeadProcesssDirectory starts a process that makes a socket directory,
// SIGKILLs it, and checks that the next Make removes what it left.
func TestSweepRemovesADeadProcesssDirectory(t *testing.T) {
	if os.Getenv("SOCKETDIR_CHILD_PARENT") != "" {
		d, err := Make(os.Getenv("SOCKETDIR_CHILD_PARENT"), pattern)
		if err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString(d.Path + "\n")
		time.Sleep(time.Hour)
	}
	parent := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSweepRemovesADeadProcesssDirectory$")
	cmd.Env = append(os.Environ(), "SOCKETDIR_CHILD_PARENT="+parent)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		t.Fatalf("child: %v", err)
	}
	dead := strings.TrimSpace(line)
	age(t, dead)
	// While the child lives its directory stays.
	if removed := Sweep(parent, pattern); len(removed) != 0 {
		t.Fatalf("Sweep removed %v while its owner was alive", removed)
	}
	cmd.Process.Kill()
	cmd.Wait()

	next, err := Make(parent, pattern)
	if err != nil {
		t.Fatal(err)
	}
	defer next.Remove()
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("the SIGKILLed process's %s survived the next Make: %v", dead, err)
	}
	left, _ := filepath.Glob(filepath.Join(parent, pattern+"*"))
	if !slices.Equal(left, []string{next.Path}) {
		t.Errorf("left in the parent: %v, want only %s", left, next.Path)
	}
}
