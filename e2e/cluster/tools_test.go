package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/mod/modfile"

	"github.com/aagen-dev/aagen/generator/emit"
	"github.com/aagen-dev/aagen/internal/gocmd"
)

// The versions the e2e tests and the bench name their tool binaries by are the versions
// e2e/tools pins: kube-apiserver (the aggregation tests' and the bench's CRD peer),
// sample-apiserver (the bench's startup peer), controller-gen (the CRD oracle's), CoreDNS
// (the node's cluster DNS) and etcd.
func TestToolVersionsArePinned(t *testing.T) {
	for _, c := range []struct{ module, requires, version string }{
		{"kube-apiserver", "k8s.io/kubernetes", KubeVersion},
		{"sample-apiserver", "k8s.io/sample-apiserver", SampleAPIServerVersion},
		{"controller-gen", "sigs.k8s.io/controller-tools", ControllerGenVersion},
		{"coredns", "github.com/coredns/coredns", CoreDNSVersion},
		{"etcd", "go.etcd.io/etcd/server/v3", EtcdVersion},
	} {
		path := filepath.Join("..", "tools", c.module, "go.mod")
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := modfile.Parse(path, data, nil)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, r := range f.Require {
			if r.Mod.Path == c.requires {
				found = true
				if r.Mod.Version != c.version {
					t.Errorf("%s requires %s %s, the harness names it %s: keep them equal", path, c.requires, r.Mod.Version, c.version)
				}
			}
		}
		if !found {
			t.Errorf("%s does not require %s", path, c.requires)
		}
	}
}

// TestEtcdImageIsKubeadms: the deploy manifests' default etcd image is the one kubeadm of
// the pinned Kubernetes release runs (its DefaultEtcdVersion), and of the etcd minor the
// server links (EtcdVersion), so that the StatefulSet's etcd and the server's client agree.
func TestEtcdImageIsKubeadms(t *testing.T) {
	out, err := (gocmd.Cmd{Args: []string{"mod", "download", "-json", "k8s.io/kubernetes@" + KubeVersion}, Dir: filepath.Join("..", "tools", "kube-apiserver")}).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download k8s.io/kubernetes: %v\n%s", err, out)
	}
	src, err := os.ReadFile(filepath.Join(mod.Dir, "cmd", "kubeadm", "app", "constants", "constants.go"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`DefaultEtcdVersion = "([^"]+)"`).FindSubmatch(src)
	if m == nil {
		t.Fatal("no DefaultEtcdVersion in kubeadm's constants.go")
	}
	if want := "registry.k8s.io/etcd:" + string(m[1]); emit.DefaultEtcdImage != want {
		t.Errorf("emit.DefaultEtcdImage is %s; kubeadm %s runs %s", emit.DefaultEtcdImage, KubeVersion, want)
	}
	minor := func(v string) string {
		return strings.Join(strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)[:2], ".")
	}
	if minor(string(m[1])) != minor(EtcdVersion) {
		t.Errorf("kubeadm's etcd %s and the server's etcd %s are different minors", m[1], EtcdVersion)
	}
}

// TestPrebuild: the background build makes each missing tool in turn, leaves one that is
// there alone, goes on past one that fails to build (whose error it logs), and a test that
// then asks for the tool it built gets that binary without building it again.
func TestPrebuild(t *testing.T) {
	root := t.TempDir()
	writeModule := func(name, main string) {
		dir := filepath.Join(root, "e2e", "tools", name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/"+name+"\n\ngo 1.21\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(main), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeModule("good", "package main\n\nfunc main() {}\n")
	writeModule("broken", "package main\n\nfunc main() { undefinedName() }\n")
	there := filepath.Join(root, ".cache", "bin", "there-v1")
	if err := os.MkdirAll(filepath.Dir(there), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(there, []byte("kept"), 0o755); err != nil {
		t.Fatal(err)
	}
	good := Tool{Module: "good", Package: ".", Name: "good", Version: "v1"}
	tools := []Tool{
		{Module: "broken", Package: ".", Name: "broken", Version: "v1"},
		{Module: "good", Package: ".", Name: "there", Version: "v1"},
		good,
	}
	var log strings.Builder
	var logMu sync.Mutex
	prebuilding := Prebuild(root, tools, writerFunc(func(p []byte) (int, error) {
		logMu.Lock()
		defer logMu.Unlock()
		return log.Write(p)
	}))
	prebuilding.Wait()
	logged := log.String()
	if !strings.Contains(logged, "undefinedName") || !strings.Contains(logged, "the test that needs broken builds it again") {
		t.Errorf("the failed build is not logged with its error:\n%s", logged)
	}
	if data, err := os.ReadFile(there); err != nil || string(data) != "kept" {
		t.Errorf("a tool already in .cache/bin was built again: %q, %v", data, err)
	}
	if strings.Contains(logged, "building there") {
		t.Errorf("Prebuild built a tool that was there:\n%s", logged)
	}
	bin, took, err := good.build(context.Background(), root, 0, os.Environ(), t.Logf)
	if err != nil || took != 0 || bin != filepath.Join(root, ".cache", "bin", "good-v1") {
		t.Errorf("after Prebuild, the good tool: %s built in %s, %v; want the prebuilt binary, not built again\n%s", bin, took, err, logged)
	}
	if _, err := os.Stat(filepath.Join(root, ".cache", "bin", "broken-v1")); err == nil {
		t.Error("a failed build left a binary")
	}
}

// slowTool writes a module under root whose build's link step takes seconds (a -toolexec
// script), so that a test can act while it is built.
func slowTool(t *testing.T, root string) Tool {
	t.Helper()
	dir := filepath.Join(root, "e2e", "tools", "slow")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(root, "slow-link.sh")
	files := map[string]string{
		filepath.Join(dir, "go.mod"):  "module example.com/slow\n\ngo 1.21\n",
		filepath.Join(dir, "main.go"): "package main\n\nfunc main() {}\n",
		// The link step outlives an interrupt, as a compiler busy writing may: the build
		// must still end it.
		script: "#!/bin/sh\ncase \"$1\" in */link) case \"$2\" in -V*) ;; *) trap '' INT; sleep 4 ;; esac ;; esac\nexec \"$@\"\n",
	}
	for name, content := range files {
		if err := os.WriteFile(name, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return Tool{Module: "slow", Package: ".", Name: "slow", Version: "v1", Env: []string{"GOFLAGS=-toolexec=" + script}}
}

// buildUnderWay waits until a build of bin is under way and returns its process group.
func buildUnderWay(t *testing.T, bin string) int {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if v, ok := toolBuilds.Load(bin); ok {
			b := v.(*toolBuild)
			b.procMu.Lock()
			group := b.group
			b.procMu.Unlock()
			if group != 0 {
				return group
			}
		}
	}
	t.Fatalf("no build of %s under way after 30s", bin)
	return 0
}

// linking waits until the slow tool's link step (its sleep) runs in process group group.
func linking(t *testing.T, group int) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for _, pid := range liveInGroup(group) {
			if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); strings.TrimSpace(string(comm)) == "sleep" {
				return
			}
		}
	}
	t.Fatalf("the build in process group %d did not reach its link step in 60s", group)
}

// niceness is the nice value of process pid (field 19 of /proc/<pid>/stat).
func niceness(t *testing.T, pid int) int {
	t.Helper()
	fields, err := procStat(pid)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(fields[16])
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPrebuildRaisedForAWaitingTest: the background build runs at niceness 19; a test
// that asks for the same binary meanwhile raises it to its own priority and gets the
// binary it builds (where raising is not allowed, the background build is stopped and the
// test builds the binary itself).
func TestPrebuildRaisedForAWaitingTest(t *testing.T) {
	root := t.TempDir()
	slow := slowTool(t, root)
	bin := filepath.Join(root, ".cache", "bin", "slow-v1")
	var log strings.Builder
	var logMu sync.Mutex
	prebuilding := Prebuild(root, []Tool{slow}, writerFunc(func(p []byte) (int, error) {
		logMu.Lock()
		defer logMu.Unlock()
		return log.Write(p)
	}))
	defer prebuilding.Stop()
	group := buildUnderWay(t, bin)
	if n := niceness(t, group); n != 19 {
		t.Fatalf("the background build runs at niceness %d, want 19", n)
	}
	type result struct {
		took time.Duration
		err  error
	}
	done := make(chan result, 1)
	go func() {
		_, took, err := slow.build(context.Background(), root, 0, os.Environ(), t.Logf)
		done <- result{took, err}
	}()
	raised := mayLowerNiceness(t)
	if raised {
		deadline := time.Now().Add(5 * time.Second)
		for niceness(t, group) != 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if n := niceness(t, group); n != 0 {
			t.Errorf("the background build runs at niceness %d while a test waits for it, want 0", n)
		}
	}
	r := <-done
	prebuilding.Wait()
	logMu.Lock()
	logged := log.String()
	logMu.Unlock()
	switch {
	case r.err != nil:
		t.Fatalf("the waiting test's build: %v\n%s", r.err, logged)
	case raised && r.took != 0:
		t.Errorf("the waiting test built the binary again (%s) instead of getting the background's\n%s", r.took, logged)
	case !raised && (r.took == 0 || !strings.Contains(logged, "the test builds it")):
		t.Errorf("without the right to raise a priority, the background build was not handed over to the test\n%s", logged)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Error(err)
	}
}

// mayLowerNiceness says whether this process may lower a niceness to 0: it has
// CAP_SYS_NICE, or its RLIMIT_NICE allows it (20 - limit <= 0).
func mayLowerNiceness(t *testing.T) bool {
	t.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if hex, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			const capSysNice = 23
			if caps&(1<<capSysNice) != 0 {
				return true
			}
		}
	}
	const rlimitNice = 13 // RLIMIT_NICE on Linux
	var lim syscall.Rlimit
	return syscall.Getrlimit(rlimitNice, &lim) == nil && lim.Cur >= 20
}

// TestPrebuildStop: Stop ends a build under way, with the compilers it started, and leaves
// no partial binary.
func TestPrebuildStop(t *testing.T) {
	root := t.TempDir()
	slow := slowTool(t, root)
	bin := filepath.Join(root, ".cache", "bin", "slow-v1")
	prebuilding := Prebuild(root, []Tool{slow}, io.Discard)
	t.Cleanup(prebuilding.Stop) // when the test ends before its own Stop
	group := buildUnderWay(t, bin)
	linking(t, group)
	start := time.Now()
	prebuilding.Stop()
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("Stop took %s with a build under way (its link step sleeps 4s)", took)
	}
	if live := liveInGroup(group); len(live) > 0 {
		t.Errorf("processes %v of the build's process group %d are alive after Stop", live, group)
	}
	left, _ := filepath.Glob(bin + "*")
	for _, f := range left {
		if !strings.HasSuffix(f, ".lock") {
			t.Errorf("Stop left %s", f)
		}
	}
}

// TestE2EToolsAreTheTestsTools: every tool an e2e test builds through this package is in
// E2ETools, so that a cold run builds none of them in a test's time.
func TestE2EToolsAreTheTestsTools(t *testing.T) {
	listed := map[string]bool{}
	for _, tool := range E2ETools {
		listed[tool.Name] = true
	}
	tests, err := filepath.Glob(filepath.Join("..", "*_test.go"))
	if err != nil || len(tests) == 0 {
		t.Fatalf("no e2e test files (%v)", err)
	}
	harness, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	files := tests
	for _, f := range harness {
		if !strings.HasSuffix(f, "_test.go") && f != "tools.go" {
			files = append(files, f)
		}
	}
	// A call of an exported ...Binary function, with its literal name for KubeBinary; not
	// its declaration.
	uses := regexp.MustCompile(`(func )?\b(?:cluster\.)?([A-Z][A-Za-z]*Binary)\((?:t, "([a-z-]+)")?`)
	byFunc := map[string]string{"EtcdBinary": etcdTool.Name, "EtcdImageBinary": etcdImageTool.Name, "ControllerGenBinary": controllerGenTool.Name,
		"CoreDNSBinary": coreDNSTool.Name, "SampleAPIServerBinary": sampleAPIServerTool.Name}
	want := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range uses.FindAllStringSubmatch(string(data), -1) {
			if m[1] != "" {
				continue
			}
			m = m[1:]
			switch {
			case m[1] == "KubeBinary" && m[2] != "":
				want[m[2]] = true
			case byFunc[m[1]] != "":
				want[byFunc[m[1]]] = true
			case m[1] == "StaticBinary": // a package of this checkout, built each time
			default:
				t.Errorf("%s calls cluster.%s, whose tool this test does not know: name it here and in E2ETools", f, m[1])
			}
		}
	}
	for name := range want {
		if !listed[name] {
			t.Errorf("the e2e tests run %s, which E2ETools does not list", name)
		}
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
