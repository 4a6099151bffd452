package cluster

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
)

// Process is a child process whose output is kept for failure messages. The cleanup
// registered by StartProcess interrupts it and waits (30 s, then SIGKILL).
type Process struct {
	Name string
	Cmd  *exec.Cmd
	Out  *Buffer
	done chan error
}

// StartProcess starts bin with args.
func StartProcess(t T, name, bin string, args ...string) *Process {
	t.Helper()
	p := &Process{Name: name, Cmd: exec.Command(bin, args...), Out: &Buffer{}, done: make(chan error, 1)}
	p.Cmd.Stdout, p.Cmd.Stderr = p.Out, p.Out
	if err := p.Cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	go func() { p.done <- p.Cmd.Wait() }()
	t.Cleanup(func() {
		if p.Exited() {
			if t.Failed() {
				t.Logf("%s exited early; its output (tail):\n%s", name, Tail(p.Out.String(), 4000))
			}
			return
		}
		_ = p.Cmd.Process.Signal(os.Interrupt)
		select {
		case err := <-p.done:
			p.done <- err
		case <-time.After(30 * time.Second):
			p.Kill()
		}
		if t.Failed() {
			t.Logf("%s output (tail):\n%s", name, Tail(p.Out.String(), 4000))
		}
	})
	return p
}

// Kill sends SIGKILL and waits until the process is gone.
func (p *Process) Kill() {
	_ = p.Cmd.Process.Signal(syscall.SIGKILL)
	err := <-p.done
	p.done <- err
}

// Restart kills the process and starts its command again: the same binary, arguments,
// environment and directory, writing to the same output, under the same cleanup. It must
// not run concurrently with the process's other methods.
func (p *Process) Restart(t T) {
	t.Helper()
	p.Kill()
	old := p.Cmd
	cmd := exec.Command(old.Path, old.Args[1:]...)
	cmd.Env, cmd.Dir = old.Env, old.Dir
	cmd.Stdout, cmd.Stderr = p.Out, p.Out
	if err := cmd.Start(); err != nil {
		t.Fatalf("restarting %s: %v", p.Name, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	p.Cmd, p.done = cmd, done
}

// Exited tells whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case err := <-p.done:
		p.done <- err
		return true
	default:
		return false
	}
}

// WaitReady polls <host>/readyz with cfg until it answers 200.
func (p *Process) WaitReady(t T, cfg *rest.Config, timeout time.Duration) {
	t.Helper()
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p.WaitFor(t, client, cfg.Host+"/readyz", timeout)
}

// WaitFor polls url with client until it answers 200, failing t when p exits first or
// timeout passes.
func (p *Process) WaitFor(t T, client *http.Client, url string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if p.Exited() {
			t.Fatalf("%s exited:\n%s", p.Name, Tail(p.Out.String(), 4000))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		cancel()
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s: %s did not answer 200 within %s:\n%s", p.Name, url, timeout, Tail(p.Out.String(), 4000))
}

// Buffer is a bytes.Buffer safe for concurrent writers.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Tail is the last n bytes of s.
func Tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
