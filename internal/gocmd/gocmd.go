// Package gocmd runs the go command for aagen (go mod tidy, go get, go build, go run...):
// in a directory, with an environment, under a context, with its standard error in the
// error it returns.
package gocmd

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
)

// Cmd is one run of the go command.
type Cmd struct {
	// Args are the go command's arguments: "mod", "tidy".
	Args []string
	// Dir is the directory it runs in; "" means the current one.
	Dir string
	// Env is its environment; nil means this process's.
	Env []string
	// Stderr, when set, also receives the standard error as it is written (a long build's
	// progress); the error still carries it.
	Stderr io.Writer
}

// Error is a failed run of the go command.
type Error struct {
	Args []string
	Dir  string
	// Err is why it failed: the context's error when the context ended it, else the
	// exec error (an *exec.ExitError, or one wrapping exec.ErrNotFound).
	Err error
	// Stderr is what it wrote to its standard error.
	Stderr []byte
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "go %s", strings.Join(e.Args, " "))
	if e.Dir != "" {
		fmt.Fprintf(&b, " in %s", e.Dir)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	if out := bytes.TrimSpace(e.Stderr); len(out) > 0 {
		fmt.Fprintf(&b, "\n%s", out)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Run runs the go command and returns its standard output, also when it fails (go mod
// download -json reports failures there). A failure is an *Error.
func (c Cmd) Run(ctx context.Context) ([]byte, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	cmd := exec.CommandContext(ctx, "go", c.Args...)
	cmd.Dir, cmd.Env = c.Dir, c.Env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if c.Stderr != nil {
		cmd.Stderr = io.MultiWriter(&stderr, c.Stderr)
	}
	if err := cmd.Run(); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			err = ctxErr
		}
		return stdout.Bytes(), &Error{Args: c.Args, Dir: c.Dir, Err: err, Stderr: stderr.Bytes()}
	}
	return stdout.Bytes(), nil
}
