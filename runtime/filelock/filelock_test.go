//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

// The tests build where flock exists (lock_flock.go); elsewhere there is nothing to lock.

package filelock

import (
	"errors"
	"io/fs"
	"path/filepath"
	"testing"
	"time"
)

func TestTryAcquireExcludesASecondLocker(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".lock")
	l, err := TryAcquire(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := TryAcquire(path); !errors.Is(err, ErrLocked) {
		t.Fatalf("second TryAcquire: %v, want ErrLocked", err)
	}
	if held, err := Held(path); err != nil || !held {
		t.Fatalf("Held = %v, %v while locked; want true", held, err)
	}
	l.Release()
	l.Release() // idempotent
	if held, err := Held(path); err != nil || held {
		t.Fatalf("Held = %v, %v after Release; want false", held, err)
	}
	l2, err := TryAcquire(path)
	if err != nil {
		t.Fatalf("TryAcquire after Release: %v", err)
	}
	l2.Release()
}

func TestAcquireWaitsForRelease(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".lock")
	first, err := Acquire(path)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *Lock)
	go func() {
		l, err := Acquire(path)
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	select {
	case <-got:
		t.Fatal("second Acquire returned while the first lock was held")
	case <-time.After(100 * time.Millisecond):
	}
	first.Release()
	select {
	case l := <-got:
		l.Release()
	case <-time.After(10 * time.Second):
		t.Fatal("second Acquire still waits after Release")
	}
}

func TestCreateRefusesAnExistingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".owner")
	l, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if _, err := Create(path); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second Create: %v, want fs.ErrExist", err)
	}
}

func TestHeldOnMissingFile(t *testing.T) {
	if _, err := Held(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Held of a missing file: %v, want fs.ErrNotExist", err)
	}
}

func TestReleaseNil(t *testing.T) {
	var l *Lock
	l.Release()
}
