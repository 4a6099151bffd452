//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package localauth

import (
	"os"
	"syscall"
)

// lockDir takes an exclusive flock on path, creating it if needed, and
// returns the function that releases it. flock locks belong to the open file,
// so two Ensure calls in one process exclude each other too.
func lockDir(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, keyMode)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
