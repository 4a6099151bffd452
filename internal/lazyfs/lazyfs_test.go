package lazyfs

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// mount mounts a lazyfs on a fresh backing directory; it fails (never skips) where FUSE
// cannot be mounted.
func mount(t *testing.T) (*FS, string) {
	t.Helper()
	if err := Available(); err != nil {
		t.Fatalf("the power-cut filesystem cannot run here: %v", err)
	}
	backing, mnt := t.TempDir(), t.TempDir()
	f, err := Mount(backing, mnt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Close(); err != nil {
			t.Error(err)
		}
	})
	return f, mnt
}

func cut(t *testing.T, f *FS) Unsynced {
	t.Helper()
	lost, err := f.Cut()
	if err != nil {
		t.Fatal(err)
	}
	return lost
}

// writeFile creates or truncates path, writes data, and fsyncs the file if syncFile.
func writeFile(t *testing.T, path string, data []byte, syncFile bool) {
	t.Helper()
	fh, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.Write(data); err != nil {
		t.Fatal(err)
	}
	if syncFile {
		if err := fh.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if err := fh.Close(); err != nil {
		t.Fatal(err)
	}
}

func syncDir(t *testing.T, path string) {
	t.Helper()
	d, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
}

func wantContent(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: %d bytes %.40q, want %d bytes %.40q", path, len(got), got, len(want), want)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Size() != int64(len(want)) {
		t.Fatalf("%s: stat size %v (%v), want %d", path, fi.Size(), err, len(want))
	}
}

func wantAbsent(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Fatalf("%s: want it absent, got %v", path, err)
	}
}

// durableFile creates path with data, synced, its name synced too.
func durableFile(t *testing.T, path string, data []byte) {
	t.Helper()
	writeFile(t, path, data, true)
	syncDir(t, filepath.Dir(path))
}

func TestUnsyncedWriteLostSyncedKept(t *testing.T) {
	f, mnt := mount(t)
	p := filepath.Join(mnt, "f")
	old := bytes.Repeat([]byte("durable "), 1000) // 8000 bytes, three pages
	durableFile(t, p, old)

	// Written, read back, never synced: lost.
	fh, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteAt([]byte("UNSYNCED"), 4090); err != nil { // across a page boundary
		t.Fatal(err)
	}
	if _, err := fh.WriteAt([]byte("tail"), 9000); err != nil { // extends, with a hole
		t.Fatal(err)
	}
	fh.Close()
	live := append(append([]byte{}, old...), make([]byte, 1004)...)
	copy(live[4090:], "UNSYNCED")
	copy(live[9000:], "tail")
	wantContent(t, p, live)
	if u := f.Unsynced(); u.Files != 1 || u.Bytes == 0 || u.EntryChanges != 0 {
		t.Fatalf("unsynced before the cut: %+v, want one file with bytes and no entry change", u)
	}
	lost := cut(t, f)
	if lost.Files != 1 || lost.Bytes < 12 {
		t.Errorf("cut reported %+v, want one file and at least 12 bytes", lost)
	}
	wantContent(t, p, old)

	// Written and synced: kept.
	fh, err = os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteAt([]byte("SYNCED"), 100); err != nil {
		t.Fatal(err)
	}
	if err := fh.Sync(); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	copy(old[100:], "SYNCED")
	if lost := cut(t, f); lost != (Unsynced{}) {
		t.Errorf("cut after fsync lost %+v, want nothing", lost)
	}
	wantContent(t, p, old)
}

func TestTruncateNotSyncedIsUndone(t *testing.T) {
	f, mnt := mount(t)
	p := filepath.Join(mnt, "f")
	old := bytes.Repeat([]byte{'x'}, 10000)
	durableFile(t, p, old)
	if err := os.Truncate(p, 10); err != nil {
		t.Fatal(err)
	}
	// Extending again reads zeros, not the old bytes.
	if err := os.Truncate(p, 5000); err != nil {
		t.Fatal(err)
	}
	live := make([]byte, 5000)
	copy(live, old[:10])
	wantContent(t, p, live)
	cut(t, f)
	wantContent(t, p, old)

	// Synced, the truncation and the zeros are durable.
	if err := os.Truncate(p, 10); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, 5000); err != nil {
		t.Fatal(err)
	}
	fh, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := fh.Sync(); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	cut(t, f)
	wantContent(t, p, live)
}

func TestCreatedNameNeedsDirectorySync(t *testing.T) {
	f, mnt := mount(t)
	dir := filepath.Join(mnt, "d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	syncDir(t, mnt)
	// The file's data is synced but not its name: the file is gone.
	writeFile(t, filepath.Join(mnt, "a"), []byte("a"), true)
	// Name and data synced: kept.
	writeFile(t, filepath.Join(dir, "b"), []byte("b"), true)
	syncDir(t, dir)
	// A directory not synced in its parent takes its synced entries with it.
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	durableFile(t, filepath.Join(sub, "c"), []byte("c"))
	if u := f.Unsynced(); u.EntryChanges != 2 {
		t.Fatalf("unsynced: %+v, want 2 entry changes (a, d/sub)", u)
	}
	lost := cut(t, f)
	if lost.EntryChanges != 2 {
		t.Errorf("cut reported %+v, want 2 entry changes", lost)
	}
	wantAbsent(t, filepath.Join(mnt, "a"))
	wantContent(t, filepath.Join(dir, "b"), []byte("b"))
	wantAbsent(t, sub)
}

func TestRenameAndRemoveNeedDirectorySync(t *testing.T) {
	f, mnt := mount(t)
	target, tmp := filepath.Join(mnt, "target"), filepath.Join(mnt, "target.tmp")
	durableFile(t, target, []byte("old"))
	durableFile(t, filepath.Join(mnt, "removed"), []byte("removed"))

	// The atomic-replace pattern without the directory fsync: the old content is back and
	// the temporary file, whose name was never synced, is gone.
	writeFile(t, tmp, []byte("new"), true)
	if err := os.Rename(tmp, target); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(mnt, "removed")); err != nil {
		t.Fatal(err)
	}
	wantContent(t, target, []byte("new"))
	wantAbsent(t, filepath.Join(mnt, "removed"))
	entries, err := os.ReadDir(mnt)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "target" {
		t.Fatalf("mount lists %v, want only target (the holding directory is hidden)", entries)
	}
	cut(t, f)
	wantContent(t, target, []byte("old"))
	wantAbsent(t, tmp)
	wantContent(t, filepath.Join(mnt, "removed"), []byte("removed"))

	// With it, the new content is durable.
	writeFile(t, tmp, []byte("new"), true)
	if err := os.Rename(tmp, target); err != nil {
		t.Fatal(err)
	}
	syncDir(t, mnt)
	if lost := cut(t, f); lost != (Unsynced{}) {
		t.Errorf("cut after the directory fsync lost %+v", lost)
	}
	wantContent(t, target, []byte("new"))
	wantAbsent(t, tmp)

	// A directory renamed durably keeps the undo of a change inside it on the right path.
	d, e := filepath.Join(mnt, "d"), filepath.Join(mnt, "e")
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	syncDir(t, mnt)
	durableFile(t, filepath.Join(d, "kept"), []byte("kept"))
	writeFile(t, filepath.Join(d, "unsynced-name"), []byte("x"), true)
	if err := os.Rename(d, e); err != nil {
		t.Fatal(err)
	}
	syncDir(t, mnt)
	cut(t, f)
	wantAbsent(t, d)
	wantContent(t, filepath.Join(e, "kept"), []byte("kept"))
	wantAbsent(t, filepath.Join(e, "unsynced-name"))
}

func TestUnlinkedOpenFileAndFallocate(t *testing.T) {
	f, mnt := mount(t)
	p := filepath.Join(mnt, "wal")
	fh, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	syncDir(t, mnt)
	// etcd preallocates its WAL segments with fallocate (mode 0): the size is cached too.
	if err := syscallFallocate(fh, 1<<20); err != nil {
		t.Fatal(err)
	}
	if fi, _ := fh.Stat(); fi.Size() != 1<<20 {
		t.Fatalf("size after fallocate: %d", fi.Size())
	}
	// An unlinked file stays readable and writable through its descriptor.
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteAt([]byte("still here"), 10); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 10)
	if _, err := fh.ReadAt(buf, 10); err != nil || string(buf) != "still here" {
		t.Fatalf("read of the unlinked file: %q %v", buf, err)
	}
	fh.Close()
	lost := cut(t, f)
	if lost.Files != 1 || lost.EntryChanges != 1 {
		t.Errorf("cut reported %+v, want one file and one entry change", lost)
	}
	wantContent(t, p, nil)
}

func syscallFallocate(fh *os.File, size int64) error {
	return unix.Fallocate(int(fh.Fd()), 0, 0, size)
}
