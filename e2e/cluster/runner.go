package cluster

import (
	"fmt"
	"os"
	"runtime"
	"sync"
)

// Runner is a T for a program (the bench command): Fatal runs the cleanups registered so
// far, in reverse order, and exits with status 1; Close runs them on a normal exit.
type Runner struct {
	Log func(format string, args ...any)

	mu       sync.Mutex
	cleanups []func()
	failed   bool
}

func (r *Runner) Helper() {}

func (r *Runner) Logf(format string, args ...any) {
	if r.Log != nil {
		r.Log(format, args...)
		return
	}
	fmt.Fprintf(os.Stderr, format+"\n", args...)
}

func (r *Runner) Fatal(args ...any) { r.Fatalf("%s", fmt.Sprint(args...)) }

func (r *Runner) Fatalf(format string, args ...any) {
	r.mu.Lock()
	r.failed = true
	r.mu.Unlock()
	fmt.Fprintf(os.Stderr, "fatal: "+format+"\n", args...)
	r.Close()
	os.Exit(1)
	runtime.Goexit()
}

func (r *Runner) Cleanup(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, f)
}

func (r *Runner) TempDir() string {
	d, err := os.MkdirTemp("", "aagen-cluster-")
	if err != nil {
		r.Fatal(err)
	}
	r.Cleanup(func() { _ = os.RemoveAll(d) })
	return d
}

func (r *Runner) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

// Close runs the registered cleanups, newest first.
func (r *Runner) Close() {
	r.mu.Lock()
	cs := r.cleanups
	r.cleanups = nil
	r.mu.Unlock()
	for i := len(cs) - 1; i >= 0; i-- {
		cs[i]()
	}
}
