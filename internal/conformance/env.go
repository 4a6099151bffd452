package conformance

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/aagen-dev/aagen/e2e/cluster"
	"github.com/aagen-dev/aagen/runtime/etcd"
)

// harness is the cluster.T of a run: the control plane of the oracle is started with
// package e2e/cluster (the PKI, processes and CRD installation the end-to-end tests use), whose
// functions take a T. Fatal panics with a harnessFailure, which Run turns back into an
// error; the cleanups run when the run ends.
type harness struct {
	log      io.Writer
	mu       sync.Mutex
	cleanups []func()
	failed   bool
}

type harnessFailure struct{ msg string }

func (h *harness) Helper() {}
func (h *harness) Fatal(args ...any) {
	h.Fatalf("%s", fmt.Sprint(args...))
}
func (h *harness) Fatalf(format string, args ...any) {
	h.mu.Lock()
	h.failed = true
	h.mu.Unlock()
	panic(harnessFailure{fmt.Sprintf(format, args...)})
}
func (h *harness) Logf(format string, args ...any) {
	fmt.Fprintf(h.log, "aagen conformance: "+format+"\n", args...)
}
func (h *harness) Cleanup(f func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cleanups = append(h.cleanups, f)
}
func (h *harness) TempDir() string {
	d, err := os.MkdirTemp("", "aagen-conformance-")
	if err != nil {
		h.Fatal(err)
	}
	h.Cleanup(func() { _ = os.RemoveAll(d) })
	return d
}
func (h *harness) Failed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.failed
}

// close runs the cleanups, newest first.
func (h *harness) close() {
	h.mu.Lock()
	cs := h.cleanups
	h.cleanups = nil
	h.mu.Unlock()
	for i := len(cs) - 1; i >= 0; i-- {
		cs[i]()
	}
}

// startOracle starts an embedded etcd and kube-apiserver on it, and installs the CRDs. It
// returns the admin's client configuration.
func startOracle(ctx context.Context, h *harness, kubeAPIServer string, crds []*apiextensionsv1.CustomResourceDefinition) *rest.Config {
	e, err := etcd.Start(ctx, etcd.Config{Dir: h.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		h.Fatalf("starting etcd: %v", err)
	}
	h.Cleanup(func() { _ = e.Close() })
	admin := cluster.StartAPIServer(h, kubeAPIServer, e.ClientURL(), nil).Admin
	for _, crd := range crds {
		cluster.InstallCRD(h, ctx, admin, crd)
	}
	return admin
}

// startServer runs the generated server binary in local mode (embedded etcd, local
// credentials in a temporary directory) and returns its client configuration once it printed
// its KUBECONFIG line.
func startServer(h *harness, bin, moduleDir string) *rest.Config {
	state := h.TempDir()
	cmd := exec.Command(bin, "--local", "--local-dir="+filepath.Join(state, "local"),
		"--embedded-etcd-dir="+filepath.Join(state, "etcd"), "--secure-port="+strconv.Itoa(cluster.FreePort(h)))
	cmd.Dir = moduleDir
	out := &cluster.Buffer{}
	cmd.Stderr = out
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		h.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		h.Fatalf("starting the generated server: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	h.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			fmt.Fprintln(out, sc.Text())
			if kc, ok := strings.CutPrefix(sc.Text(), "export KUBECONFIG="); ok {
				ready <- kc
			}
		}
	}()
	select {
	case kc := <-ready:
		cfg, err := clientcmd.BuildConfigFromFlags("", kc)
		if err != nil {
			h.Fatal(err)
		}
		return cfg
	case <-done:
		h.Fatalf("the generated server exited:\n%s", cluster.Tail(out.String(), 4000))
	case <-time.After(3 * time.Minute):
		h.Fatalf("the generated server printed no KUBECONFIG line within 3 minutes:\n%s", cluster.Tail(out.String(), 4000))
	}
	return nil
}
