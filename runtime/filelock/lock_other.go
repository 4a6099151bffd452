//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package filelock

import (
	"errors"
	"os"
)

// Supported reports whether this platform has flock, so that the locks exclude.
const Supported = false

func lock(*os.File, bool) error { return nil }

func unlock(*os.File) {}

func tryShared(*os.File) (bool, error) { return false, errors.ErrUnsupported }
