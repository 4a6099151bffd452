//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package etcd

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// lockFile is the name of the lock file Start keeps in the data directory.
const lockFile = ".lock"

// dirLock is an exclusive flock on the data directory's lock file, held for
// as long as an etcd may have the directory open.
type dirLock struct {
	f    *os.File
	once sync.Once
}

// lockDataDir locks dir without waiting. flock locks belong to the open file,
// so a second Server in the same process is refused just like one in another
// process.
func lockDataDir(dir string) (*dirLock, error) {
	path := filepath.Join(dir, lockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("etcd: cannot open lock file %q: %w", path, err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("etcd: data directory %q is in use by another etcd, in this process or another one (or an earlier start in this process crashed on it): stop that etcd or set Config.Dir to another directory", dir)
		}
		return nil, fmt.Errorf("etcd: cannot lock %q: %w", path, err)
	}
	return &dirLock{f: f}, nil
}

// release unlocks; it is idempotent.
func (l *dirLock) release() {
	l.once.Do(func() {
		syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
		l.f.Close()
	})
}
