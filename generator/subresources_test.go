package generator_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSubresourceStubAdded declares a new subresource on a kind whose subresource methods
// the user has written: the new one gets its stub file, the user's files stay as they were,
// and the project still builds.
func TestSubresourceStubAdded(t *testing.T) {
	dir := typesOnly(t)
	if _, err := generate(t, dir, false); err != nil {
		t.Fatal(err)
	}
	boat := filepath.Join(dir, "pkg/registry/marina/boat")
	depart := filepath.Join(boat, "subresource_depart.go")
	data, err := os.ReadFile(depart)
	if err != nil {
		t.Fatalf("no stub for the depart action: %v", err)
	}
	edited := append(data, []byte("\n// The harbour master signs every departure.\n")...)
	if err := os.WriteFile(depart, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	hooks, err := os.ReadFile(filepath.Join(boat, "hooks.go"))
	if err != nil {
		t.Fatal(err)
	}
	types := filepath.Join(dir, "pkg/apis/marina/v1alpha1/types.go")
	src, err := os.ReadFile(types)
	if err != nil {
		t.Fatal(err)
	}
	marker := []byte("// +aagen:subresource:action:name=depart,input=DepartureRequest\n")
	if !bytes.Contains(src, marker) {
		t.Fatalf("the example's Boat has no depart marker")
	}
	src = bytes.Replace(src, marker, append(marker, []byte("// +aagen:subresource:action:name=inspect,input=DepartureRequest,output=Status\n")...), 1)
	if err := os.WriteFile(types, src, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := generate(t, dir, false); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(depart); !bytes.Equal(got, edited) {
		t.Errorf("subresource_depart.go was rewritten")
	}
	if got, _ := os.ReadFile(filepath.Join(boat, "hooks.go")); !bytes.Equal(got, hooks) {
		t.Errorf("hooks.go was rewritten")
	}
	stub, err := os.ReadFile(filepath.Join(boat, "subresource_inspect.go"))
	if err != nil || !strings.Contains(string(stub), "func (Hooks) Inspect(ctx context.Context, obj *marinav1alpha1.Boat, in *marinav1alpha1.DepartureRequest) (runtime.Object, error)") {
		t.Errorf("stub of the new action: %v\n%s", err, stub)
	}
	install, _ := os.ReadFile(filepath.Join(boat, "zz_generated.subresources.go"))
	if !strings.Contains(string(install), `storage["boats/inspect"]`) {
		t.Errorf("zz_generated.subresources.go does not install boats/inspect:\n%s", install)
	}
	cmd := exec.Command("go", "build", "./...")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("the project with the new stub does not build: %v\n%s", err, out)
	}
}
