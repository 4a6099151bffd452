package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/mod/modfile"

	"github.com/aagen-dev/aagen/internal/gocmd"
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
	return ToolBinary(t, "kube-apiserver", "k8s.io/kubernetes/cmd/"+name, name, KubeVersion)
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
	return ToolBinary(t, "etcd", ".", "etcd", EtcdVersion)
}

// SampleAPIServerVersion is the k8s.io/sample-apiserver the bench and the e2e tests run;
// e2e/tools/sample-apiserver/go.mod pins it.
const SampleAPIServerVersion = "v0.37.2"

// SampleAPIServerBinary builds k8s.io/sample-apiserver (at the k8s.io/* version aagen
// pins) from e2e/tools/sample-apiserver into .cache/bin once and reuses it.
func SampleAPIServerBinary(t T) string {
	t.Helper()
	return ToolBinary(t, "sample-apiserver", "k8s.io/sample-apiserver", "sample-apiserver", SampleAPIServerVersion)
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
	return ToolBinary(t, "controller-gen", "sigs.k8s.io/controller-tools/cmd/controller-gen", "controller-gen", ControllerGenVersion)
}

// CoreDNSVersion is the CoreDNS the node's cluster DNS runs (StartNode);
// e2e/tools/coredns/go.mod pins it.
const CoreDNSVersion = "v1.15.0"

// CoreDNSBinary builds CoreDNS, with the plugins e2e/tools/coredns compiles in, into
// .cache/bin once and reuses it.
func CoreDNSBinary(t T) string {
	t.Helper()
	requirePinned(t, "coredns", "github.com/coredns/coredns", CoreDNSVersion)
	return ToolBinary(t, "coredns", ".", "coredns", CoreDNSVersion)
}

// EtcdImageBinary is etcd of EtcdBinary's module built with cgo off, for an image of that
// one file (the node tests' etcd StatefulSet): kept in .cache/bin apart from EtcdBinary's.
func EtcdImageBinary(t T) string {
	t.Helper()
	EtcdBinary(t)
	return buildTool(t, "etcd", ".", "etcd-static", EtcdVersion, "CGO_ENABLED=0")
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

var toolBuild sync.Mutex

// ToolBinary builds pkg in the Go module e2e/tools/<module> (a module of its own, so the
// main go.mod does not carry its dependencies) into the gitignored .cache/bin as
// <name>-<version> once and reuses it afterwards.
func ToolBinary(t T, module, pkg, name, version string) string {
	t.Helper()
	return buildTool(t, module, pkg, name, version)
}

// buildTool is ToolBinary with env added to the build's environment.
func buildTool(t T, module, pkg, name, version string, env ...string) string {
	t.Helper()
	toolBuild.Lock()
	defer toolBuild.Unlock()
	root := RepoRoot(t)
	bin := filepath.Join(root, ".cache", "bin", name+"-"+version)
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("building %s %s from Go modules into %s (minutes on a cold cache)", name, version, bin)
	start := time.Now()
	// A name of this process's own: another process may be building the same binary.
	tmp := fmt.Sprintf("%s.build%d", bin, os.Getpid())
	defer os.Remove(tmp)
	cmd := gocmd.Cmd{Args: []string{"build", "-o", tmp, pkg}, Dir: filepath.Join(root, "e2e", "tools", module)}
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	if _, err := cmd.Run(context.Background()); err != nil {
		t.Fatalf("building %s: %v", name, err)
	}
	// tmp is beside bin: another process sees the whole binary or none.
	if err := os.Rename(tmp, bin); err != nil {
		t.Fatal(err)
	}
	t.Logf("built %s in %s", name, time.Since(start).Round(time.Second))
	return bin
}
