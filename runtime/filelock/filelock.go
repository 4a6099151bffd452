// Package filelock takes advisory locks on files (flock), for the runtime's directories
// that one process at a time may use: an embedded etcd's data directory, the local
// credentials, a socket directory.
//
// A lock belongs to the open file, not to the process: a second lock on the same file is
// refused (or waits) in the same process as in another one, and the kernel drops it when
// the process dies, however it dies. On platforms without flock (Windows, Plan 9) the
// functions open the file but take no lock, and Supported is false.
package filelock

import (
	"errors"
	"os"
	"sync"
)

// ErrLocked is returned, wrapped, by TryAcquire and Create when another open file holds
// the lock.
var ErrLocked = errors.New("locked by another open file")

// Lock is an exclusive lock on a file, held until Release.
type Lock struct {
	f    *os.File
	once sync.Once
}

// Acquire opens path, creating it with mode 0600 if needed, and waits until it holds an
// exclusive lock on it.
func Acquire(path string) (*Lock, error) {
	return open(path, os.O_RDWR|os.O_CREATE, true)
}

// TryAcquire is Acquire without waiting: when another open file holds the lock it fails
// with an error wrapping ErrLocked.
func TryAcquire(path string) (*Lock, error) {
	return open(path, os.O_RDWR|os.O_CREATE, false)
}

// Create creates path with mode 0600, failing if it exists, and locks it without waiting.
func Create(path string) (*Lock, error) {
	return open(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, false)
}

func open(path string, flag int, wait bool) (*Lock, error) {
	f, err := os.OpenFile(path, flag, 0o600)
	if err != nil {
		return nil, err
	}
	if err := lock(f, wait); err != nil {
		f.Close()
		return nil, &os.PathError{Op: "lock", Path: path, Err: err}
	}
	return &Lock{f: f}, nil
}

// Release unlocks and closes the file; it is idempotent and does nothing on a nil Lock.
func (l *Lock) Release() {
	if l == nil {
		return
	}
	l.once.Do(func() {
		unlock(l.f)
		l.f.Close()
	})
}

// Held reports whether another open file holds a lock on path, by trying to take a shared
// lock without waiting. A missing file is an error wrapping fs.ErrNotExist; where flock is
// not supported the error wraps errors.ErrUnsupported.
func Held(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	held, err := tryShared(f)
	if err != nil {
		return false, &os.PathError{Op: "lock", Path: path, Err: err}
	}
	return held, nil
}
