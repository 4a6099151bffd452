// Package gotrim makes the go commands a test binary starts build with -trimpath.
//
// Tests generate projects into new temporary directories. Without -trimpath, Go keys every
// compiled package by its directory, so each run compiles the generated packages again and
// adds them to the build cache, where no later run can use them: gigabytes a run, which
// once filled CI's disk. With -trimpath a generated package that did not change is a cache
// hit, and the cache stays the size of one run.
package gotrim

import (
	"os"
	"strings"
)

// Main sets GOFLAGS=-trimpath (after what GOFLAGS already holds) for the go commands the
// tests start, runs them, and returns the exit code for os.Exit.
func Main(run func() int) int {
	flags := strings.TrimSpace(os.Getenv("GOFLAGS") + " -trimpath")
	if err := os.Setenv("GOFLAGS", flags); err != nil {
		panic(err)
	}
	return run()
}
