//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package socketdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// lockOwner creates dir's owner file and locks it for the life of the process.
func lockOwner(dir string) (*os.File, error) {
	path := filepath.Join(dir, ownerFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("creating the socket directory's lock file: %w", err)
	}
	if err := flock(f, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %q: %w", path, err)
	}
	return f, nil
}

func unlock(f *os.File) {
	flock(f, syscall.LOCK_UN)
	f.Close()
}

// locked reports whether another open file holds a lock on f's file: it tries to take a
// shared lock without waiting.
func locked(f *os.File) (bool, error) {
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

func ownedByMe(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}
