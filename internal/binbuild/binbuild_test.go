package binbuild

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestOnceBuildsOnce: callers at once get one build; the binary appears whole; a later
// caller builds nothing.
func TestOnceBuildsOnce(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "bin", "tool-v1")
	var builds atomic.Int32
	build := func(tmp string) error {
		builds.Add(1)
		if err := os.WriteFile(tmp, []byte("part"), 0o755); err != nil {
			return err
		}
		if _, err := os.Stat(bin); err == nil {
			return errors.New("the binary is in place before its build ended")
		}
		time.Sleep(50 * time.Millisecond)
		f, err := os.OpenFile(tmp, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = f.WriteString("-whole")
		return err
	}
	var wg sync.WaitGroup
	var built atomic.Int32
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, err := Once(bin, build)
			if err != nil {
				t.Error(err)
			}
			if b {
				built.Add(1)
			}
		}()
	}
	wg.Wait()
	if builds.Load() != 1 || built.Load() != 1 {
		t.Errorf("%d builds, %d callers told they built, want 1 and 1", builds.Load(), built.Load())
	}
	if data, err := os.ReadFile(bin); err != nil || string(data) != "part-whole" {
		t.Errorf("the binary: %q, %v; want the whole build's output", data, err)
	}
	if b, err := Once(bin, func(string) error { t.Error("built again"); return nil }); b || err != nil {
		t.Errorf("a later call: built %v, %v", b, err)
	}
}

// TestOnceFailedBuild: a failed build leaves neither the binary nor its temporary file,
// and the next caller builds.
func TestOnceFailedBuild(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "tool-v1")
	failed := errors.New("compile error")
	if _, err := Once(bin, func(tmp string) error {
		_ = os.WriteFile(tmp, []byte("part"), 0o755)
		return failed
	}); !errors.Is(err, failed) {
		t.Fatalf("Once = %v, want the build's error", err)
	}
	left, _ := filepath.Glob(bin + "*")
	for _, f := range left {
		if f != bin+".lock" {
			t.Errorf("a failed build left %s", f)
		}
	}
	if b, err := Once(bin, func(tmp string) error { return os.WriteFile(tmp, nil, 0o755) }); !b || err != nil {
		t.Errorf("the next call: built %v, %v; want a build", b, err)
	}
}
