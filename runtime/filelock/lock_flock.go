//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package filelock

import (
	"errors"
	"os"
	"syscall"
)

// Supported reports whether this platform has flock, so that the locks exclude.
const Supported = true

func lock(f *os.File, wait bool) error {
	how := syscall.LOCK_EX
	if !wait {
		how |= syscall.LOCK_NB
	}
	err := flock(f, how)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return ErrLocked
	}
	return err
}

func unlock(f *os.File) { flock(f, syscall.LOCK_UN) }

// tryShared reports whether another open file holds a lock on f's file.
func tryShared(f *os.File) (bool, error) {
	err := flock(f, syscall.LOCK_SH|syscall.LOCK_NB)
	switch {
	case err == nil:
		flock(f, syscall.LOCK_UN)
		return false, nil
	case errors.Is(err, syscall.EWOULDBLOCK):
		return true, nil
	default:
		return false, err
	}
}

func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
