package cluster

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

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
	bin, took, err := good.build(context.Background(), root, 0, t.Logf)
	if err != nil || took != 0 || bin != filepath.Join(root, ".cache", "bin", "good-v1") {
		t.Errorf("after Prebuild, the good tool: %s built in %s, %v; want the prebuilt binary, not built again\n%s", bin, took, err, logged)
	}
	if _, err := os.Stat(filepath.Join(root, ".cache", "bin", "broken-v1")); err == nil {
		t.Error("a failed build left a binary")
	}
}

// TestE2EToolsAreTheTestsTools: every tool an e2e test builds through this package is in
// E2ETools, so that a cold run builds none of them in a test's time.
func TestE2EToolsAreTheTestsTools(t *testing.T) {
	listed := map[string]bool{}
	for _, tool := range E2ETools {
		listed[tool.Name] = true
	}
	files, err := filepath.Glob(filepath.Join("..", "*_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	uses := regexp.MustCompile(`cluster\.(KubeBinary\(t, "([a-z-]+)"\)|[A-Za-z]+Binary)`)
	byFunc := map[string]string{"EtcdBinary": etcdTool.Name, "EtcdImageBinary": etcdImageTool.Name, "ControllerGenBinary": controllerGenTool.Name,
		"CoreDNSBinary": coreDNSTool.Name, "SampleAPIServerBinary": sampleAPIServerTool.Name}
	want := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range uses.FindAllStringSubmatch(string(data), -1) {
			switch {
			case m[2] != "":
				want[m[2]] = true
			case byFunc[m[1]] != "":
				want[byFunc[m[1]]] = true
			case m[1] == "StaticBinary": // a package of this checkout, built each time
			default:
				t.Errorf("%s calls cluster.%s, whose tool this test does not know: name it here and in E2ETools", f, m[1])
			}
		}
	}
	// What StartControlPlane and StartNode run.
	for _, name := range []string{"kube-apiserver", "kube-controller-manager", "kubelet", "kube-scheduler", "kube-proxy", coreDNSTool.Name} {
		want[name] = true
	}
	for name := range want {
		if !listed[name] {
			t.Errorf("the e2e tests run %s, which E2ETools does not list", name)
		}
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
