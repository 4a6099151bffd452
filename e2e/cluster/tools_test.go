package cluster

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/mod/modfile"
)

// The versions the e2e tests and the bench name their tool binaries by are the versions
// e2e/tools pins: kube-apiserver (the aggregation tests' and the bench's CRD peer) and
// sample-apiserver (the bench's startup peer).
func TestToolVersionsArePinned(t *testing.T) {
	for _, c := range []struct{ module, requires, version string }{
		{"kube-apiserver", "k8s.io/kubernetes", KubeVersion},
		{"sample-apiserver", "k8s.io/sample-apiserver", SampleAPIServerVersion},
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
