package lazyfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// entryKind is a kind of directory change.
type entryKind int

const (
	// entryCreated: a file or directory was created at path.
	entryCreated entryKind = iota
	// entryRemoved: the file or empty directory at path was removed; it waits in the
	// holding directory under held.
	entryRemoved
	// entryRenamed: path was renamed to target; what target replaced waits under held.
	entryRenamed
)

// entryChange is a directory change not yet made durable by an fsync of a directory it
// touched. The backing directory already shows the change; Cut undoes it.
type entryChange struct {
	kind entryKind
	// dirs are the backing inode numbers of the directories whose fsync makes the change
	// durable (the parent; for a rename, both parents).
	dirs []uint64
	// path and target are relative to the backing directory.
	path, target string
	// held is the name in the holding directory of what the change removed or replaced
	// ("" when it removed nothing).
	held string
	// isDir is set when the renamed entry is a directory: the paths of earlier changes
	// under it move with it.
	isDir bool
}

// journal is the list of directory changes not yet durable, oldest first.
type journal struct {
	// root is the backing directory and holding the directory (inside it, hidden from the
	// mount) where removed entries wait until their removal is durable.
	root, holding string
	changes       []*entryChange
	// nextHeld numbers the names in the holding directory.
	nextHeld int
}

func (j *journal) abs(rel string) string { return filepath.Join(j.root, rel) }

// hold moves the entry at rel into the holding directory and returns its name there.
func (j *journal) hold(rel string) (string, error) {
	if err := os.MkdirAll(j.holding, 0o700); err != nil {
		return "", err
	}
	j.nextHeld++
	name := "held-" + strconv.Itoa(j.nextHeld)
	return name, os.Rename(j.abs(rel), filepath.Join(j.holding, name))
}

// add records a change.
func (j *journal) add(c *entryChange) {
	if c.kind == entryRenamed && c.isDir {
		j.movePaths(c.path, c.target)
	}
	j.changes = append(j.changes, c)
}

// movePaths rewrites the paths of the recorded changes under from to be under to.
func (j *journal) movePaths(from, to string) {
	move := func(p string) string {
		if p == from {
			return to
		}
		if rest, ok := strings.CutPrefix(p, from+"/"); ok {
			return to + "/" + rest
		}
		return p
	}
	for _, c := range j.changes {
		c.path, c.target = move(c.path), move(c.target)
	}
}

// synced makes durable every change that touched directory dir (an fsync of it).
func (j *journal) synced(dir uint64) {
	j.changes = slices.DeleteFunc(j.changes, func(c *entryChange) bool {
		if !slices.Contains(c.dirs, dir) {
			return false
		}
		if c.held != "" {
			_ = os.RemoveAll(filepath.Join(j.holding, c.held))
		}
		return true
	})
}

// undo reverts every recorded change, newest first, and empties the holding directory. A
// change whose path a durable later change removed cannot be reverted and is dropped.
func (j *journal) undo() (undone int, err error) {
	var errs []error
	for i := len(j.changes) - 1; i >= 0; i-- {
		c := j.changes[i]
		var e error
		switch c.kind {
		case entryCreated:
			e = os.RemoveAll(j.abs(c.path))
		case entryRemoved:
			e = os.Rename(filepath.Join(j.holding, c.held), j.abs(c.path))
		case entryRenamed:
			e = os.Rename(j.abs(c.target), j.abs(c.path))
			if e == nil && c.held != "" {
				e = os.Rename(filepath.Join(j.holding, c.held), j.abs(c.target))
			}
			if e == nil && c.isDir {
				// The earlier changes were recorded with the paths before this rename.
				j.changes = j.changes[:i]
				j.movePaths(c.target, c.path)
			}
		}
		if e != nil && !errors.Is(e, fs.ErrNotExist) {
			errs = append(errs, e)
		}
		undone++
	}
	j.changes = nil
	if err := os.RemoveAll(j.holding); err != nil {
		errs = append(errs, err)
	}
	return undone, errors.Join(errs...)
}
