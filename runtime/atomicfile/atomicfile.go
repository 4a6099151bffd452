// Package atomicfile replaces files so that a reader, or the file system after a crash,
// sees either the old content or the new one, never a part of it: the content goes to a
// temporary file beside the destination, which is synced to disk and renamed over it, and
// then the directory is synced so that the rename itself is durable.
//
// Generated servers import it (through runtime/localauth and runtime/server), so it
// depends on the standard library only.
package atomicfile

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
)

// WriteFile writes data to path atomically and durably, with permissions perm (also when
// path exists with other permissions). On error path is left as it was and no temporary
// file remains.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	return Write(path, perm, func(w io.Writer) error {
		_, err := io.Copy(w, bytes.NewReader(data))
		return err
	})
}

// Write is WriteFile for content that is produced as it is written: fill writes it to the
// temporary file. When fill fails, nothing is renamed and its error is returned.
func Write(path string, perm fs.FileMode, fill func(w io.Writer) error) error {
	tmp, err := Stage(path, perm, fill)
	if err != nil {
		return err
	}
	if err := Commit(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}

// Stage is the first half of Write: it writes the content to a new temporary file in
// path's directory, with permissions perm, syncs and closes it, and returns its name.
// Commit (or a rename followed by SyncDir) puts it in place. On error no temporary file
// remains.
func Stage(path string, perm fs.FileMode, fill func(w io.Writer) error) (tmp string, err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	// Before the content, so that a private file is never readable by others.
	if err := f.Chmod(perm); err != nil {
		return "", err
	}
	if err := fill(f); err != nil {
		return "", err
	}
	if err := f.Sync(); err != nil {
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	return f.Name(), nil
}

// Commit renames tmp, a file that Stage wrote, to path and syncs path's directory. It does
// not remove tmp when the rename fails.
func Commit(tmp, path string) error {
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// SyncDir makes the entries of dir (a rename, a new file) durable. Platforms that cannot
// sync a directory (Windows) are not an error.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil && !syncUnsupported(err) {
		return err
	}
	return nil
}

// MkdirAll creates dir and its missing parents with permissions perm, as os.MkdirAll does,
// and syncs the parent of each directory it creates: a new directory's entry is durable
// only once its parent is synced, and without that a power cut can take the directory
// with everything synced inside it.
func MkdirAll(dir string, perm fs.FileMode) error {
	dir = filepath.Clean(dir)
	var missing []string // deepest first
	for p := dir; ; p = filepath.Dir(p) {
		if _, err := os.Lstat(p); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		missing = append(missing, p)
		if filepath.Dir(p) == p {
			break
		}
	}
	if err := os.MkdirAll(dir, perm); err != nil {
		return err
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := SyncDir(filepath.Dir(missing[i])); err != nil {
			return err
		}
	}
	return nil
}

// SyncTree syncs dir and every directory under it, so that every entry made in them so far
// is durable: for a tree another program created without syncing its directories.
func SyncTree(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return SyncDir(p)
		}
		return nil
	})
}

// syncUnsupported reports whether err says that the directory cannot be synced at all, as
// on Windows or on file systems without fsync for directories.
func syncUnsupported(err error) bool {
	return runtime.GOOS == "windows" || errors.Is(err, errors.ErrUnsupported) ||
		errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSUP)
}
