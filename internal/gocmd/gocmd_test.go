package gocmd

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// needGo fails without a go command: the tests of a Go tool run where go is.
func needGo(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("no go command on PATH: %v", err)
	}
}

func TestRunReturnsStdoutAndUsesDirAndEnv(t *testing.T) {
	needGo(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/m\n\ngo 1.21\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := Cmd{Args: []string{"list", "-m"}, Dir: dir}.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != "example.com/m" {
		t.Errorf("go list -m in %s printed %q, want example.com/m", dir, got)
	}
	env := append(os.Environ(), "GOFLAGS=-mod=mod -tags=aagengocmdtest")
	out, err = Cmd{Args: []string{"env", "GOFLAGS"}, Dir: dir, Env: env}.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != "-mod=mod -tags=aagengocmdtest" {
		t.Errorf("go env GOFLAGS = %q with Env set, want the GOFLAGS given", got)
	}
}

func TestRunErrorCarriesStderr(t *testing.T) {
	needGo(t)
	dir := t.TempDir()
	var tee bytes.Buffer
	_, err := Cmd{Args: []string{"build", "./nosuchpackage"}, Dir: dir, Stderr: &tee}.Run(context.Background())
	var ge *Error
	if !errors.As(err, &ge) {
		t.Fatalf("error %v (%T), want *Error", err, err)
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Errorf("error does not wrap the *exec.ExitError: %v", err)
	}
	if len(ge.Stderr) == 0 || !strings.Contains(err.Error(), strings.TrimSpace(string(ge.Stderr))) {
		t.Errorf("error %q does not carry the standard error %q", err, ge.Stderr)
	}
	if !strings.HasPrefix(err.Error(), "go build ./nosuchpackage in "+dir+": ") {
		t.Errorf("error %q does not name the command and directory", err)
	}
	if tee.String() != string(ge.Stderr) {
		t.Errorf("Stderr received %q, the error holds %q", tee.String(), ge.Stderr)
	}
}

func TestRunCancelled(t *testing.T) {
	needGo(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Cmd{Args: []string{"version"}}.Run(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run with a cancelled context: %v, want context.Canceled", err)
	}
}
