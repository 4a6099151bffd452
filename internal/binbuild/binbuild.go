// Package binbuild puts a binary built from Go modules in place once, for every process
// that needs it: aagen conformance's tools in the user's cache and the e2e tests' in
// .cache/bin (the same names, <name>-<version>, so one built by either serves both).
package binbuild

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/aagen-dev/aagen/runtime/filelock"
)

// Once makes sure bin exists: when it does not, build writes it to tmp, a file beside bin
// named for this process, and Once renames tmp to bin, so another process sees the whole
// binary or none. Processes building the same bin take turns on the file lock bin+".lock"
// and the later ones find it built. built says whether this call built it.
func Once(bin string, build func(tmp string) error) (built bool, err error) {
	if _, err := os.Stat(bin); err == nil {
		return false, nil
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return false, err
	}
	lock, err := filelock.Acquire(bin + ".lock")
	if err != nil {
		return false, err
	}
	defer lock.Release()
	if _, err := os.Stat(bin); err == nil { // another process built it meanwhile
		return false, nil
	}
	tmp := fmt.Sprintf("%s.build%d", bin, os.Getpid())
	defer os.Remove(tmp)
	if err := build(tmp); err != nil {
		return false, err
	}
	if err := os.Rename(tmp, bin); err != nil {
		return false, err
	}
	return true, nil
}
