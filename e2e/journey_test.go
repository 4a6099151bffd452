package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aagen-dev/aagen/e2e/cluster"
)

// TestJourney is the user's journey from nothing to a tested, verified project: aagen init,
// aagen create api for a namespaced kind with status and a cluster-scoped kind, aagen
// generate, the project's own go test ./..., and aagen generate --verify, which passes on
// the fresh tree and fails, naming the stale files, once a types file changes.
func TestJourney(t *testing.T) {
	skipShort(t)
	bin := aagen(t)
	work := t.TempDir()
	dir := filepath.Join(work, "shipyard")

	run(t, work, bin, "init", "--domain", "example.com", "--module", "example.com/shipyard", "--dir", "shipyard")
	for _, f := range []string{"go.mod", "Makefile", "README.md", ".gitignore", "PROJECT", "pkg/apis"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("init did not write %s: %v", f, err)
		}
	}
	if out, err := aagenFails(t, work, bin, "init", "--domain", "example.com", "--module", "example.com/shipyard", "--dir", "shipyard"); err == nil || !strings.Contains(out, "not empty") {
		t.Fatalf("init into the initialised project: err=%v, want a not-empty error:\n%s", err, out)
	}

	run(t, dir, bin, "create", "api", "--group", "ships", "--version", "v1alpha1", "--kind", "Frigate", "--status")
	run(t, dir, bin, "create", "api", "--group", "ships", "--version", "v1alpha1", "--kind", "Harbor", "--cluster-scoped")
	frigate := filepath.Join(dir, "pkg/apis/ships/v1alpha1/frigate_types.go")
	out, err := aagenFails(t, dir, bin, "create", "api", "--group", "ships", "--version", "v1alpha1", "--kind", "Frigate")
	if err == nil || !strings.Contains(out, frigate) {
		t.Fatalf("create api of an existing kind: err=%v, want an error naming %s:\n%s", err, frigate, out)
	}
	project, err := os.ReadFile(filepath.Join(dir, "PROJECT"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"domain: example.com", "repo: example.com/shipyard", "kind: Frigate", "kind: Harbor"} {
		if !strings.Contains(string(project), want) {
			t.Errorf("PROJECT lacks %q:\n%s", want, project)
		}
	}

	run(t, dir, bin, "generate", "./pkg/apis/...")
	for _, f := range []string{
		"cmd/shipyard-apiserver/main.go",
		"pkg/apiserver/zz_generated.apiserver.go",
		"pkg/registry/ships/frigate/zz_generated.storage.go",
		"pkg/registry/ships/harbor/zz_generated.storage.go",
		"pkg/apis/ships/v1alpha1/zz_generated.deepcopy.go",
		"config/deploy/kustomization.yaml",
	} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("generate did not write %s: %v", f, err)
		}
	}
	t.Log(cluster.Tail(run(t, dir, "go", "test", "-count=1", "./..."), 2000))
	run(t, dir, bin, "generate", "--verify", "./pkg/apis/...")

	// A new field makes deepcopy and OpenAPI stale: verify fails, names them, writes nothing.
	src, err := os.ReadFile(frigate)
	if err != nil {
		t.Fatal(err)
	}
	const anchor = "type FrigateSpec struct {\n"
	if !strings.Contains(string(src), anchor) {
		t.Fatalf("frigate_types.go has no %q:\n%s", anchor, src)
	}
	edited := strings.Replace(string(src), anchor, anchor+"\t// Guns are the calibres of the frigate's guns, in millimetres.\n\t// +optional\n\t// +listType=atomic\n\tGuns []int32 `json:\"guns,omitempty\"`\n\n", 1)
	if err := os.WriteFile(frigate, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	deepcopy := filepath.Join(dir, "pkg/apis/ships/v1alpha1/zz_generated.deepcopy.go")
	before, err := os.ReadFile(deepcopy)
	if err != nil {
		t.Fatal(err)
	}
	out, err = aagenFails(t, dir, bin, "generate", "--verify", "./pkg/apis/...")
	if err == nil {
		t.Fatalf("generate --verify passed after a types change:\n%s", out)
	}
	for _, stale := range []string{"pkg/apis/ships/v1alpha1/zz_generated.deepcopy.go", "pkg/generated/openapi/zz_generated.openapi.go"} {
		if !strings.Contains(out, stale) {
			t.Errorf("generate --verify output does not name %s:\n%s", stale, out)
		}
	}
	if after, _ := os.ReadFile(deepcopy); string(after) != string(before) {
		t.Error("generate --verify rewrote zz_generated.deepcopy.go")
	}

	// generate brings the tree up to date again.
	run(t, dir, bin, "generate", "./pkg/apis/...")
	run(t, dir, bin, "generate", "--verify", "./pkg/apis/...")
}

// aagenFails runs a command that is expected to fail; it returns the combined output and
// the command's error (nil when it unexpectedly succeeded).
func aagenFails(t *testing.T, dir, name string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}
