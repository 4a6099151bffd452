package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/aagen-dev/aagen/internal/lazyfs"
)

// entries lists dir's names.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestWriteFileCreatesAndReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.key")
	if err := WriteFile(path, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, []byte("two"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "two" {
		t.Fatalf("content %q, %v; want \"two\"", got, err)
	}
	if runtime.GOOS != "windows" {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("mode %v, want 0600 (the mode asked for, not the old file's)", fi.Mode().Perm())
		}
	}
	if names := entries(t, dir); len(names) != 1 || names[0] != "f.key" {
		t.Errorf("directory holds %q, want only f.key", names)
	}
}

func TestWriteFailureKeepsOldContentAndNoTemporaryFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := Write(path, 0o644, func(w io.Writer) error {
		if _, err := io.WriteString(w, "half of the new"); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Write returned %v, want the fill function's error", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "old" {
		t.Errorf("content %q after a failed write, want \"old\"", got)
	}
	if names := entries(t, dir); len(names) != 1 {
		t.Errorf("directory holds %q after a failed write, want only f", names)
	}
}

func TestCommitFailureLeavesNoTemporaryFile(t *testing.T) {
	dir := t.TempDir()
	// A directory in the way: the rename fails.
	path := filepath.Join(dir, "d")
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(path, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, []byte("new"), 0o644); err == nil {
		t.Fatal("WriteFile over a non-empty directory succeeded")
	}
	if names := entries(t, dir); len(names) != 1 || names[0] != "d" {
		t.Errorf("directory holds %q, want only d", names)
	}
}

func TestStageThenCommit(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	tmp, err := Stage(path, 0o644, func(w io.Writer) error { _, err := io.WriteString(w, "staged"); return err })
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(tmp) != dir {
		t.Errorf("staged in %s, want beside the destination in %s", filepath.Dir(tmp), dir)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("destination exists before Commit: %v", err)
	}
	if err := Commit(tmp, path); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "staged" {
		t.Errorf("content %q, want \"staged\"", got)
	}
	if names := entries(t, dir); len(names) != 1 {
		t.Errorf("directory holds %q, want only f", names)
	}
}

func TestStageInMissingDirectoryFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "f")
	if _, err := Stage(path, 0o644, func(io.Writer) error { return nil }); err == nil {
		t.Fatal("Stage in a missing directory succeeded")
	}
}

func TestSyncDir(t *testing.T) {
	if err := SyncDir(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if err := SyncDir(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("SyncDir of a missing directory succeeded")
	}
}

// TestMkdirAllSurvivesPowerCut creates directories on internal/lazyfs, which drops every
// directory entry whose parent was not synced when the power is cut: os.MkdirAll's
// directories are gone after a cut, MkdirAll's stay with the synced file inside.
func TestMkdirAllSurvivesPowerCut(t *testing.T) {
	f, mnt := lazyfs.MountTemp(t)
	plain, durable := filepath.Join(mnt, "plain", "a"), filepath.Join(mnt, "durable", "a")
	// MkdirAll first: syncing the mount's top directory for it would make os.MkdirAll's
	// entry there durable too.
	if err := MkdirAll(durable, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(plain, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{plain, durable} {
		if err := WriteFile(filepath.Join(dir, "f"), []byte("synced"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.Cut(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(mnt, "plain")); !os.IsNotExist(err) {
		t.Fatalf("os.MkdirAll's directory survived the power cut (%v): the cut does not test anything", err)
	}
	if got, err := os.ReadFile(filepath.Join(durable, "f")); err != nil || string(got) != "synced" {
		t.Fatalf("after the power cut: %q, %v; want the file in MkdirAll's directory", got, err)
	}
}
