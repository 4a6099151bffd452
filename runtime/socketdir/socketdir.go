// Package socketdir makes private directories for unix sockets, and removes the ones that a
// killed process left behind.
//
// A server that listens on a unix socket keeps it in a directory only its user can search
// (mode 0700), created with os.MkdirTemp and removed on a clean shutdown. A process killed
// with SIGKILL cannot remove it; without a sweep, /tmp fills with empty aagen-etcd-* and
// aagen-kine-* directories. Each directory therefore holds a lock file that its process keeps
// locked (flock) for as long as it lives: the kernel drops the lock when the process dies,
// so the next Make with the same pattern can tell a dead owner's directory from a live one
// and remove it.
package socketdir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/aagen-dev/aagen/runtime/filelock"
)

// ownerFile is the lock file each directory holds.
const ownerFile = ".owner"

// sweepGrace is how old a directory must be before a sweep may remove it. Between
// os.MkdirTemp and the flock of its owner file another process's directory is briefly
// unlocked; a directory that young is left alone.
const sweepGrace = time.Minute

// Dir is a private socket directory. Its lock is held until Remove, or until the process
// exits.
type Dir struct {
	// Path is the directory's absolute path.
	Path string

	owner *filelock.Lock
	once  sync.Once
}

// Make removes the directories matching parent/pattern* whose owners are gone (see the
// package doc), then creates a new one, mode 0700, and locks it. parent "" means
// os.TempDir().
func Make(parent, pattern string) (*Dir, error) {
	if parent == "" {
		parent = os.TempDir()
	}
	Sweep(parent, pattern)
	path, err := os.MkdirTemp(parent, pattern)
	if err != nil {
		return nil, fmt.Errorf("creating a socket directory in %q: %w", parent, err)
	}
	// MkdirTemp already uses 0700; chmod makes it independent of that detail.
	if err := os.Chmod(path, 0o700); err != nil {
		os.RemoveAll(path)
		return nil, fmt.Errorf("restricting the socket directory %q: %w", path, err)
	}
	owner, err := filelock.Create(filepath.Join(path, ownerFile))
	if err != nil {
		os.RemoveAll(path)
		return nil, fmt.Errorf("creating and locking the socket directory's lock file: %w", err)
	}
	return &Dir{Path: path, owner: owner}, nil
}

// Remove removes the directory and releases its lock; it is idempotent.
func (d *Dir) Remove() {
	if d == nil {
		return
	}
	d.once.Do(func() {
		os.RemoveAll(d.Path)
		d.owner.Release()
	})
}

// Sweep removes the directories matching parent/pattern* that belong to this user, are
// older than a minute, and whose owner file is missing or not locked by a live process. It
// reports what it removed; errors are ignored (a directory it cannot remove is left).
func Sweep(parent, pattern string) []string {
	matches, _ := filepath.Glob(filepath.Join(parent, pattern+"*"))
	var removed []string
	for _, dir := range matches {
		fi, err := os.Lstat(dir)
		if err != nil || !fi.IsDir() || !ownedByMe(fi) || time.Since(fi.ModTime()) < sweepGrace {
			continue
		}
		if alive, err := ownerAlive(filepath.Join(dir, ownerFile)); err != nil || alive {
			continue
		}
		if err := os.RemoveAll(dir); err == nil {
			removed = append(removed, dir)
		}
	}
	return removed
}

// ownerAlive reports whether a live process holds the lock on the owner file at path. A
// missing owner file means no owner (a directory from before the lock, or from a process
// killed between creating the directory and locking it).
// Where flock is missing (filelock.Supported) a live owner cannot be told from a dead one:
// the error makes Sweep remove nothing.
func ownerAlive(path string) (bool, error) {
	alive, err := filelock.Held(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return alive, err
}
