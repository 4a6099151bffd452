// Package lazyfs is a FUSE filesystem that loses what was not synced when the power is cut,
// the way LazyFS (github.com/dsrhaslab/lazyfs) does for etcd's robustness tests.
//
// Mount serves a backing directory at a mount point. The backing directory holds the
// durable state; the mount holds the state the processes on it see:
//
//   - File data and size live in a page cache (per inode, shared by every open file) until
//     fsync or fdatasync of the file writes them into the backing file and syncs it.
//     Truncations and fallocate (mode 0) change the cached size likewise.
//   - Creating, removing and renaming a file or directory changes the backing directory at
//     once but is recorded in a journal until an fsync of a directory the change touched
//     (the parent; for a rename either parent) makes it durable; a removed or replaced entry
//     waits in a hidden holding directory meanwhile. A file fsync does not make its own
//     name durable (POSIX does not promise it; ext4 and xfs happen to).
//
// Cut simulates a power cut: it unmounts, drops every page cache, undoes the journal's
// changes newest first, and mounts again, so the mount then shows only the durable state.
// The processes using the mount must have been killed first (a mount in use cannot be
// unmounted).
//
// Not modelled: hard and symbolic links, mknod, RENAME_EXCHANGE (refused), attributes
// other than the size (mode, owner and times are durable at once), extended attributes,
// torn writes (a synced write is whole, an unsynced one is gone).
//
// Mounting needs root and /dev/fuse; it calls mount(2) itself (go-fuse's DirectMount), so
// no fusermount is needed.
package lazyfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// FS is a mounted lazyfs.
type FS struct {
	backing, mountpoint string
	server              *fuse.Server
	state               *mounted
}

// Unsynced is what a mount holds that a power cut would lose.
type Unsynced struct {
	// Files is how many files have data or a size not synced.
	Files int
	// Bytes is how many bytes of written data are not synced.
	Bytes int64
	// EntryChanges is how many creations, removals and renames no directory fsync has made
	// durable.
	EntryChanges int
}

// Available says why a mount cannot be made here (not root, no /dev/fuse), or nil.
func Available() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("lazyfs mounts with mount(2), which needs root: run as root (euid is %d)", os.Geteuid())
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return fmt.Errorf("lazyfs needs the FUSE device: %w (load the fuse module, or give the container /dev/fuse)", err)
	}
	return nil
}

// MountTemp mounts a new temporary backing directory on a new temporary mountpoint for the
// test t, fails t with Mount's reason when it cannot (not root, no /dev/fuse), and unmounts
// (an error if that fails) when t's cleanups run (after those registered later, such as a process using the mount).
//
// The file system is served by goroutines of the calling process. Code that maps a file of
// the mount into memory (bbolt, so etcd) must run in another process: a page fault on the
// mapping waits for the server, and a stop-the-world garbage collection during it never
// ends (runtime/etcd's power-cut test runs etcd in a child process for that reason).
func MountTemp(t testing.TB) (f *FS, mountpoint string) {
	t.Helper()
	mountpoint = t.TempDir()
	f, err := Mount(t.TempDir(), mountpoint)
	if err != nil {
		t.Fatalf("this test needs a FUSE mount: %v", err)
	}
	t.Cleanup(func() {
		if err := f.Close(); err != nil {
			t.Errorf("unmounting the lazyfs at %s: %v", mountpoint, err)
		}
	})
	return f, mountpoint
}

// Mount serves backing at mountpoint; both must be existing directories.
func Mount(backing, mountpoint string) (*FS, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	backing, err := filepath.Abs(backing)
	if err != nil {
		return nil, err
	}
	f := &FS{backing: backing, mountpoint: mountpoint}
	if err := f.mount(); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *FS) mount() error {
	var st syscall.Stat_t
	if err := syscall.Stat(f.backing, &st); err != nil {
		return fmt.Errorf("lazyfs backing directory: %w", err)
	}
	holding := filepath.Join(f.backing, holdingName)
	// A holding directory left by a process that died without Cut or Close: its removals
	// stay.
	if err := os.RemoveAll(holding); err != nil {
		return err
	}
	m := &mounted{root: f.backing, rootIno: st.Ino, files: map[uint64]*fileData{}, journal: journal{root: f.backing, holding: holding}}
	timeout := time.Second
	server, err := fs.Mount(f.mountpoint, &node{m: m}, &fs.Options{
		MountOptions: fuse.MountOptions{DirectMount: true, DirectMountStrict: true, FsName: f.backing, Name: "lazyfs", MaxBackground: 64},
		EntryTimeout: &timeout,
		AttrTimeout:  &timeout,
	})
	if err != nil {
		return fmt.Errorf("mounting lazyfs at %s: %w", f.mountpoint, err)
	}
	f.server, f.state = server, m
	return nil
}

// Unsynced reports what the mount holds that a cut would lose.
func (f *FS) Unsynced() Unsynced {
	m := f.state
	m.mu.Lock()
	defer m.mu.Unlock()
	u := Unsynced{EntryChanges: len(m.journal.changes)}
	for _, d := range m.files {
		d.mu.Lock()
		if d.dirty() {
			u.Files++
			u.Bytes += d.unsyncedBytes()
		}
		d.mu.Unlock()
	}
	return u
}

// Cut cuts the power: it unmounts, drops what was not synced and mounts the durable state
// again. It returns what was dropped.
func (f *FS) Cut() (Unsynced, error) {
	if err := f.unmount(); err != nil {
		return Unsynced{}, err
	}
	lost, err := f.drop()
	if err != nil {
		return lost, err
	}
	return lost, f.mount()
}

// Close unmounts and drops what was not synced, as Cut does, without mounting again.
func (f *FS) Close() error {
	if f.server == nil {
		return nil
	}
	if err := f.unmount(); err != nil {
		return err
	}
	_, err := f.drop()
	return err
}

// unmount unmounts, retrying while the kernel still counts the mount busy (the files of a
// process that was just killed are released shortly after its death).
func (f *FS) unmount() error {
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if err = f.server.Unmount(); err == nil {
			f.server.Wait()
			f.server = nil
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return fmt.Errorf("unmounting lazyfs at %s (is a process still using it?): %w", f.mountpoint, err)
		}
	}
}

// drop forgets the page caches and undoes the journal.
func (f *FS) drop() (Unsynced, error) {
	lost := f.Unsynced()
	m := f.state
	m.mu.Lock()
	defer m.mu.Unlock()
	for ino, d := range m.files {
		_ = syscall.Close(d.fd)
		delete(m.files, ino)
	}
	_, err := m.journal.undo()
	if err != nil {
		err = fmt.Errorf("lazyfs: undoing directory changes not synced: %w", err)
	}
	return lost, err
}
