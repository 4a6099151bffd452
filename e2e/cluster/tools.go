package cluster

import (
	"bytes"
	"context"
	"errors"
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

	"golang.org/x/mod/modfile"

	"github.com/aagen-dev/aagen/internal/binbuild"
)

// KubeVersion is the Kubernetes release whose kube-apiserver and kube-controller-manager
// the aggregation tests and the bench run; e2e/tools/kube-apiserver/go.mod pins it.
const KubeVersion = "v1.37.2"

// EtcdVersion is the etcd run as separate processes; e2e/tools/etcd/go.mod pins it and it
// must be the go.etcd.io/etcd/server/v3 of the main module.
const EtcdVersion = "v3.7.3"

// RepoRoot finds the aagen checkout from the working directory upwards.
func RepoRoot(t T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(data), "module github.com/aagen-dev/aagen\n") {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("not inside the aagen checkout")
		}
		dir = parent
	}
}

// KubeBinary builds k8s.io/kubernetes/cmd/<name> into .cache/bin once and reuses it
// afterwards (a cold build takes minutes).
func KubeBinary(t T, name string) string {
	t.Helper()
	return buildTool(t, kubeTool(name))
}

// EtcdBinary builds etcd from e2e/tools/etcd into .cache/bin once and reuses it. The
// tool module and the main module must require the same etcd server.
func EtcdBinary(t T) string {
	t.Helper()
	root := RepoRoot(t)
	for _, gomod := range []string{filepath.Join(root, "go.mod"), filepath.Join(root, "e2e", "tools", "etcd", "go.mod")} {
		data, err := os.ReadFile(gomod)
		if err != nil {
			t.Fatal(err)
		}
		f, err := modfile.ParseLax(gomod, data, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range f.Require {
			if r.Mod.Path == "go.etcd.io/etcd/server/v3" && r.Mod.Version != EtcdVersion {
				t.Fatalf("%s requires etcd server %s, the harness pins %s: keep them equal", gomod, r.Mod.Version, EtcdVersion)
			}
		}
	}
	return buildTool(t, etcdTool)
}

// SampleAPIServerVersion is the k8s.io/sample-apiserver the bench and the e2e tests run;
// e2e/tools/sample-apiserver/go.mod pins it.
const SampleAPIServerVersion = "v0.37.2"

// SampleAPIServerBinary builds k8s.io/sample-apiserver (at the k8s.io/* version aagen
// pins) from e2e/tools/sample-apiserver into .cache/bin once and reuses it.
func SampleAPIServerBinary(t T) string {
	t.Helper()
	return buildTool(t, sampleAPIServerTool)
}

// ControllerGenVersion is the sigs.k8s.io/controller-tools release whose controller-gen
// writes the CustomResourceDefinitions the tests compare aagen's servers with;
// e2e/tools/controller-gen/go.mod pins it.
const ControllerGenVersion = "v0.23.0"

// ControllerGenBinary builds controller-gen from e2e/tools/controller-gen into .cache/bin
// once and reuses it.
func ControllerGenBinary(t T) string {
	t.Helper()
	requirePinned(t, "controller-gen", "sigs.k8s.io/controller-tools", ControllerGenVersion)
	return buildTool(t, controllerGenTool)
}

// CoreDNSVersion is the CoreDNS the node's cluster DNS runs (StartNode);
// e2e/tools/coredns/go.mod pins it.
const CoreDNSVersion = "v1.15.0"

// CoreDNSBinary builds CoreDNS, with the plugins e2e/tools/coredns compiles in, into
// .cache/bin once and reuses it.
func CoreDNSBinary(t T) string {
	t.Helper()
	requirePinned(t, "coredns", "github.com/coredns/coredns", CoreDNSVersion)
	return buildTool(t, coreDNSTool)
}

// EtcdImageBinary is etcd of EtcdBinary's module built with cgo off, for an image of that
// one file (the node tests' etcd StatefulSet): kept in .cache/bin apart from EtcdBinary's.
func EtcdImageBinary(t T) string {
	t.Helper()
	EtcdBinary(t)
	return buildTool(t, etcdImageTool)
}

// requirePinned fails unless e2e/tools/<module>/go.mod requires path at version: the
// binary's name in .cache/bin says the version, so the two must agree.
func requirePinned(t T, module, path, version string) {
	t.Helper()
	gomod := filepath.Join(RepoRoot(t), "e2e", "tools", module, "go.mod")
	data, err := os.ReadFile(gomod)
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.ParseLax(gomod, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	pinned := ""
	for _, r := range f.Require {
		if r.Mod.Path == path {
			pinned = r.Mod.Version
		}
	}
	if pinned != version {
		t.Fatalf("%s requires %s %q, the harness names the binary %s: keep them equal", gomod, path, pinned, version)
	}
}

// Tool is a program the tests build from Go modules into the gitignored .cache/bin.
type Tool struct {
	// Module is the Go module e2e/tools/<Module> it is built in: a module of its own, so the
	// main go.mod does not carry its dependencies.
	Module string
	// Package is the package built, in that module's terms ("." or an import path).
	Package string
	// Name and Version name the binary: .cache/bin/<Name>-<Version>.
	Name, Version string
	// Env is added to the build's environment.
	Env []string
}

func kubeTool(name string) Tool {
	return Tool{Module: "kube-apiserver", Package: "k8s.io/kubernetes/cmd/" + name, Name: name, Version: KubeVersion}
}

var (
	etcdTool            = Tool{Module: "etcd", Package: ".", Name: "etcd", Version: EtcdVersion}
	etcdImageTool       = Tool{Module: "etcd", Package: ".", Name: "etcd-static", Version: EtcdVersion, Env: []string{"CGO_ENABLED=0"}}
	controllerGenTool   = Tool{Module: "controller-gen", Package: "sigs.k8s.io/controller-tools/cmd/controller-gen", Name: "controller-gen", Version: ControllerGenVersion}
	coreDNSTool         = Tool{Module: "coredns", Package: ".", Name: "coredns", Version: CoreDNSVersion}
	sampleAPIServerTool = Tool{Module: "sample-apiserver", Package: "k8s.io/sample-apiserver", Name: "sample-apiserver", Version: SampleAPIServerVersion}
)

// E2ETools are the tools the e2e package's tests run, in the order its tests first need
// them (file order): what Prebuild builds for that package.
var E2ETools = []Tool{
	kubeTool("kube-apiserver"), kubeTool("kube-controller-manager"), kubeTool("kubectl"),
	controllerGenTool, etcdTool, etcdImageTool,
	kubeTool("kubelet"), kubeTool("kube-scheduler"), kubeTool("kube-proxy"), coreDNSTool,
}

// toolBuilds holds a *toolBuild per binary path.
var toolBuilds sync.Map

// toolBuild serializes the builds of one binary in this process (other binaries build or
// are read meanwhile; a file lock does so between processes) and knows the build under way.
type toolBuild struct {
	mu sync.Mutex

	// procMu guards the fields below, which a test that waits for the binary reads.
	procMu sync.Mutex
	// waited says a test waits for the binary: a build under way or to come runs at the
	// test's priority.
	waited bool
	// group is the process group of the go build under way, 0 when none is; cancel ends it.
	group  int
	cancel context.CancelCauseFunc
}

// errHandedOver ends a background build whose priority a waiting test could not raise (it
// may not lower a niceness: no CAP_SYS_NICE); the test builds the binary itself.
var errHandedOver = errors.New("a test waits for it: handed over to the test")

// wait records that a test waits for the binary and raises a background build under way
// to the test's priority, or, when that is not allowed, ends it for the test to build.
func (b *toolBuild) wait() {
	b.procMu.Lock()
	defer b.procMu.Unlock()
	b.waited = true
	if b.group != 0 {
		// ESRCH: the build is ending by itself; it is not handed over, so that a failure
		// reports its own error.
		if err := syscall.Setpriority(syscall.PRIO_PGRP, b.group, 0); errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) {
			b.cancel(errHandedOver)
		}
	}
}

// buildTool builds tool into .cache/bin once and reuses it afterwards; it waits for a
// build of the same binary under way (a Prebuild's, whose priority it raises to the
// test's, since the test now waits for it) and reports a failed build as the test's
// failure.
func buildTool(t T, tool Tool) string {
	t.Helper()
	root := RepoRoot(t)
	bin, took, err := tool.build(context.Background(), root, 0, os.Environ(), func(format string, args ...any) { t.Logf(format, args...) })
	if err != nil {
		t.Fatalf("building %s: %v", tool.Name, err)
	}
	if took > 0 {
		t.Logf("built %s in %s", tool.Name, took.Round(time.Second))
	}
	return bin
}

// build builds the tool into root/.cache/bin unless it is there, in the environment env
// plus the tool's, at the given niceness; took is 0 when nothing was built. At niceness 0
// (a test's build) it first raises a background build of the same binary under way.
func (tool Tool) build(ctx context.Context, root string, nice int, env []string, logf func(string, ...any)) (bin string, took time.Duration, err error) {
	bin = filepath.Join(root, ".cache", "bin", tool.Name+"-"+tool.Version)
	if _, err := os.Stat(bin); err == nil {
		return bin, 0, nil
	}
	v, _ := toolBuilds.LoadOrStore(bin, new(toolBuild))
	state := v.(*toolBuild)
	if nice == 0 {
		state.wait()
	}
	state.mu.Lock()
	defer state.mu.Unlock()
	var start time.Time
	// Other processes (another test binary, aagen conformance's builds of the same
	// binaries) take turns with this one.
	built, err := binbuild.Once(bin, func(tmp string) error {
		logf("building %s %s from Go modules into %s (minutes on a cold cache)", tool.Name, tool.Version, bin)
		start = time.Now()
		buildCtx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		cmd := exec.CommandContext(buildCtx, "go", "build", "-o", tmp, tool.Package)
		cmd.Dir = filepath.Join(root, "e2e", "tools", tool.Module)
		// The go command's work directory, removed here: an interrupted go build leaves
		// its own (hundreds of MB for kube-apiserver's link).
		work := tmp + ".work"
		if err := os.Mkdir(work, 0o755); err != nil {
			return err
		}
		defer os.RemoveAll(work)
		cmd.Env = append(append(append([]string(nil), env...), tool.Env...), "GOTMPDIR="+work)
		// A process group of its own, the go command and the compilers and linker it
		// starts: its priority is set, and it is ended, as one. It dies with this
		// process's thread that started it, which Go keeps until the process ends.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGINT) }
		cmd.WaitDelay = 10 * time.Second
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			return err
		}
		state.procMu.Lock()
		state.group, state.cancel = cmd.Process.Pid, cancel
		if nice != 0 && !state.waited {
			// A failure leaves the build at the tests' priority: slower for them, not wrong.
			_ = syscall.Setpriority(syscall.PRIO_PGRP, state.group, nice)
		}
		state.procMu.Unlock()
		err := cmd.Wait()
		state.procMu.Lock()
		state.group, state.cancel = 0, nil
		state.procMu.Unlock()
		// The go command may end before the compilers it started (on SIGINT it does not
		// wait for them): none of its group outlives the build.
		endGroup(cmd.Process.Pid)
		if err != nil {
			if cause := context.Cause(buildCtx); cause != nil {
				return cause
			}
			return fmt.Errorf("go build %s in %s: %v\n%s", tool.Package, cmd.Dir, err, bytes.TrimSpace(out.Bytes()))
		}
		return nil
	})
	if err != nil {
		return "", 0, err
	}
	if !built {
		return bin, 0, nil
	}
	return bin, time.Since(start), nil
}

// Prebuild builds each of tools that .cache/bin lacks, one after another in the
// background at the lowest CPU priority, and returns at once. On a cold machine this is
// most of a run's building (kube-apiserver, kubelet and the rest of Kubernetes take many
// minutes): in the background it uses the CPU the running tests leave idle, where
// otherwise each test that first needs a tool would stop for its build. Tests still ask
// for their binaries (KubeBinary and the rest): they wait for a build under way (raised to
// their priority) and build themselves, reporting the error, what the background could
// not. The builds take the environment of the call. log receives a line when a build
// starts and one when it ends.
func Prebuild(root string, tools []Tool, log io.Writer) *Prebuilding {
	ctx, cancel := context.WithCancel(context.Background())
	p := &Prebuilding{cancel: cancel, done: make(chan struct{})}
	env := os.Environ()
	go func() {
		defer close(p.done)
		logf := func(format string, args ...any) { fmt.Fprintf(log, "prebuild: "+format+"\n", args...) }
		for _, tool := range tools {
			_, took, err := tool.build(ctx, root, 19, env, logf)
			switch {
			case ctx.Err() != nil:
				return
			case errors.Is(err, errHandedOver):
				logf("%s: stopped, since a test waits for it and its priority could not be raised: the test builds it", tool.Name)
			case err != nil:
				logf("%v (the test that needs %s builds it again)", err, tool.Name)
			case took > 0:
				logf("built %s in %s", tool.Name, took.Round(time.Second))
			}
		}
	}()
	return p
}

// Prebuilding is a Prebuild under way.
type Prebuilding struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// Wait waits until every tool is built or has failed.
func (p *Prebuilding) Wait() { <-p.done }

// Stop ends a build under way and waits for the background to end.
func (p *Prebuilding) Stop() {
	p.cancel()
	<-p.done
}

// endGroup kills what is left of process group pgid and waits, up to 10s, until none of it
// is alive (a process killed but not yet reaped by its parent is not).
func endGroup(pgid int) {
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	for deadline := time.Now().Add(10 * time.Second); len(liveInGroup(pgid)) > 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
}

// liveInGroup lists the processes of group pgid that are alive: in /proc, with that
// process group, in a state other than zombie (Z) or dead (X).
func liveInGroup(pgid int) []int {
	entries, _ := os.ReadDir("/proc")
	var live []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		fields, err := procStat(pid)
		if err != nil || len(fields) < 3 || fields[0] == "Z" || fields[0] == "X" {
			continue // ended meanwhile, or not alive
		}
		if g, err := strconv.Atoi(fields[2]); err == nil && g == pgid {
			live = append(live, pid)
		}
	}
	return live
}

// procStat is /proc/<pid>/stat after the command name: state, ppid, pgrp and on (field 3
// of proc(5) is the first). The name may hold spaces and parentheses, so it ends at the
// last ')'.
func procStat(pid int) ([]string, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:])), nil
}
