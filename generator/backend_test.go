package generator_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBackendFileCreatedOnce checks the user-owned backend.go of a kind served from the
// user's backend (+aagen:backend): the first run creates a stub whose Get and List answer an
// error saying what to write where; later runs keep what the user wrote.
func TestBackendFileCreatedOnce(t *testing.T) {
	const rel = "pkg/registry/marina/dockoccupancy/backend.go"
	// Without the example's backend and its test, which tests the example's own functions.
	dir := copyFiles(t, example, handWritten, rel, "pkg/registry/marina/dockoccupancy/backend_test.go")
	if _, err := generate(t, dir, false); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, rel)
	stub, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"// This file is yours: aagen created it once and never overwrites it.",
		"func NewBackend() (backend.Reader[*marinav1alpha1.DockOccupancy], error)",
		`"get dockoccupancies.marina.example.com: not implemented yet: write Get in ` + rel + `"`,
		`"list dockoccupancies.marina.example.com: not implemented yet: write List in ` + rel + `"`,
	} {
		if !strings.Contains(string(stub), want) {
			t.Errorf("the created %s does not contain %q:\n%s", rel, want, stub)
		}
	}
	mine, err := os.ReadFile(filepath.Join(example, rel))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, mine, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := generate(t, dir, false); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, mine) {
		t.Errorf("a second run overwrote %s", rel)
	}
}
