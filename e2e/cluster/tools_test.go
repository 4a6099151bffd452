package cluster

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
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
